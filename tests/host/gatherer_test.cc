// The gatherer over every committed fixture root, with specific values asserted per scenario, and
// over damaged copies of them.
#include "host/gatherer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/snapshot_json.h"
#include "host/root_reader.h"
#include "host/snapshot_text.h"
#include "support/fixture/fixture.h"

namespace nccl_triage {
namespace {

namespace fs = std::filesystem;

std::string FixtureRoot(const std::string& scenario) {
  return std::string(NCCL_TRIAGE_FIXTURE_DIR) + "/" + scenario;
}

NodeSnapshot Gather(const std::string& scenario) {
  GatherOptions o;
  o.root = FixtureRoot(scenario);
  o.now_unix_ms = [] { return int64_t{1700000000000}; };
  auto s = GatherSnapshot(o);
  EXPECT_TRUE(s.ok()) << s.status().message();
  return s.ok() ? std::move(s).value() : NodeSnapshot{};
}

const IbPort& Port1(const NodeSnapshot& s, size_t hca) { return s.ib_devices.at(hca).ports.at(0); }

const KernelModule& Module(const NodeSnapshot& s, const std::string& name) {
  auto it = std::find_if(s.modules.begin(), s.modules.end(),
                         [&](const KernelModule& m) { return m.name == name; });
  EXPECT_NE(it, s.modules.end()) << name;
  return *it;
}

const NetInterface* Interface(const NodeSnapshot& s, const std::string& name) {
  for (const auto& n : s.interfaces) {
    if (n.name == name) return &n;
  }
  return nullptr;
}

TEST(GatherSnapshot, EveryScenarioReadsEachFileAtMostOnce) {
  for (const auto& scenario : FixtureScenarios()) {
    NodeSnapshot s = Gather(scenario);
    EXPECT_FALSE(s.files_read.empty()) << scenario;
    for (const auto& [path, count] : s.files_read) {
      EXPECT_EQ(count, 1) << scenario << ": " << path;
    }
    EXPECT_FALSE(s.live.gathered) << scenario << ": a fixture root must not touch the host";
    EXPECT_EQ(s.taken_at_unix_ms, 1700000000000);
    EXPECT_EQ(s.self_pid, 0);
  }
}

const PciDevice* PciAt(const NodeSnapshot& s, const std::string& bdf) {
  for (const auto& d : s.pci_devices) {
    if (d.bdf == bdf) return &d;
  }
  return nullptr;
}

TEST(GatherSnapshot, DgxA100ReadsWhereEachHcaAndGpuSitsInThePcieTree) {
  NodeSnapshot s = Gather("dgx-a100");
  const PciDevice* hca = PciAt(s, "0000:0c:00.0");
  const PciDevice* gpu = PciAt(s, "0000:07:00.0");
  ASSERT_TRUE(hca != nullptr && gpu != nullptr);
  EXPECT_EQ(hca->path,
            (std::vector<std::string>{"pci0000:00", "0000:00:01.1", "0000:01:00.0", "0000:02:00.0",
                                      "0000:05:00.0", "0000:06:10.0", "0000:0c:00.0"}));
  EXPECT_EQ(gpu->path[4], "0000:05:00.0");  // mlx5_0 and GPU 0 share the second-level switch
  EXPECT_TRUE(hca->path_error.empty());
  EXPECT_EQ(hca->numa_node.value, 3);
  EXPECT_EQ(hca->numa_node.source, "sys/bus/pci/devices/0000:0c:00.0/numa_node");
  EXPECT_EQ(PciAt(s, "0000:b7:00.0")->numa_node.value, 5);
}

TEST(GatherSnapshot, DgxA100ReadsEveryHcaPortAndPlatformFact) {
  NodeSnapshot s = Gather("dgx-a100");
  EXPECT_EQ(s.node, "dgx-a100-01");
  EXPECT_EQ(s.kernel_release.value, "5.15.0-1042-nvidia");
  EXPECT_EQ(s.kernel_release.source, "proc/sys/kernel/osrelease");
  EXPECT_EQ(s.arch.value, "x86_64");
  EXPECT_EQ(s.hypervisor.value, false);
  EXPECT_EQ(s.mem_total_bytes.value, 1056766380ull * 1024);

  ASSERT_TRUE(s.infiniband_class_present);
  ASSERT_EQ(s.ib_devices.size(), 8u);
  EXPECT_EQ(s.ib_devices[0].name, "mlx5_0");
  EXPECT_EQ(s.ib_devices[7].name, "mlx5_7");
  const IbDevice& d = s.ib_devices[0];
  EXPECT_EQ(d.node_type.value, "1: CA");
  EXPECT_EQ(d.node_guid.value, "b83f:d203:00c1:0a00");
  EXPECT_EQ(d.fw_ver.value, "20.37.1014");
  EXPECT_EQ(d.hca_type.value, "MT4123");
  EXPECT_EQ(d.board_id.value, "MT_0000000223");
  EXPECT_EQ(d.pci_bdf, "0000:0c:00.0");
  EXPECT_EQ(s.ib_devices[7].pci_bdf, "0000:cc:00.0");

  ASSERT_EQ(d.ports.size(), 1u);
  const IbPort& p = d.ports[0];
  EXPECT_EQ(p.num, 1);
  EXPECT_EQ(p.state.value, "4: ACTIVE");
  EXPECT_EQ(p.state.source, "sys/class/infiniband/mlx5_0/ports/1/state");
  EXPECT_EQ(p.phys_state.value, "5: LinkUp");
  EXPECT_EQ(p.rate_gbps.value, 200.0);
  EXPECT_EQ(p.rate_text.value, "200 Gb/sec (4X HDR)");
  EXPECT_EQ(p.lid.value, 0x1au);
  EXPECT_EQ(Port1(s, 3).lid.value, 0x1du);
  EXPECT_EQ(p.sm_lid.value, 1u);
  EXPECT_EQ(p.sm_sl.value, 0u);
  EXPECT_EQ(p.link_layer.value, "InfiniBand");
  EXPECT_EQ(p.cap_mask.value, 0xa659e848u);
  EXPECT_EQ(p.pkeys, (std::vector<uint16_t>{0xffff, 0x8001}));
  EXPECT_EQ(p.pkey_indices, (std::vector<int>{0, 1}));
  EXPECT_TRUE(p.pkeys_error.empty());
  ASSERT_EQ(p.gids.size(), 1u);
  EXPECT_EQ(p.gids[0].index, 0);
  EXPECT_EQ(p.gids[0].gid, "fe80:0000:0000:0000:b83f:d203:00c1:0a00");
  EXPECT_EQ(p.gids[0].type, "IB/RoCE v1");
  EXPECT_EQ(p.gids[0].ndev, "");
  EXPECT_EQ(p.counters.at("port_rcv_data"), 918273645120u);
  EXPECT_EQ(p.counters.at("link_downed"), 0u);
  EXPECT_EQ(Port1(s, 1).counters.at("port_xmit_packets"), 2 * 3583455123ull);
  EXPECT_EQ(p.hw_counters.at("out_of_buffer"), 0u);
  EXPECT_EQ(Port1(s, 1).hw_counters.at("local_ack_timeout_err"), 1u);
  EXPECT_TRUE(p.counters_error.empty());

  ASSERT_TRUE(s.uverbs_class_present);
  ASSERT_EQ(s.uverbs.size(), 8u);
  EXPECT_EQ(s.uverbs[2].name, "uverbs2");
  EXPECT_EQ(s.uverbs[2].ibdev, "mlx5_2");
  EXPECT_TRUE(s.dev_infiniband_present);
  EXPECT_EQ(s.dev_infiniband.size(), 25u);  // 8 x (uverbs, umad, issm) + rdma_cm
  EXPECT_NE(std::find(s.dev_infiniband.begin(), s.dev_infiniband.end(), "rdma_cm"),
            s.dev_infiniband.end());

  // 8 HCAs, 8 GPUs and the management NIC; the host bridge (class 0x0600) is left out.
  ASSERT_EQ(s.pci_devices.size(), 17u);
  EXPECT_TRUE(s.pci_error.empty()) << s.pci_error;
  auto hca = std::find_if(s.pci_devices.begin(), s.pci_devices.end(),
                          [](const PciDevice& d) { return d.bdf == "0000:0c:00.0"; });
  ASSERT_NE(hca, s.pci_devices.end());
  EXPECT_EQ(hca->vendor, 0x15b3);
  EXPECT_EQ(hca->device, 0x101b);
  EXPECT_EQ(hca->class_code, 0x020700u);
  auto gpu = std::find_if(s.pci_devices.begin(), s.pci_devices.end(),
                          [](const PciDevice& d) { return d.bdf == "0000:07:00.0"; });
  ASSERT_NE(gpu, s.pci_devices.end());
  EXPECT_EQ(gpu->vendor, 0x10de);
  EXPECT_EQ(gpu->class_code, 0x030200u);

  const NetInterface* ib0 = Interface(s, "ib0");
  ASSERT_NE(ib0, nullptr);
  EXPECT_EQ(ib0->operstate.value, "up");
  EXPECT_EQ(ib0->type.value, 32);
  EXPECT_EQ(ib0->mtu.value, 4092);
  ASSERT_NE(Interface(s, "lo"), nullptr);
  EXPECT_EQ(Interface(s, "lo")->type.value, 772);
  EXPECT_EQ(s.interfaces.size(), 10u);

  EXPECT_TRUE(Module(s, "nvidia_peermem").loaded);
  EXPECT_EQ(Module(s, "nvidia_peermem").version, "535.129.03");
  EXPECT_EQ(Module(s, "mlx5_core").version, "23.10-1.1.9");
  EXPECT_TRUE(Module(s, "mlx_compat").loaded);  // MLNX_OFED's compatibility layer
  EXPECT_EQ(Module(s, "mlx_compat").version, "23.10-1.1.9");
  EXPECT_TRUE(Module(s, "ib_uverbs").loaded);
  EXPECT_EQ(Module(s, "ib_uverbs").version, "");
  EXPECT_FALSE(Module(s, "mlx4_ib").loaded);
  EXPECT_FALSE(Module(s, "nv_peer_mem").loaded);
  EXPECT_TRUE(Module(s, "apparmor").loaded);

  EXPECT_EQ(s.memlock.value, (LimitPair{{true, 0}, {true, 0}}));
  EXPECT_EQ(s.memlock.source, "proc/self/limits");
  EXPECT_EQ(s.nofile.value, (LimitPair{{false, 1048576}, {false, 1048576}}));
  EXPECT_EQ(s.cap_eff.value, 0x1ffffffffffull);
  EXPECT_EQ(s.seccomp_mode.value, 0);
  ASSERT_EQ(s.mounts.size(), 1u);
  EXPECT_EQ(s.mounts[0].mount_point, "/dev/shm");
  EXPECT_EQ(s.mounts[0].fs_type, "tmpfs");
  EXPECT_EQ(s.mounts[0].super_options, "rw,inode64");
  EXPECT_EQ(s.self_netns.value, "net:[4026531840]");
  EXPECT_EQ(s.init_netns.value, "net:[4026531840]");
  EXPECT_EQ(s.selinux_enforce.error, "missing");
  EXPECT_EQ(s.apparmor_profile.value, "unconfined");

  EXPECT_EQ(s.nvidia_driver_version.value, "535.129.03");
  ASSERT_EQ(s.gpus.size(), 8u);
  EXPECT_EQ(s.gpus[0].bdf, "0000:07:00.0");
  EXPECT_EQ(s.gpus[0].model, "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(s.gpus[0].source, "proc/driver/nvidia/gpus/0000:07:00.0/information");
  EXPECT_TRUE(s.uverbs_holders.empty());
  EXPECT_TRUE(s.gpu_holders.empty());
  EXPECT_TRUE(s.proc_scan_error.empty()) << s.proc_scan_error;
}

TEST(GatherSnapshot, DgxH100ReadsNdrRateAndOpenDriverVersion) {
  NodeSnapshot s = Gather("dgx-h100");
  ASSERT_EQ(s.ib_devices.size(), 8u);
  for (size_t i = 0; i < 8; ++i) {
    EXPECT_EQ(Port1(s, i).rate_gbps.value, 400.0);
    EXPECT_EQ(Port1(s, i).rate_text.value, "400 Gb/sec (4X NDR)");
  }
  EXPECT_EQ(s.ib_devices[0].hca_type.value, "MT4129");
  EXPECT_EQ(s.ib_devices[0].pci_bdf, "0000:18:00.0");
  EXPECT_EQ(s.nvidia_driver_version.value, "550.54.15");
  EXPECT_EQ(s.gpus.at(0).model, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(Module(s, "nvidia").version, "550.54.15");
}

TEST(GatherSnapshot, RoceReadsEthernetLinkLayerAndRoceV2Gids) {
  NodeSnapshot s = Gather("roce");
  ASSERT_EQ(s.ib_devices.size(), 8u);
  const IbPort& p = Port1(s, 0);
  EXPECT_EQ(p.link_layer.value, "Ethernet");
  EXPECT_EQ(p.lid.value, 0u);
  EXPECT_EQ(p.sm_lid.value, 0u);
  EXPECT_EQ(p.pkeys, (std::vector<uint16_t>{0xffff}));
  ASSERT_EQ(p.gids.size(), 4u);
  EXPECT_EQ(p.gids[1].type, "RoCE v2");
  EXPECT_EQ(p.gids[3].type, "RoCE v2");
  EXPECT_EQ(p.gids[2].type, "IB/RoCE v1");
  EXPECT_EQ(p.gids[3].gid, "0000:0000:0000:0000:0000:ffff:0a0a:000b");
  EXPECT_EQ(p.gids[3].ndev, "enp12s0np0");
  EXPECT_EQ(p.hw_counters.at("np_cnp_sent"), 1204u);
  const NetInterface* nd = Interface(s, "enp12s0np0");
  ASSERT_NE(nd, nullptr);
  EXPECT_EQ(nd->type.value, 1);
  EXPECT_EQ(nd->mtu.value, 9000);
  EXPECT_EQ(s.pci_devices.size(), 17u);
  EXPECT_EQ(s.selinux_enforce.value, 1);
  EXPECT_EQ(s.apparmor_profile.value, "system_u:system_r:spc_t:s0");
  EXPECT_FALSE(Module(s, "ib_ipoib").loaded);
}

TEST(GatherSnapshot, PortDownShowsDisabledPortAmongActiveOnes) {
  NodeSnapshot s = Gather("port-down");
  EXPECT_EQ(Port1(s, 3).state.value, "1: DOWN");
  EXPECT_EQ(Port1(s, 3).phys_state.value, "3: Disabled");
  EXPECT_EQ(Port1(s, 3).lid.value, 0u);
  EXPECT_EQ(Port1(s, 3).counters.at("link_downed"), 1u);
  EXPECT_EQ(Interface(s, "ib3")->operstate.value, "down");
  for (size_t i : {0, 1, 2, 4, 5, 6, 7}) EXPECT_EQ(Port1(s, i).state.value, "4: ACTIVE") << i;
}

TEST(GatherSnapshot, PortPollingShowsPortWithoutPeer) {
  NodeSnapshot s = Gather("port-polling");
  EXPECT_EQ(Port1(s, 5).state.value, "1: DOWN");
  EXPECT_EQ(Port1(s, 5).phys_state.value, "2: Polling");
  EXPECT_EQ(Port1(s, 4).phys_state.value, "5: LinkUp");
}

TEST(GatherSnapshot, SmOfflineShowsInitPortsWithoutLids) {
  NodeSnapshot s = Gather("sm-offline");
  for (size_t i = 0; i < 8; ++i) {
    EXPECT_EQ(Port1(s, i).state.value, "2: INIT");
    EXPECT_EQ(Port1(s, i).phys_state.value, "5: LinkUp");
    EXPECT_EQ(Port1(s, i).lid.value, 0u);
    EXPECT_EQ(Port1(s, i).sm_lid.value, 0u);
    EXPECT_EQ(Port1(s, i).link_layer.value, "InfiniBand");
  }
}

TEST(GatherSnapshot, RateDegradedShowsOneHalfWidthPort) {
  NodeSnapshot s = Gather("rate-degraded");
  EXPECT_EQ(Port1(s, 6).rate_gbps.value, 100.0);
  EXPECT_EQ(Port1(s, 6).rate_text.value, "100 Gb/sec (2X HDR)");
  EXPECT_EQ(Port1(s, 6).counters.at("symbol_error"), 1482u);
  EXPECT_EQ(Port1(s, 5).rate_gbps.value, 200.0);
}

TEST(GatherSnapshot, PkeyMissingCarriesAnotherPartition) {
  NodeSnapshot s = Gather("pkey-missing");
  for (size_t i = 0; i < 8; ++i) {
    EXPECT_EQ(Port1(s, i).pkeys, (std::vector<uint16_t>{0xffff, 0x8002}));
  }
}

TEST(GatherSnapshot, MemlockScenariosReadLimitInBytes) {
  EXPECT_EQ(Gather("memlock-64k").memlock.value, (LimitPair{{false, 65536}, {false, 65536}}));
  EXPECT_EQ(Gather("memlock-8m").memlock.value, (LimitPair{{false, 8388608}, {false, 8388608}}));
}

TEST(GatherSnapshot, ContainerWithoutDevInfinibandSeesSysfsOnly) {
  NodeSnapshot s = Gather("no-dev-ib");
  EXPECT_TRUE(s.uverbs_class_present);
  EXPECT_EQ(s.uverbs.size(), 8u);
  EXPECT_FALSE(s.dev_infiniband_present);
  EXPECT_TRUE(s.dev_infiniband.empty());
  EXPECT_EQ(s.cap_eff.value, 0xa80425fbull);
  EXPECT_EQ(s.seccomp_mode.value, 2);
  EXPECT_EQ(s.apparmor_profile.value, "cri-containerd.apparmor.d (enforce)");
}

TEST(GatherSnapshot, BridgeNamespaceDiffersFromInit) {
  NodeSnapshot s = Gather("bridge-netns");
  EXPECT_EQ(s.self_netns.value, "net:[4026532761]");
  EXPECT_EQ(s.init_netns.value, "net:[4026531840]");
  EXPECT_EQ(s.self_netns.source, "proc/self/ns/net");
  ASSERT_EQ(s.interfaces.size(), 2u);
  EXPECT_EQ(s.interfaces[0].name, "eth0");
  EXPECT_EQ(s.interfaces[0].mtu.value, 1450);
  EXPECT_EQ(s.interfaces[1].name, "lo");
  EXPECT_EQ(s.ib_devices.size(), 8u);
}

TEST(GatherSnapshot, HcaWithoutDriverShowsPciDevicesOnly) {
  NodeSnapshot s = Gather("hca-no-driver");
  EXPECT_FALSE(s.infiniband_class_present);
  EXPECT_TRUE(s.ib_devices.empty());
  EXPECT_FALSE(s.uverbs_class_present);
  int mellanox_ib = 0;
  for (const auto& d : s.pci_devices) mellanox_ib += d.vendor == 0x15b3 && d.class_code == 0x020700;
  EXPECT_EQ(mellanox_ib, 8);
  EXPECT_FALSE(Module(s, "mlx5_core").loaded);
  EXPECT_FALSE(Module(s, "ib_core").loaded);
  EXPECT_TRUE(Module(s, "nvidia").loaded);
}

TEST(GatherSnapshot, NoUverbsKeepsInfinibandClassButNoVerbs) {
  NodeSnapshot s = Gather("no-uverbs");
  EXPECT_TRUE(s.infiniband_class_present);
  EXPECT_EQ(s.ib_devices.size(), 8u);
  EXPECT_FALSE(s.uverbs_class_present);
  EXPECT_TRUE(s.uverbs.empty());
  EXPECT_FALSE(Module(s, "ib_uverbs").loaded);
  EXPECT_TRUE(Module(s, "mlx5_ib").loaded);
  EXPECT_TRUE(s.dev_infiniband_present);
  auto has = [&](const char* n) {
    return std::find(s.dev_infiniband.begin(), s.dev_infiniband.end(), n) != s.dev_infiniband.end();
  };
  EXPECT_TRUE(has("umad0"));
  EXPECT_FALSE(has("uverbs0"));
  EXPECT_FALSE(has("rdma_cm"));
}

TEST(GatherSnapshot, Shm64MiBIsASizedTmpfs) {
  NodeSnapshot s = Gather("shm-64m");
  ASSERT_EQ(s.mounts.size(), 1u);
  EXPECT_EQ(s.mounts[0].mount_point, "/dev/shm");
  EXPECT_EQ(s.mounts[0].source, "shm");
  EXPECT_EQ(s.mounts[0].super_options, "rw,size=65536k,inode64");
}

TEST(GatherSnapshot, NoPeermemHasNeitherGpuDirectModule) {
  NodeSnapshot s = Gather("no-peermem");
  EXPECT_FALSE(Module(s, "nvidia_peermem").loaded);
  EXPECT_FALSE(Module(s, "nv_peer_mem").loaded);
  EXPECT_TRUE(Module(s, "nvidia").loaded);
}

TEST(GatherSnapshot, CpuOnlyVmHasNoRdmaNoGpu) {
  NodeSnapshot s = Gather("cpu-only");
  EXPECT_EQ(s.hypervisor.value, true);
  EXPECT_FALSE(s.infiniband_class_present);
  EXPECT_FALSE(s.uverbs_class_present);
  EXPECT_FALSE(s.dev_infiniband_present);
  ASSERT_EQ(s.pci_devices.size(), 1u);
  EXPECT_EQ(s.pci_devices[0].vendor, 0x1af4);
  EXPECT_EQ(s.nvidia_driver_version.error, "missing");
  EXPECT_TRUE(s.gpus.empty());
  EXPECT_FALSE(Module(s, "nvidia").loaded);
}

TEST(GatherSnapshot, OfedMixedLooksForMlxCompatAndFindsItAbsent) {
  NodeSnapshot s = Gather("ofed-mixed");
  EXPECT_FALSE(Module(s, "mlx_compat").loaded);  // looked for: "absent", not "unknown"
  EXPECT_EQ(Module(s, "mlx_compat").source, "sys/module/mlx_compat");
  EXPECT_EQ(Module(s, "mlx5_core").version, "23.10-1.1.9");
  EXPECT_TRUE(Module(s, "ib_core").loaded);
  EXPECT_EQ(Module(s, "ib_core").version, "");
}

TEST(GatherSnapshot, IbBusyFindsOtherHoldersOnce) {
  NodeSnapshot s = Gather("ib-busy");
  ASSERT_EQ(s.uverbs_holders.size(), 2u);
  EXPECT_EQ(s.uverbs_holders[0], (DeviceHolder{31337, "python3", "/dev/infiniband/uverbs0"}));
  EXPECT_EQ(s.uverbs_holders[1],
            (DeviceHolder{31338, "pt_main_thread", "/dev/infiniband/uverbs1"}));
  ASSERT_EQ(s.gpu_holders.size(), 2u);
  EXPECT_EQ(s.gpu_holders[0], (DeviceHolder{31337, "python3", "/dev/nvidia0", true}));
  EXPECT_EQ(s.gpu_holders[1], (DeviceHolder{31338, "pt_main_thread", "/dev/nvidia1", true}));
}

TEST(GatherSnapshot, GpuHoldersSayWhoHasACudaContextAndGpusTheirMinor) {
  NodeSnapshot s = Gather("gpu-shared");
  ASSERT_EQ(s.gpus.size(), 8u);
  for (size_t i = 0; i < s.gpus.size(); ++i) {
    EXPECT_EQ(s.gpus[i].minor, static_cast<int>(i));
    // The UUID the device plugin assigns GPUs by (the kubelet's pod-resources device ids).
    EXPECT_EQ(s.gpus[i].uuid, "GPU-6f4d3b8e-21c7-9a0e-5b1d-0c2e7a4f91a" + std::to_string(i));
  }
  EXPECT_FALSE(s.gpu_allocations.has_value());  // the gatherer reads no kubelet
  ASSERT_EQ(s.gpu_holders.size(), 17u);  // persistenced and dcgm-exporter: 8 each; python3: 1
  for (const auto& h : s.gpu_holders) {
    EXPECT_EQ(h.cuda_context, h.comm == "python3") << h.comm << " " << h.device;
  }
  EXPECT_EQ(s.gpu_holders.back(), (DeviceHolder{5150, "python3", "/dev/nvidia0", true}));
}

TEST(GatherSnapshot, IbBusyExcludesOwnPid) {
  GatherOptions o;
  o.root = FixtureRoot("ib-busy");
  o.self_pid = 31337;
  auto s = GatherSnapshot(o);
  ASSERT_TRUE(s.ok());
  ASSERT_EQ(s->uverbs_holders.size(), 1u);
  EXPECT_EQ(s->uverbs_holders[0].pid, 31338);
  EXPECT_EQ(s->gpu_holders.size(), 1u);
}

TEST(GatherSnapshot, NodeNameOverrideWins) {
  GatherOptions o;
  o.root = FixtureRoot("dgx-a100");
  o.node_name = "gpu-17";
  auto s = GatherSnapshot(o);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->node, "gpu-17");
  EXPECT_EQ(s->root, FixtureRoot("dgx-a100"));
}

TEST(GatherSnapshot, MissingRootIsAnError) {
  GatherOptions o;
  o.root = "/nonexistent/nccl-triage-root";
  auto s = GatherSnapshot(o);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kNotFound);
  EXPECT_NE(s.status().message().find("/nonexistent/nccl-triage-root"), std::string::npos);

  o.root = FixtureRoot("dgx-a100") + "/proc/cpuinfo";
  auto f = GatherSnapshot(o);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), StatusCode::kInvalidArgument);
}

