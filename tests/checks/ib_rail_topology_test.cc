// ib.rail_topology and the rail table it judges (core/rails.h).
#include <gtest/gtest.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "checks/builtin.h"
#include "checks/snapshot_builder.h"
#include "core/rails.h"

namespace nccl_triage {
namespace {

using namespace testing;  // NOLINT: test helpers
using checks::IbRailTopology;

std::string Bridge(unsigned bus, unsigned dev, unsigned fn = 0) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "0000:%02x:%02x.%u", bus & 0xffu, dev & 0x1fu, fn & 0x7u);
  return buf;
}

PciDevice& Pci(NodeSnapshot& s, const std::string& bdf) {
  for (auto& d : s.pci_devices) {
    if (d.bdf == bdf) return d;
  }
  ADD_FAILURE() << "no PCI device " << bdf;
  s.pci_devices.push_back({bdf, 0, 0, 0});
  return s.pci_devices.back();
}

// Puts `bdf` below root port <root>:01.1 of pci0000:<root> and, when `sw` >= 0, below PCIe switch
// number `sw` (upstream port <0xa0 + sw>:00.0, one downstream port per function).
void Place(NodeSnapshot& s, const std::string& bdf, unsigned root, int sw, int numa,
           unsigned port) {
  PciDevice& d = Pci(s, bdf);
  char rc[32];
  std::snprintf(rc, sizeof(rc), "pci0000:%02x", root & 0xffu);
  d.path = {rc, Bridge(root, 1, 1)};
  if (sw >= 0) {
    d.path.push_back(Bridge(0xa0 + static_cast<unsigned>(sw), 0));
    d.path.push_back(Bridge(0xa1 + static_cast<unsigned>(sw), port));
  }
  d.path.push_back(bdf);
  d.numa_node = Have(numa);
}

// A DGX-like node: `hcas` HCAs and 8 GPUs, HCA i on switch i with GPU i (NUMA node i / 2).
NodeSnapshot RailNode(int hcas = 8) {
  NodeSnapshot s = HealthyIbNode(hcas);
  const auto gpus = GpuBusIds(s);
  for (int i = 0; i < hcas; ++i) {
    Place(s, s.ib_devices[static_cast<size_t>(i)].pci_bdf, 0, i, i / 2, 0);
    Place(s, gpus[static_cast<size_t>(i)], 0, i, i / 2, 8);
  }
  return s;
}

TEST(RailTable, PairsEachHcaWithTheGpuOnItsSwitch) {
  NodeSnapshot s = RailNode(8);
  // Reverse the GPU order on the switches: the pairing follows the PCIe tree, not the names.
  const auto gpus = GpuBusIds(s);
  for (int i = 0; i < 8; ++i) Place(s, gpus[static_cast<size_t>(i)], 0, 7 - i, (7 - i) / 2, 8);
  const auto rails = RailTable(s);
  ASSERT_EQ(rails.size(), 8u);
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(rails[static_cast<size_t>(i)].index, i);
    EXPECT_EQ(rails[static_cast<size_t>(i)].device, "mlx5_" + std::to_string(i));
    EXPECT_EQ(rails[static_cast<size_t>(i)].gpu, 7 - i);
    EXPECT_EQ(rails[static_cast<size_t>(i)].affinity, RailAffinity::kPcieSwitch);
    EXPECT_EQ(rails[static_cast<size_t>(i)].numa_node, i / 2);
  }
  EXPECT_EQ(rails[0].state, "ACTIVE");
  EXPECT_TRUE(rails[0].active);
  ASSERT_TRUE(rails[0].rate_gbps.has_value());
  EXPECT_EQ(*rails[0].rate_gbps, 200.0);
}

TEST(RailTable, TwoHcasAndTwoGpusOnOneSwitchPairOneToOne) {
  NodeSnapshot s = HealthyIbNode(2);
  const auto gpus = GpuBusIds(s);
  Place(s, s.ib_devices[0].pci_bdf, 0, 0, 0, 0);
  Place(s, s.ib_devices[1].pci_bdf, 0, 0, 0, 1);
  Place(s, gpus[0], 0, 0, 0, 2);
  Place(s, gpus[1], 0, 0, 0, 3);
  const auto rails = RailTable(s);
  ASSERT_EQ(rails.size(), 2u);
  EXPECT_EQ(rails[0].gpu, 0);
  EXPECT_EQ(rails[1].gpu, 1);
}

