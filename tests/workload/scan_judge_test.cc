// Scanning fixture roots (a DGX A100 host with GPU pods' /proc/<pid> trees) and judging each
// container with the catalogue's checks.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "workload_test_util.h"

namespace nccl_triage::workload {
namespace {

using testing::ContainerId;
using testing::GoodProcess;
using testing::PodUid;
using testing::StatusOf;
using testing::WorkloadRoot;

constexpr const char* kPodNetns = "net:[4026532611]";

TEST(WorkloadScan, FindsGpuHoldersAndGroupsThemByContainer) {
  auto a = GoodProcess(4101, 1, 0);
  auto b = GoodProcess(4102, 1, 1);  // second rank of the same container
  auto c = GoodProcess(4200, 2);
  FixtureWorkloadProcess idle;  // a process of a pod without any GPU
  idle.pid = 4300;
  idle.cgroup = KubepodsCgroup(PodUid(3), ContainerId(3));
  idle.fds = {"/dev/null", "/dev/nvidiactl"};
  WorkloadRoot root({a, b, c, idle});
  ScanResult scan = root.Scan();
  ASSERT_TRUE(scan.error.empty()) << scan.error;
  ASSERT_EQ(scan.containers.size(), 2u);
  const auto& first = scan.containers[0].ref.container_id == ContainerId(1) ? scan.containers[0]
                                                                            : scan.containers[1];
  EXPECT_EQ(first.ref.pod_uid, PodUid(1));
  ASSERT_EQ(first.processes.size(), 2u);
  EXPECT_EQ(first.processes[0].pid, 4101);
  EXPECT_EQ(first.processes[0].gpu_devices, std::vector<std::string>{"/dev/nvidia0"});
  EXPECT_EQ(first.processes[1].gpu_devices, std::vector<std::string>{"/dev/nvidia1"});
  EXPECT_EQ(scan.host_netns.value, std::optional<std::string>("net:[4026531840]"));
}

TEST(WorkloadScan, ReadsEachProcFileAtMostOncePerPass) {
  WorkloadRoot root({GoodProcess(4101, 1), GoodProcess(4102, 1), GoodProcess(4200, 2)});
  ScanResult scan = root.Scan();
  ASSERT_EQ(scan.containers.size(), 2u);
  EXPECT_FALSE(scan.files_read.empty());
  for (const auto& [path, count] : scan.files_read) EXPECT_EQ(count, 1) << path;
  EXPECT_EQ(scan.files_read.count("proc/4101/limits"), 1u);
  EXPECT_EQ(scan.files_read.count("proc/4101/environ"), 1u);
  EXPECT_EQ(scan.files_read.count("proc/4101/maps"), 1u);
}

TEST(WorkloadScan, KeepsOnlyAllowListedEnvironment) {
  auto p = GoodProcess(4101, 1);
  p.environ.push_back({"AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI-planted-secret"});
  p.environ.push_back({"NCCL_IB_HCA", "mlx5"});
  WorkloadRoot root({p});
  ScanResult scan = root.Scan();
  ASSERT_EQ(scan.containers.size(), 1u);
  const auto& env = scan.containers[0].processes[0].environ;
  ASSERT_TRUE(env.ok());
  EXPECT_EQ(env.value->kept.count("AWS_SECRET_ACCESS_KEY"), 0u);
  EXPECT_EQ(env.value->kept.count("PATH"), 0u);
  EXPECT_EQ(env.value->kept.at("NCCL_IB_HCA"), "mlx5");
}

TEST(WorkloadScan, ReadsTheNcclLibraryFromMaps) {
  WorkloadRoot root({GoodProcess(4101, 1)});
  ScanResult scan = root.Scan();
  ASSERT_EQ(scan.containers.size(), 1u);
  const auto& nccl = scan.containers[0].processes[0].nccl;
  ASSERT_TRUE(nccl.ok());
  ASSERT_TRUE(nccl.value->has_value());
  EXPECT_EQ((*nccl.value)->version, "2.28.9");
}

TEST(WorkloadScan, UnknownCgroupShapeIsSkippedWithADebugLine) {
  auto p = GoodProcess(4101, 1);
  p.cgroup = "0::/system.slice/weird-runtime.service\n";
  auto q = GoodProcess(4102, 2);
  q.cgroup = std::string("0::/kubepods/\xff\x01garbage\n");
  WorkloadRoot root({p, q});
  std::vector<std::string> debug;
  ScanResult scan = root.Scan(&debug);
  EXPECT_TRUE(scan.containers.empty());
  ASSERT_EQ(scan.skipped.size(), 2u);
  EXPECT_NE(scan.skipped[0].reason.find("unknown shape"), std::string::npos);
  ASSERT_EQ(debug.size(), 2u);
  for (const auto& line : debug) {
    for (char c : line) EXPECT_TRUE(c >= 0x20 && c < 0x7f) << line;
  }
}

TEST(WorkloadScan, ProcessThatExitedBeforeItsFilesWereReadIsSkipped) {
  auto p = GoodProcess(4101, 1);
  WorkloadRoot root({p});
  // What a process that exits between the fd scan and the reads leaves: fd links, no files.
  std::filesystem::remove(root.root() + "/proc/4101/cgroup");
  std::vector<std::string> debug;
  ScanResult scan = root.Scan(&debug);
  EXPECT_TRUE(scan.containers.empty());
  ASSERT_EQ(scan.skipped.size(), 1u);
  EXPECT_EQ(scan.skipped[0].reason, "exited during the scan");
}

TEST(WorkloadScan, UnreadableCgroupOfALiveProcessIsSkippedWithTheReason) {
  WorkloadRoot root({GoodProcess(4101, 1)});
  const std::string cgroup = root.root() + "/proc/4101/cgroup";
  std::filesystem::remove(cgroup);
  std::filesystem::create_directory(cgroup);  // not a regular file
  ScanResult scan = root.Scan();
  EXPECT_TRUE(scan.containers.empty());
  ASSERT_EQ(scan.skipped.size(), 1u);
  EXPECT_NE(scan.skipped[0].reason.find("proc/4101/cgroup unreadable"), std::string::npos)
      << scan.skipped[0].reason;
}

TEST(WorkloadScan, UnreadableEntriesBecomeFactErrorsAndSkips) {
  auto p = GoodProcess(4101, 1);
  WorkloadRoot root({p});
  const std::string dir = root.root() + "/proc/4101/";
  // Entries that cannot be read as files (root reads through any permission bits).
  for (const char* leaf : {"limits", "environ", "status"}) {
    std::filesystem::remove(dir + leaf);
    std::filesystem::create_directory(dir + leaf);
  }
  ScanResult scan = root.Scan();
  ASSERT_EQ(scan.containers.size(), 1u);
  const auto& facts = scan.containers[0].processes[0];
  EXPECT_FALSE(facts.memlock.ok());
  EXPECT_FALSE(facts.environ.ok());
  EXPECT_FALSE(facts.cap_eff.ok());
  ContainerVerdict v = root.Judge(scan, 0);
  EXPECT_EQ(StatusOf(v, "limits.memlock"), CheckStatus::kSkip);
  EXPECT_EQ(StatusOf(v, "env.ib_disable"), CheckStatus::kSkip);
  EXPECT_EQ(StatusOf(v, "env.ib_hca"), CheckStatus::kSkip);
  EXPECT_EQ(std::count(v.causes.begin(), v.causes.end(), "limits.memlock"), 0);
}

TEST(WorkloadScan, BinaryEnvironIsFilteredNotFatal) {
  auto p = GoodProcess(4101, 1);
  p.environ_raw_suffix = std::string("\xff\xfe\x00NCCL_DEBUG=\x01\x02\x00\x80\x81=\x00", 14);
  WorkloadRoot root({p});
  std::vector<std::string> debug;
  ScanResult scan = root.Scan(&debug);
  ASSERT_EQ(scan.containers.size(), 1u);
  const auto& env = scan.containers[0].processes[0].environ;
  ASSERT_TRUE(env.ok());
  EXPECT_GT(env.value->malformed, 0);
  EXPECT_EQ(env.value->kept.at("NCCL_DEBUG"), "WARN");  // the first, textual definition
  EXPECT_FALSE(debug.empty());
}

TEST(WorkloadScan, InjectedDevicePatternFindsOtherHolders) {
  auto p = GoodProcess(4101, 1);
  p.fds = {"/dev/null", "/tmp/fake-gpu/nvidia3"};
  WorkloadRoot root({p});
  ScanResult none = root.Scan();
  EXPECT_TRUE(none.containers.empty());
  ScannerOptions o;
  o.root = root.root();
  o.gpu_device_pattern = "^/tmp/fake-gpu/nvidia[0-9]+$";
  ScanResult found = WorkloadScanner(o).Scan();
  ASSERT_EQ(found.containers.size(), 1u);
  EXPECT_EQ(found.containers[0].processes[0].gpu_devices,
            std::vector<std::string>{"/tmp/fake-gpu/nvidia3"});
}

TEST(WorkloadScan, InvalidPatternIsAnErrorNotACrash) {
  ScannerOptions o;
  o.root = "/nonexistent";
  o.gpu_device_pattern = "([";
  ScanResult r = WorkloadScanner(o).Scan();
  EXPECT_FALSE(r.error.empty());
}

TEST(WorkloadScan, MissingProcIsAnError) {
  testing::TempDir empty;
  ScannerOptions o;
  o.root = empty.path();
  ScanResult r = WorkloadScanner(o).Scan();
  EXPECT_NE(r.error.find("proc"), std::string::npos);
}

TEST(WorkloadJudge, GoodPodPassesAndIsHealthy) {
  WorkloadRoot root({GoodProcess(4101, 1)});
  ScanResult scan = root.Scan();
  ASSERT_EQ(scan.containers.size(), 1u);
  ContainerVerdict v = root.Judge(scan, 0);
  EXPECT_EQ(v.verdict, FaultClass::kHealthy) << ::testing::PrintToString(v.causes);
  EXPECT_TRUE(v.causes.empty());
  ASSERT_EQ(v.findings.size(), WorkloadCheckIds().size());
  EXPECT_EQ(StatusOf(v, "container.host_network"), CheckStatus::kPass);
  EXPECT_EQ(StatusOf(v, "container.rdma_devices"), CheckStatus::kPass);
  EXPECT_EQ(StatusOf(v, "limits.memlock"), CheckStatus::kPass);
  EXPECT_EQ(StatusOf(v, "shm.size"), CheckStatus::kPass);
  EXPECT_EQ(StatusOf(v, "env.ib_disable"), CheckStatus::kPass);
  EXPECT_EQ(StatusOf(v, "env.ib_hca"), CheckStatus::kPass);
  EXPECT_EQ(StatusOf(v, "net.socket_ifname"), CheckStatus::kSkip);
  ASSERT_TRUE(v.nccl.has_value());
  EXPECT_EQ(v.nccl->version, "2.28.9");
  EXPECT_EQ(v.gpu_devices, std::vector<std::string>{"/dev/nvidia1"});
}

TEST(WorkloadJudge, BridgeNetworkPodOnInfinibandIsAWarning) {
  auto p = GoodProcess(4101, 1);
  p.netns = kPodNetns;
  p.interfaces = {"lo", "eth0"};
  WorkloadRoot root({p});
  ScanResult scan = root.Scan();
  ContainerVerdict v = root.Judge(scan, 0);
  // InfiniBand verbs work through /dev/infiniband from a private namespace; the check says so.
  EXPECT_EQ(StatusOf(v, "container.host_network"), CheckStatus::kWarn);
  EXPECT_EQ(v.verdict, FaultClass::kHealthy);
}

TEST(WorkloadJudge, BridgeNetworkPodOnRoceFails) {
  auto p = GoodProcess(4101, 1);
  p.netns = kPodNetns;
  p.interfaces = {"lo", "eth0"};
  WorkloadRoot root({p}, "roce");
  ScanResult scan = root.Scan();
  ContainerVerdict v = root.Judge(scan, 0);
  EXPECT_EQ(StatusOf(v, "container.host_network"), CheckStatus::kFail);
  EXPECT_EQ(v.verdict, FaultClass::kArchitecture);
  EXPECT_NE(std::find(v.causes.begin(), v.causes.end(), "container.host_network"), v.causes.end());
}

TEST(WorkloadJudge, PodWithoutRdmaDevicesFails) {
  auto p = GoodProcess(4101, 1);
  p.dev_infiniband_dir = false;
  p.dev_infiniband.clear();
  WorkloadRoot root({p});
  ScanResult scan = root.Scan();
  ContainerVerdict v = root.Judge(scan, 0);
  EXPECT_EQ(StatusOf(v, "container.rdma_devices"), CheckStatus::kFail);
  EXPECT_EQ(v.causes, std::vector<std::string>{"container.rdma_devices"});
}

TEST(WorkloadJudge, PodWithoutTheRdmaResourceFailsWhereTheNodeAdvertisesOne) {
  auto p = GoodProcess(4101, 1);
  p.dev_infiniband_dir = false;
  p.dev_infiniband.clear();
  WorkloadRoot root({p});
  ScanResult scan = root.Scan();
  PodContainer pod;
  pod.limits = {{"nvidia.com/gpu", "8"}};
  NodeResources node{true, {"rdma/rdma_shared_device_a"}, ""};
  ContainerVerdict v = root.Judge(scan, 0, pod, node);
  const Finding* f = testing::FindingFor(v, "container.rdma_devices");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->status, CheckStatus::kFail);
  bool named = false;
  for (const auto& e : f->evidence)
    named |= e.value.find("rdma/rdma_shared_device_a") != std::string::npos;
  EXPECT_TRUE(named);
  EXPECT_NE(f->message.find("requests none"), std::string::npos);
}

TEST(WorkloadJudge, RdmaResourceFindingAloneFailsEvenWhenDevicesCannotBeListed) {
  PodContainer pod;
  pod.limits = {{"nvidia.com/gpu", "1"}};
  NodeResources node{true, {"rdma/hca_shared_devices_a", "rdma/ib"}, ""};
  auto f = RdmaResourceFinding(pod, node, false);
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->status, CheckStatus::kFail);
  EXPECT_EQ(RdmaResourceFinding(pod, node, true)->status, CheckStatus::kWarn);
  pod.limits["rdma/ib"] = "1";
  EXPECT_FALSE(RdmaResourceFinding(pod, node, false).has_value());
  pod.limits.erase("rdma/ib");
  pod.assigned = std::vector<DeviceAssignment>{{"rdma/ib", {"dev-0"}}};
  EXPECT_FALSE(RdmaResourceFinding(pod, node, false).has_value());
  EXPECT_FALSE(RdmaResourceFinding(pod, NodeResources{true, {}, ""}, false).has_value());
  EXPECT_FALSE(RdmaResourceFinding(pod, NodeResources{}, false).has_value());
}

