// CoordinatorServer: the coordinator process. It keeps one gRPC stream per agent
// (nccl_triage.v1 Coordinator.Session), runs sweeps on an interval and on demand, drives every
// pair's socket and IB probes through the agents, judges them and pushes the verdicts back; it
// serves /metrics, /livez, /readyz, /status and POST /sweep.
//
// The parts, each in its own file: the transport (server.cc: streams, sessions, authentication,
// the routing of probe messages), the sweep loop (sweep_loop.cc), one pair's probe phases
// (planner/pair_run.h), the publishing policy (planner/cluster_verdicts.h) and the status view
// (status_view.h).
//
// Security: a shared token in the "authorization: Bearer <token>" metadata (a wrong or missing
// token is rejected with UNAUTHENTICATED and one log line naming the peer); TLS when a certificate
// and key are given. Everything sent to an agent is a closed assignment (peer, mode, rank, size,
// deadline). Robustness: a malformed message closes that agent's stream with INVALID_ARGUMENT
// (or is ignored when harmless) and never affects other streams; an agent silent for
// coordinator.heartbeat_timeout_seconds is dropped; no probe stays assigned past its deadline
// plus a grace (the pair is then inconclusive and both agents are told to cancel); an agent that
// disconnects mid-probe makes its pair inconclusive and its peer's child is cancelled at once.
//
// Threads: gRPC's callback threads handle stream events; one sweep thread plans and waits; the
// HTTP server has its own pool. All shared state sits behind one mutex. Ownership: the server
// owns its streams; the logger must outlive it.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "base/status.h"
#include "coordinator/node_identity.h"
#include "coordinator/node_validator.h"
#include "coordinator/remediator.h"
#include "coordinator/status_view.h"
#include "core/config.h"
#include "kube/leader_election.h"
#include "kube/leader_label.h"
#include "planner/pair_judge.h"

namespace nccl_triage {

class Logger;

// What the coordinator is started with. Its settings are the configuration file's, as loaded
// (`config`: it reads the coordinator, probe, remediation and validation sections, and derives
// its durations and policies from them itself), so a new setting is written once, in Config and
// its key table. The rest is what no configuration key holds: what the caller read or built
// (token, certificate, clients), and the bounds below, fixed for production and shortened by
// tests.
struct CoordinatorOptions {
  // A Config built in code has the file's defaults: coordinator.http_listen is 0.0.0.0:9502
  // (empty: no HTTP server), and sweep_interval_seconds 0 (below the file's floor) sweeps only on
  // demand.
  Config config;
  std::string token;  // empty: agents are not authenticated (logged)
  // When set, every agent must also present its identity token (node_identity.h), and the node
  // name of its Hello must be the node the token binds it to. Not owned by the options alone:
  // shared with whoever built it. Needed by config.coordinator.identity_only (Start fails
  // without it): agents are then accepted on their identity token alone, and the calls only a
  // shared token authorises (Triage, RecordIncident, POST /sweep) are refused with the reason.
  std::shared_ptr<NodeIdentity> identity;
  // /metrics and /status of the HTTP server behind it (server.auth: kubernetes); null: open.
  std::shared_ptr<HttpAuthorizer> http_authorizer;
  std::string cert_pem;  // TLS when cert and key are both set
  std::string key_pem;
  // Remediation of confirmed node faults (remediator.h, docs/remediation.md) and the validation
  // of nodes that join or reboot (node_validator.h) run after each sweep when their section turns
  // them on and `kube` is set (the caller makes the client; shared with it).
  std::shared_ptr<KubeClient> kube;
  // Where the faults and the remediator's memory survive a restart (state_store.h): a ConfigMap
  // of this name in this namespace, read before the first sweep and written after each sweep
  // that changed them; used with `kube` when remediation or validation is on. Empty: kept in
  // memory only.
  std::string state_namespace;
  std::string state_configmap;
  // Leader election between coordinator replicas (kube/leader_election.h, made by the caller with
  // a client of its own); null: this replica always leads. When set, only the leader sweeps,
  // remediates and accepts agents (a follower refuses sessions with UNAVAILABLE, and a leader
  // that loses the Lease closes them, so agents reconnect through the Service to the new one);
  // /readyz answers 200 on every live replica (the Service selects the leader by its pod label,
  // below, not by readiness) and /status says which one leads; every write through `kube` is
  // fenced.
  std::shared_ptr<LeaderElector> leader;
  // With `leader`: the leader's pod label (kube/leader_label.h, fenced by `leader`, made by the
  // caller with a client of its own), kept on a thread of its own, woken at each change of
  // leadership; on Stop the label leaves this pod before the Lease is released. Null: no label
  // (the Service then follows readiness alone, fit for one replica only).
  std::shared_ptr<LeaderPodLabel> leader_label;
  // Tests only (the failover tests on the real API server; $NCCL_TRIAGE_TEST_HOLD_DIR of
  // `nccl-triage-server coordinator`, never set by the chart): while the file `hold-sweep` exists
  // in this folder, a sweep that has run its first round of probes, before it judges them, writes
  // `held-sweep` (this process's id) and waits there, so that a test can kill the coordinator
  // exactly in the middle of a sweep. Empty: no hold.
  std::string test_hold_dir;
  uint64_t seed = 1;
  std::string version;

