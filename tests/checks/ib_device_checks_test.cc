// ib.hca_present, ib.driver, ib.mr_register, ib.contention, ib.peermem.
#include <gtest/gtest.h>

#include "checks/builtin.h"
#include "checks/snapshot_builder.h"

namespace nccl_triage {
namespace {

using namespace testing;  // NOLINT: test helpers
using checks::IbContention;
using checks::IbDriver;
using checks::IbHcaPresent;
using checks::IbMrRegister;
using checks::IbPeermem;
using checks::IbVerbsView;

NodeSnapshot WithoutRegisteredHcas(NodeSnapshot s) {
  s.ib_devices.clear();
  s.uverbs.clear();
  s.infiniband_class_present = false;
  return s;
}

TEST(HcaPresentCheck, PassesAndListsTheHcas) {
  Finding f = RunOne(&IbHcaPresent, HealthyIbNode(4));
  EXPECT_EQ(f.status, CheckStatus::kPass);
  EXPECT_NE(f.message.find("mlx5_3"), std::string::npos);
  EXPECT_TRUE(HasEvidenceFrom(f, "sys/class/infiniband/mlx5_0"));
}

TEST(HcaPresentCheck, SkipsWhenTheNodeHasNoRdmaHardware) {
  Finding f = RunOne(&IbHcaPresent, BareNode());
  EXPECT_EQ(f.status, CheckStatus::kSkip);
  EXPECT_EQ(f.message, "no RDMA hardware on this node");
}

TEST(HcaPresentCheck, FailsWhenInfiniBandPciDevicesAreNotRegistered) {
  Finding f = RunOne(&IbHcaPresent, WithoutRegisteredHcas(HealthyIbNode(2)));
  EXPECT_EQ(f.status, CheckStatus::kFail);
  EXPECT_NE(f.message.find("not bound or not loaded"), std::string::npos);
  EXPECT_TRUE(HasEvidenceFrom(f, "sys/bus/pci/devices/0000:11:00.0"));
}

TEST(HcaPresentCheck, WarnsWhenOnlyEthernetFunctionsLackAnRdmaDevice) {
  Finding f = RunOne(&IbHcaPresent, WithoutRegisteredHcas(HealthyRoceNode(2)));
  EXPECT_EQ(f.status, CheckStatus::kWarn);
}

TEST(HcaPresentCheck, FailsWhenFewerHcasThanExpected) {
  Config c;
  c.expect.hcas = 8;
  Finding f = RunOne(&IbHcaPresent, HealthyIbNode(7), c);
  EXPECT_EQ(f.status, CheckStatus::kFail);
  EXPECT_NE(f.message.find("expected 8 HCAs, found 7"), std::string::npos);
}

TEST(HcaPresentCheck, WarnsWhenAnInfiniBandFunctionHasNoDevice) {
  NodeSnapshot s = HealthyIbNode(2);
  s.pci_devices.push_back({"0000:99:00.0", 0x15b3, 0x101b, 0x020700});
  Finding f = RunOne(&IbHcaPresent, s);
  EXPECT_EQ(f.status, CheckStatus::kWarn);
  EXPECT_NE(f.message.find("0000:99:00.0"), std::string::npos);
}

TEST(HcaPresentCheck, SkipsWhenThePciBusIsUnreadable) {
  NodeSnapshot s = BareNode();
  s.pci_devices.clear();
  s.pci_error = "unreadable: EACCES";
  Finding f = RunOne(&IbHcaPresent, s);
  EXPECT_EQ(f.status, CheckStatus::kSkip);
  EXPECT_TRUE(HasEvidenceFrom(f, "sys/bus/pci/devices"));
}

TEST(DriverCheck, PassesWithAUverbsDevicePerHca) {
  EXPECT_EQ(RunOne(&IbDriver, HealthyIbNode()).status, CheckStatus::kPass);
}

TEST(DriverCheck, FailsWhenNoUverbsDeviceExists) {
  NodeSnapshot s = HealthyIbNode();
  s.uverbs.clear();
  s.uverbs_class_present = false;
  Finding f = RunOne(&IbDriver, s);
  EXPECT_EQ(f.status, CheckStatus::kFail);
  EXPECT_NE(f.message.find("ib_uverbs is not loaded"), std::string::npos);
  EXPECT_TRUE(HasEvidenceFrom(f, "sys/class/infiniband_verbs"));
}

TEST(DriverCheck, FailsWhenOneHcaHasNoUverbsDevice) {
  NodeSnapshot s = HealthyIbNode(4);
  s.uverbs.pop_back();
  Finding f = RunOne(&IbDriver, s);
  EXPECT_EQ(f.status, CheckStatus::kFail);
  EXPECT_NE(f.message.find("mlx5_3"), std::string::npos);
}

TEST(DriverCheck, WarnsWhenTheUverbsMappingIsUnreadable) {
  NodeSnapshot s = HealthyIbNode(2);
  for (auto& u : s.uverbs) u.ibdev.clear();
  EXPECT_EQ(RunOne(&IbDriver, s).status, CheckStatus::kWarn);
}

TEST(DriverCheck, SkipsWithoutRdmaHardware) {
  EXPECT_EQ(RunOne(&IbDriver, BareNode()).status, CheckStatus::kSkip);
}

// A live node whose libibverbs sees every HCA and port as sysfs does.
NodeSnapshot LiveVerbsNode(int hcas) {
  NodeSnapshot s = HealthyIbNode(hcas);
  s.live.gathered = true;
  for (const auto& d : s.ib_devices) {
    s.live.verbs_devices.push_back(d.name);
    for (const auto& p : d.ports) {
      s.live.verbs_ports.push_back({d.name, p.num, "ACTIVE", 4096, 256, 128, "InfiniBand"});
    }
  }
  return s;
}

TEST(VerbsViewCheck, SkipsWhenNotLive) {
  Finding f = RunOne(&IbVerbsView, HealthyIbNode());
  EXPECT_EQ(f.status, CheckStatus::kSkip);
  EXPECT_NE(f.message.find("live"), std::string::npos);
}

TEST(VerbsViewCheck, PassesWhenVerbsOpensEveryHcaAndAgreesOnThePorts) {
  Finding f = RunOne(&IbVerbsView, LiveVerbsNode(2));
  EXPECT_EQ(f.status, CheckStatus::kPass) << f.message;
  EXPECT_NE(f.message.find("2 HCA(s)"), std::string::npos);
}

TEST(VerbsViewCheck, FailsWhenAnHcaOfSysfsIsMissingFromTheVerbsList) {
  // rdma-core without the mlx5 provider lists no mlx5 device although the kernel has them.
  NodeSnapshot s = LiveVerbsNode(2);
  s.live.verbs_devices = {"mlx5_0"};
  Finding f = RunOne(&IbVerbsView, s);
  EXPECT_EQ(f.status, CheckStatus::kFail);
  EXPECT_NE(f.message.find("missing from libibverbs: mlx5_1"), std::string::npos) << f.message;
  EXPECT_TRUE(HasEvidenceFrom(f, "sys/class/infiniband/mlx5_1"));
}

TEST(VerbsViewCheck, FailsWithTheErrnoWhenOpenFails) {
  NodeSnapshot s = LiveVerbsNode(2);
  s.live.verbs_device_errors = {
      {"mlx5_1", "ibv_open_device(mlx5_1): Permission denied (errno 13)"}};
  Finding f = RunOne(&IbVerbsView, s);
  EXPECT_EQ(f.status, CheckStatus::kFail);
  EXPECT_NE(f.message.find("ibv_open_device failed: mlx5_1 (ibv_open_device(mlx5_1): Permission "
                           "denied (errno 13))"),
            std::string::npos)
      << f.message;
  EXPECT_TRUE(HasEvidenceFrom(f, "ibverbs:ibv_open_device"));
}

TEST(VerbsViewCheck, FailsWhenAPortIsActiveOnlyInSysfs) {
  NodeSnapshot s = LiveVerbsNode(2);
  s.live.verbs_ports[1].state = "DOWN";
  Finding f = RunOne(&IbVerbsView, s);
  EXPECT_EQ(f.status, CheckStatus::kFail);
  EXPECT_NE(f.message.find("ACTIVE in sysfs only: mlx5_1/1 (sysfs ACTIVE, verbs DOWN)"),
            std::string::npos)
      << f.message;
  EXPECT_TRUE(HasEvidenceFrom(f, "ibverbs:ibv_query_port"));
}

TEST(VerbsViewCheck, WarnsWhenAnInactivePortStateDiffers) {
  NodeSnapshot s = LiveVerbsNode(2);
  s.ib_devices[1].ports[0].state.value = "1: DOWN";
  s.live.verbs_ports[1].state = "INIT";
  Finding f = RunOne(&IbVerbsView, s);
  EXPECT_EQ(f.status, CheckStatus::kWarn) << f.message;
  EXPECT_NE(f.message.find("mlx5_1/1 (sysfs DOWN, verbs INIT)"), std::string::npos) << f.message;
}

TEST(VerbsViewCheck, FailsWhenLibibverbsListsNothing) {
  NodeSnapshot s = LiveVerbsNode(2);
  s.live.verbs_devices.clear();
  s.live.verbs_ports.clear();
  s.live.verbs_error = "libibverbs: no devices";
  Finding f = RunOne(&IbVerbsView, s);
  EXPECT_EQ(f.status, CheckStatus::kFail);
  EXPECT_NE(f.message.find("libibverbs lists none (libibverbs: no devices)"), std::string::npos)
      << f.message;
}

TEST(MrRegisterCheck, SkipsWhenNotLive) {
  Finding f = RunOne(&IbMrRegister, HealthyIbNode());
  EXPECT_EQ(f.status, CheckStatus::kSkip);
  EXPECT_NE(f.message.find("live"), std::string::npos);
}

TEST(MrRegisterCheck, PassesWhenEveryRegistrationSucceeded) {
  NodeSnapshot s = HealthyIbNode(2);
  s.live.gathered = true;
  s.live.mr_registrations = {{"mlx5_0", 64ull << 20, true, ""}, {"mlx5_1", 64ull << 20, true, ""}};
  EXPECT_EQ(RunOne(&IbMrRegister, s).status, CheckStatus::kPass);
}

TEST(MrRegisterCheck, FailsWhenARegistrationFailed) {
  NodeSnapshot s = HealthyIbNode(2);
  s.live.gathered = true;
  s.live.mr_registrations = {
      {"mlx5_0", 64ull << 20, true, ""},
      {"mlx5_1", 64ull << 20, false, "ibv_reg_mr: Cannot allocate memory (errno 12)"}};
  Finding f = RunOne(&IbMrRegister, s);
  EXPECT_EQ(f.status, CheckStatus::kFail);
  EXPECT_NE(f.message.find("Cannot allocate memory"), std::string::npos);
  EXPECT_TRUE(HasEvidenceFrom(f, "ibverbs:ibv_reg_mr"));
}

TEST(MrRegisterCheck, SkipsWhenVerbsCouldNotOpenTheDevices) {
  NodeSnapshot s = HealthyIbNode(2);
  s.live.gathered = true;
  s.live.verbs_error = "ibv_open_device(mlx5_0): Permission denied";
  Finding f = RunOne(&IbMrRegister, s);
  EXPECT_EQ(f.status, CheckStatus::kSkip);
  EXPECT_EQ(f.evidence.at(0).value, s.live.verbs_error);
}

TEST(ContentionCheck, PassesWhenNobodyHoldsTheDevices) {
  EXPECT_EQ(RunOne(&IbContention, HealthyIbNode()).status, CheckStatus::kPass);
}

TEST(ContentionCheck, WarnsAndNamesTheHolders) {
  NodeSnapshot s = HealthyIbNode();
  s.uverbs_holders = {{4242, "python3", "/dev/infiniband/uverbs0"},
                      {4242, "python3", "/dev/infiniband/uverbs1"}};
  Finding f = RunOne(&IbContention, s);
  EXPECT_EQ(f.status, CheckStatus::kWarn);
  EXPECT_NE(f.message.find("1 other process(es)"), std::string::npos);
  EXPECT_NE(f.message.find("4242 (python3)"), std::string::npos);
  EXPECT_TRUE(HasEvidenceFrom(f, "proc/4242/fd"));
}

TEST(ContentionCheck, SkipsWhenProcessesCannotBeListed) {
  NodeSnapshot s = HealthyIbNode();
  s.proc_scan_error = "unreadable: EACCES";
  EXPECT_EQ(RunOne(&IbContention, s).status, CheckStatus::kSkip);
}

TEST(PeermemCheck, PassesWithNvidiaPeermem) {
  EXPECT_EQ(RunOne(&IbPeermem, HealthyIbNode()).status, CheckStatus::kPass);
}

TEST(PeermemCheck, WarnsWithoutAGpuDirectModule) {
  NodeSnapshot s = HealthyIbNode();
  for (auto& m : s.modules) {
    if (m.name == "nvidia_peermem") m.loaded = false;
  }
  Finding f = RunOne(&IbPeermem, s);
  EXPECT_EQ(f.status, CheckStatus::kWarn);
  EXPECT_TRUE(HasEvidenceFrom(f, "sys/module/nvidia_peermem"));
}

TEST(PeermemCheck, PassesWithTheOlderNvPeerMem) {
  NodeSnapshot s = HealthyIbNode();
  for (auto& m : s.modules) {
    if (m.name == "nvidia_peermem") m.loaded = false;
    if (m.name == "nv_peer_mem") m.loaded = true;
  }
  EXPECT_EQ(RunOne(&IbPeermem, s).status, CheckStatus::kPass);
}

TEST(PeermemCheck, SkipsWithoutGpus) {
  NodeSnapshot s = HealthyIbNode();
  s.gpus.clear();
  std::erase_if(s.pci_devices, [](const PciDevice& d) { return d.vendor == 0x10de; });
  EXPECT_EQ(RunOne(&IbPeermem, s).status, CheckStatus::kSkip);
}

TEST(PeermemCheck, SkipsWithoutHcas) {
  EXPECT_EQ(RunOne(&IbPeermem, BareNode()).status, CheckStatus::kSkip);
}

}  // namespace
}  // namespace nccl_triage