TEST(WorkloadJudge, Memlock64KiBWithoutIpcLockFails) {
  auto p = GoodProcess(4101, 1);
  p.memlock = {{false, 65536}, {false, 65536}};
  p.cap_eff = 0x00000000a80425fbull;  // the runtime's default set: no IPC_LOCK
  WorkloadRoot root({p});
  ScanResult scan = root.Scan();
  ContainerVerdict v = root.Judge(scan, 0);
  EXPECT_EQ(StatusOf(v, "limits.memlock"), CheckStatus::kFail);
  EXPECT_EQ(StatusOf(v, "container.ipc_lock"), CheckStatus::kFail);
  EXPECT_EQ(v.verdict, FaultClass::kArchitecture);
}

TEST(WorkloadJudge, SmallShmFails) {
  auto p = GoodProcess(4101, 1);
  p.shm_bytes = 64ull << 20;
  WorkloadRoot root({p});
  ScanResult scan = root.Scan();
  ContainerVerdict v = root.Judge(scan, 0);
  EXPECT_EQ(StatusOf(v, "shm.size"), CheckStatus::kFail);
  EXPECT_EQ(v.causes, std::vector<std::string>{"shm.size"});
}

TEST(WorkloadJudge, SocketIfnameAbsentFromTheHostNamespaceFails) {
  auto p = GoodProcess(4101, 1);
  p.environ.push_back({"NCCL_SOCKET_IFNAME", "eth0"});  // the DGX host names it enp225s0f0
  WorkloadRoot root({p});
  ScanResult scan = root.Scan();
  ContainerVerdict v = root.Judge(scan, 0);
  const Finding* f = testing::FindingFor(v, "net.socket_ifname");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->status, CheckStatus::kFail);
  bool from_environ = false;
  for (const auto& e : f->evidence) from_environ |= e.source == "proc/4101/environ";
  EXPECT_TRUE(from_environ);
}