// An empty root gave a report of "unknown" and exit 0, as if nothing were
// wrong. Nothing readable at all is an error; a root with little in it is a node with missing
// facts.
TEST(GatherSnapshot, AnEmptyRootIsAnErrorAndAnAlmostEmptyOneGivesMissingFacts) {
  fs::path dir = fs::temp_directory_path() / ("nccl-triage-empty-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "sys" / "class");
  GatherOptions o;
  o.root = dir.string();
  auto empty = GatherSnapshot(o);
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.status().code(), StatusCode::kNotFound);
  EXPECT_NE(empty.status().message().find("nothing could be read"), std::string::npos);

  fs::create_directories(dir / "proc" / "self");
  std::ofstream(dir / "proc" / "self" / "limits")
      << "Limit                     Soft Limit           Hard Limit           Units\n"
      << "Max locked memory         65536                65536                bytes\n";
  auto s = GatherSnapshot(o);
  fs::remove_all(dir);
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->memlock.value->soft.value, 65536u);
  EXPECT_EQ(s->kernel_release.error, "missing");
  EXPECT_EQ(s->self_netns.error, "missing");
  EXPECT_FALSE(s->infiniband_class_present);
  EXPECT_EQ(s->mounts_error, "proc/self/mountinfo: missing");
  EXPECT_EQ(s->pci_error, "sys/bus/pci/devices: missing");
  EXPECT_EQ(s->node, "");
}

