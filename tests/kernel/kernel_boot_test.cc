// Kernel-log lines of earlier boots are not counted, and a flapped port is released once it has
// been up and stable.
#include <gtest/gtest.h>

#include <algorithm>

#include "core/ids.h"
#include "kernel/kernel_judge.h"
#include "kernel/kernel_log.h"

namespace nccl_triage::kernel {
namespace {

const std::string kDown = "mlx5_core 0000:17:00.0 mlx5_0: Port: 1 Link DOWN\n";

std::vector<KernelEvent> Events(std::string_view text) {
  return EventsFromRecords(ParseDmesgText(text));
}

Finding LinkFlap(const std::vector<KernelEvent>& events, const KernelJudgeOptions& o,
                 KernelDevices d = {}) {
  d.known = true;
  d.hcas = {"0000:17:00.0"};
  for (const Finding& f : JudgeKernelEvents(events, d, o)) {
    if (f.check == ids::kKernelLinkFlap) return f;
  }
  return {};
}

std::string EvidenceOf(const Finding& f, const std::string& key) {
  for (const auto& e : f.evidence) {
    if (e.key == key) return e.value;
  }
  return "";
}

// 2025-08-29T20:00:00Z
constexpr int64_t kBootMs = 1756497600000;

TEST(DmesgText, MarksLinesAboveAJournalRebootLineAsAnEarlierBoot) {
  auto r = ParseDmesgText("Aug 29 19:00:00 gpu-1 kernel: " + kDown + "-- Reboot --\n" +
                          "Aug 29 20:01:00 gpu-1 kernel: " + kDown);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_NE(r[0].earlier_boot.find("Reboot"), std::string::npos);
  EXPECT_TRUE(r[1].earlier_boot.empty());
}

TEST(DmesgText, TakesTheBootIdOfJournalBootLines) {
  auto r = ParseDmesgText("-- Boot 0f3c6e1d2b7a4c3e9d8f7a6b5c4d3e2f --\n"
                          "Aug 29 19:00:00 gpu-1 kernel: " + kDown +
                          "-- Boot 11112222333344445555666677778888 --\n"
                          "Aug 29 20:01:00 gpu-1 kernel: " + kDown);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].boot_id, "0f3c6e1d2b7a4c3e9d8f7a6b5c4d3e2f");
  EXPECT_EQ(r[1].boot_id, "11112222333344445555666677778888");
}

TEST(DmesgText, MarksLinesBeforeKernelTimestampsRestartAsAnEarlierBoot) {
  auto r = ParseDmesgText("[ 5000.0] " + kDown + "[ 5000.5] x\n[ 5000.2] y\n[    3.0] " + kDown);
  ASSERT_EQ(r.size(), 4u);
  EXPECT_FALSE(r[0].earlier_boot.empty());
  EXPECT_FALSE(r[2].earlier_boot.empty());  // a little back across CPUs is the same boot
  EXPECT_TRUE(r[3].earlier_boot.empty());
  EXPECT_TRUE(ParseDmesgText("[ 1.0] " + kDown + "[ 2.0] " + kDown)[0].earlier_boot.empty());
}

// A journal that spans a reboot counted the downs before it against the running boot.
TEST(KernelJudge, DoesNotCountEventsOfAnotherJournalBoot) {
  KernelJudgeOptions o;
  o.boot.boot_id = "11112222-3333-4444-5555-666677778888";  // the kernel's form, with dashes
  const std::string text = "-- Boot 0f3c6e1d2b7a4c3e9d8f7a6b5c4d3e2f --\n"
                           "Aug 29 19:00:00 gpu-1 kernel: " + kDown +
                           "Aug 29 19:00:10 gpu-1 kernel: " + kDown +
                           "Aug 29 19:00:20 gpu-1 kernel: " + kDown +
                           "-- Boot 11112222333344445555666677778888 --\n";
  Finding f = LinkFlap(Events(text), o);
  EXPECT_EQ(f.status, CheckStatus::kPass) << f.message;
  EXPECT_NE(EvidenceOf(f, "kernel log events not counted").find("3 of an earlier boot"),
            std::string::npos)
      << EvidenceOf(f, "kernel log events not counted");
  // The same lines under this boot's id count.
  f = LinkFlap(Events("-- Boot 11112222333344445555666677778888 --\n" +
                      text.substr(text.find("Aug"))),
               o);
  EXPECT_EQ(f.status, CheckStatus::kFail) << f.message;
}

