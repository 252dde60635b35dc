#include "kernel/kernel_events.h"

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

namespace nccl_triage::kernel {
namespace {

std::optional<KernelEvent> Event(std::string_view line) {
  KernelRecord r;
  r.message = std::string(line);
  r.line = r.message;
  return EventFromRecord(r);
}

TEST(KernelEvents, ReadsMlx5PortStateWithDeviceBusAndPort) {
  auto e = Event("mlx5_core 0000:AB:00.0 mlx5_5: Port: 1 Link DOWN");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->kind, EventKind::kPortState);
  EXPECT_EQ(e->pci, "0000:ab:00.0");
  EXPECT_EQ(e->PortKey(), "mlx5_5/1");
  EXPECT_TRUE(e->down);
  auto up = Event("mlx5_core 0000:ab:00.0 mlx5_5: Port: 1 Link ACTIVE");
  ASSERT_TRUE(up);
  EXPECT_FALSE(up->down);
}

TEST(KernelEvents, ReadsEthernetLinkDownOfAnMlx5Netdev) {
  auto e = Event("mlx5_core 0000:17:00.0 ens1np0: Link down");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->PortKey(), "ens1np0/1");
  EXPECT_TRUE(e->down);
}

TEST(KernelEvents, ReadsModuleEventsAndTheirErrorFlag) {
  auto plugged = Event("mlx5_core 0004:01:00.0: Port module event: module 0, Cable plugged");
  ASSERT_TRUE(plugged);
  EXPECT_EQ(plugged->kind, EventKind::kModule);
  EXPECT_FALSE(plugged->error);
  EXPECT_EQ(plugged->state, "Cable plugged");
  auto error = Event(
      "mlx5_core 0000:17:00.0: Port module event[error]: module 1, Cable error, High Temperature");
  ASSERT_TRUE(error);
  EXPECT_TRUE(error->error);
  EXPECT_EQ(error->port, 1);
}

TEST(KernelEvents, ReadsAerSeverityOnTheNamedDevice) {
  auto c = Event(
      "alx 0000:07:00.0: AER: PCIe Bus Error: severity=Corrected, type=Data Link Layer, "
      "(Receiver ID)");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->kind, EventKind::kAer);
  EXPECT_EQ(c->pci, "0000:07:00.0");
  EXPECT_FALSE(c->error);
  auto u = Event(
      "nvidia 0000:44:00.0: PCIe Bus Error: severity=Uncorrected (Fatal), type=Transaction Layer");
  ASSERT_TRUE(u);
  EXPECT_TRUE(u->error);
  EXPECT_EQ(u->state, "Uncorrected (Fatal)");
  // The root port's summary line names no severity: not counted twice.
  EXPECT_FALSE(Event("pcieport 0000:00:1d.0: AER: Corrected error received: 0000:07:00.0"));
}

TEST(KernelEvents, ReadsXidCodeBusAndText) {
  auto e = Event("NVRM: Xid (PCI:0000:44:00): 79, pid='<unknown>', name=<unknown>, GPU has "
                 "fallen off the bus.");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->kind, EventKind::kXid);
  EXPECT_EQ(e->xid, 79);
  EXPECT_EQ(e->pci, "0000:44:00");
}

TEST(KernelEvents, ReadsFallenOffTheBusWithoutAnXid) {
  auto e = Event("NVRM: GPU at 0000:01:00.0 has fallen off the bus.");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->kind, EventKind::kGpuOffBus);
  EXPECT_EQ(e->pci, "0000:01:00.0");
}

TEST(KernelEvents, IgnoresUnrelatedMessages) {
  EXPECT_FALSE(Event("EXT4-fs (md127p3): re-mounted r/w. Quota mode: none."));
  EXPECT_FALSE(Event("workqueue: ib_cache_event_task [ib_core] hogged CPU"));
  EXPECT_FALSE(Event("Port: Link "));
}

TEST(KernelEvents, RuleNamesAreUnique) {
  std::set<std::string_view> names;
  for (const KernelRule& r : KernelRules()) EXPECT_TRUE(names.insert(r.name).second) << r.name;
}

TEST(KernelEvents, FindsEveryEventOfThePublicFixtures) {
  auto read = [](const char* name) {
    std::ifstream in(std::string(NCCL_TRIAGE_SOURCE_DIR) + "/tests/kernel/fixtures/" + name);
    std::stringstream ss;
    ss << in.rdbuf();
    return EventsFromRecords(ParseDmesgText(ss.str()));
  };
  auto xid = read("xid79.dmesg");
  ASSERT_EQ(xid.size(), 3u);  // Xid 79, the multi-line off-bus record, Xid 13
  EXPECT_EQ(xid[1].kind, EventKind::kGpuOffBus);
  EXPECT_EQ(xid[1].pci, "0000:b3:00.0");
  auto ports = read("mlx5_ports.journal");
  EXPECT_EQ(ports.size(), 9u);
  auto module_aer = read("module_aer.dmesg");
  EXPECT_EQ(module_aer.size(), 4u);
}

}  // namespace
}  // namespace nccl_triage::kernel