// A copy of a fixture that a test may damage.
class DamagedFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("nccl-triage-damaged-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    // Three HCAs are enough to damage one port and see the next ones unharmed; fewer files to
    // write keeps the test fast.
    FixtureSpec spec = DgxA100Spec();
    spec.hcas.resize(3);
    spec.gpus.resize(1);
    ASSERT_TRUE(WriteFixture(spec, dir_.string()).ok());
  }
  void TearDown() override { fs::remove_all(dir_); }

  void Write(const std::string& rel, std::string_view content) {
    fs::path p = dir_ / rel;
    fs::remove_all(p);
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << content;
  }
  // The real directory behind a sysfs class link (writes must not replace the link itself).
  std::string Port(int hca) const {
    return "sys/class/infiniband/mlx5_" + std::to_string(hca) + "/ports/1/";
  }

  NodeSnapshot Gather() {
    GatherOptions o;
    o.root = dir_.string();
    auto s = GatherSnapshot(o);
    EXPECT_TRUE(s.ok());
    return s.ok() ? std::move(s).value() : NodeSnapshot{};
  }

  fs::path dir_;
};

// A symbolic link planted under --root reached the host's files (a line of /etc/shadow appeared
// in the report). Under a root other than "/" links resolve inside the root, as in a chroot.
TEST_F(DamagedFixture, SymlinksPlantedUnderTheRootDoNotLeadOutOfIt) {
  const fs::path outside = dir_.string() + "-outside";
  fs::create_directories(outside);
  std::ofstream(outside / "secret") << "root:secret-hash:19000::::::\n";
  Write("etc/inside", "inside\n");
  fs::create_symlink(outside / "secret", dir_ / "proc" / "planted");
  fs::create_symlink("../../" + outside.filename().string() + "/secret", dir_ / "sys" / "up");
  fs::create_symlink(outside, dir_ / "escape");
  fs::create_symlink("/etc/inside", dir_ / "proc" / "absolute");
  RootReader reader(dir_.string());
  for (const char* rel : {"proc/planted", "sys/up", "escape/secret"}) {
    ReadResult r = reader.ReadFile(rel);
    EXPECT_FALSE(r.ok()) << rel << ": " << r.text.value_or("");
  }
  EXPECT_TRUE(reader.List("escape").names.empty());
  EXPECT_FALSE(reader.IsDirectory("escape"));
  // An absolute link inside the tree resolves inside the tree.
  EXPECT_EQ(reader.ReadFile("proc/absolute").text.value_or(""), "inside\n");
  fs::remove_all(outside);
}