TEST(WorkloadJudge, SocketIfnameAbsentFromAPrivateNamespaceFails) {
  auto p = GoodProcess(4101, 1);
  p.netns = kPodNetns;
  p.interfaces = {"lo", "net1"};
  p.environ.push_back({"NCCL_SOCKET_IFNAME", "eth0"});
  WorkloadRoot root({p});
  ScanResult scan = root.Scan();
  ContainerVerdict v = root.Judge(scan, 0);
  EXPECT_EQ(StatusOf(v, "net.socket_ifname"), CheckStatus::kFail);
}

TEST(WorkloadJudge, SocketIfnamePresentInAPrivateNamespacePassesWithItsState) {
  auto p = GoodProcess(4101, 1);
  p.netns = kPodNetns;
  p.interfaces = {"lo", "eth0"};
  p.environ.push_back({"NCCL_SOCKET_IFNAME", "eth"});
  WorkloadRoot root({p});
  // The container's own sysfs shows its namespace's interfaces.
  const std::string sys = root.root() + "/proc/4101/root/sys/class/net/eth0/";
  std::filesystem::create_directories(sys);
  std::ofstream(sys + "operstate") << "up\n";
  std::ofstream(sys + "type") << "1\n";
  ScanResult scan = root.Scan();
  ContainerVerdict v = root.Judge(scan, 0);
  EXPECT_EQ(StatusOf(v, "net.socket_ifname"), CheckStatus::kPass);
}

