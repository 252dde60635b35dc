#include "state/snapshot_summary.h"

#include <gtest/gtest.h>

#include <cmath>

namespace nccl_triage {
namespace {

IbPort Port(int num, std::string state, std::string phys, double gbps) {
  IbPort p;
  p.num = num;
  p.state.value = std::move(state);
  p.phys_state.value = std::move(phys);
  p.rate_gbps.value = gbps;
  p.link_layer.value = "InfiniBand";
  return p;
}

TEST(ParseNumberedState, SplitsKernelNumberAndName) {
  int id = 0;
  std::string name;
  ASSERT_TRUE(ParseNumberedState("4: ACTIVE\n", &id, &name));
  EXPECT_EQ(id, 4);
  EXPECT_EQ(name, "ACTIVE");
  ASSERT_TRUE(ParseNumberedState("7: Phy Test", &id, &name));
  EXPECT_EQ(name, "Phy Test");
  EXPECT_FALSE(ParseNumberedState("ACTIVE", &id, &name));
  EXPECT_FALSE(ParseNumberedState("x: ACTIVE", &id, &name));
  EXPECT_FALSE(ParseNumberedState("4:", &id, &name));
}

TEST(ParseTmpfsSize, UnderstandsSuffixesAndPercent) {
  EXPECT_EQ(ParseTmpfsSize("65536k", std::nullopt), 65536.0 * 1024);
  EXPECT_EQ(ParseTmpfsSize("1g", std::nullopt), 1024.0 * 1024 * 1024);
  EXPECT_EQ(ParseTmpfsSize("4096", std::nullopt), 4096.0);
  EXPECT_EQ(ParseTmpfsSize("50%", 1000), 500.0);
  EXPECT_FALSE(ParseTmpfsSize("50%", std::nullopt));
  EXPECT_FALSE(ParseTmpfsSize("lots", std::nullopt));
  EXPECT_FALSE(ParseTmpfsSize("1kb", std::nullopt));
}

TEST(Summarize, ConvertsPortsLimitsAndShm) {
  NodeSnapshot s;
  s.node = "n1";
  IbDevice d1{.name = "mlx5_1"};
  d1.ports.push_back(Port(1, "1: DOWN", "2: Polling", 100));
  IbDevice d0{.name = "mlx5_0"};
  d0.ports.push_back(Port(1, "4: ACTIVE", "5: LinkUp", 200));
  d0.ports[0].counters = {{"symbol_error", 3}, {"port_xmit_data", 99}, {"link_downed", 1}};
  s.ib_devices = {d1, d0};
  s.memlock.value = LimitPair{{false, 65536}, {false, 65536}};
  s.mounts.push_back({"/dev/shm", "tmpfs", "shm", "rw,size=65536k"});
  SnapshotSummary sum = Summarize(s, ExpectConfig{});
  ASSERT_EQ(sum.ports.size(), 2u);
  EXPECT_EQ(sum.ports[0].device, "mlx5_0");  // sorted
  EXPECT_EQ(sum.ports[0].state, "ACTIVE");
  EXPECT_EQ(sum.ports[0].state_id, 4);
  EXPECT_EQ(sum.ports[0].phys_state, "LinkUp");
  EXPECT_EQ(*sum.ports[0].rate_bytes_per_second, 25e9);
  // Only error counters, not data counters.
  EXPECT_EQ(sum.ports[0].error_counters.size(), 2u);
  EXPECT_EQ(sum.ports[0].error_counters.at("symbol_error"), 3u);
  EXPECT_EQ(sum.ports[1].phys_state, "Polling");
  // The expectation is the best port, not the degraded one.
  EXPECT_EQ(*sum.expected_ib_bytes_per_second, 25e9);
  EXPECT_EQ(*sum.memlock_limit_bytes, 65536.0);
  EXPECT_EQ(*sum.shm_size_bytes, 65536.0 * 1024);
}

TEST(Summarize, UnlimitedMemlockIsInfinityAndConfiguredRateWins) {
  NodeSnapshot s;
  s.memlock.value = LimitPair{{true, 0}, {true, 0}};
  IbDevice d{.name = "mlx5_0"};
  d.ports.push_back(Port(1, "4: ACTIVE", "5: LinkUp", 100));
  s.ib_devices = {d};
  s.mem_total_bytes.value = 1000;
  s.mounts.push_back({"/dev/shm", "tmpfs", "tmpfs", "rw,inode64"});
  ExpectConfig e;
  e.rate_gbps = 400;
  SnapshotSummary sum = Summarize(s, e);
  EXPECT_TRUE(std::isinf(*sum.memlock_limit_bytes));
  EXPECT_EQ(*sum.expected_ib_bytes_per_second, 50e9);
  EXPECT_EQ(*sum.shm_size_bytes, 500.0);  // tmpfs default: half of RAM
}

TEST(Summarize, UnreadableFactsLeaveValuesUnset) {
  NodeSnapshot s;
  IbDevice d{.name = "mlx5_0"};
  IbPort p;
  p.num = 1;
  p.state.error = "missing";
  p.phys_state.value = "garbage";
  d.ports.push_back(p);
  s.ib_devices = {d};
  s.memlock.error = "unreadable";
  SnapshotSummary sum = Summarize(s, ExpectConfig{});
  ASSERT_EQ(sum.ports.size(), 1u);
  EXPECT_EQ(sum.ports[0].state, "");
  EXPECT_EQ(sum.ports[0].phys_state, "");
  EXPECT_FALSE(sum.ports[0].rate_bytes_per_second);
  EXPECT_FALSE(sum.memlock_limit_bytes);
  EXPECT_FALSE(sum.expected_ib_bytes_per_second);
  EXPECT_FALSE(sum.shm_size_bytes);
}

}  // namespace
}  // namespace nccl_triage