TEST_F(DamagedFixture, APciEntryThatIsNotALinkHasNoPathAndSaysWhy) {
  fs::remove(dir_ / "sys/bus/pci/devices/0000:0c:00.0");
  Write("sys/bus/pci/devices/0000:0c:00.0/class", "0x020700\n");
  Write("sys/bus/pci/devices/0000:0c:00.0/numa_node", "-1\n");
  NodeSnapshot s = Gather();
  const PciDevice* hca = PciAt(s, "0000:0c:00.0");
  ASSERT_NE(hca, nullptr);
  EXPECT_TRUE(hca->path.empty());
  EXPECT_EQ(hca->path_error, "not a link");
  EXPECT_EQ(hca->numa_node.value, -1);
  // The next HCA is unharmed.
  EXPECT_FALSE(PciAt(s, "0000:12:00.0")->path.empty());
}

TEST_F(DamagedFixture, GarbageEmptyAndTruncatedFilesBecomeFactErrors) {
  Write(Port(0) + "state", "garbage\x01\x02");
  Write(Port(0) + "phys_state", "");
  Write(Port(0) + "rate", "200 Gb");
  Write(Port(0) + "lid", "0x");
  Write(Port(0) + "sm_sl", "99\n");
  Write(Port(0) + "counters/symbol_error", "N/A (no PMA)\n");
  Write(Port(0) + "pkeys/1", "zz\n");
  Write(Port(1) + "link_layer", "\n\n");
  Write("proc/self/limits", "Limit Soft Limit Hard Limit Units\nMax locked memory 655");
  Write("proc/meminfo", std::string("\x7f"
                                    "ELF\x02\x01\x01\0\0\0",
                                    10));
  Write("proc/cpuinfo", "processor\t: 0\nvendor_id\t: Authen");
  Write("proc/self/status", "Name:\tnccl-triage\nCapEff:\tnot-hex\n");
  Write("proc/driver/nvidia/version", "NVRM version: NVIDIA UNIX x86_64 Kern");
  Write("sys/bus/pci/devices/0000:0c:00.0/class", "bogus\n");

  NodeSnapshot s = Gather();
  const IbPort& p = s.ib_devices.at(0).ports.at(0);
  EXPECT_EQ(p.state.error, "unparseable: 'garbage?\?'");
  EXPECT_FALSE(p.state.ok());
  EXPECT_EQ(p.phys_state.error, "empty");
  EXPECT_EQ(p.rate_text.value, "200 Gb");
  EXPECT_EQ(p.rate_gbps.error, "unparseable: '200 Gb'");
  EXPECT_EQ(p.lid.error, "unparseable: '0x'");
  EXPECT_EQ(p.sm_sl.error, "unparseable: '99'");
  EXPECT_EQ(p.counters_error, "counters/symbol_error: unparseable: 'N/A (no PMA)'");
  EXPECT_EQ(p.counters.count("symbol_error"), 0u);
  EXPECT_EQ(p.counters.at("port_rcv_data"), 918273645120u);
  EXPECT_EQ(p.pkeys_error, "pkeys/1: unparseable: 'zz'");
  EXPECT_EQ(p.pkeys, (std::vector<uint16_t>{0xffff}));
  EXPECT_EQ(s.ib_devices.at(1).ports.at(0).link_layer.error, "empty");
  EXPECT_EQ(s.memlock.error.rfind("unparseable: 'Limit Soft", 0), 0u) << s.memlock.error;
  EXPECT_FALSE(s.nofile.ok());
  EXPECT_EQ(s.mem_total_bytes.error.rfind("unparseable: '", 0), 0u);
  EXPECT_EQ(s.hypervisor.error, "unparseable: 'processor?: 0?vendor_id?: Authen'");
  EXPECT_FALSE(s.cap_eff.ok());
  EXPECT_EQ(s.seccomp_mode.error.rfind("unparseable", 0), 0u);
  EXPECT_FALSE(s.nvidia_driver_version.ok());
  EXPECT_NE(s.pci_error.find("0000:0c:00.0/class: unparseable: 'bogus'"), std::string::npos);
  // The rest of the node is still read.
  EXPECT_EQ(s.ib_devices.size(), 3u);
  EXPECT_EQ(s.ib_devices.at(2).ports.at(0).state.value, "4: ACTIVE");
  for (const auto& [path, count] : s.files_read) EXPECT_EQ(count, 1) << path;
}

