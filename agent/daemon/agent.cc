#include "daemon/agent.h"

#include <exception>
#include <thread>

#include "core/report.h"

namespace nccl_triage {

Agent::Agent(AgentOptions options, GatherFn gather, JudgeFn judge, AgentState& state, Clock& clock,
             Logger& log)
    : options_(std::move(options)),
      node_(options_.node),
      gather_(std::move(gather)),
      judge_(std::move(judge)),
      state_(state),
      clock_(clock),
      log_(log) {}

Agent::~Agent() = default;

void Agent::AddSink(StateSink* sink) { sinks_.push_back(sink); }
void Agent::SetProbeRunner(ProbeFn probe) { probe_ = std::move(probe); }
void Agent::SetIntraNodeProbe(IntraNodeFn intra) { intra_ = std::move(intra); }
void Agent::SetCoordinatorLink(std::unique_ptr<CoordinatorLink> link) { link_ = std::move(link); }
void Agent::SetLibraryCheck(LibraryCheckFn check) { library_check_ = std::move(check); }

void Agent::Notify() {
  std::lock_guard lock(notify_mu_);
  AgentStateView view = state_.View();
  for (StateSink* sink : sinks_) {
    try {
      sink->OnState(view);
    } catch (const std::exception& e) {
      log_.Error("agent", std::string("sink failed: ") + e.what());
    }
  }
}

std::shared_ptr<const NodeReport> Agent::RunCycle() {
  int64_t started = clock_.NowUnixMs();
  std::string error;
  std::shared_ptr<const NodeSnapshot> snapshot;
  std::vector<Finding> findings;
  try {
    StatusOr<NodeSnapshot> gathered = gather_();
    if (gathered.ok()) {
      snapshot = std::make_shared<const NodeSnapshot>(std::move(gathered).value());
    } else {
      error = "gather: " + gathered.status().message();
    }
  } catch (const std::exception& e) {
    error = std::string("gather: ") + e.what();
  } catch (...) {
    error = "gather: unknown exception";
  }
  if (snapshot) {
    try {
      findings = judge_(*snapshot, previous_.get());
      if (auto intra = IntraNodeFinding()) findings.push_back(std::move(*intra));
      if (auto blind = AvailabilityFinding(state_.View().probe_availability)) {
        findings.push_back(std::move(*blind));
      }
    } catch (const std::exception& e) {
      error = std::string("checks: ") + e.what();
    } catch (...) {
      error = "checks: unknown exception";
    }
  }
  std::string node = !node_.empty() ? node_ : snapshot ? snapshot->node : std::string();
  auto report = std::make_shared<NodeReport>(MakeReport(node, std::move(findings), started));
  if (!error.empty()) {
    // Without a snapshot or findings the node cannot be judged: unknown, never a failure.
    report->fault_class = FaultClass::kUnknown;
    report->causes.clear();
    log_.Warn("agent", "cycle failed: " + error);
  }
  std::shared_ptr<const SnapshotSummary> summary;
  if (snapshot) {
    SnapshotSummary s = Summarize(*snapshot, options_.config.expect);
    s.pool = state_.View().pool;  // whose expect that was
    summary = std::make_shared<const SnapshotSummary>(std::move(s));
    previous_ = snapshot;
  }
  int64_t finished = clock_.NowUnixMs();
  state_.SetCycle(report, snapshot, summary, started, finished, error);
  Notify();
  return report;
}

void Agent::Run(std::stop_token stop) {
  std::jthread link_thread;
  if (link_ || intra_ || library_check_) {
    link_thread = std::jthread([this](std::stop_token link_stop) {
      if (library_check_) RunLibraryCheck();
      // Single node first: the intra-node probe runs before the link can bring a pairing.
      if (intra_) RunIntraNodeOnce(link_stop);
      if (!link_) return;
      try {
        link_->Run(*this, link_stop);
      } catch (const std::exception& e) {
        log_.Error("agent", std::string("coordinator link stopped: ") + e.what());
      }
    });
  }
  std::stop_callback forward(stop, [&link_thread] { link_thread.request_stop(); });
  Clock::TimePoint next = clock_.Now();
  while (!stop.stop_requested()) {
    RunCycle();
    if (library_check_ && library_checked_) {
      const ProbeAvailability a = state_.View().probe_availability;
      if (!a.available() && a.reason != kProbesPending) RunLibraryCheck();
    }
    next += options_.interval;
    Clock::TimePoint now = clock_.Now();
    // After a slow cycle (or a suspended machine) start counting again instead of catching up.
    if (next < now) next = now + options_.interval;
    if (!clock_.SleepUntil(next, stop)) break;
  }
}

void Agent::RunLibraryCheck() {
  ProbeResult result;
  try {
    result = library_check_();
  } catch (const std::exception& e) {
    result.outcome = ProbeOutcome::kUnavailable;
    result.detail = std::string("library check failed to run: ") + e.what();
  }
  auto availability = AvailabilityFromProbe(result, clock_.NowUnixMs());
  if (!availability) {  // not run: the check never refuses, so only a broken check gets here
    availability = ProbeAvailability{};
    availability->reason = std::string(kProbesError);
    availability->detail = "library check did not run: " + result.detail;
  }
  // Logged when it changes: a blind node is checked again every cycle.
  const ProbeAvailability before = state_.View().probe_availability;
  if (availability->reason != before.reason || availability->detail != before.detail) {
    if (availability->available()) {
      log_.Info("agent", "probes can run: " + availability->detail);
    } else {
      log_.Warn("agent",
                "probes cannot run (" + availability->reason + "): " + availability->detail);
    }
  }
  state_.SetProbeAvailability(std::move(*availability));
  library_checked_ = true;
  Notify();
}

void Agent::RunIntraNodeOnce(std::stop_token stop) {
  WaitForCycle(0, stop);
  auto snapshot = LatestSnapshot();
  if (stop.stop_requested() || !snapshot) return;  // no snapshot: no idle GPUs to name
  if (!HoldGpu("", stop)) {  // the link has not started, so nothing else probes: never expected
    log_.Warn("agent", "intra-node probe skipped: another probe holds a GPU");
    return;
  }
  Finding finding;
  try {
    finding = intra_(*snapshot, stop);
  } catch (const std::exception& e) {
    ReleaseGpu("");
    log_.Error("agent", std::string("intra-node probe failed to run: ") + e.what());
    return;
  }
  ReleaseGpu("");
  if (stop.stop_requested()) {  // shutting down: its ranks were killed, nothing was learnt
    log_.Info("agent", "intra-node probe cancelled");
    return;
  }
  log_.Info("agent",
            "intra-node probe: " + std::string(ToString(finding.status)) + ": " + finding.message);
  std::lock_guard lock(intra_mu_);
  intra_finding_ = std::move(finding);
}

std::optional<Finding> Agent::IntraNodeFinding() const {
  std::lock_guard lock(intra_mu_);
  return intra_finding_;
}

std::shared_ptr<const NodeReport> Agent::LatestReport() const { return state_.View().report; }

std::shared_ptr<const NodeSnapshot> Agent::LatestSnapshot() const { return state_.View().snapshot; }

uint64_t Agent::WaitForCycle(uint64_t seen_cycles, std::stop_token stop) {
  while (true) {
    AgentStateView view = state_.View();
    if (view.cycle.cycles > seen_cycles || stop.stop_requested()) return view.cycle.cycles;
    state_.WaitForChange(view.generation, stop);
  }
}

bool Agent::HoldGpu(const std::string& gpu, std::stop_token stop) {
  std::unique_lock lock(gpus_mu_);
  // Holders in the way: the same GPU, or every GPU on either side.
  auto blocked = [&](bool* only_stopping) {
    bool any = false;
    *only_stopping = true;
    for (const auto& [held, holder] : gpus_held_) {
      if (!gpu.empty() && !held.empty() && held != gpu) continue;
      any = true;
      *only_stopping = *only_stopping && holder.stop_requested();
    }
    return any;
  };
  const auto until = std::chrono::steady_clock::now() + kGpuReleaseWait;
  bool only_stopping = true;
  while (blocked(&only_stopping)) {
    if (!only_stopping) return false;
    // Only probes being cancelled are in the way: their children are being killed.
    const bool settled = gpus_released_.wait_until(lock, stop, until, [&] {
      bool stopping = true;
      return !blocked(&stopping) || !stopping;
    });
    if (!settled) return false;  // `stop`, or a cancelled probe that did not end in time
  }
  gpus_held_.emplace(gpu, stop);
  return true;
}

void Agent::ReleaseGpu(const std::string& gpu) {
  {
    std::lock_guard lock(gpus_mu_);
    gpus_held_.erase(gpu);
  }
  gpus_released_.notify_all();
}

ProbeResult Agent::RunProbe(const ProbeAssignment& assignment, std::stop_token stop) {
  ProbeResult result;
  if (!HoldGpu(assignment.gpu_bus_id, stop)) {
    // Not recorded: the pair's last real result stays in /status and the metrics.
    result.mode = assignment.mode;
    result.rank = assignment.rank;
    result.peer = assignment.peer;
    result.outcome = ProbeOutcome::kNotRun;
    if (stop.stop_requested()) {  // cancelled while a cancelled probe was still ending
      result.detail = "cancelled";
      return result;
    }
    result.detail = assignment.gpu_bus_id.empty()
                        ? "skipped: another probe of this agent is running"
                        : "skipped: GPU " + assignment.gpu_bus_id + " runs another probe";
    log_.Warn("agent", "probe with " + assignment.peer +
                           (assignment.rail >= 0 ? " on rail " + std::to_string(assignment.rail)
                                                 : std::string()) +
                           " not run: " + result.detail);
    return result;
  }
  struct Release {
    Agent& agent;
    const std::string& gpu;
    ~Release() { agent.ReleaseGpu(gpu); }
  } release{*this, assignment.gpu_bus_id};
  Clock::TimePoint start = clock_.Now();
  if (!probe_) {
    result.outcome = ProbeOutcome::kUnavailable;
    result.detail = "this agent has no probe runner";
  } else {
    try {
      result = probe_(assignment, stop);
    } catch (const std::exception& e) {
      result = ProbeResult{};
      result.outcome = ProbeOutcome::kUnavailable;
      result.detail = std::string("probe runner failed: ") + e.what();
    }
  }
  result.mode = assignment.mode;
  result.peer = assignment.peer;
  if (result.duration_seconds <= 0) {
    result.duration_seconds = std::chrono::duration<double>(clock_.Now() - start).count();
  }
  state_.RecordProbe(result, clock_.NowUnixMs(), assignment.rail,
                     assignment.rail >= 0 ? assignment.ib_hca.value_or("") : std::string());
  Notify();
  return result;
}

void Agent::SetPairVerdict(const std::string& peer, const PairVerdict& verdict) {
  state_.SetPairVerdict(peer, verdict, clock_.NowUnixMs());
  Notify();
}

void Agent::RemovePeer(const std::string& peer) {
  state_.RemovePeer(peer);
  Notify();
}

void Agent::SetNodeVerdict(std::optional<NodeVerdict> verdict) {
  if (verdict && verdict->decided_at_unix_ms == 0) verdict->decided_at_unix_ms = clock_.NowUnixMs();
  state_.SetProbeVerdict(std::move(verdict));
  Notify();
}

void Agent::SetCoordinatorStatus(std::string status) {
  state_.SetCoordinatorStatus(std::move(status));
}

}  // namespace nccl_triage
