// security.lsm, platform.arch, shm.size, net.socket_ifname.
#include <gtest/gtest.h>

#include "checks/builtin.h"
#include "checks/snapshot_builder.h"

namespace nccl_triage {
namespace {

using namespace testing;  // NOLINT: test helpers
using checks::NetSocketIfname;
using checks::PlatformArch;
using checks::SecurityLsm;
using checks::ShmSize;

TEST(LsmCheck, PassesWhenNothingConfines) {
  EXPECT_EQ(RunOne(&SecurityLsm, HealthyIbNode()).status, CheckStatus::kPass);
}

TEST(LsmCheck, WarnsOnAnEnforcingAppArmorProfile) {
  NodeSnapshot s = HealthyIbNode();
  s.apparmor_profile =
      Have<std::string>("cri-containerd.apparmor.d (enforce)\n", "proc/self/attr/current");
  Finding f = RunOne(&SecurityLsm, s);
  EXPECT_EQ(f.status, CheckStatus::kWarn);
  EXPECT_NE(f.message.find("cri-containerd.apparmor.d (enforce)"), std::string::npos);
  EXPECT_TRUE(HasEvidenceFrom(f, "proc/self/attr/current"));
}

TEST(LsmCheck, WarnsOnEnforcingSelinuxInAContainerDomain) {
  NodeSnapshot s = HealthyIbNode();
  s.selinux_enforce = Have(1, "sys/fs/selinux/enforce");
  s.apparmor_profile = Have<std::string>("system_u:system_r:container_t:s0:c4,c9");
  Finding f = RunOne(&SecurityLsm, s);
  EXPECT_EQ(f.status, CheckStatus::kWarn);
  EXPECT_NE(f.message.find("container_t"), std::string::npos);
}

TEST(LsmCheck, PassesForAPrivilegedSelinuxDomain) {
  NodeSnapshot s = HealthyIbNode();
  s.selinux_enforce = Have(1);
  s.apparmor_profile = Have<std::string>("system_u:system_r:spc_t:s0");
  EXPECT_EQ(RunOne(&SecurityLsm, s).status, CheckStatus::kPass);
}

TEST(LsmCheck, WarnsOnASeccompFilter) {
  NodeSnapshot s = HealthyIbNode();
  s.seccomp_mode = Have(2);
  EXPECT_EQ(RunOne(&SecurityLsm, s).status, CheckStatus::kWarn);
}

TEST(LsmCheck, FailsOnSeccompStrictMode) {
  NodeSnapshot s = HealthyIbNode();
  s.seccomp_mode = Have(1, "proc/self/status");
  EXPECT_EQ(RunOne(&SecurityLsm, s).status, CheckStatus::kFail);
}

TEST(LsmCheck, SkipsWhenOnlyTheAbsenceOfSelinuxIsKnown) {
  NodeSnapshot s = HealthyIbNode();
  s.selinux_enforce = Missing<int>("sys/fs/selinux/enforce");
  s.apparmor_profile = Missing<std::string>();
  s.seccomp_mode = Unreadable<int>();
  EXPECT_EQ(RunOne(&SecurityLsm, s).status, CheckStatus::kSkip);
}

TEST(LsmCheck, SkipsWhenNothingIsReadable) {
  NodeSnapshot s = HealthyIbNode();
  s.selinux_enforce = Unreadable<int>();
  s.apparmor_profile = Unreadable<std::string>();
  s.seccomp_mode = Unreadable<int>();
  EXPECT_EQ(RunOne(&SecurityLsm, s).status, CheckStatus::kSkip);
}

TEST(ArchCheck, PassesOnBareMetal) {
  Finding f = RunOne(&PlatformArch, HealthyIbNode());
  EXPECT_EQ(f.status, CheckStatus::kPass);
  EXPECT_EQ(f.message, "x86_64, bare metal");
}

TEST(ArchCheck, PassesOnAarch64) {
  NodeSnapshot s = HealthyIbNode();
  s.arch = Have<std::string>("aarch64");
  EXPECT_EQ(RunOne(&PlatformArch, s).status, CheckStatus::kPass);
}

TEST(ArchCheck, FailsForAGpuVmWithoutRdma) {
  NodeSnapshot s = HealthyIbNode();
  s.hypervisor = Have(true, "proc/cpuinfo");
  s.ib_devices.clear();
  std::erase_if(s.pci_devices, [](const PciDevice& d) { return d.vendor == 0x15b3; });
  Finding f = RunOne(&PlatformArch, s);
  EXPECT_EQ(f.status, CheckStatus::kFail);
  EXPECT_TRUE(HasEvidenceFrom(f, "proc/cpuinfo"));
}

TEST(ArchCheck, PassesForAVmWithRdmaPassthrough) {
  NodeSnapshot s = HealthyIbNode();
  s.hypervisor = Have(true);
  EXPECT_EQ(RunOne(&PlatformArch, s).status, CheckStatus::kPass);
}

TEST(ArchCheck, OnlyWarnsForAVmWithoutGpusOrRdma) {
  NodeSnapshot s = BareNode();
  s.hypervisor = Have(true);
  EXPECT_EQ(RunOne(&PlatformArch, s).status, CheckStatus::kWarn);
}

TEST(ArchCheck, SkipsWhenTheArchitectureIsUnreadable) {
  NodeSnapshot s = HealthyIbNode();
  s.arch = Unreadable<std::string>();
  EXPECT_EQ(RunOne(&PlatformArch, s).status, CheckStatus::kSkip);
}

MountEntry Shm(std::string options) { return {"/dev/shm", "tmpfs", "shm", std::move(options)}; }

TEST(ShmCheck, PassesWithALargeTmpfs) {
  Finding f = RunOne(&ShmSize, HealthyIbNode());
  EXPECT_EQ(f.status, CheckStatus::kPass);
  EXPECT_EQ(f.message, "/dev/shm is 32 GiB");
}

TEST(ShmCheck, FailsWithTheContainerDefaultOf64MiB) {
  NodeSnapshot s = HealthyIbNode();
  s.mounts = {Shm("rw,size=65536k,inode64")};
  Finding f = RunOne(&ShmSize, s);
  EXPECT_EQ(f.status, CheckStatus::kFail);
  EXPECT_EQ(f.message, "/dev/shm is 64 MiB, below 1 GiB");
  EXPECT_TRUE(HasEvidenceFrom(f, "proc/self/mountinfo"));
}

TEST(ShmCheck, UsesHalfOfRamWithoutASizeOption) {
  NodeSnapshot s = HealthyIbNode();
  s.mounts = {Shm("rw,inode64")};
  Finding f = RunOne(&ShmSize, s);
  EXPECT_EQ(f.status, CheckStatus::kPass);
  EXPECT_NE(f.message.find("32 GiB (tmpfs default"), std::string::npos);
  s.mem_total_bytes = Have<uint64_t>(1ull << 30);
  EXPECT_EQ(RunOne(&ShmSize, s).status, CheckStatus::kFail);
}

TEST(ShmCheck, UnderstandsPercentagesAndTheLastMountWins) {
  NodeSnapshot s = HealthyIbNode();
  s.mounts = {Shm("rw,size=64m"), Shm("rw,size=50%")};
  EXPECT_EQ(RunOne(&ShmSize, s).status, CheckStatus::kPass);
}

TEST(ShmCheck, SkipsWhenMemTotalIsNeededButUnreadable) {
  NodeSnapshot s = HealthyIbNode();
  s.mounts = {Shm("rw")};
  s.mem_total_bytes = Unreadable<uint64_t>();
  EXPECT_EQ(RunOne(&ShmSize, s).status, CheckStatus::kSkip);
}

TEST(ShmCheck, SkipsWhenMountinfoIsUnreadable) {
  NodeSnapshot s = HealthyIbNode();
  s.mounts.clear();
  s.mounts_error = "unreadable: EACCES";
  Finding f = RunOne(&ShmSize, s);
  EXPECT_EQ(f.status, CheckStatus::kSkip);
  EXPECT_NE(f.evidence.back().value.find("EACCES"), std::string::npos);
}

TEST(ShmCheck, SkipsWithoutAMountEntry) {
  NodeSnapshot s = HealthyIbNode();
  s.mounts.clear();
  EXPECT_EQ(RunOne(&ShmSize, s).status, CheckStatus::kSkip);
}

Config Ifname(std::string v) {
  Config c;
  c.expect.socket_ifname = std::move(v);
  return c;
}

TEST(SocketIfnameCheck, SkipsWhenNotConfigured) {
  EXPECT_EQ(RunOne(&NetSocketIfname, HealthyIbNode()).status, CheckStatus::kSkip);
}

TEST(SocketIfnameCheck, PrefixMatchFindsAnInterfaceThatIsUp) {
  Finding f = RunOne(&NetSocketIfname, HealthyIbNode(), Ifname("eth"));
  EXPECT_EQ(f.status, CheckStatus::kPass);
  EXPECT_TRUE(HasEvidenceFrom(f, "sys/class/net/eth0/operstate"));
}

TEST(SocketIfnameCheck, ExactMatchDoesNotMatchAPrefix) {
  EXPECT_EQ(RunOne(&NetSocketIfname, HealthyIbNode(), Ifname("=eth")).status, CheckStatus::kFail);
  EXPECT_EQ(RunOne(&NetSocketIfname, HealthyIbNode(), Ifname("=eth0")).status, CheckStatus::kPass);
}

TEST(SocketIfnameCheck, ExclusionListMatchesEverythingElse) {
  EXPECT_EQ(RunOne(&NetSocketIfname, HealthyIbNode(), Ifname("^lo,docker")).status,
            CheckStatus::kPass);
  NodeSnapshot s = BareNode();
  EXPECT_EQ(RunOne(&NetSocketIfname, s, Ifname("^lo,eth")).status, CheckStatus::kFail);
}

TEST(SocketIfnameCheck, FailsWhenNoInterfaceMatches) {
  Finding f = RunOne(&NetSocketIfname, HealthyIbNode(), Ifname("bond0"));
  EXPECT_EQ(f.status, CheckStatus::kFail);
  EXPECT_NE(f.message.find("no interface matches"), std::string::npos);
}

TEST(SocketIfnameCheck, FailsWhenTheInterfaceIsDown) {
  NodeSnapshot s = HealthyIbNode();
  s.interfaces[1].operstate = Have<std::string>("down");
  EXPECT_EQ(RunOne(&NetSocketIfname, s, Ifname("eth0")).status, CheckStatus::kFail);
}

TEST(SocketIfnameCheck, OnTheLiveNodeRequiresAnAddress) {
  NodeSnapshot s = HealthyIbNode();
  s.live.gathered = true;
  EXPECT_EQ(RunOne(&NetSocketIfname, s, Ifname("eth0")).status, CheckStatus::kFail);
  s.interfaces[1].addresses = {"10.0.0.5/24"};
  EXPECT_EQ(RunOne(&NetSocketIfname, s, Ifname("eth0:1234")).status, CheckStatus::kPass);
}

TEST(SocketIfnameCheck, SkipsWhenTheStateIsUnreadable) {
  NodeSnapshot s = HealthyIbNode();
  s.interfaces[1].operstate = Unreadable<std::string>();
  EXPECT_EQ(RunOne(&NetSocketIfname, s, Ifname("eth0")).status, CheckStatus::kSkip);
}

}  // namespace
}  // namespace nccl_triage