TEST_F(DamagedFixture, UnreadableAndMissingFilesBecomeFactErrors) {
  // A directory where a file belongs cannot be read, even by root.
  fs::remove(dir_ / "proc/self/mountinfo");
  fs::create_directories(dir_ / "proc/self/mountinfo");
  fs::remove(dir_ / "proc/self/limits");
  fs::remove(dir_ / "proc/self/ns/net");
  fs::create_directories(dir_ / "proc/self/ns/net");
  fs::remove_all(dir_ / "sys/class/infiniband/mlx5_0/ports/1/pkeys");
  fs::remove(dir_ / "sys/class/infiniband/mlx5_0/ports/1/rate");

  NodeSnapshot s = Gather();
  EXPECT_EQ(s.mounts_error, "proc/self/mountinfo: unreadable: EISDIR");
  EXPECT_TRUE(s.mounts.empty());
  EXPECT_EQ(s.memlock.error, "missing");
  EXPECT_EQ(s.nofile.error, "missing");
  EXPECT_EQ(s.self_netns.error, "not a link");
  EXPECT_EQ(s.init_netns.value, "net:[4026531840]");
  const IbPort& p = s.ib_devices.at(0).ports.at(0);
  EXPECT_EQ(p.pkeys_error, "pkeys: missing");
  EXPECT_EQ(p.rate_text.error, "missing");
  EXPECT_EQ(p.rate_gbps.error, "missing");
  EXPECT_EQ(p.rate_gbps.source, "sys/class/infiniband/mlx5_0/ports/1/rate");
}

