// The coordinator's state in the API server (state_store.h), from the sweep thread.
#include "base/log.h"
#include "coordinator/server_impl.h"

namespace nccl_triage {

void CoordinatorServer::Impl::SyncStateLocked(std::unique_lock<std::mutex>& lock) {
  if (!state_ || stopping_) return;
  if (!state_restored_) {
    CoordinatorState kept;
    lock.unlock();
    const bool read = state_->Load(&kept);
    if (read) remediation_->Restore(kept);  // the sweep thread's own
    lock.lock();
    if (!read) return;
    state_restored_ = true;
    const std::vector<std::string> changed = verdicts_.Restore(kept.faults);
    for (const std::string& node : changed) {
      if (agents_.Connected(node)) SendVerdictsLocked(node);
    }
    metrics_.SetFaults(verdicts_.hold_down().Confirmed(), wall_clock_.NowUnixMs());
    log_.Info("coordinator", "resumed from configmap " + state_->name() + ": " +
                                 std::to_string(kept.faults.size()) + " fault(s), " +
                                 std::to_string(kept.remediation.healthy_since_unix_ms.size()) +
                                 " release clock(s), " +
                                 std::to_string(kept.remediation.announced.size()) +
                                 " dry-run announcement(s)");
    return;
  }
  CoordinatorState now;
  now.faults = verdicts_.hold_down().All();
  lock.unlock();
  remediation_->Remember(now);
  state_->Save(now);
  lock.lock();
}

}  // namespace nccl_triage
