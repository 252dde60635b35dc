// FakeClock: the test double of base/clock.h's Clock.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <stop_token>
#include <vector>

#include "base/clock.h"

namespace nccl_triage {

// A clock that only moves when told to or when someone sleeps: SleepUntil jumps the time to the
// deadline and returns at once (false when a stop was requested), and records how long each sleep
// asked for, so back-off schedules are asserted without waiting.
class FakeClock final : public Clock {
 public:
  explicit FakeClock(int64_t start_unix_ms = 1'700'000'000'000);
  TimePoint Now() override;
  int64_t NowUnixMs() override;
  bool SleepUntil(TimePoint deadline, std::stop_token stop) override;

  void Advance(Duration d);
  // Steps the wall clock alone (NowUnixMs), as an NTP step or a settimeofday does; Now() keeps
  // its pace.
  void JumpWall(std::chrono::milliseconds d);
  std::vector<Duration> Sleeps() const;  // every requested sleep, in order

 private:
  mutable std::mutex mu_;
  Duration elapsed_{};
  int64_t start_unix_ms_;
  std::vector<Duration> sleeps_;
};

}  // namespace nccl_triage
