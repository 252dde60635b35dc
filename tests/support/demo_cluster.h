// DemoCluster: a coordinator and N agents on this machine, talking real gRPC over loopback, each
// agent with a fixture root of its own (agent/fixture) and the fake libcuda/libnccl (tests/fakes)
// for its probe children. Faults are injected only into those roots (and, for a different NCCL,
// into which libnccl.so.2 a node loads), so the coordinator sees them through the same signals
// as on a real cluster: the nodes' checks, the probes' outcomes and NCCL logs.
//
// Fault specs (0-based node indices):
//   node:I:KIND   KIND = port_down | sm_offline | memlock | no_rdma_devices | rate_degraded |
//                        shm_small | nccl_version | no_nccl (its probes find no libnccl.so.2)
//   link:I-J:KIND KIND = pkey_mismatch (I and J share no PKey with a full member; both still share
//                        the default partition with everyone else) | cable (the IB path between
//                        exactly I and J is broken; both reach everyone else)
//   rail:I:K:KIND KIND = mr_register (memory registration fails on node I's HCA of rail K, which
//                        sysfs shows healthy: only an NCCL run on that rail finds it) | port_down
//                        (that HCA's port 1 DOWN); turns on the per-rail probes (probe.rails all)
//
// `nccl-triage demo` and the integration tests drive it: Start(), Run() (sweeps until every pair
// is covered and no suspicion is pending, or a fixed number of sweeps), Report(). The agents and
// the coordinator run in this process on their own threads; the probes are child processes.
// Not thread-safe (one driver).
#pragma once

#include <functional>
#include <iosfwd>
#include <map>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <set>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "coordinator/server.h"
#include "planner/sweep.h"
#include "state/agent_state.h"

namespace nccl_triage {

class Logger;

struct DemoFault {
  FaultKind kind = FaultKind::kNode;
  int a = -1;
  int b = -1;        // links only
  std::string what;  // the KIND
  int rail = -1;     // rail faults: K (kind kNode)
  std::string spec;  // as given
};

// The probe size of a demo that judges bandwidth: the smallest assignment step (64 KiB, 1 MiB,
// 64 MiB, 1 GiB) at or above kBandwidthBoundBytes.
inline constexpr uint64_t kDemoBandwidthProbeBytes = 64ull << 20;
// probe.busbw_min_fraction of a demo that judges bandwidth (see DemoOptions::probe_size_bytes).
inline constexpr double kDemoBusbwMinFraction = 0.125;

// The faults of a demo run without --fault, all within `nodes` nodes: node:2:port_down and
// link:4-6:cable from 7 nodes on; 4 to 6 nodes: node:1:port_down and a cable between the last
// two; 2 or 3 nodes: the last node's port down only (a link fault beside it could not be told
// from it).
std::vector<std::string> DefaultDemoFaults(int nodes);

// Parses one --fault spec for a cluster of `nodes` nodes.
StatusOr<DemoFault> ParseDemoFault(std::string_view spec, int nodes);

struct DemoOptions {
  int nodes = 8;
  std::vector<DemoFault> faults;
  int rounds = 0;           // sweeps to run; 0: until every pair is covered and nothing pending
  std::string probe_exe;    // the binary whose `probe --child` runs a rank
  std::string fakes_dir;    // holds lib/{libcuda.so.1,libnccl.so.2} and old/libnccl.so.2
  std::string work_dir;     // fixture roots and probe logs (created; must be empty or absent)
  bool serve_http = false;  // the agents' and the coordinator's HTTP endpoints on 127.0.0.1
  int hold_down = 2;
  uint64_t seed = 1;
  int probe_timeout_seconds = 20;
  std::string coordinator_listen = "127.0.0.1:0";
  // Extra environment for one node's probe children (tests: the fake NCCL's NCCL_FAKE_FAULTS
  // knobs); the names are allow-listed for that node like any operator-configured variable.
  std::map<int, std::map<std::string, std::string>> node_env;
  // Nodes whose GPUs and HCAs another process holds (a job that started there: the `ib-busy`
  // fixture's processes, and a CUDA process on every GPU); their agents refuse probes and the
  // coordinator leaves them out.
  std::set<int> busy_nodes;
  // Per-rail IB probes on every rail after each pair's IB probe (probe.rails all); on whenever a
  // rail fault is injected.
  bool rails = false;
  // The rails those probes take, as probe.rails ("0,3", "mlx5_3,mlx5_5"); empty: all.
  std::string rail_list;
  // probe.parallel_rails of the coordinator and of every agent; 0: ProbeConfig's default, or 1
  // when bandwidth is judged (64 MiB probes: one rail at a time is what a small machine carries).
  int parallel_rails = 0;
  // > 0: every HCA of every node carries IB data at this rate in Gb/s (fixture.json
  // "ib_data_gbps"), a fabric slow enough that even a 64 KiB probe lasts seconds, so that tests
  // can see which probes ran at the same time.
  double ib_data_gbps = 0;
  // The all-reduce size of every probe. 0: 64 KiB (latency-bound: busbw is not judged), or
  // kDemoBandwidthProbeBytes when a rail:I:K:rate fault is injected. When the coordinator judges
  // busbw at that size (its assignments are at least kBandwidthBoundBytes) the demo writes every
  // IB port as 1X SDR (2.5 Gb/s) and the coordinator's busbw floor is kDemoBusbwMinFraction: the
  // fake NCCL's wire is TCP over loopback, which carries a good share of that rate on a loaded
  // machine but never a real port's 200 Gb/s.
  uint64_t probe_size_bytes = 0;
  std::function<void(const std::string&)> progress;  // one line per sweep; may be empty
  // Start() and Run() give up (Unavailable "stopped") within a tenth of a second of a stop
  // requested here, the demo's Ctrl-C; Stop() then ends the agents, their probes and the
  // coordinator.
  std::stop_token stop;
  // The coordinator's remediation after each sweep (coordinator/remediator.h): the configuration
  // section and the Kubernetes client it patches nodes with (tests: the real client of a fake API
  // server).
  RemediationConfig remediation;
  ValidationConfig validation;  // validation.new_nodes (coordinator/node_validator.h)
  std::shared_ptr<KubeClient> kube;
  // The ConfigMap (in "default") that keeps the coordinator's state (state_store.h); empty: none.
  std::string state_configmap;
};

struct DemoNode {
  int index = 0;
  std::string name;
  FaultClass fault_class = FaultClass::kUnknown;
  Basis basis = Basis::kChecks;
  std::vector<std::string> causes;
  std::string reason;
  // What its agent told the coordinator of its probes: "ok", "no_nccl", ..., "unknown".
  std::string probes = "unknown";
};

struct DemoPair {
  int a = 0;
  int b = 0;
  ProbeOutcome socket = ProbeOutcome::kNotRun;
  ProbeOutcome ib = ProbeOutcome::kNotRun;
  FaultClass fault_class = FaultClass::kUnknown;
  Basis basis = Basis::kChecks;
  std::vector<std::string> causes;
  PairLocalisation localisation = PairLocalisation::kNone;
};

struct DemoLocalised {
  FaultKind kind = FaultKind::kNode;
  std::vector<int> nodes;
  FaultClass fault_class = FaultClass::kUnknown;
  std::string cause;
  Basis basis = Basis::kProbes;  // checks: a node fault only its own checks show
  bool confirmed = false;
};

struct DemoReport {
  int nodes = 0;
  std::vector<std::string> injected;
  uint64_t sweeps = 0;
  uint64_t pairs_covered = 0;
  uint64_t pairs_total = 0;
  std::vector<DemoNode> node_results;
  std::vector<DemoPair> pairs;
  std::vector<DemoLocalised> faults;
};

nlohmann::json ToJson(const DemoReport& report);
void PrintDemoTable(const DemoReport& report, std::ostream& out);

class DemoCluster {
 public:
  DemoCluster(DemoOptions options, Logger& log);
  ~DemoCluster();
  DemoCluster(const DemoCluster&) = delete;
  DemoCluster& operator=(const DemoCluster&) = delete;

