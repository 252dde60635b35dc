#include "support/fake_clock.h"

namespace nccl_triage {

FakeClock::FakeClock(int64_t start_unix_ms) : start_unix_ms_(start_unix_ms) {}

Clock::TimePoint FakeClock::Now() {
  std::lock_guard lock(mu_);
  return TimePoint(elapsed_);
}

int64_t FakeClock::NowUnixMs() {
  std::lock_guard lock(mu_);
  return start_unix_ms_ + std::chrono::duration_cast<std::chrono::milliseconds>(elapsed_).count();
}

bool FakeClock::SleepUntil(TimePoint deadline, std::stop_token stop) {
  std::lock_guard lock(mu_);
  Duration wanted = deadline.time_since_epoch() - elapsed_;
  if (wanted < Duration::zero()) wanted = Duration::zero();
  sleeps_.push_back(wanted);
  elapsed_ += wanted;
  return !stop.stop_requested();
}

void FakeClock::Advance(Duration d) {
  std::lock_guard lock(mu_);
  elapsed_ += d;
}

void FakeClock::JumpWall(std::chrono::milliseconds d) {
  std::lock_guard lock(mu_);
  start_unix_ms_ += d.count();
}

std::vector<Clock::Duration> FakeClock::Sleeps() const {
  std::lock_guard lock(mu_);
  return sleeps_;
}

}  // namespace nccl_triage
