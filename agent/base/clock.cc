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

int64_t MonotonicMs(Clock& clock) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(clock.Now().time_since_epoch())
      .count();
}

std::string CutShortReason(const std::stop_token& stop, Clock::TimePoint deadline, Clock& clock) {
  if (stop.stop_requested()) return "stop requested";
  if (clock.Now() >= deadline) return "deadline";
  return "";
}

}  // namespace nccl_triage
