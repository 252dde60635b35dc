#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>
#include <vector>

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

TEST(Logger, JsonFormatWritesOneParsableObjectPerEvent) {
  std::ostringstream out;
  Logger log(out, LogLevel::kInfo, LogFormat::kJson);
  log.Debug("agent", "hidden");
  log.Warn("kube", "say \"no\"\nthen\ttab \\ back\x01 caf\xc3\xa9 bad\xff\xfe end");
  log.Error("coordinator", "");
  std::istringstream lines(out.str());
  std::string line;
  std::vector<nlohmann::json> events;
  while (std::getline(lines, line)) {
    auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    ASSERT_TRUE(j.is_object()) << line;
    events.push_back(j);
  }
  ASSERT_EQ(events.size(), 2u) << out.str();
  EXPECT_EQ(events[0]["level"], "warn");
  EXPECT_EQ(events[0]["component"], "kube");
  EXPECT_EQ(events[0]["message"],
            "say \"no\"\nthen\ttab \\ back\x01 caf\xc3\xa9 bad\xef\xbf\xbd\xef\xbf\xbd end");
  EXPECT_EQ(events[1]["level"], "error");
  EXPECT_EQ(events[1]["message"], "");
  const std::string time = events[0]["time"];
  EXPECT_EQ(time.size(), std::string("2023-11-14T22:13:20.123Z").size()) << time;
}

TEST(FormatLogLine, TextAndJsonCarryTheSameFields) {
  EXPECT_EQ(FormatLogLine(LogFormat::kText, 1700000000123, LogLevel::kInfo, "agent", "cycle a\nb"),
            "2023-11-14T22:13:20.123Z INFO agent: cycle a b\n");
  EXPECT_EQ(FormatLogLine(LogFormat::kJson, 1700000000123, LogLevel::kInfo, "agent", "cycle a\nb"),
            "{\"time\":\"2023-11-14T22:13:20.123Z\",\"level\":\"info\",\"component\":\"agent\","
            "\"message\":\"cycle a\\nb\"}\n");
}

// A node name holding terminal escape sequences went into the text log raw, where a terminal
// would run them (clear the screen, rewrite earlier lines).
TEST(FormatLogLine, TextEscapesControlBytesC1ControlsAndInvalidUtf8) {
  EXPECT_EQ(FormatLogLine(LogFormat::kText, 1700000000123, LogLevel::kWarn, "coord\x07",
                          "hello from \x1b[2Jnode-1\x9b\xc2\x9b\xc3\xa9\x7f"),
            "2023-11-14T22:13:20.123Z WARN coord\\x07: hello from \\x1b[2Jnode-1\\x9b\\xc2\\x9b"
            "\xc3\xa9\\x7f\n");
}

TEST(ParseLogFormat, AcceptsTextAndJsonOnly) {
  LogFormat f{};
  EXPECT_TRUE(ParseLogFormat("json", &f));
  EXPECT_EQ(f, LogFormat::kJson);
  EXPECT_TRUE(ParseLogFormat("text", &f));
  EXPECT_EQ(f, LogFormat::kText);
  EXPECT_FALSE(ParseLogFormat("JSON ", &f));
  EXPECT_FALSE(ParseLogFormat("logfmt", &f));
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