TEST(WorkloadJudge, IbDisableLeftOnWarns) {
  auto p = GoodProcess(4101, 1);
  p.environ.push_back({"NCCL_IB_DISABLE", "1"});
  WorkloadRoot root({p});
  ContainerVerdict v = root.Judge(root.Scan(), 0);
  EXPECT_EQ(StatusOf(v, "env.ib_disable"), CheckStatus::kWarn);
  EXPECT_EQ(v.verdict, FaultClass::kHealthy);
}

TEST(WorkloadJudge, IbHcaNamingAbsentDevicesFails) {
  auto p = GoodProcess(4101, 1);
  p.environ.push_back({"NCCL_IB_HCA", "=mlx4_0,mlx4_1"});
  WorkloadRoot root({p});
  ContainerVerdict v = root.Judge(root.Scan(), 0);
  EXPECT_EQ(StatusOf(v, "env.ib_hca"), CheckStatus::kFail);
  EXPECT_EQ(v.causes, std::vector<std::string>{"env.ib_hca"});
}

TEST(WorkloadJudge, IbHcaNamingDevicesTheContainerWasNotGivenFails) {
  auto p = GoodProcess(4101, 1);
  p.dev_infiniband = {"uverbs2", "uverbs3", "rdma_cm"};  // a device plugin gave it two HCAs
  p.environ.push_back({"NCCL_IB_HCA", "=mlx5_0"});
  WorkloadRoot root({p});
  ContainerVerdict v = root.Judge(root.Scan(), 0);
  EXPECT_EQ(StatusOf(v, "env.ib_hca"), CheckStatus::kFail);
}