TEST(KernelJudge, DoesNotCountEventsLoggedBeforeThisBootBegan) {
  KernelJudgeOptions o;
  o.boot.boot_wall_ms = kBootMs;
  o.boot.now_wall_ms = kBootMs + 600'000;
  // dmesg -T of the last boot, saved and judged after the reboot.
  Finding f = LinkFlap(Events("2025-08-29T19:10:00,000000+00:00 " + kDown +
                              "2025-08-29T19:10:10,000000+00:00 " + kDown +
                              "2025-08-29T19:10:20,000000+00:00 " + kDown),
                       o);
  EXPECT_EQ(f.status, CheckStatus::kPass) << f.message;
  EXPECT_NE(EvidenceOf(f, "kernel log events not counted").find("before this boot began"),
            std::string::npos);
  // After the boot began they count.
  f = LinkFlap(Events("2025-08-29T20:01:00,000000+00:00 " + kDown), o);
  EXPECT_EQ(f.status, CheckStatus::kWarn) << f.message;
}

TEST(KernelJudge, DoesNotCountEventsWhoseTimeSinceBootIsPastThisBootsUptime) {
  KernelJudgeOptions o;
  o.boot.boot_wall_ms = kBootMs;
  o.boot.now_wall_ms = kBootMs + 600'000;  // up 600 s
  Finding f = LinkFlap(Events("[ 90000.0] " + kDown), o);
  EXPECT_EQ(f.status, CheckStatus::kPass) << f.message;
  EXPECT_NE(EvidenceOf(f, "kernel log events not counted").find("600 s old"), std::string::npos)
      << EvidenceOf(f, "kernel log events not counted");
  EXPECT_EQ(LinkFlap(Events("[ 500.0] " + kDown), o).status, CheckStatus::kWarn);
}

// kernel.link_flap failed for a day after three downs, however long the port was up since.
TEST(KernelJudge, ReleasesAFlappedPortOnceItIsUpAndStable) {
  KernelJudgeOptions o;
  o.flap_stable_ms = 600'000;
  const auto events = Events("2025-08-29T20:01:00,000000+00:00 " + kDown +
                             "2025-08-29T20:01:10,000000+00:00 " + kDown +
                             "2025-08-29T20:01:20,000000+00:00 " + kDown);
  const int64_t last_down = kBootMs + 80'000;
  KernelDevices up;
  up.ports_up = {"mlx5_0/1"};

  o.boot.now_wall_ms = last_down + 300'000;  // 5 min: not yet stable
  Finding f = LinkFlap(events, o, up);
  EXPECT_EQ(f.status, CheckStatus::kFail) << f.message;
  EXPECT_EQ(EvidenceOf(f, "mlx5_0/1 counted").rfind("yes: last down 300 s ago", 0), 0u)
      << EvidenceOf(f, "mlx5_0/1 counted");

  o.boot.now_wall_ms = last_down + 600'000;  // stable for 10 min
  f = LinkFlap(events, o, up);
  EXPECT_EQ(f.status, CheckStatus::kPass) << f.message;
  EXPECT_NE(f.message.find("released"), std::string::npos) << f.message;
  EXPECT_EQ(EvidenceOf(f, "mlx5_0/1 counted").rfind("no: released", 0), 0u);

  // A port that is not up now is not released, however old its downs.
  f = LinkFlap(events, o);
  EXPECT_EQ(f.status, CheckStatus::kFail) << f.message;
  EXPECT_EQ(EvidenceOf(f, "mlx5_0/1 counted"), "yes: the port is not up now");
}

TEST(KernelJudge, DevicesFromSnapshotKnowsWhichPortsAreUp) {
  NodeSnapshot s;
  IbDevice d;
  d.name = "mlx5_0";
  IbPort p;
  p.num = 1;
  p.state = {std::string("4: ACTIVE"), "t", ""};
  p.phys_state = {std::string("5: LinkUp"), "t", ""};
  d.ports.push_back(p);
  p.num = 2;
  p.state = {std::string("1: DOWN"), "t", ""};
  d.ports.push_back(p);
  s.ib_devices.push_back(d);
  NetInterface n;
  n.name = "ens1np0";
  n.operstate = {std::string("up"), "t", ""};
  s.interfaces.push_back(n);
  EXPECT_EQ(DevicesFromSnapshot(s).ports_up,
            (std::set<std::string>{"ens1np0/1", "mlx5_0/1"}));
}

}  // namespace
}  // namespace nccl_triage::kernel