  // Writes the fixture roots, starts the coordinator and the agents, waits for every agent.
  Status Start();
  // Whether DemoOptions::stop was requested (then Start and Run answer "stopped").
  bool stopped() const { return options_.stop.stop_requested(); }
  // Sweeps (see DemoOptions::rounds) and returns the report.
  StatusOr<DemoReport> Run();
  DemoReport Report() const;
  // The HTTP endpoints ("coordinator http://127.0.0.1:PORT", "node-0 http://..."), when served.
  std::vector<std::string> Urls() const;
  CoordinatorServer& coordinator();
  // The token the agents and the coordinator share (random per cluster).
  const std::string& token() const { return token_; }
  // The agent state of node `index` (what its /status, metrics and pod annotations are made of).
  AgentStateView NodeState(int index) const;
  // Stops one agent (its session closes and cancels the probe it runs), as a node going away.
  void StopNode(int index);
  // Replaces the coordinator with a new one on the same port (a coordinator restart); the agents
  // reconnect by themselves.
  Status RestartCoordinator();
  // Stops every agent at once (each cancels the probe it runs: its children are killed), then the
  // coordinator.
  void Stop();

 private:
  class Node;
  DemoOptions options_;
  Logger& log_;
  CoordinatorOptions coordinator_options_;
  std::unique_ptr<CoordinatorServer> coordinator_;
  std::vector<std::unique_ptr<Node>> nodes_;
  std::string token_;
  uint64_t sweeps_ = 0;
};

// Where the fake libraries of a build are, relative to the binary: <dir>/tests/fakes or
// <dir>/fakes with lib/libnccl.so.2 inside. Empty when none is found.
std::string FindFakesDir(const std::string& self_exe);

}  // namespace nccl_triage
