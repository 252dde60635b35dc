// The seam between the agent loop and a coordinator session.
//
// The agent runs checks on its own schedule; a CoordinatorLink (implemented in coordinator/) runs
// on its own thread, talks to the coordinator, and uses AgentServices to read the agent's latest
// report and snapshot, to run the probes it is assigned (several at once, each on its own GPU)
// and to hand back the verdicts the coordinator decides. Without a link the agent is standalone:
// checks and local verdicts only. Nothing the link does can block a check cycle or a scrape.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>

#include "core/config.h"
#include "core/decision.h"
#include "core/probe_result.h"
#include "core/report.h"
#include "core/snapshot.h"
#include "state/agent_state.h"

namespace nccl_triage {

// One probe the coordinator asks this agent to run. Every field is a closed value (a mode, a
// size, a peer name): an agent never runs a command or sets an environment variable because a
// message said so.
struct ProbeAssignment {
  std::string peer;  // the other node of the pair
  ProbeMode mode = ProbeMode::kSocket;
  int rank = 0;  // this node's rank in the two-rank communicator; rank 0 creates the id
  int nranks = 2;
  uint64_t size_bytes = 0;  // 0: probe.size_bytes from the config
  int timeout_seconds = 0;  // 0 or above probe.timeout_seconds: probe.timeout_seconds
  // The GPU to probe on by PCI bus id (empty: CUDA's device 0): the GPU nearest the rail's HCA
  // when a rail is assigned, else the node's first idle GPU (core/gpu_use.h).
  std::string gpu_bus_id;
  // One rail (IB mode): NCCL_IB_HCA selecting only its port instead of probe.ib_hca, and "rail3"
  // for the log's name.
  std::optional<std::string> ib_hca;
  std::string tag;
  int rail = -1;  // the rail's number when ib_hca selects one rail; -1 otherwise
  // Rank 0: called once with the NCCL unique id (hex) as soon as the child made it, for the
  // coordinator to relay to the other rank.
  std::function<void(const std::string& unique_id_hex)> publish_unique_id;
  // Ranks > 0: blocks until the relayed unique id (hex) arrives; nullopt when it never will
  // (cancelled, peer lost, `stop`). The child is then told to give up.
  std::function<std::optional<std::string>(std::stop_token stop)> await_unique_id;
};

// What the agent offers a coordinator link. Thread-safe; owned by the agent, valid for the whole
// of CoordinatorLink::Run.
class AgentServices {
 public:
  virtual ~AgentServices() = default;

  virtual const std::string& NodeName() const = 0;
  virtual const Config& config() const = 0;
  virtual AgentState& state() = 0;

  // The latest report and snapshot (null before the first cycle finished).
  virtual std::shared_ptr<const NodeReport> LatestReport() const = 0;
  virtual std::shared_ptr<const NodeSnapshot> LatestSnapshot() const = 0;
  // Blocks until a cycle later than `seen_cycles` has finished, or stop; returns the cycle count.
  virtual uint64_t WaitForCycle(uint64_t seen_cycles, std::stop_token stop) = 0;

  // Runs one probe to completion and records its result (metrics, /status). Probes on different
  // GPUs (ProbeAssignment::gpu_bus_id) run at once; one on a GPU another probe holds, or with no
  // GPU named while another runs, comes back at once not run ("skipped: ..."), unrecorded. A
  // stop request on `stop` (a CancelProbe) kills the child's process group. Never throws; a
  // probe that cannot run comes back with outcome unavailable and the reason in `detail`.
  virtual ProbeResult RunProbe(const ProbeAssignment& assignment, std::stop_token stop) = 0;

  // Verdicts the coordinator decided.
  virtual void SetPairVerdict(const std::string& peer, const PairVerdict& verdict) = 0;
  virtual void RemovePeer(const std::string& peer) = 0;  // no longer paired: its series vanish
  virtual void SetNodeVerdict(std::optional<NodeVerdict> verdict) = 0;  // nullopt: back to checks
  // One short line shown in /status ("connected to coord:9501", "reconnecting: ...").
  virtual void SetCoordinatorStatus(std::string status) = 0;
};

// A session with the coordinator. Run() is called once on a thread of its own and returns when
// `stop` is requested (reconnecting by itself in between); it must not throw.
class CoordinatorLink {
 public:
  virtual ~CoordinatorLink() = default;
  virtual void Run(AgentServices& services, std::stop_token stop) = 0;
};

}  // namespace nccl_triage
