// The sweep half of CoordinatorServer::Impl (server_impl.h): when a sweep is due, its plan, its
// rounds of PairRuns and the publication of its outcome.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

#include "base/log.h"
#include "coordinator/server_impl.h"
#include "planner/cross_node.h"
#include "planner/rail_localisation.h"

namespace nccl_triage {

uint64_t CoordinatorServer::Impl::RequestSweep() {
  std::lock_guard lock(mu_);
  // A sweep already running does not answer a request made now: the next one does.
  sweeps_requested_ = std::max(sweeps_requested_, sweeps_started_ + 1);
  cv_.notify_all();
  return sweeps_requested_;
}

bool CoordinatorServer::Impl::WaitForSweep(uint64_t number, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, timeout, [&] { return sweeps_done_ >= number || stopping_; }) &&
         sweeps_done_ >= number;
}

void CoordinatorServer::Impl::SweepLoop(std::stop_token stop) {
  const std::chrono::milliseconds interval = SweepInterval(options_.config.coordinator);
  auto next_auto = SteadyClock::now() + interval;
  while (!stop.stop_requested()) {
    bool due = false;
    {
      std::unique_lock lock(mu_);
      // What a coordinator before this one kept, read before this replica's first sweep as the
      // leader (again after each election it wins: a former leader may have written since).
      if (state_ && !state_restored_ && leadership_.Leading()) SyncStateLocked(lock);
      auto wake = SteadyClock::now() + std::chrono::seconds(1);
      if (interval.count() > 0) wake = std::min(wake, next_auto);
      cv_.wait_until(lock, wake, [&] {
        return stopping_ || (sweeps_requested_ > sweeps_started_ && leadership_.Leading()) ||
               !triage_jobs_.empty();
      });
      if (stopping_) return;
      HousekeepingLocked();
      // An incident waits for no periodic sweep: its probes run first, one request at a time.
      if (!triage_jobs_.empty()) {
        TriageJob job = std::move(triage_jobs_.front());
        triage_jobs_.pop_front();
        RunTriageLocked(lock, std::move(job));
        continue;
      }
      // A follower keeps requests for when it leads; its agents are the leader's.
      due = leadership_.Leading() &&
            (sweeps_requested_ > sweeps_started_ ||
             (interval.count() > 0 && SteadyClock::now() >= next_auto));
    }
    if (due) {
      RunOneSweep(stop);
      next_auto = SteadyClock::now() + interval;
    }
  }
}

bool CoordinatorServer::Impl::IncompatibleLocked(const std::string& a, const std::string& b) const {
  const std::map<std::string, NodeInfo>& known = agents_.known();
  auto ia = known.find(a);
  auto ib = known.find(b);
  if (ia == known.end() || ib == known.end()) return false;
  return PredictedIncompatible(ia->second, ib->second);
}

void CoordinatorServer::Impl::RunRoundLocked(std::unique_lock<std::mutex>& lock,
                                             const std::vector<NodePair>& pairs) {
  runs_.clear();
  // Alternate which node creates the unique id, so both sides' rank-0 paths get exercised.
  const bool flip = (sweeps_started_ + static_cast<uint64_t>(current_round_)) % 2 == 1;
  for (const auto& p : pairs) {
    PairRunSetup setup;
    setup.pair = p;
    setup.rank0 = flip ? p.b : p.a;
    setup.rank1 = flip ? p.a : p.b;
    setup.id_prefix = "s" + std::to_string(sweeps_started_) + "-p" + std::to_string(++run_counter_);
    setup.phase_timeout =
        std::chrono::seconds(ProbeDeadlineSeconds(options_.config.probe)) + options_.report_grace;
    setup.peer_failed_grace = options_.peer_failed_grace;
    setup.connected = [this](const std::string& node) { return agents_.Connected(node); };
    if (rails_) {
      const NodeInfo& a = agents_.Known(p.a);
      const NodeInfo& b = agents_.Known(p.b);
      setup.rails = PairRails(a, b, *rails_, sweeps_started_);
      setup.parallel_rails =
          std::min({options_.config.probe.parallel_rails, a.parallel_probes, b.parallel_probes});
    }
    runs_.push_back(std::make_unique<PairRun>(std::move(setup)));
  }
  for (auto& run : runs_) ApplyLocked(*run, run->Start(SteadyClock::now()));
  for (;;) {
    const auto now = SteadyClock::now();
    auto next = now + std::chrono::milliseconds(500);
    bool all_done = true;
    for (auto& run : runs_) {
      if (run->done()) continue;
      if (stopping_) {
        ApplyLocked(*run, run->Abort("coordinator shutting down"));
      } else if (now >= run->NextDeadline().value_or(now)) {
        ApplyLocked(*run, run->Tick(now));
      }
      if (auto deadline = run->NextDeadline()) {
        all_done = false;
        next = std::min(next, *deadline);
      }
    }
    if (all_done) return;
    cv_.wait_until(lock, next);
    HousekeepingLocked();
  }
}

SweepResult CoordinatorServer::Impl::DriveSweepLocked(std::unique_lock<std::mutex>& lock,
                                                      SweepSetup setup) {
  sweep_ = std::make_unique<Sweep>(std::move(setup));
  for (;;) {
    std::vector<NodePair> pairs = sweep_->NextRound();
    if (pairs.empty() || stopping_) break;
    current_round_ = sweep_->round();
    RunRoundLocked(lock, pairs);
    if (!options_.test_hold_dir.empty()) TestHoldLocked(lock);
    for (auto& run : runs_) {
      const NodePair& p = run->pair();
      const NodeInfo& a = agents_.Known(p.a);
      const NodeInfo& b = agents_.Known(p.b);
      sweep_->Record(p, JudgePair(a, b, run->probes(), judge_),
                     JudgeRails(a, b, run->probes(), judge_));
    }
  }
  runs_.clear();
  SweepResult result = sweep_->Result();
  sweep_.reset();
  return result;
}

