// limits.memlock, limits.nofile, container.ipc_lock, container.host_network,
// container.rdma_devices.
#include <gtest/gtest.h>

#include "checks/builtin.h"
#include "checks/snapshot_builder.h"

namespace nccl_triage {
namespace {

using namespace testing;  // NOLINT: test helpers
using checks::ContainerHostNetwork;
using checks::ContainerIpcLock;
using checks::ContainerRdmaDevices;
using checks::LimitsMemlock;
using checks::LimitsNofile;

constexpr uint64_t kCapIpcLock = 1ull << 14;

Fact<LimitPair> Limited(uint64_t soft, uint64_t hard) {
  return Have(LimitPair{{false, soft}, {false, hard}}, "proc/self/limits");
}

TEST(MemlockCheck, PassesWhenUnlimited) {
  EXPECT_EQ(RunOne(&LimitsMemlock, HealthyIbNode()).status, CheckStatus::kPass);
}

TEST(MemlockCheck, FailsAt64KiBWithoutCapIpcLock) {
  NodeSnapshot s = HealthyIbNode();
  s.memlock = Limited(64 << 10, 64 << 10);
  s.cap_eff = Have<uint64_t>(0xa80425fb);  // docker's default set: no IPC_LOCK
  Finding f = RunOne(&LimitsMemlock, s);
  EXPECT_EQ(f.status, CheckStatus::kFail);
  EXPECT_EQ(f.message, "memlock is 64 KiB, NCCL over IB needs unlimited");
  EXPECT_TRUE(HasEvidenceFrom(f, "proc/self/limits"));
}

TEST(MemlockCheck, MentionsThatTheHardLimitAllowsRaising) {
  NodeSnapshot s = HealthyIbNode();
  s.memlock = Have(LimitPair{{false, 8 << 20}, {true, 0}});
  s.cap_eff = Have<uint64_t>(0);
  Finding f = RunOne(&LimitsMemlock, s);
  EXPECT_EQ(f.status, CheckStatus::kFail);
  EXPECT_NE(f.message.find("8 MiB"), std::string::npos);
  EXPECT_NE(f.message.find("hard limit unlimited"), std::string::npos);
}

TEST(MemlockCheck, FailsEvenWithCapIpcLockAndSaysWhy) {
  // The limit is inherited by every process; the capability is only this one's.
  NodeSnapshot s = HealthyIbNode();
  s.memlock = Limited(64 << 10, 64 << 10);
  s.cap_eff = Have<uint64_t>(kCapIpcLock);
  Finding f = RunOne(&LimitsMemlock, s);
  EXPECT_EQ(f.status, CheckStatus::kFail);
  EXPECT_NE(f.message.find("this process has CAP_IPC_LOCK"), std::string::npos);
}

TEST(MemlockCheck, PassesAboveTheConfiguredFloor) {
  NodeSnapshot s = HealthyIbNode();
  s.memlock = Limited(64ull << 30, 64ull << 30);
  s.cap_eff = Have<uint64_t>(0);
  Config c;
  c.expect.memlock_min_bytes = 32ull << 30;
  EXPECT_EQ(RunOne(&LimitsMemlock, s, c).status, CheckStatus::kPass);
  c.expect.memlock_min_bytes = 128ull << 30;
  EXPECT_EQ(RunOne(&LimitsMemlock, s, c).status, CheckStatus::kFail);
}

TEST(MemlockCheck, OnlyWarnsOnANodeWithoutRdmaHardware) {
  NodeSnapshot s = BareNode();
  s.memlock = Limited(8 << 20, 8 << 20);
  Finding f = RunOne(&LimitsMemlock, s);
  EXPECT_EQ(f.status, CheckStatus::kWarn);
  EXPECT_NE(f.message.find("no RDMA hardware"), std::string::npos);
}

TEST(MemlockCheck, SkipsWhenLimitsAreUnreadable) {
  NodeSnapshot s = HealthyIbNode();
  s.memlock = Unreadable<LimitPair>("proc/self/limits");
  Finding f = RunOne(&LimitsMemlock, s);
  EXPECT_EQ(f.status, CheckStatus::kSkip);
  EXPECT_NE(f.evidence.at(0).value.find("unreadable"), std::string::npos);
}

TEST(NofileCheck, PassesAtOneMillion) {
  EXPECT_EQ(RunOne(&LimitsNofile, HealthyIbNode()).status, CheckStatus::kPass);
}

TEST(NofileCheck, FailsAt1024) {
  NodeSnapshot s = HealthyIbNode();
  s.nofile = Limited(1024, 524288);
  Finding f = RunOne(&LimitsNofile, s);
  EXPECT_EQ(f.status, CheckStatus::kFail);
  EXPECT_NE(f.message.find("1024, below 65536"), std::string::npos);
}

TEST(NofileCheck, SkipsWhenUnreadable) {
  NodeSnapshot s = HealthyIbNode();
  s.nofile = Unreadable<LimitPair>();
  EXPECT_EQ(RunOne(&LimitsNofile, s).status, CheckStatus::kSkip);
}

TEST(IpcLockCheck, PassesWhenMemlockIsUnlimitedEvenWithoutTheCapability) {
  NodeSnapshot s = HealthyIbNode();
  s.cap_eff = Have<uint64_t>(0);
  Finding f = RunOne(&ContainerIpcLock, s);
  EXPECT_EQ(f.status, CheckStatus::kPass);
  EXPECT_NE(f.message.find("not needed"), std::string::npos);
}

TEST(IpcLockCheck, FailsWhenMemlockIsLimitedAndTheCapabilityMissing) {
  NodeSnapshot s = HealthyIbNode();
  s.memlock = Limited(8 << 20, 8 << 20);
  s.cap_eff = Have<uint64_t>(0xa80425fb);
  Finding f = RunOne(&ContainerIpcLock, s);
  EXPECT_EQ(f.status, CheckStatus::kFail);
  EXPECT_EQ(f.evidence.at(0).value, "0x00000000a80425fb");
}

TEST(IpcLockCheck, PassesWithTheCapability) {
  NodeSnapshot s = HealthyIbNode();
  s.memlock = Limited(8 << 20, 8 << 20);
  s.cap_eff = Have<uint64_t>(0xa80425fb | kCapIpcLock);
  EXPECT_EQ(RunOne(&ContainerIpcLock, s).status, CheckStatus::kPass);
}

TEST(IpcLockCheck, IsNotNeededWithoutRdmaHardware) {
  NodeSnapshot s = BareNode();
  s.memlock = Limited(8 << 20, 8 << 20);
  s.cap_eff = Have<uint64_t>(0);
  EXPECT_EQ(RunOne(&ContainerIpcLock, s).status, CheckStatus::kPass);
}

TEST(IpcLockCheck, SkipsWhenCapabilitiesAreUnreadable) {
  NodeSnapshot s = HealthyIbNode();
  s.memlock = Limited(8 << 20, 8 << 20);
  s.cap_eff = Unreadable<uint64_t>();
  EXPECT_EQ(RunOne(&ContainerIpcLock, s).status, CheckStatus::kSkip);
}

TEST(HostNetworkCheck, PassesInTheHostNamespace) {
  EXPECT_EQ(RunOne(&ContainerHostNetwork, HealthyIbNode()).status, CheckStatus::kPass);
}

TEST(HostNetworkCheck, FailsOnRoceWhenTheNetdevsAreNotInThePrivateNamespace) {
  NodeSnapshot s = HealthyRoceNode(2);
  s.self_netns = Have<std::string>("net:[4026532571]", "proc/self/ns/net");
  std::erase_if(s.interfaces, [](const NetInterface& i) { return i.name.rfind("ens", 0) == 0; });
  Finding f = RunOne(&ContainerHostNetwork, s);
  EXPECT_EQ(f.status, CheckStatus::kFail);
  EXPECT_TRUE(HasEvidenceFrom(f, "proc/1/ns/net"));
}

TEST(HostNetworkCheck, WarnsOnRoceWithTheNetdevsAttached) {
  NodeSnapshot s = HealthyRoceNode(2);
  s.self_netns = Have<std::string>("net:[4026532571]");
  EXPECT_EQ(RunOne(&ContainerHostNetwork, s).status, CheckStatus::kWarn);
}

TEST(HostNetworkCheck, WarnsOnInfiniBandInAPrivateNamespace) {
  NodeSnapshot s = HealthyIbNode(2);
  s.self_netns = Have<std::string>("net:[4026532571]");
  EXPECT_EQ(RunOne(&ContainerHostNetwork, s).status, CheckStatus::kWarn);
}

TEST(HostNetworkCheck, SkipsWhenPid1IsUnreadable) {
  NodeSnapshot s = HealthyIbNode();
  s.init_netns = Unreadable<std::string>("proc/1/ns/net");
  EXPECT_EQ(RunOne(&ContainerHostNetwork, s).status, CheckStatus::kSkip);
}

TEST(RdmaDevicesCheck, PassesWhenEveryUverbsIsPresent) {
  EXPECT_EQ(RunOne(&ContainerRdmaDevices, HealthyIbNode()).status, CheckStatus::kPass);
}

TEST(RdmaDevicesCheck, FailsWhenDevInfinibandIsMissing) {
  NodeSnapshot s = HealthyIbNode(2);
  s.dev_infiniband_present = false;
  s.dev_infiniband.clear();
  Finding f = RunOne(&ContainerRdmaDevices, s);
  EXPECT_EQ(f.status, CheckStatus::kFail);
  EXPECT_TRUE(HasEvidenceFrom(f, "dev/infiniband"));
}

TEST(RdmaDevicesCheck, FailsWhenOneUverbsIsMissing) {
  NodeSnapshot s = HealthyIbNode(2);
  std::erase(s.dev_infiniband, "uverbs1");
  Finding f = RunOne(&ContainerRdmaDevices, s);
  EXPECT_EQ(f.status, CheckStatus::kFail);
  EXPECT_NE(f.message.find("uverbs1"), std::string::npos);
}

TEST(RdmaDevicesCheck, SkipsWithoutUverbsInSysfs) {
  NodeSnapshot s = HealthyIbNode(2);
  s.uverbs.clear();
  EXPECT_EQ(RunOne(&ContainerRdmaDevices, s).status, CheckStatus::kSkip);
  EXPECT_EQ(RunOne(&ContainerRdmaDevices, BareNode()).status, CheckStatus::kSkip);
}

}  // namespace
}  // namespace nccl_triage
