#include "state/agent_state.h"

#include <climits>

namespace nccl_triage {
namespace {
constexpr size_t kMaxObservations = 1024;
}  // namespace

NodeVerdict AgentStateView::Verdict() const {
  if (probe_verdict) return *probe_verdict;
  NodeVerdict v;
  v.basis = Basis::kChecks;
  if (!report) {
    v.reason = "no cycle finished yet";
    return v;
  }
  v.fault_class = report->fault_class;
  v.basis = report->basis;
  v.causes = report->causes;
  v.decided_at_unix_ms = report->generated_at_unix_ms;
  v.reason = cycle.last_error.empty() ? "from the node checks" : cycle.last_error;
  return v;
}

std::string AgentStateView::NcclVersion() const {
  std::string version;
  int64_t at = -1;
  for (const auto& [key, rec] : probes) {
    if (!rec->result.nccl_version.empty() && rec->recorded_at_unix_ms > at) {
      version = rec->result.nccl_version;
      at = rec->recorded_at_unix_ms;
    }
  }
  return version;
}

AgentState::AgentState(std::string node, std::string version, int64_t started_at_unix_ms) {
  state_.node = std::move(node);
  state_.version = std::move(version);
  state_.started_at_unix_ms = started_at_unix_ms;
  state_.coordinator_status = "standalone";
  state_.workloads = std::make_shared<const std::vector<WorkloadFinding>>();
  state_.ras_jobs = std::make_shared<const std::vector<RasJobStatus>>();
}

AgentStateView AgentState::View() const {
  std::lock_guard lock(mu_);
  return state_;
}

uint64_t AgentState::Generation() const {
  std::lock_guard lock(mu_);
  return state_.generation;
}

bool AgentState::Ready() const {
  std::lock_guard lock(mu_);
  return state_.ready;
}

void AgentState::BumpLocked() {
  ++state_.generation;
  changed_.notify_all();
}

void AgentState::SetCycle(std::shared_ptr<const NodeReport> report,
                          std::shared_ptr<const NodeSnapshot> snapshot,
                          std::shared_ptr<const SnapshotSummary> summary, int64_t started_unix_ms,
                          int64_t finished_unix_ms, std::string error) {
  std::lock_guard lock(mu_);
  // Without --node / NODE_NAME the node is known only from the snapshot's hostname.
  if (state_.node.empty() && report && !report->node.empty()) state_.node = report->node;
  if (report) state_.report = std::move(report);
  if (snapshot) state_.snapshot = std::move(snapshot);
  if (summary) state_.summary = std::move(summary);
  state_.ready = true;
  CycleInfo& c = state_.cycle;
  ++c.cycles;
  c.last_started_unix_ms = started_unix_ms;
  c.last_finished_unix_ms = finished_unix_ms;
  c.last_duration_seconds = static_cast<double>(finished_unix_ms - started_unix_ms) / 1000.0;
  c.last_error = std::move(error);
  BumpLocked();
}

void AgentState::RecordProbe(ProbeResult result, int64_t now_unix_ms, int rail,
                             std::string ib_hca) {
  std::lock_guard lock(mu_);
  if (auto a = AvailabilityFromProbe(result, now_unix_ms)) state_.probe_availability = std::move(*a);
  auto rec = std::make_shared<ProbeRecord>();
  rec->seq = ++probe_seq_;
  rec->recorded_at_unix_ms = now_unix_ms;
  observations_.push_back({rec->seq, result.mode, result.duration_seconds});
  while (observations_.size() > kMaxObservations) observations_.pop_front();
  if (rail >= 0) {
    RailProbeKey key{result.peer, rail};
    rec->rail = rail;
    rec->ib_hca = std::move(ib_hca);
    rec->result = std::move(result);
    state_.rail_probes[key] = std::move(rec);
  } else {
    ProbeKey key{result.peer, result.mode};
    rec->result = std::move(result);
    state_.probes[key] = std::move(rec);
  }
  state_.last_probe_unix_ms = now_unix_ms;
  BumpLocked();
}

void AgentState::SetPairVerdict(const std::string& peer, PairVerdict verdict, int64_t now_unix_ms) {
  std::lock_guard lock(mu_);
  auto rec = std::make_shared<PairVerdictRecord>();
  rec->verdict = std::move(verdict);
  rec->decided_at_unix_ms = now_unix_ms;
  state_.pairs[peer] = std::move(rec);
  BumpLocked();
}

void AgentState::RemovePeer(const std::string& peer) {
  std::lock_guard lock(mu_);
  state_.pairs.erase(peer);
  state_.probes.erase({peer, ProbeMode::kSocket});
  state_.probes.erase({peer, ProbeMode::kIb});
  state_.rail_probes.erase(state_.rail_probes.lower_bound({peer, INT_MIN}),
                           state_.rail_probes.upper_bound({peer, INT_MAX}));
  BumpLocked();
}

void AgentState::SetProbeVerdict(std::optional<NodeVerdict> verdict) {
  std::lock_guard lock(mu_);
  state_.probe_verdict = std::move(verdict);
  BumpLocked();
}

void AgentState::SetCoordinatorStatus(std::string status) {
  std::lock_guard lock(mu_);
  if (state_.coordinator_status == status) return;
  state_.coordinator_status = std::move(status);
  BumpLocked();
}

void AgentState::SetProbeAvailability(ProbeAvailability availability) {
  std::lock_guard lock(mu_);
  state_.probe_availability = std::move(availability);
  BumpLocked();
}

void AgentState::SetPool(std::string pool) {
  std::lock_guard lock(mu_);
  state_.pool = std::move(pool);
  BumpLocked();
}

void AgentState::SetWorkloadFindings(std::vector<WorkloadFinding> findings) {
  auto shared = std::make_shared<const std::vector<WorkloadFinding>>(std::move(findings));
  std::lock_guard lock(mu_);
  state_.workloads = std::move(shared);
  BumpLocked();
}

void AgentState::SetRasJobs(std::vector<RasJobStatus> jobs,
                            std::map<std::string, uint64_t> queries) {
  auto shared = std::make_shared<const std::vector<RasJobStatus>>(std::move(jobs));
  std::lock_guard lock(mu_);
  state_.ras_jobs = std::move(shared);
  state_.ras_queries = std::move(queries);
  BumpLocked();
}

std::vector<ProbeObservation> AgentState::ProbeObservationsAfter(uint64_t seq) const {
  std::lock_guard lock(mu_);
  std::vector<ProbeObservation> out;
  for (const auto& o : observations_) {
    if (o.seq > seq) out.push_back(o);
  }
  return out;
}

uint64_t AgentState::WaitForChange(uint64_t seen, std::stop_token stop) const {
  std::unique_lock lock(mu_);
  changed_.wait(lock, stop, [&] { return state_.generation > seen; });
  return state_.generation;
}

}  // namespace nccl_triage