TEST_F(DamagedFixture, FifoInPlaceOfAFileDoesNotHang) {
  fs::remove(dir_ / "proc/cpuinfo");
  ASSERT_EQ(::mkfifo((dir_ / "proc/cpuinfo").c_str(), 0600), 0);
  auto start = std::chrono::steady_clock::now();
  NodeSnapshot s = Gather();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_EQ(s.hypervisor.error, "unreadable: not a regular file");
}

// Names are bytes. An HCA "mlx\xff", an interface "eth\xff\xfe", a counter and
// a process name with bytes that are not UTF-8 are read under their real names and come out
// escaped, so that every output (JSON, metrics, the coordinator's Hello) can carry them.
TEST_F(DamagedFixture, NamesThatAreNotUtf8AreReadAndEscapedOnce) {
  fs::rename(dir_ / "sys/class/infiniband/mlx5_0", dir_ / "sys/class/infiniband/mlx\xff");
  Write("sys/class/net/eth\xff\xfe/operstate", "up\n");
  Write("sys/class/net/eth\xff\xfe/type", "1\n");
  Write("sys/class/net/eth\xff\xfe/mtu", "1500\n");
  Write(Port(1) + "counters/sym\xfe\x01", "7\n");
  Write("proc/self/mountinfo", "25 30 0:23 / /dev/infiniband/\xc3\x28 rw - devtmpfs udev rw\n");

  NodeSnapshot s = Gather();
  auto hca = std::find_if(s.ib_devices.begin(), s.ib_devices.end(),
                          [](const IbDevice& d) { return d.name == "mlx\\xff"; });
  ASSERT_NE(hca, s.ib_devices.end());
  ASSERT_EQ(hca->ports.size(), 1u);
  EXPECT_EQ(hca->ports[0].state.value, "4: ACTIVE");
  EXPECT_EQ(hca->ports[0].state.source, "sys/class/infiniband/mlx\\xff/ports/1/state");
  ASSERT_NE(Interface(s, "eth\\xff\\xfe"), nullptr);
  EXPECT_EQ(Interface(s, "eth\\xff\\xfe")->mtu.value, 1500);
  EXPECT_EQ(s.ib_devices.at(1).ports.at(0).counters.at("sym\\xfe\\x01"), 7u);
  ASSERT_EQ(s.mounts.size(), 1u);
  EXPECT_EQ(s.mounts[0].mount_point, "/dev/infiniband/\\xc3(");
  EXPECT_TRUE(s.files_read.contains("sys/class/net/eth\\xff\\xfe/mtu"));
  // The whole snapshot dumps as JSON (this threw type_error 316 before) and loads back equal.
  std::string json;
  ASSERT_NO_THROW(json = ToJson(s).dump());
  EXPECT_TRUE(IsCleanText(json));
  auto back = SnapshotFromJson(nlohmann::json::parse(json));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(*back, s);
}

