#include <gtest/gtest.h>

#include <sstream>
#include <thread>

#include "base/clock.h"
#include "base/log.h"
#include "support/fake_clock.h"

namespace nccl_triage {
namespace {

using namespace std::chrono_literals;

TEST(FakeClock, SleepJumpsToTheDeadlineAndRecordsIt) {
  FakeClock clock(1000);
  std::stop_source stop;
  EXPECT_TRUE(clock.SleepFor(5s, stop.get_token()));
  EXPECT_EQ(clock.NowUnixMs(), 6000);
  clock.Advance(1s);
  EXPECT_EQ(clock.NowUnixMs(), 7000);
  stop.request_stop();
  EXPECT_FALSE(clock.SleepFor(1s, stop.get_token()));
  ASSERT_EQ(clock.Sleeps().size(), 2u);
  EXPECT_EQ(clock.Sleeps()[0], std::chrono::duration_cast<Clock::Duration>(5s));
}

TEST(SystemClock, StopWakesASleeperAtOnce) {
  SystemClock clock;
  std::stop_source stop;
  auto start = std::chrono::steady_clock::now();
  std::thread t([&] {
    std::this_thread::sleep_for(50ms);
    stop.request_stop();
  });
  EXPECT_FALSE(clock.SleepFor(30s, stop.get_token()));
  t.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
}

TEST(Logger, WritesOneLinePerEventWithLevelAndFiltersBelowMinimum) {
  std::ostringstream out;
  Logger log(out, LogLevel::kInfo);
  log.Debug("agent", "hidden");
  log.Warn("kube", "first line\nsecond line");
  std::string text = out.str();
  EXPECT_EQ(text.find("hidden"), std::string::npos);
  EXPECT_NE(text.find(" WARN kube: first line second line\n"), std::string::npos);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1);
}

TEST(FormatRfc3339, FormatsUtc) {
  EXPECT_EQ(FormatRfc3339(0), "1970-01-01T00:00:00Z");
  EXPECT_EQ(FormatRfc3339(1700000000123, true), "2023-11-14T22:13:20.123Z");
}

TEST(ParseLogLevel, AcceptsAnyCase) {
  LogLevel l{};
  EXPECT_TRUE(ParseLogLevel("warn", &l));
  EXPECT_EQ(l, LogLevel::kWarn);
  EXPECT_TRUE(ParseLogLevel("DEBUG", &l));
  EXPECT_FALSE(ParseLogLevel("loud", &l));
}

}  // namespace
}  // namespace nccl_triage