TEST(WorkloadJudge, GidIndexThePortDoesNotHaveFails) {
  auto p = GoodProcess(4101, 1);
  p.environ.push_back({"NCCL_IB_GID_INDEX", "5"});  // RoCE fixture tables hold indices 0..3
  WorkloadRoot root({p}, "roce");
  ContainerVerdict v = root.Judge(root.Scan(), 0);
  EXPECT_EQ(StatusOf(v, "ib.gid"), CheckStatus::kFail);
  auto q = GoodProcess(4102, 2);
  q.environ.push_back({"NCCL_IB_GID_INDEX", "3"});
  WorkloadRoot good({q}, "roce");
  EXPECT_EQ(StatusOf(good.Judge(good.Scan(), 0), "ib.gid"), CheckStatus::kPass);
}

TEST(WorkloadJudge, NcclMappedInTheProcessIsJudgedForTheGpuGeneration) {
  auto old = GoodProcess(4101, 1);
  old.nccl_library = "/opt/conda/lib/libnccl.so.2.12.10";  // older than Hopper needs (2.18)
  auto current = GoodProcess(4102, 2);
  auto wheel = GoodProcess(4103, 3);
  wheel.nccl_library = "/opt/venv/lib/python3.10/site-packages/nvidia/nccl/lib/libnccl.so.2";
  auto none = GoodProcess(4104, 4);
  none.nccl_library.clear();
  WorkloadRoot root({old, current, wheel, none}, "dgx-h100");
  ScanResult scan = root.Scan();
  ASSERT_EQ(scan.containers.size(), 4u);
  std::map<int, ContainerVerdict> by_pid;
  for (size_t i = 0; i < 4; ++i) {
    ContainerVerdict v = root.Judge(scan, i);
    by_pid[v.pids.at(0)] = v;
  }
  const Finding* f = testing::FindingFor(by_pid[4101], "versions.nccl");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->status, CheckStatus::kFail) << f->message;
  EXPECT_NE(f->message.find("2.12.10"), std::string::npos);
  EXPECT_EQ(by_pid[4101].causes, std::vector<std::string>{"versions.nccl"});
  EXPECT_EQ(StatusOf(by_pid[4102], "versions.nccl"), CheckStatus::kPass);
  const Finding* w = testing::FindingFor(by_pid[4103], "versions.nccl");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->status, CheckStatus::kSkip);
  EXPECT_NE(w->message.find("does not carry its version"), std::string::npos);
  const Finding* n = testing::FindingFor(by_pid[4104], "versions.nccl");
  ASSERT_NE(n, nullptr);
  EXPECT_NE(n->message.find("not mapped"), std::string::npos);
}