// A sysfs attribute holds at most a page; a 10 MB value is refused, not carried.
TEST_F(DamagedFixture, ATextValueLongerThanAPageIsAnError) {
  Write("sys/class/infiniband/mlx5_0/fw_ver", std::string(10'000'000, '7'));
  NodeSnapshot s = Gather();
  EXPECT_FALSE(s.ib_devices.at(0).fw_ver.ok());
  EXPECT_EQ(s.ib_devices.at(0).fw_ver.error, "too long: 8388608 bytes");
  EXPECT_EQ(s.ib_devices.at(1).fw_ver.value, "20.37.1014");
}

TEST(EscapeText, KeepsValidUtf8AndEscapesEverythingElse) {
  EXPECT_EQ(EscapeText("mlx5_0"), "mlx5_0");
  EXPECT_EQ(EscapeText("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\t"),
            "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\t");
  EXPECT_EQ(EscapeText("eth\xff\xfe"), "eth\\xff\\xfe");
  EXPECT_EQ(EscapeText("a\nb\x7f"), "a\\x0ab\\x7f");
  EXPECT_EQ(EscapeText("\xc0\xaf"), "\\xc0\\xaf");           // overlong '/'
  EXPECT_EQ(EscapeText("\xed\xa0\x80"), "\\xed\\xa0\\x80");  // a surrogate
  EXPECT_EQ(EscapeText("\xe2\x82"), "\\xe2\\x82");           // cut short
  EXPECT_EQ(EscapeText(std::string_view("a\0b", 3)), "a\\x00b");
  EXPECT_TRUE(IsCleanText("mlx5_0 caf\xc3\xa9"));
  EXPECT_FALSE(IsCleanText("mlx\xff"));
  EXPECT_TRUE(IsCleanText(EscapeText("mlx\xff\xc3")));
}

