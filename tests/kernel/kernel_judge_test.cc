#include "kernel/kernel_judge.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "core/ids.h"
#include "kernel/xid_table.h"

namespace nccl_triage::kernel {
namespace {

std::vector<KernelEvent> Events(std::string_view dmesg) {
  return EventsFromRecords(ParseDmesgText(dmesg));
}

// One mlx5 port-state line of mlx5_0 port 1, newline included.
std::string Port(const std::string& state) {
  return "mlx5_core 0000:17:00.0 mlx5_0: Port: 1 Link " + state + "\n";
}

std::vector<Finding> Of(const std::vector<Finding>& all, CauseId id) {
  std::vector<Finding> out;
  std::copy_if(all.begin(), all.end(), std::back_inserter(out),
               [&](const Finding& f) { return id == f.check; });
  return out;
}

KernelDevices Devices() {
  KernelDevices d;
  d.known = true;
  d.hcas = {"0000:17:00.0"};
  d.gpus = {"0000:44:00.0"};
  return d;
}

TEST(KernelJudge, PassesEveryIdOnAQuietLog) {
  auto f = JudgeKernelEvents(Events("[ 1.0] nothing to see\n"), Devices(), {});
  ASSERT_EQ(f.size(), 6u);
  for (const auto& x : f) EXPECT_EQ(x.status, CheckStatus::kPass) << x.check;
}

TEST(KernelJudge, FailsAPortThatWentDownThreeTimesWithinAnHour) {
  auto f = Of(JudgeKernelEvents(Events("[ 10.0] " + Port("DOWN") + "[ 20.0] " + Port("ACTIVE") +
                                       "[ 900.0] " + Port("DOWN") + "[ 1800.0] " + Port("DOWN")),
                                Devices(), {}),
              ids::kKernelLinkFlap);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].status, CheckStatus::kFail);
  EXPECT_EQ(f[0].fault_class, FaultClass::kIbResource);
  EXPECT_NE(f[0].message.find("mlx5_0/1"), std::string::npos);
  EXPECT_NE(f[0].evidence.back().value.find("Link DOWN"), std::string::npos);
}

TEST(KernelJudge, WarnsWhenTheDownsAreSpreadOverMoreThanAnHour) {
  auto f = Of(JudgeKernelEvents(
                  Events("[ 10.0] " + Port("DOWN") + "[ 4000.0] " + Port("DOWN") + "[ 8000.0] " +
                         Port("DOWN")),
                  Devices(), {}),
              ids::kKernelLinkFlap);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].status, CheckStatus::kWarn);
}

TEST(KernelJudge, ClassifiesXidAsAGpuFaultNotANetworkOne) {
  auto all = JudgeKernelEvents(
      Events("[ 5.0] NVRM: Xid (PCI:0000:44:00): 79, GPU has fallen off the bus.\n"
             "[ 6.0] NVRM: Xid (PCI:0000:44:00): 13, pid=1, Graphics SM Warp Exception\n"),
      Devices(), {});
  auto xid = Of(all, ids::kKernelXid);
  ASSERT_EQ(xid.size(), 2u);
  EXPECT_EQ(xid[0].status, CheckStatus::kWarn);  // 13: the application's fault (sorted by code)
  EXPECT_EQ(xid[1].status, CheckStatus::kFail);  // 79
  EXPECT_EQ(xid[1].fault_class, FaultClass::kUnknown);
  EXPECT_NE(xid[1].message.find("fallen off the bus"), std::string::npos);
  auto off = Of(all, ids::kKernelGpuOffBus);
  ASSERT_EQ(off.size(), 1u);
  EXPECT_EQ(off[0].status, CheckStatus::kFail);
}

TEST(KernelJudge, CarriesTheWallTimeOfAFindingsLastEvent) {
  auto events = Events("[ 5.0] NVRM: Xid (PCI:0000:44:00): 48, pid=1, DBE\n"
                       "[ 6.0] NVRM: Xid (PCI:0000:44:00): 48, pid=1, DBE\n");
  ASSERT_EQ(events.size(), 2u);
  events[0].wall_ms = 1'739'265'240'000;  // 2025-02-11T09:14:00Z
  events[1].wall_ms = 1'739'265'300'000;  // a minute later
  auto xid = Of(JudgeKernelEvents(events, Devices(), {}), ids::kKernelXid);
  ASSERT_EQ(xid.size(), 1u);
  auto at = std::find_if(xid[0].evidence.begin(), xid[0].evidence.end(),
                         [](const Evidence& e) { return e.key == kLastEventAtKey; });
  ASSERT_NE(at, xid[0].evidence.end());
  EXPECT_EQ(at->value, "2025-02-11T09:15:00Z");
  // Lines without a wall time give no time at all, not a wrong one.
  auto untimed = Of(JudgeKernelEvents(Events("[ 5.0] NVRM: Xid (PCI:0000:44:00): 48, DBE\n"),
                                      Devices(), {}),
                    ids::kKernelXid);
  ASSERT_EQ(untimed.size(), 1u);
  for (const auto& e : untimed[0].evidence) EXPECT_NE(e.key, kLastEventAtKey);
}

