// Agent: the daemon loop. Every agent.interval_seconds it gathers a snapshot, judges it with the
// checks, builds the NodeReport, stores it in the AgentState (with the snapshot, which the next
// cycle's checks receive as `previous` for counter velocity) and tells the sinks.
//
// The loop never waits for the API server or a probe: sinks must return at once (they queue), and
// probes run on the coordinator link's thread. A gather or check that throws costs one cycle (the
// report then says unknown and /status shows the error), never the process. Gathering and judging
// are injected as functions so that the loop is tested with fakes and the app wires host/ and
// checks/ in. Thread safety: Run() and RunCycle() are called from one thread; the AgentServices
// methods are safe from any thread. The agent does not own the state, clock, logger or sinks.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/log.h"
#include "base/status.h"
#include "core/config.h"
#include "core/model.h"
#include "core/snapshot.h"
#include "daemon/coordinator_link.h"
#include "state/agent_state.h"
#include "state/state_sink.h"

namespace nccl_triage {

// How long a probe waits for a GPU that a cancelled probe still holds (HoldGpu).
inline constexpr std::chrono::seconds kGpuReleaseWait{30};

using GatherFn = std::function<StatusOr<NodeSnapshot>()>;
// The checks: the new snapshot and the previous one (null on the first cycle).
using JudgeFn =
    std::function<std::vector<Finding>(const NodeSnapshot& now, const NodeSnapshot* previous)>;
// Runs one probe (the probe runner); called from several threads at once for probes on different
// GPUs (the agent refuses a second probe on a GPU a probe holds).
using ProbeFn = std::function<ProbeResult(const ProbeAssignment&, std::stop_token)>;
// The intra-node probe (probe/intra_node.h) on the idle GPUs of this snapshot: its
// probe.intra_node finding. Run once, before the coordinator link starts (so before the first
// pairing), holding every GPU.
using IntraNodeFn = std::function<Finding(const NodeSnapshot&, std::stop_token)>;

// The start-up library check (ProbeRunner::CheckLibraries): can probes run on this node at all?
using LibraryCheckFn = std::function<ProbeResult()>;

struct AgentOptions {
  std::string node;  // overrides the snapshot's node name when not empty
  std::chrono::milliseconds interval{60'000};
  Config config;
};

class Agent final : public AgentServices {
 public:
  Agent(AgentOptions options, GatherFn gather, JudgeFn judge, AgentState& state, Clock& clock,
        Logger& log);
  ~Agent() override;

  void AddSink(StateSink* sink);  // before Run(); not owned
  void SetProbeRunner(ProbeFn probe);
  // Before Run(): the first cycle's snapshot goes to `intra`, and its finding joins the node's
  // findings from the next cycle on (a broken NVLink/P2P path is an architecture fault of the
  // node).
  void SetIntraNodeProbe(IntraNodeFn intra);
  void SetCoordinatorLink(std::unique_ptr<CoordinatorLink> link);
  // Before Run(): checked once on the link thread before anything probes; its answer is the
  // state's probe_availability (each probe result updates it after that), and while the probes
  // cannot run the node's report carries the cause as a warn finding (AvailabilityFinding).
  // While they cannot run (not ok, not pending) it is checked again after every cycle: the
  // coordinator assigns such a node no probe, so no probe result would say they came back.
  void SetLibraryCheck(LibraryCheckFn check);

  // One cycle: gather, judge, store, notify. Returns the report it stored.
  std::shared_ptr<const NodeReport> RunCycle();
  // Cycles every interval until `stop`; runs the coordinator link (if any) on its own thread.
  void Run(std::stop_token stop);

  // AgentServices.
  const std::string& NodeName() const override { return node_; }
  const Config& config() const override { return options_.config; }
  AgentState& state() override { return state_; }
  std::shared_ptr<const NodeReport> LatestReport() const override;
  std::shared_ptr<const NodeSnapshot> LatestSnapshot() const override;
  uint64_t WaitForCycle(uint64_t seen_cycles, std::stop_token stop) override;
  ProbeResult RunProbe(const ProbeAssignment& assignment, std::stop_token stop) override;
  void SetPairVerdict(const std::string& peer, const PairVerdict& verdict) override;
  void RemovePeer(const std::string& peer) override;
  void SetNodeVerdict(std::optional<NodeVerdict> verdict) override;
  void SetCoordinatorStatus(std::string status) override;

 private:
  void Notify();
  void RunIntraNodeOnce(std::stop_token stop);  // on the link thread, before the link runs
  void RunLibraryCheck();  // on the link thread, first; then on the cycle thread while blind
  std::optional<Finding> IntraNodeFinding() const;
  // Holds `gpu` (a bus id; "": every GPU) for one probe stopped by `stop`. False at once when a
  // running probe holds it; a probe being cancelled (its stop requested: its children are being
  // killed) is waited for, up to kGpuReleaseWait or `stop`. The coordinator ends a phase as soon
  // as it cancels a rank, so the next assignment can arrive before the cancelled child is gone.
  bool HoldGpu(const std::string& gpu, std::stop_token stop);
  void ReleaseGpu(const std::string& gpu);

  AgentOptions options_;
  std::string node_;
  GatherFn gather_;
  JudgeFn judge_;
  ProbeFn probe_;
  IntraNodeFn intra_;
  LibraryCheckFn library_check_;
  std::atomic<bool> library_checked_{false};  // the start-up check is done (rechecks may run)
  mutable std::mutex intra_mu_;
  std::optional<Finding> intra_finding_;  // guarded by intra_mu_
  AgentState& state_;
  Clock& clock_;
  Logger& log_;
  std::vector<StateSink*> sinks_;
  std::unique_ptr<CoordinatorLink> link_;
  std::shared_ptr<const NodeSnapshot> previous_;  // loop thread only
  std::mutex gpus_mu_;
  std::condition_variable_any gpus_released_;
  // Guarded by gpus_mu_: the GPUs running probes hold ("": all of them), with each holder's stop.
  std::map<std::string, std::stop_token> gpus_held_;
  std::mutex notify_mu_;  // sinks see changes in order
};

}  // namespace nccl_triage