// Live sources that a test controls.
class FakeVerbs : public VerbsProvider {
 public:
  StatusOr<std::vector<std::string>> ListDevices() override {
    if (!list_error.empty()) return Unavailable(list_error);
    return devices;
  }
  StatusOr<std::vector<VerbsPort>> QueryPorts(const std::string& device) override {
    if (device == "mlx5_1")
      return Unavailable("ibv_open_device(mlx5_1): Permission denied (errno 13)");
    return std::vector<VerbsPort>{{device, 1, "ACTIVE", 4096, 8, 128, "InfiniBand"}};
  }
  Status RegisterMemory(const std::string& device, uint64_t bytes) override {
    registered.emplace_back(device, bytes);
    if (device == "mlx5_1") return Unavailable("ibv_reg_mr: Cannot allocate memory (errno 12)");
    return Status::Ok();
  }
  std::vector<std::string> devices{"mlx5_0", "mlx5_1"};
  std::string list_error;
  std::vector<std::pair<std::string, uint64_t>> registered;
};

class FakeAddresses : public InterfaceAddressProvider {
 public:
  StatusOr<std::map<std::string, std::vector<std::string>>> Addresses() override {
    return std::map<std::string, std::vector<std::string>>{
        {"ib0", {"10.10.0.11/16", "fe80::ba3f:d203:c1:a01/64"}}, {"lo", {"127.0.0.1/8"}}};
  }
};

TEST(GatherSnapshot, FakeVerbsFillLiveFacts) {
  FakeVerbs verbs;
  FakeAddresses addresses;
  GatherOptions o;
  o.root = FixtureRoot("dgx-a100");
  o.verbs = &verbs;
  o.addresses = &addresses;
  o.mr_register_bytes = 1 << 20;
  auto s = GatherSnapshot(o);
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE(s->live.gathered);
  EXPECT_EQ(s->live.verbs_devices, (std::vector<std::string>{"mlx5_0", "mlx5_1"}));
  ASSERT_EQ(s->live.verbs_ports.size(), 1u);
  EXPECT_EQ(s->live.verbs_ports[0], (VerbsPort{"mlx5_0", 1, "ACTIVE", 4096, 8, 128, "InfiniBand"}));
  EXPECT_EQ(s->live.verbs_error, "ibv_open_device(mlx5_1): Permission denied (errno 13)");
  EXPECT_EQ(s->live.verbs_device_errors,
            (std::vector<VerbsDeviceError>{
                {"mlx5_1", "ibv_open_device(mlx5_1): Permission denied (errno 13)"}}));
  ASSERT_EQ(s->live.mr_registrations.size(), 2u);
  EXPECT_EQ(s->live.mr_registrations[0], (MrRegistration{"mlx5_0", 1 << 20, true, ""}));
  EXPECT_EQ(
      s->live.mr_registrations[1],
      (MrRegistration{"mlx5_1", 1 << 20, false, "ibv_reg_mr: Cannot allocate memory (errno 12)"}));
  EXPECT_EQ(verbs.registered.size(), 2u);
  EXPECT_EQ(Interface(*s, "ib0")->addresses,
            (std::vector<std::string>{"10.10.0.11/16", "fe80::ba3f:d203:c1:a01/64"}));
  EXPECT_EQ(Interface(*s, "lo")->addresses, (std::vector<std::string>{"127.0.0.1/8"}));
  EXPECT_TRUE(Interface(*s, "ib1")->addresses.empty());
}

TEST(GatherSnapshot, FakeVerbsListErrorIsRecorded) {
  FakeVerbs verbs;
  verbs.list_error = "ibv_get_device_list: Function not implemented (errno 38)";
  GatherOptions o;
  o.root = FixtureRoot("cpu-only");
  o.verbs = &verbs;
  auto s = GatherSnapshot(o);
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE(s->live.gathered);
  EXPECT_EQ(s->live.verbs_error, verbs.list_error);
  EXPECT_TRUE(s->live.mr_registrations.empty());
}

TEST(GatherSnapshot, LiveHostWithoutHcaReportsNoDevicesQuickly) {
  // This machine (and CI) has no HCA: the real libibverbs must say so cleanly and fast.
  auto start = std::chrono::steady_clock::now();
  auto s = GatherSnapshot(GatherOptions{});
  auto elapsed = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_TRUE(s->live.gathered);
  EXPECT_EQ(s->self_pid, static_cast<int>(::getpid()));
  EXPECT_LT(elapsed, std::chrono::seconds(10));
  if (s->ib_devices.empty()) {
    EXPECT_TRUE(s->live.verbs_devices.empty());
    // Either libibverbs lists nothing, or it cannot list at all (no kernel RDMA support: ENOSYS).
    const std::string& e = s->live.verbs_error;
    EXPECT_TRUE(e == "libibverbs: no devices" || e.rfind("ibv_get_device_list: ", 0) == 0) << e;
    EXPECT_TRUE(s->live.mr_registrations.empty());
  }
  EXPECT_TRUE(s->memlock.ok()) << s->memlock.error;
  EXPECT_TRUE(s->kernel_release.ok());
  EXPECT_TRUE(s->arch.ok());
  bool lo_has_address = false;
  for (const auto& n : s->interfaces) {
    if (n.name == "lo") lo_has_address = !n.addresses.empty();
  }
  EXPECT_TRUE(lo_has_address);
  for (const auto& [path, count] : s->files_read) EXPECT_EQ(count, 1) << path;
}

TEST(RootReader, NaturalOrderSortsNumbersByValue) {
  EXPECT_TRUE(NaturalLess("mlx5_2", "mlx5_10"));
  EXPECT_FALSE(NaturalLess("mlx5_10", "mlx5_2"));
  EXPECT_TRUE(NaturalLess("uverbs9", "uverbs10"));
  EXPECT_TRUE(NaturalLess("ib0", "lo"));
  EXPECT_FALSE(NaturalLess("a", "a"));
  EXPECT_TRUE(NaturalLess("a1", "a01") != NaturalLess("a01", "a1"));
}

}  // namespace
}  // namespace nccl_triage