TEST(KernelJudge, JoinsAerWithTheSnapshotsHcasAndGpus) {
  auto all = JudgeKernelEvents(
      Events("[ 1.0] mlx5_core 0000:17:00.0: AER: PCIe Bus Error: severity=Corrected, type=x\n"
             "[ 2.0] nvidia 0000:44:00.0: PCIe Bus Error: severity=Uncorrected (Fatal), type=x\n"
             "[ 3.0] alx 0000:07:00.0: AER: PCIe Bus Error: severity=Corrected, type=x\n"),
      Devices(), {});
  auto hca = Of(all, ids::kKernelHcaAer);
  ASSERT_EQ(hca.size(), 1u);
  EXPECT_EQ(hca[0].status, CheckStatus::kWarn);
  EXPECT_EQ(hca[0].fault_class, FaultClass::kIbResource);
  auto gpu = Of(all, ids::kKernelGpuAer);
  ASSERT_EQ(gpu.size(), 1u);
  EXPECT_EQ(gpu[0].status, CheckStatus::kFail);
  EXPECT_EQ(gpu[0].fault_class, FaultClass::kUnknown);
}

TEST(KernelJudge, ReportsEveryAerAsAnHcasWhenTheDevicesAreUnknown) {
  auto hca = Of(JudgeKernelEvents(
                    Events("[ 3.0] alx 0000:07:00.0: AER: PCIe Bus Error: severity=Corrected\n"),
                    KernelDevices{}, {}),
                ids::kKernelHcaAer);
  ASSERT_EQ(hca.size(), 1u);
  EXPECT_EQ(hca[0].status, CheckStatus::kWarn);
}

TEST(KernelJudge, FailsAModuleErrorAndWarnsAnUnplug) {
  auto f = Of(JudgeKernelEvents(
                  Events("[ 1.0] mlx5_core 0000:17:00.0: Port module event: module 0, Cable "
                         "unplugged\n"
                         "[ 2.0] mlx5_core 0000:17:00.1: Port module event[error]: module 1, "
                         "Cable error, Bus stuck (I2C or data shorted)\n"
                         "[ 3.0] mlx5_core 0000:17:00.2: Port module event: module 2, Cable "
                         "plugged\n"),
                  Devices(), {}),
              ids::kKernelCableModule);
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].status, CheckStatus::kWarn);
  EXPECT_EQ(f[1].status, CheckStatus::kFail);
}

TEST(KernelJudge, CountsOnlyEventsInsideTheWindow) {
  KernelJudgeOptions window;
  window.since_wall_ms = UnixMsFromCivil(2025, 8, 29, 12, 0, 0);
  window.until_wall_ms = UnixMsFromCivil(2025, 8, 29, 12, 30, 0);
  auto all = JudgeKernelEvents(
      Events("[Fri Aug 29 11:00:00 2025] NVRM: Xid (PCI:0000:44:00): 79, GPU has fallen off\n"
             "[Fri Aug 29 12:03:00 2025] NVRM: Xid (PCI:0000:44:00): 48, DBE\n"),
      Devices(), window);
  auto xid = Of(all, ids::kKernelXid);
  ASSERT_EQ(xid.size(), 1u);
  EXPECT_NE(xid[0].message.find("Xid 48"), std::string::npos);
  EXPECT_EQ(Of(all, ids::kKernelGpuOffBus)[0].status, CheckStatus::kPass);
}

TEST(KernelJudge, SkipsEveryIdWhenTheLogCannotBeRead) {
  auto f = KernelLogSkipped("cannot open dev/kmsg: Permission denied");
  ASSERT_EQ(f.size(), 6u);
  for (const auto& x : f) EXPECT_EQ(x.status, CheckStatus::kSkip);
}

TEST(KernelJudge, DevicesFromSnapshotFindsHcasAndGpus) {
  NodeSnapshot s;
  s.pci_devices.push_back({.bdf = "0000:17:00.0", .vendor = 0x15b3, .class_code = 0x020700});
  s.pci_devices.push_back({.bdf = "0000:44:00.0", .vendor = 0x10de, .class_code = 0x030200});
  s.pci_devices.push_back({.bdf = "0000:05:00.0", .vendor = 0x8086, .class_code = 0x020000});
  auto d = DevicesFromSnapshot(s);
  EXPECT_TRUE(d.known);
  EXPECT_EQ(d.hcas, std::vector<std::string>{"0000:17:00.0"});
  EXPECT_EQ(d.gpus, std::vector<std::string>{"0000:44:00.0"});
}

TEST(XidTable, NamesFallenOffTheBusAndKnowsUnlistedCodesAreAbsent) {
  ASSERT_NE(FindXid(79), nullptr);
  EXPECT_EQ(FindXid(79)->action, XidAction::kRebootNode);
  EXPECT_EQ(FindXid(13)->action, XidAction::kApplication);
  EXPECT_EQ(FindXid(9999), nullptr);
}

TEST(KernelCounts, CountsDownsPerPortAndXidsPerCode) {
  KernelCounts c;
  for (const auto& e : Events("[ 1.0] mlx5_core 0000:17:00.0 mlx5_0: Port: 1 Link DOWN\n"
                              "[ 2.0] mlx5_core 0000:17:00.0 mlx5_0: Port: 1 Link ACTIVE\n"
                              "[ 3.0] mlx5_core 0000:17:00.0 mlx5_0: Port: 1 Link DOWN\n"
                              "[ 4.0] NVRM: Xid (PCI:0000:44:00): 48, DBE\n")) {
    c.Add(e);
  }
  EXPECT_EQ(c.link_downs["mlx5_0/1"], 2);
  EXPECT_EQ(c.xids[48], 1);
}

}  // namespace
}  // namespace nccl_triage::kernel
