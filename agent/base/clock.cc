#include "base/clock.h"

namespace nccl_triage {

Clock::TimePoint SystemClock::Now() { return std::chrono::steady_clock::now(); }

int64_t SystemClock::NowUnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

bool SystemClock::SleepUntil(TimePoint deadline, std::stop_token stop) {
  std::unique_lock lock(mu_);
  cv_.wait_until(lock, stop, deadline, [] { return false; });
  return !stop.stop_requested();
}

}  // namespace nccl_triage