void CoordinatorServer::Impl::TestHoldLocked(std::unique_lock<std::mutex>& lock) {
  namespace fs = std::filesystem;
  const fs::path dir(options_.test_hold_dir);
  std::error_code ec;
  if (!fs::exists(dir / "hold-sweep", ec)) return;
  log_.Warn("coordinator", "test hold: sweep " + std::to_string(sweeps_started_) +
                               " waits in the middle while " + (dir / "hold-sweep").string() +
                               " exists");
  {
    std::ofstream(dir / "held-sweep.tmp") << ::getpid() << "\n";
    fs::rename(dir / "held-sweep.tmp", dir / "held-sweep", ec);
  }
  while (!stopping_ && fs::exists(dir / "hold-sweep", ec)) {
    cv_.wait_for(lock, std::chrono::milliseconds(100));
  }
}

void CoordinatorServer::Impl::RunOneSweep(std::stop_token stop) {
  const auto started = SteadyClock::now();
  std::unique_lock lock(mu_);
  const uint64_t number = ++sweeps_started_;
  SweepSetup setup;
  setup.number = number;
  // The blind (probes cannot run) are no members: their verdict says why (UpdateProbeAvailability).
  AgentTable::SweepMembers members = agents_.StartSweep();
  const std::vector<std::string>& blind = members.blind;
  setup.nodes = std::move(members.available);
  metrics_.SetUnprobedSweeps(agents_.unprobed_sweeps());
  schedule_.SetNodes(members.members);
  std::set<std::string> available(setup.nodes.begin(), setup.nodes.end());
  setup.round1 = schedule_.NextRound([&](const std::string& n) { return available.count(n) > 0; });
  setup.retest = verdicts_.hold_down().LinksToRetest();
  setup.incompatible = [this](const std::string& a, const std::string& b) {
    return IncompatibleLocked(a, b);  // called from NextRound, with mu_ held
  };
  setup.max_rounds = options_.max_rounds;
  setup.seed = options_.seed + number;
  log_.Info("coordinator", "sweep " + std::to_string(number) + ": " +
                               std::to_string(setup.nodes.size()) + " nodes available, " +
                               std::to_string(setup.round1.size()) + " pairs in round 1" +
                               (blind.empty() ? std::string()
                                              : ", " + std::to_string(blind.size()) +
                                                    " left out: their probes cannot run"));
  SweepResult result = DriveSweepLocked(lock, std::move(setup));
  if (stopping_) return;
  for (const auto& p : result.tested_pairs) schedule_.MarkTested(p);
  const int rounds = result.rounds;
  const size_t seen = result.faults.size();
  metrics_.SetRailProbes(result.pairs);
  last_rail_faults_ = result.rails.faults;
  remediation_->RecordProbes(result.pairs);
  verdicts_.Apply(std::move(result), agents_.known());
  // A node that said it cannot probe while this sweep ran keeps the verdict that says so.
  for (const auto& [node, a] : agents_.connected()) {
    if (ProbesCannotRun(a.info)) verdicts_.UpdateProbeAvailability(node, a.info);
  }
  // Confirmed faults of nodes that were not in this sweep keep their verdict (held down).
  for (const auto& [node, a] : agents_.connected()) SendVerdictsLocked(node);
  RemediateLocked(lock, stop);
  if (stopping_) return;
  SyncStateLocked(lock);
  last_sweep_rounds_ = rounds;
  sweeps_done_ = number;
  const double seconds = std::chrono::duration<double>(SteadyClock::now() - started).count();
  const HoldDown& hold_down = verdicts_.hold_down();
  metrics_.ObserveSweep(seconds, wall_clock_.NowUnixMs());
  metrics_.SetFaults(hold_down.Confirmed(), wall_clock_.NowUnixMs());
  metrics_.SetCoverage(schedule_.pairs_tested(), schedule_.pairs_total());
  log_.Info("coordinator", "sweep " + std::to_string(number) + " done in " +
                               std::to_string(rounds) + " round(s), " + std::to_string(seen) +
                               " fault(s) seen, " + std::to_string(hold_down.Confirmed().size()) +
                               " confirmed of " + std::to_string(hold_down.All().size()) +
                               " tracked");
  cv_.notify_all();
}

void CoordinatorServer::Impl::RemediateLocked(std::unique_lock<std::mutex>& lock,
                                              std::stop_token stop) {
  // Not before the kept state is back (a node tainted before a restart must not look healed),
  // and only while this replica leads.
  if (!remediation_->active() || (state_ && !state_restored_) || !leadership_.Leading()) return;
  std::map<std::string, ConfirmedNodeFault> confirmed;
  std::set<std::string> watched;  // nodes with a connected agent: only they can prove healthy
  if (remediation_->remediates()) {
    for (const TrackedFault& t : verdicts_.hold_down().Confirmed()) {
      if (t.fault.kind != FaultKind::kNode || t.fault.nodes.empty()) continue;
      confirmed[t.fault.nodes[0]] = {t.fault.fault_class, t.fault.causes};
    }
    for (const auto& [node, agent] : agents_.connected()) watched.insert(node);
  }
  // The API calls take time (one patch per node that changes): agents' streams go on meanwhile.
  lock.unlock();
  remediation_->Step(confirmed, watched, stop);
  lock.lock();
}

}  // namespace nccl_triage