TEST(RailTable, FallsBackToTheNumaNodeWithoutASharedSwitch) {
  NodeSnapshot s = HealthyIbNode(1);
  const auto gpus = GpuBusIds(s);
  Place(s, s.ib_devices[0].pci_bdf, 0x40, -1, 1, 0);
  for (size_t g = 0; g < gpus.size(); ++g) {
    Place(s, gpus[g], g == 5 ? 0x60 : 0x00, static_cast<int>(g), g == 5 ? 1 : 0, 0);
  }
  const auto rails = RailTable(s);
  ASSERT_EQ(rails.size(), 1u);
  EXPECT_EQ(rails[0].gpu, 5);
  EXPECT_EQ(rails[0].affinity, RailAffinity::kNuma);
}

TEST(RailTable, AffinityIsUnknownWithoutPcieAndNumaFacts) {
  const auto rails = RailTable(HealthyIbNode(2));
  ASSERT_EQ(rails.size(), 2u);
  EXPECT_EQ(rails[0].affinity, RailAffinity::kUnknown);
  EXPECT_EQ(ToJson(rails[0])["affinity"], "unknown");
  EXPECT_EQ(ToJson(rails[0])["device"], "mlx5_0");
}

TEST(RailTopologyCheck, PassesWhenEveryGpuHasAnActiveHcaOnItsSwitch) {
  Finding f = RunOne(&IbRailTopology, RailNode(8));
  EXPECT_EQ(f.status, CheckStatus::kPass) << f.message;
  EXPECT_NE(f.message.find("8 rail(s), 8 with a GPU"), std::string::npos) << f.message;
  EXPECT_TRUE(HasEvidenceFrom(f, "sys/bus/pci/devices/"));
}

TEST(RailTopologyCheck, WarnsWhenAGpusClosestHcaIsDown) {
  NodeSnapshot s = RailNode(8);
  s.ib_devices[5].ports[0].state = Have<std::string>("1: DOWN");
  s.ib_devices[5].ports[0].phys_state = Have<std::string>("2: Polling");
  Finding f = RunOne(&IbRailTopology, s);
  EXPECT_EQ(f.status, CheckStatus::kWarn);
  EXPECT_NE(f.message.find("GPU 5"), std::string::npos) << f.message;
  EXPECT_NE(f.message.find("mlx5_5/1 DOWN"), std::string::npos) << f.message;
}

TEST(RailTopologyCheck, WarnsWhenAnHcaHasNoGpuOnItsSwitch) {
  NodeSnapshot s = RailNode(8);
  // mlx5_2 in a slot of another root complex, away from GPU 2.
  Place(s, s.ib_devices[2].pci_bdf, 0x80, 20, 1, 0);
  Finding f = RunOne(&IbRailTopology, s);
  EXPECT_EQ(f.status, CheckStatus::kWarn);
  EXPECT_NE(f.message.find("rail 2 (mlx5_2/1) has no GPU on its PCIe switch"), std::string::npos)
      << f.message;
  EXPECT_NE(f.message.find("GPU 2 (" + GpuBusIds(s)[2] + ") has no HCA on its PCIe switch"),
            std::string::npos)
      << f.message;
}

TEST(RailTopologyCheck, DoesNotJudgeSwitchPairingOnANodeWithoutSwitches) {
  NodeSnapshot s = HealthyIbNode(2);
  for (const auto& d : s.ib_devices) Place(s, d.pci_bdf, 0, -1, 0, 0);
  for (const auto& g : GpuBusIds(s)) Place(s, g, 0x40, -1, 0, 0);
  Finding f = RunOne(&IbRailTopology, s);
  EXPECT_EQ(f.status, CheckStatus::kPass) << f.message;
}

TEST(RailTopologyCheck, SkipsWhenThePlacementIsUnreadable) {
  NodeSnapshot s = HealthyIbNode(2);
  s.pci_devices[0].path_error = "not a link";
  Finding f = RunOne(&IbRailTopology, s);
  EXPECT_EQ(f.status, CheckStatus::kSkip);
  EXPECT_NE(f.message.find("PCIe placement"), std::string::npos);
}

TEST(RailTopologyCheck, SkipsWithoutGpusOrHcas) {
  EXPECT_EQ(RunOne(&IbRailTopology, BareNode()).status, CheckStatus::kSkip);
  NodeSnapshot s = HealthyIbNode(2);
  s.gpus.clear();
  std::erase_if(s.pci_devices, [](const PciDevice& d) { return d.vendor == 0x10de; });
  Finding f = RunOne(&IbRailTopology, s);
  EXPECT_EQ(f.status, CheckStatus::kSkip);
  EXPECT_NE(f.message.find("no GPU"), std::string::npos);
}

}  // namespace
}  // namespace nccl_triage