  // Bounds no configuration key sets.
  std::chrono::milliseconds report_grace{10'000};  // beyond the deadline before a rank is lost
  // When one rank failed, how long the other may take to report its own log before it is
  // cancelled (it cannot pass any more; its log often names the cause).
  std::chrono::milliseconds peer_failed_grace{5'000};
  // The node table (every node that ever said hello, kept for /status and its verdicts) is
  // bounded (3,000 made-up names must not stay for good): a node disconnected this long is
  // forgotten, and at most max_nodes are kept; a hello from a new name beyond that evicts the node
  // disconnected longest, or is refused (RESOURCE_EXHAUSTED) while every one is connected.
  std::chrono::milliseconds node_expiry{3'600'000};
  size_t max_nodes = 10'000;
  // The gRPC port's limits (a flood of connections is refused, not absorbed): at most
  // max_connections connections (0: max_nodes + 256, and no more than half the descriptors the
  // process may open, less 256 of its own), max_streams_per_connection calls on each, a
  // connection closed when its handshake is not done in handshake_timeout or it holds no call for
  // idle_connection_timeout, and gRPC's memory bounded by memory_quota_bytes.
  size_t max_connections = 0;
  int max_streams_per_connection = 8;
  std::chrono::milliseconds handshake_timeout{10'000};
  std::chrono::milliseconds idle_connection_timeout{120'000};
  size_t memory_quota_bytes = 256u << 20;
  int max_rounds = 3;
};

// How the coordinator judges its pairs under probe.busbw_min_fraction and probe.size_bytes:
// bandwidth only where the size it assigns (the step at or below size_bytes) is bandwidth-bound.
JudgeOptions PairJudgeOptions(const ProbeConfig& probe);

class CoordinatorServer {
 public:
  CoordinatorServer(CoordinatorOptions options, Logger& log);
  ~CoordinatorServer();
  CoordinatorServer(const CoordinatorServer&) = delete;
  CoordinatorServer& operator=(const CoordinatorServer&) = delete;

  // Binds the gRPC port (and the HTTP port when configured) and starts the sweep thread.
  Status Start();
  // Closes every stream, stops the sweep thread and both servers. Idempotent.
  void Stop();

  int grpc_port() const;
  int http_port() const;

  // Asks for a sweep; returns the number of the sweep that will answer the request.
  uint64_t RequestSweep();
  // Waits until sweep `number` has finished; false on timeout or stop.
  bool WaitForSweep(uint64_t number, std::chrono::milliseconds timeout);
  // Waits until at least `n` agents are connected (said hello); false on timeout.
  bool WaitForAgents(size_t n, std::chrono::milliseconds timeout);
  size_t ConnectedAgents() const;
  // Probes assigned and not yet reported (tests: nothing stays assigned forever).
  size_t OutstandingProbes() const;

  // `with_pairs` false leaves out the pair records (a large cluster has many): the counters,
  // nodes and faults only.
  CoordinatorView View(bool with_pairs = true) const;
  std::string MetricsText() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace nccl_triage