TEST(WorkloadJudge, TheWorstProcessOfAContainerDecidesAndIsNamed) {
  auto a = GoodProcess(4101, 1, 0);
  auto b = GoodProcess(4102, 1, 1);
  b.memlock = {{false, 65536}, {false, 65536}};
  b.cap_eff = 0x00000000a80425fbull;
  WorkloadRoot root({a, b});
  ScanResult scan = root.Scan();
  ASSERT_EQ(scan.containers.size(), 1u);
  ContainerVerdict v = root.Judge(scan, 0);
  const Finding* f = testing::FindingFor(v, "limits.memlock");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->status, CheckStatus::kFail);
  ASSERT_FALSE(f->evidence.empty());
  EXPECT_EQ(f->evidence[0].key, "process");
  EXPECT_NE(f->evidence[0].value.find("4102"), std::string::npos);
  EXPECT_EQ(v.pids, (std::vector<int>{4101, 4102}));
}

TEST(WorkloadJudge, DisabledChecksAreSkipped) {
  auto p = GoodProcess(4101, 1);
  p.shm_bytes = 64ull << 20;
  WorkloadRoot root({p});
  Config c;
  c.checks.disabled = {"shm.size"};
  ContainerVerdict v = root.Judge(root.Scan(), 0, {}, {}, c);
  EXPECT_EQ(StatusOf(v, "shm.size"), CheckStatus::kSkip);
  EXPECT_EQ(v.verdict, FaultClass::kHealthy);
}

}  // namespace
}  // namespace nccl_triage::workload
