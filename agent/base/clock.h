// Clock: the time source of the agent loop and of the publishers, injected so that tests run on a
// fake clock instead of sleeping.
//
// Two kinds of time are kept apart: a monotonic one for intervals, deadlines and back-off, and the
// wall clock (Unix milliseconds) for what is shown to people (report timestamps, metrics, RFC 3339
// annotations). Implementations are thread-safe; callers own the clock and keep it alive longer
// than every object they hand it to.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <stop_token>
#include <string>

namespace nccl_triage {

class Clock {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  using Duration = std::chrono::steady_clock::duration;

  virtual ~Clock() = default;
  virtual TimePoint Now() = 0;
  virtual int64_t NowUnixMs() = 0;
  // Sleeps until `deadline` or until a stop is requested on `stop`; false when stopped.
  virtual bool SleepUntil(TimePoint deadline, std::stop_token stop) = 0;
  bool SleepFor(Duration d, std::stop_token stop) { return SleepUntil(Now() + d, stop); }
};

// The real clocks; a stop request wakes a sleeper at once.
class SystemClock final : public Clock {
 public:
  TimePoint Now() override;
  int64_t NowUnixMs() override;
  bool SleepUntil(TimePoint deadline, std::stop_token stop) override;

 private:
  std::mutex mu_;
  std::condition_variable_any cv_;  // never notified: only the stop token wakes it early
};

// The monotonic time as milliseconds since the clock's epoch, for times kept as plain numbers.
int64_t MonotonicMs(Clock& clock);

// Why work bounded by `stop` and `deadline` may start nothing more now: "stop requested" or
// "deadline"; "" while it may.
std::string CutShortReason(const std::stop_token& stop, Clock::TimePoint deadline, Clock& clock);

}  // namespace nccl_triage
