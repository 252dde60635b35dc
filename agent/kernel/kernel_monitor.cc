#include "kernel/kernel_monitor.h"

namespace nccl_triage::kernel {

KernelMonitor::KernelMonitor(KernelMonitorOptions options)
    : options_(std::move(options)), follower_(options_.root, options_.state_dir) {}

std::vector<Finding> KernelMonitor::Judge(const NodeSnapshot& snapshot, int64_t now_unix_ms) {
  auto batch = follower_.ReadNew();
  if (!batch.ok()) return KernelLogSkipped(batch.status().message());
  {
    std::lock_guard lock(mu_);
    for (const KernelRecord& r : batch->records) {
      if (auto e = EventFromRecord(r)) {
        if (r.seq >= follower_.counted_from()) counts_.Add(*e);  // not counted before a restart
        events_.push_back(std::move(*e));
      }
    }
  }
  while (events_.size() > options_.max_events) events_.pop_front();
  while (!events_.empty() && events_.front().wall_ms &&
         *events_.front().wall_ms < now_unix_ms - options_.window_ms) {
    events_.pop_front();
  }
  KernelJudgeOptions judge;
  judge.link_flaps_per_hour = options_.link_flaps_per_hour;
  judge.since_wall_ms = now_unix_ms - options_.window_ms;
  judge.flap_stable_ms = options_.flap_stable_ms;
  judge.boot = BootFromSnapshot(snapshot);
  judge.boot.now_wall_ms = now_unix_ms;
  std::vector<Finding> findings = JudgeKernelEvents(
      std::vector<KernelEvent>(events_.begin(), events_.end()), DevicesFromSnapshot(snapshot),
      judge);
  if (batch->wrapped) {
    for (Finding& f : findings) {
      f.evidence.push_back({"kernel log records lost", std::to_string(batch->lost),
                            "dev/kmsg (ring buffer wrapped before they were read)"});
    }
  }
  return findings;
}

KernelCounts KernelMonitor::Counts() const {
  std::lock_guard lock(mu_);
  return counts_;
}

}  // namespace nccl_triage::kernel
