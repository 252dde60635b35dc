// ib.port_state, ib.port_rate, ib.port_errors.
#include <gtest/gtest.h>

#include "checks/builtin.h"
#include "checks/check_util.h"
#include "checks/snapshot_builder.h"

namespace nccl_triage {
namespace {

using namespace testing;  // NOLINT: test helpers
using checks::IbPortErrors;
using checks::IbPortRate;
using checks::IbPortState;

IbPort& Port(NodeSnapshot& s, int hca) {
  return s.ib_devices.at(static_cast<size_t>(hca)).ports.at(0);
}

TEST(PortStateCheck, PassesWhenEveryPortIsActiveAndLinkUp) {
  Finding f = RunOne(&IbPortState, HealthyIbNode(4));
  EXPECT_EQ(f.status, CheckStatus::kPass);
  EXPECT_TRUE(HasEvidenceFrom(f, "sys/class/infiniband/mlx5_3/ports/1/state"));
}

TEST(PortStateCheck, FailsWhenPhysStateIsPolling) {
  NodeSnapshot s = HealthyIbNode(4);
  Port(s, 2).state = Have<std::string>("1: DOWN");
  Port(s, 2).phys_state = Have<std::string>("2: Polling");
  Finding f = RunOne(&IbPortState, s);
  EXPECT_EQ(f.status, CheckStatus::kFail);
  EXPECT_NE(f.message.find("mlx5_2/1 (1: DOWN, 2: Polling)"), std::string::npos);
  EXPECT_NE(f.message.find("1 of 4"), std::string::npos);
}

TEST(PortStateCheck, FailsWhenThePortIsStuckInInit) {
  NodeSnapshot s = HealthyIbNode(2);
  Port(s, 0).state = Have<std::string>("2: INIT");
  EXPECT_EQ(RunOne(&IbPortState, s).status, CheckStatus::kFail);
}

TEST(PortStateCheck, WarnsWhenOnePortIsUnreadable) {
  NodeSnapshot s = HealthyIbNode(2);
  Port(s, 1).state = Unreadable<std::string>();
  EXPECT_EQ(RunOne(&IbPortState, s).status, CheckStatus::kWarn);
}

TEST(PortStateCheck, SkipsWhenNoPortIsReadable) {
  NodeSnapshot s = HealthyIbNode(2);
  for (int i = 0; i < 2; ++i) {
    Port(s, i).state = Unreadable<std::string>();
    Port(s, i).phys_state = Unreadable<std::string>();
  }
  EXPECT_EQ(RunOne(&IbPortState, s).status, CheckStatus::kSkip);
}

// An HCA whose ports/ directory is missing gave "all 7 port(s) ACTIVE" on a
// node of eight HCAs, a silent pass.
TEST(PortStateCheck, WarnsWhenAnHcaListsNoPorts) {
  NodeSnapshot s = HealthyIbNode(8);
  s.ib_devices.at(3).ports.clear();
  Finding f = RunOne(&IbPortState, s);
  EXPECT_EQ(f.status, CheckStatus::kWarn);
  EXPECT_NE(f.message.find("1 HCA(s) list no ports (mlx5_3"), std::string::npos) << f.message;
  EXPECT_NE(f.message.find("the other 7 port(s) are ACTIVE/LinkUp"), std::string::npos);
  EXPECT_TRUE(HasEvidenceFrom(f, "sys/class/infiniband/mlx5_3/ports"));
  // A failing port still fails, and the message names the HCA without ports too.
  Port(s, 0).state = Have<std::string>("1: DOWN");
  f = RunOne(&IbPortState, s);
  EXPECT_EQ(f.status, CheckStatus::kFail);
  EXPECT_NE(f.message.find("mlx5_3"), std::string::npos) << f.message;
  // No HCA lists a port: a warning, not a skip that reads as "nothing to judge".
  for (auto& d : s.ib_devices) d.ports.clear();
  EXPECT_EQ(RunOne(&IbPortState, s).status, CheckStatus::kWarn);
}

// The agent's first poll after it started (or the node booted), for ib.port_state.
PortHistory FirstPoll() {
  PortHistory h;
  h.boot_id = "boot-1";
  h.first_poll = true;
  return h;
}

void SetDown(IbPort& p) {
  p.state = Have<std::string>("1: DOWN");
  p.phys_state = Have<std::string>("2: Polling");
}

std::string CountedEvidence(const Finding& f, const std::string& port) {
  for (const auto& e : f.evidence) {
    if (e.key == port + " counted") return e.value;
  }
  return "";
}

// Every port still training after a reboot read as a node fault on the agent's first poll.
TEST(PortStateCheck, DefersADownPortOnTheFirstPollWithoutEvidenceItShouldBeUp) {
  NodeSnapshot s = HealthyIbNode(2);
  SetDown(Port(s, 0));
  SetDown(Port(s, 1));
  const PortHistory h = FirstPoll();
  CheckContext ctx;
  ctx.ports = &h;
  Finding f = RunOne(&IbPortState, s, Config{}, ctx);
  EXPECT_EQ(f.status, CheckStatus::kWarn) << f.message;
  EXPECT_NE(f.message.find("not counted until the next poll"), std::string::npos) << f.message;
  EXPECT_EQ(CountedEvidence(f, "mlx5_0/1").rfind("no: first poll", 0), 0u)
      << CountedEvidence(f, "mlx5_0/1");
}

TEST(PortStateCheck, CountsADownPortOnTheFirstPollWhenASiblingPortIsUp) {
  NodeSnapshot s = HealthyIbNode(4);
  SetDown(Port(s, 2));
  const PortHistory h = FirstPoll();
  CheckContext ctx;
  ctx.ports = &h;
  Finding f = RunOne(&IbPortState, s, Config{}, ctx);
  EXPECT_EQ(f.status, CheckStatus::kFail);
  EXPECT_NE(CountedEvidence(f, "mlx5_2/1").find("sibling port mlx5_0/1"), std::string::npos)
      << CountedEvidence(f, "mlx5_2/1");
}

TEST(PortStateCheck, CountsADownPortOnTheFirstPollWhenThePoolExpectsItsRate) {
  NodeSnapshot s = HealthyIbNode(2);
  SetDown(Port(s, 0));
  SetDown(Port(s, 1));
  Config c;
  c.expect.rate_gbps = 200;
  const PortHistory h = FirstPoll();
  CheckContext ctx;
  ctx.ports = &h;
  Finding f = RunOne(&IbPortState, s, c, ctx);
  EXPECT_EQ(f.status, CheckStatus::kFail);
  EXPECT_NE(CountedEvidence(f, "mlx5_1/1").find("expect.rate_gbps"), std::string::npos);
}

TEST(PortStateCheck, CountsADownPortOnTheFirstPollWhenItWasSeenUpEarlierInThisBoot) {
  NodeSnapshot s = HealthyIbNode(1);
  SetDown(Port(s, 0));
  PortHistory h = FirstPoll();  // the agent restarted; the node did not reboot
  h.ports["mlx5_0/1"].seen_up = true;
  CheckContext ctx;
  ctx.ports = &h;
  Finding f = RunOne(&IbPortState, s, Config{}, ctx);
  EXPECT_EQ(f.status, CheckStatus::kFail);
  EXPECT_NE(CountedEvidence(f, "mlx5_0/1").find("seen ACTIVE/LinkUp earlier in this boot"),
            std::string::npos);
}

TEST(PortStateCheck, ACheckWithoutPollHistoryCountsADownPortAndSaysWhy) {
  NodeSnapshot s = HealthyIbNode(1);
  SetDown(Port(s, 0));
  Finding f = RunOne(&IbPortState, s);
  EXPECT_EQ(f.status, CheckStatus::kFail);
  EXPECT_EQ(CountedEvidence(f, "mlx5_0/1"), "yes: a one-shot check keeps no poll history");
}

TEST(PortStateCheck, CountsADownPortFromTheSecondPollOn) {
  NodeSnapshot s = HealthyIbNode(1);
  SetDown(Port(s, 0));
  PortHistory h = FirstPoll();
  h.first_poll = false;
  CheckContext ctx;
  ctx.ports = &h;
  Finding f = RunOne(&IbPortState, s, Config{}, ctx);
  EXPECT_EQ(f.status, CheckStatus::kFail);
  EXPECT_EQ(CountedEvidence(f, "mlx5_0/1").rfind("yes: not the agent's first poll", 0), 0u);
}

// One link_downed rise used to fail for one poll and then pass, while the kernel log kept the
// port failed for a day; a flapped port is now held until stable, then released.
TEST(PortErrorsCheck, HoldsAFlappedPortUntilItIsStableThenReleasesIt) {
  NodeSnapshot s = HealthyIbNode(2);
  Port(s, 1).counters["link_downed"] = 4;
  NodeSnapshot before = s;
  before.taken_at_unix_ms -= 60'000;
  PortHistory h;
  h.first_poll = false;
  h.flap_stable_ms = 600'000;
  h.ports["mlx5_1/1"] = PortMemo{true, s.taken_at_unix_ms - 300'000, "link_downed +1"};
  h.now_unix_ms = s.taken_at_unix_ms;
  CheckContext ctx{&before, nullptr, &h};
  Finding f = RunOne(&IbPortErrors, s, Config{}, ctx);
  EXPECT_EQ(f.status, CheckStatus::kFail) << f.message;
  EXPECT_NE(f.message.find("flapped and not yet stable"), std::string::npos) << f.message;
  EXPECT_EQ(CountedEvidence(f, "mlx5_1/1").rfind("yes: flapped 300 s ago", 0), 0u)
      << CountedEvidence(f, "mlx5_1/1");

  h.now_unix_ms = s.taken_at_unix_ms + 301'000;  // stable for 601 s
  s.taken_at_unix_ms = h.now_unix_ms;
  f = RunOne(&IbPortErrors, s, Config{}, ctx);
  EXPECT_EQ(f.status, CheckStatus::kPass) << f.message;
  EXPECT_NE(f.message.find("released after flapping: mlx5_1/1"), std::string::npos) << f.message;
  EXPECT_EQ(CountedEvidence(f, "mlx5_1/1").rfind("no: released", 0), 0u);
}

// A 10 MB value in a sysfs file was echoed whole into the evidence.
TEST(FindingBuilder, CutsLongEvidenceValuesAndMessagesOnACharacterBoundary) {
  NodeSnapshot s = HealthyIbNode(2);
  Port(s, 1).state = Have<std::string>("1: " + std::string(10'000'000, 'D'));
  Finding f = RunOne(&IbPortState, s);
  EXPECT_EQ(f.status, CheckStatus::kFail);
  EXPECT_LE(f.message.size(), checks::kMaxMessageBytes);
  for (const auto& e : f.evidence) EXPECT_LE(e.value.size(), checks::kMaxEvidenceValueBytes);
  EXPECT_NE(f.message.find(" ... (100000"), std::string::npos) << f.message.substr(0, 80);
  const std::string euro = "\xe2\x82\xac";
  // Byte 6 is inside the second euro sign: the cut backs off to the character before it.
  std::string text = "aa";
  for (int i = 0; i < 10; ++i) text += euro;
  EXPECT_EQ(checks::CutText(text, 21), "aa" + euro + " ... (32 bytes)");
  EXPECT_EQ(checks::CutText("short", 30), "short");
}

TEST(PortRateCheck, PassesWhenAllPortsRunAtTheSameRate) {
  Finding f = RunOne(&IbPortRate, HealthyIbNode(8));
  EXPECT_EQ(f.status, CheckStatus::kPass);
  EXPECT_NE(f.message.find("200 Gb/s"), std::string::npos);
}

TEST(PortRateCheck, FailsWhenOnePortIsSlowerThanItsPeers) {
  NodeSnapshot s = HealthyIbNode(8);
  Port(s, 5).rate_gbps = Have(50.0);
  Port(s, 5).rate_text = Have<std::string>("50 Gb/sec (1X HDR)");
  Finding f = RunOne(&IbPortRate, s);
  EXPECT_EQ(f.status, CheckStatus::kFail);
  EXPECT_NE(f.message.find("mlx5_5/1 at 50 Gb/sec (1X HDR) vs 200 Gb/s"), std::string::npos);
}

TEST(PortRateCheck, ComparesOnlyPortsOfTheSameHcaType) {
  NodeSnapshot s = HealthyIbNode(2);
  s.ib_devices[1].hca_type = Have<std::string>("MT4119");  // a ConnectX-5 next to ConnectX-6
  Port(s, 1).rate_gbps = Have(100.0);
  EXPECT_EQ(RunOne(&IbPortRate, s).status, CheckStatus::kPass);
}

TEST(PortRateCheck, FailsBelowTheConfiguredRate) {
  Config c;
  c.expect.rate_gbps = 400;
  Finding f = RunOne(&IbPortRate, HealthyIbNode(2), c);
  EXPECT_EQ(f.status, CheckStatus::kFail);
  EXPECT_TRUE(HasEvidenceFrom(f, "config: expect.rate_gbps"));
}

TEST(PortRateCheck, IgnoresPortsThatAreDown) {
  NodeSnapshot s = HealthyIbNode(2);
  Port(s, 1).state = Have<std::string>("1: DOWN");
  Port(s, 1).rate_gbps = Have(10.0);
  EXPECT_EQ(RunOne(&IbPortRate, s).status, CheckStatus::kPass);
}

TEST(PortRateCheck, SkipsWhenNoRateIsReadable) {
  NodeSnapshot s = HealthyIbNode(2);
  for (int i = 0; i < 2; ++i) {
    Port(s, i).rate_gbps = Unreadable<double>();
    Port(s, i).rate_text = Unreadable<std::string>();
  }
  EXPECT_EQ(RunOne(&IbPortRate, s).status, CheckStatus::kSkip);
}

TEST(PortErrorsCheck, PassesWhenAllCountersAreZero) {
  Finding f = RunOne(&IbPortErrors, HealthyIbNode(2));
  EXPECT_EQ(f.status, CheckStatus::kPass);
}

TEST(PortErrorsCheck, WarnsOnNonZeroCountersWithoutAPreviousSnapshot) {
  NodeSnapshot s = HealthyIbNode(2);
  Port(s, 1).counters["symbol_error"] = 17;
  Finding f = RunOne(&IbPortErrors, s);
  EXPECT_EQ(f.status, CheckStatus::kWarn);
  EXPECT_TRUE(HasEvidenceFrom(f, "sys/class/infiniband/mlx5_1/ports/1/counters/symbol_error"));
}

TEST(PortErrorsCheck, FailsWhenACounterRisesFasterThanTheThreshold) {
  NodeSnapshot before = HealthyIbNode(2);
  Port(before, 1).counters["link_downed"] = 3;
  NodeSnapshot now = before;
  now.taken_at_unix_ms += 600'000;           // ten minutes later
  Port(now, 1).counters["link_downed"] = 5;  // +2 in 10 min = 12/h > 10/h
  Finding f = RunOne(&IbPortErrors, now, Config{}, CheckContext{&before, nullptr});
  EXPECT_EQ(f.status, CheckStatus::kFail);
  EXPECT_NE(f.message.find("mlx5_1/1 link_downed 12/h"), std::string::npos);
}

TEST(PortErrorsCheck, PassesWhenOldCountsDoNotRise) {
  NodeSnapshot before = HealthyIbNode(2);
  Port(before, 1).counters["symbol_error"] = 1000;
  NodeSnapshot now = before;
  now.taken_at_unix_ms += 3'600'000;
  Port(now, 1).counters["symbol_error"] = 1005;  // 5/h, under the default 10/h
  EXPECT_EQ(RunOne(&IbPortErrors, now, Config{}, CheckContext{&before, nullptr}).status,
            CheckStatus::kPass);
}

TEST(PortErrorsCheck, TreatsADecreaseAsAClearNotARate) {
  NodeSnapshot before = HealthyIbNode(2);
  Port(before, 0).counters["port_rcv_errors"] = 500;
  NodeSnapshot now = before;
  now.taken_at_unix_ms += 60'000;
  Port(now, 0).counters["port_rcv_errors"] = 2;
  Finding f = RunOne(&IbPortErrors, now, Config{}, CheckContext{&before, nullptr});
  EXPECT_EQ(f.status, CheckStatus::kPass);
  EXPECT_NE(f.message.find("cleared"), std::string::npos);
}

TEST(PortErrorsCheck, IgnoresAPreviousSnapshotOfAnotherNode) {
  NodeSnapshot before = HealthyIbNode(2);
  before.node = "other";
  NodeSnapshot now = HealthyIbNode(2);
  now.taken_at_unix_ms += 60'000;
  Port(now, 0).counters["link_downed"] = 100;
  Finding f = RunOne(&IbPortErrors, now, Config{}, CheckContext{&before, nullptr});
  EXPECT_EQ(f.status, CheckStatus::kWarn);
}

TEST(PortErrorsCheck, UsesTheConfiguredThreshold) {
  NodeSnapshot before = HealthyIbNode(1);
  NodeSnapshot now = before;
  now.taken_at_unix_ms += 3'600'000;
  Port(now, 0).counters["symbol_error"] = 5;
  Config c;
  c.expect.port_error_rate_per_hour = 1;
  EXPECT_EQ(RunOne(&IbPortErrors, now, c, CheckContext{&before, nullptr}).status,
            CheckStatus::kFail);
}

// Unreadable counter files were simply left out, and the zeros of the readable ones passed.
TEST(PortErrorsCheck, WarnsInsteadOfPassingWhenSomeCountersAreUnreadable) {
  NodeSnapshot s = HealthyIbNode(2);
  Port(s, 1).counters.erase("symbol_error");
  Port(s, 1).counters.erase("link_downed");
  Port(s, 1).counters_error = "symbol_error: unreadable: EACCES; link_downed: unreadable: EACCES";
  Finding f = RunOne(&IbPortErrors, s);
  EXPECT_EQ(f.status, CheckStatus::kWarn) << f.message;
  EXPECT_NE(f.message.find("mlx5_1/1 symbol_error"), std::string::npos) << f.message;
}

TEST(PortErrorsCheck, SkipsWhenNoCounterIsReadable) {
  NodeSnapshot s = HealthyIbNode(2);
  for (int i = 0; i < 2; ++i) Port(s, i).counters.clear();
  EXPECT_EQ(RunOne(&IbPortErrors, s).status, CheckStatus::kSkip);
}

}  // namespace
}  // namespace nccl_triage
