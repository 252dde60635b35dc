// CoordinatorSession: the agent's side of the coordinator session (a CoordinatorLink).
//
// It waits for the agent's first check cycle (the Hello carries the node's summary and failing
// findings), opens the one bidirectional stream, sends Hello and then Heartbeats (with the summary
// again whenever it changed, e.g. once a probe has told the NCCL version), runs the probes it is
// assigned through AgentServices::RunProbe (up to probe.parallel_rails at once, the number its
// Hello gives: only rail probes of one pair overlap, each on its own GPU), relays NCCL's unique id
// (rank 0 hands it up; rank 1 receives it), and stores the verdicts it is pushed in the agent
// state. When the stream breaks it cancels the running probes (nobody would collect their
// results) and reconnects with exponential back-off and jitter.
//
// Closed set: an assignment names a peer, a mode, a rank, a size from an enum and a deadline
// (clamped to probe.timeout_seconds); anything outside is refused with NOT_RUN and a reason.
// The agent probes on an idle GPU (core/gpu_use.h: no workload process with a CUDA context holds
// it; nvidia-persistenced, DCGM, dcgm-exporter, the device plugin, nvidia-smi and the agent's own
// children never count) and passes its bus id to the probe child. With no idle GPU it never
// probes unless probe.allow_when_gpus_busy: the probe is reported NOT_RUN "skipped: GPUs busy".
//
// Thread safety: Run() is called once, on the link thread; it starts a heartbeat thread and
// probe.parallel_rails probe threads per connection and joins them before it returns.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "base/status.h"
#include "core/config.h"
#include "daemon/coordinator_link.h"

namespace nccl_triage {

class Logger;

struct SessionOptions {
  std::string target;  // "host:port" of the coordinator's gRPC listener
  std::string token;   // shared token; empty: none sent
  // The pod's projected service-account token for the coordinator's identity check
  // (coordinator/node_identity.h), read again at every connect (the kubelet rotates it); empty:
  // none sent.
  std::string identity_token_file;
  bool tls = false;                           // TLS to the coordinator
  std::string ca_pem;                         // roots for TLS; empty: the system roots
  std::map<std::string, std::string> labels;  // node labels (the topology label for pairing)
  std::string version;
  std::chrono::milliseconds backoff_initial{500};
  std::chrono::milliseconds backoff_max{30'000};
  std::chrono::milliseconds heartbeat{5'000};  // until the coordinator's Welcome says otherwise
  uint64_t seed = 0;                           // jitter; 0: from the node name
};

// The back-off before reconnect attempt `attempt` (0-based): exponential from `initial`, capped at
// `max`, with "equal jitter" (a uniform draw in [d/2, d]) from `random01` in [0, 1).
std::chrono::milliseconds ReconnectDelay(int attempt, std::chrono::milliseconds initial,
                                         std::chrono::milliseconds max, double random01);

class CoordinatorSession final : public CoordinatorLink {
 public:
  CoordinatorSession(SessionOptions options, Logger& log);
  ~CoordinatorSession() override;

  void Run(AgentServices& services, std::stop_token stop) override;

  // Sessions that reached Welcome so far (tests).
  uint64_t sessions() const;

 private:
  class Connection;
  SessionOptions options_;
  Logger& log_;
  std::atomic<uint64_t> sessions_{0};
  // The last Verdicts received, sent in the next Hello (a restarted coordinator resumes the
  // faults it had confirmed from it). Kept across connections; serialised bytes, "" before any.
  mutable std::mutex last_verdicts_mu_;
  std::string last_verdicts_;
};

// The agent's session to `target` from the configuration: the token from agent.token_file, else
// the environment variable NCCL_TRIAGE_TOKEN (`env_token`, passed in: nothing here reads the
// environment); TLS when agent.ca_file is set (the file holds the roots). Fails on an unreadable
// token or CA file.
StatusOr<std::unique_ptr<CoordinatorLink>> MakeCoordinatorLink(
    const std::string& target, const Config& config, const std::string& env_token,
    std::map<std::string, std::string> labels, const std::string& version, Logger& log);

}  // namespace nccl_triage
