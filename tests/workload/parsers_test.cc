// The workload view's text parsers: cgroup paths, environ buffers, maps and net/dev.
#include <gtest/gtest.h>

#include <string>

#include "workload/cgroup.h"
#include "workload/environ.h"
#include "workload/nccl_env.h"
#include "workload/proc_text.h"

namespace nccl_triage::workload {
namespace {

using namespace std::string_literals;

constexpr const char* kId = "4f0d8e3b6c1a2b9d7e5f4a3c2b1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d";
constexpr const char* kUid = "0c9a2f4e-6b1d-4e8a-9f3c-2d7b5a1e6c40";

TEST(CgroupParse, SystemdV2ContainerdGivesPodUidAndContainer) {
  auto ref = ParseCgroupLine(
      "0::/kubepods.slice/kubepods-burstable.slice/"
      "kubepods-burstable-pod0c9a2f4e_6b1d_4e8a_9f3c_2d7b5a1e6c40.slice/cri-containerd-"s +
      kId + ".scope");
  ASSERT_TRUE(ref.has_value());
  EXPECT_EQ(ref->pod_uid, kUid);
  EXPECT_EQ(ref->container_id, kId);
  EXPECT_EQ(ref->runtime, "containerd");
}

TEST(CgroupParse, CgroupfsV1BurstableGivesPodUidAndContainer) {
  auto ref = ParseCgroupLine("12:memory:/kubepods/burstable/pod"s + kUid + "/" + kId);
  ASSERT_TRUE(ref.has_value());
  EXPECT_EQ(ref->pod_uid, kUid);
  EXPECT_EQ(ref->container_id, kId);
  EXPECT_EQ(ref->runtime, "");
}

TEST(CgroupParse, GuaranteedPodHasNoQosLevel) {
  auto ref = ParseCgroupLine("4:cpu,cpuacct:/kubepods/pod"s + kUid + "/" + kId);
  ASSERT_TRUE(ref.has_value());
  EXPECT_EQ(ref->pod_uid, kUid);
}

TEST(CgroupParse, DockerAndCrioScopesAreRecognised) {
  auto docker = ParseCgroupLine(
      "1:name=systemd:/kubepods.slice/kubepods-pod0c9a2f4e_6b1d_4e8a_9f3c_2d7b5a1e6c40.slice/"
      "docker-"s +
      kId + ".scope");
  ASSERT_TRUE(docker.has_value());
  EXPECT_EQ(docker->runtime, "docker");
  auto crio = ParseCgroupLine(
      "0::/kubepods.slice/kubepods-besteffort.slice/"
      "kubepods-besteffort-pod0c9a2f4e_6b1d_4e8a_9f3c_2d7b5a1e6c40.slice/crio-"s +
      kId + ".scope");
  ASSERT_TRUE(crio.has_value());
  EXPECT_EQ(crio->runtime, "crio");
  EXPECT_EQ(crio->container_id, kId);
}

TEST(CgroupParse, CrioConmonIsNotTheContainer) {
  EXPECT_FALSE(ParseCgroupLine(
      "0::/kubepods.slice/kubepods-pod0c9a2f4e_6b1d_4e8a_9f3c_2d7b5a1e6c40.slice/crio-conmon-"s +
      kId + ".scope"));
}

TEST(CgroupParse, NestedCgroupInsideTheContainerStillMapsToIt) {
  auto ref = ParseCgroupLine(
      "0::/kubepods.slice/kubepods-pod0c9a2f4e_6b1d_4e8a_9f3c_2d7b5a1e6c40.slice/cri-containerd-"s +
      kId + ".scope/init.scope");
  ASSERT_TRUE(ref.has_value());
  EXPECT_EQ(ref->container_id, kId);
}

TEST(CgroupParse, PathSeenFromAPrivateCgroupNamespaceIsAccepted) {
  auto ref = ParseCgroupLine(
      "0::/../../kubepods-besteffort-pod0c9a2f4e_6b1d_4e8a_9f3c_2d7b5a1e6c40.slice/"
      "cri-containerd-"s +
      kId + ".scope");
  ASSERT_TRUE(ref.has_value());
  EXPECT_EQ(ref->pod_uid, kUid);
}

TEST(CgroupParse, KindNestedKubeletSliceIsAccepted) {
  auto ref = ParseCgroupLine(
      "0::/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-besteffort.slice/"
      "kubelet-kubepods-besteffort-pod0c9a2f4e_6b1d_4e8a_9f3c_2d7b5a1e6c40.slice/cri-containerd-"s +
      kId + ".scope");
  ASSERT_TRUE(ref.has_value());
  EXPECT_EQ(ref->pod_uid, kUid);
}

TEST(CgroupParse, StaticPodConfigHashUidIsAccepted) {
  auto ref = ParseCgroupLine("0::/kubepods/besteffort/pod6ce0e8e27c4b4a5bc4b1f8e6e0a7c0b0/"s + kId);
  ASSERT_TRUE(ref.has_value());
  EXPECT_EQ(ref->pod_uid, "6ce0e8e27c4b4a5bc4b1f8e6e0a7c0b0");
}

TEST(CgroupParse, UnknownShapesAreRejected) {
  EXPECT_FALSE(ParseCgroupLine("0::/"));
  EXPECT_FALSE(ParseCgroupLine("0::/user.slice/user-0.slice/session-3.scope"));
  EXPECT_FALSE(ParseCgroupLine("0::/system.slice/docker-"s + kId + ".scope"));  // no pod
  EXPECT_FALSE(ParseCgroupLine("0::/kubepods/burstable/pod"s + kUid));  // pod level, no container
  EXPECT_FALSE(ParseCgroupLine("0::/kubepods/burstable/podnot-a-uid/"s + kId));
  EXPECT_FALSE(ParseCgroupLine("0::/kubepods/burstable/pod"s + kUid + "/abc"));
  EXPECT_FALSE(ParseCgroupLine("garbage"));
  EXPECT_FALSE(ParseCgroupLine(""));
  EXPECT_FALSE(ParseCgroupLine("\x01\x02:\xff:/\x80"s));
}

TEST(CgroupParse, FileTakesTheFirstLineThatNamesAContainer) {
  std::string text = "0::/\n12:pids:/kubepods/burstable/pod"s + kUid + "/" + kId + "\n";
  auto ref = ParseCgroupFile(text);
  ASSERT_TRUE(ref.has_value());
  EXPECT_EQ(ref->container_id, kId);
  EXPECT_FALSE(ParseCgroupFile("0::/\n1:name=systemd:/init.scope\n"));
}

TEST(CgroupParse, ContainerIdFromStatusStripsTheRuntimeScheme) {
  EXPECT_EQ(ContainerIdFromStatus("containerd://"s + kId), kId);
  EXPECT_EQ(ContainerIdFromStatus("cri-o://"s + kId), kId);
  EXPECT_FALSE(ContainerIdFromStatus("containerd://short"));
}

TEST(EnvironFilter, KeepsNcclAndAllowListAndDropsEverythingElse) {
  std::string raw =
      "PATH=/usr/bin\0NCCL_SOCKET_IFNAME=eth0\0AWS_SECRET_ACCESS_KEY=hunter2\0"
      "CUDA_VISIBLE_DEVICES=0,1\0LOCAL_RANK=3\0HF_TOKEN=hf_abc\0NCCL_IB_HCA=mlx5\0"s;
  FilteredEnviron f = FilterEnviron(raw);
  EXPECT_EQ(f.total, 7);
  EXPECT_EQ(f.kept.size(), 4u);
  EXPECT_EQ(f.kept.at("NCCL_SOCKET_IFNAME"), "eth0");
  EXPECT_EQ(f.kept.at("NCCL_IB_HCA"), "mlx5");
  EXPECT_EQ(f.kept.at("CUDA_VISIBLE_DEVICES"), "0,1");
  EXPECT_EQ(f.kept.at("LOCAL_RANK"), "3");
  EXPECT_EQ(f.kept.count("AWS_SECRET_ACCESS_KEY"), 0u);
  EXPECT_EQ(f.kept.count("HF_TOKEN"), 0u);
  EXPECT_EQ(f.kept.count("PATH"), 0u);
}

// `check --workloads --format json` printed every kept NCCL_* value, also
// NCCL_SECRET_TOKEN's. Such values are hidden where they are read, so no output can show them.
TEST(EnvironFilter, HidesTheValuesOfNamesThatLookSecret) {
  FilteredEnviron f = FilterEnviron(
      "NCCL_SECRET_TOKEN=s3cr3t\0NCCL_API_KEY=k\0NCCL_IB_PKEY=0x8001\0NCCL_NET=IB\0"s);
  EXPECT_EQ(f.kept.at("NCCL_SECRET_TOKEN"), "<hidden>");
  EXPECT_EQ(f.kept.at("NCCL_API_KEY"), "<hidden>");
  EXPECT_EQ(f.kept.at("NCCL_IB_PKEY"), "0x8001");  // a partition key, not a credential
  EXPECT_EQ(f.kept.at("NCCL_NET"), "IB");
}

TEST(EnvironFilter, LooksAlikeNamesAreNotKept) {
  FilteredEnviron f = FilterEnviron("NCCL_=x\0nccl_debug=INFO\0XNCCL_DEBUG=1\0NCCL_DEBUG=INFO\0"s);
  EXPECT_EQ(f.kept.size(), 1u);
  EXPECT_EQ(f.kept.at("NCCL_DEBUG"), "INFO");
}

TEST(EnvironFilter, BinaryDataAndMalformedEntriesAreSkipped) {
  std::string raw = "\xff\xfe\x01\0NCCL_DEBUG=\x01\x02\x03\0=novalue\0NOEQUALS\0NCCL_NET=IB"s;
  FilteredEnviron f = FilterEnviron(raw);
  EXPECT_EQ(f.kept.size(), 1u);
  EXPECT_EQ(f.kept.at("NCCL_NET"), "IB");  // no final NUL: still read
  EXPECT_EQ(f.malformed, 3);
  EXPECT_EQ(f.bad_values, 1);
}

TEST(EnvironFilter, FirstDefinitionWinsLikeGetenv) {
  FilteredEnviron f = FilterEnviron("NCCL_IB_HCA=mlx5_0\0NCCL_IB_HCA=mlx5_1\0"s);
  EXPECT_EQ(f.kept.at("NCCL_IB_HCA"), "mlx5_0");
}

TEST(EnvironFilter, OverlongValuesAreNotKept) {
  std::string raw = "NCCL_DEBUG_FILE=" + std::string(kMaxEnvValueBytes + 1, 'a') + '\0';
  FilteredEnviron f = FilterEnviron(raw);
  EXPECT_TRUE(f.kept.empty());
  EXPECT_EQ(f.bad_values, 1);
}

TEST(EnvironFilter, EmptyBufferIsEmpty) {
  EXPECT_EQ(FilterEnviron(""), FilteredEnviron{});
  EXPECT_EQ(FilterEnviron("\0\0\0"s).total, 0);
}

TEST(MapsParse, FindsVersionedNcclLibrary) {
  std::string maps =
      "55d0c0a00000-55d0c0a21000 r--p 00000000 08:01 1311 /usr/bin/python3.10\n"
      "7f3a10000000-7f3a10200000 r-xp 00000000 08:01 2244 "
      "/usr/lib/x86_64-linux-gnu/libnccl.so.2.28.9\n"
      "7f3a20000000-7f3a20021000 rw-p 00000000 00:00 0 \n";
  auto lib = ParseNcclFromMaps(maps);
  ASSERT_TRUE(lib.has_value());
  EXPECT_EQ(lib->path, "/usr/lib/x86_64-linux-gnu/libnccl.so.2.28.9");
  EXPECT_EQ(lib->version, "2.28.9");
  EXPECT_FALSE(lib->deleted);
}

TEST(MapsParse, PipWheelLibraryHasNoVersionInItsName) {
  auto lib = ParseNcclFromMaps(
      "7f00-7f10 r-xp 00000000 08:01 77 /opt/venv/lib/python3.10/site-packages/nvidia/nccl/lib/"
      "libnccl.so.2 (deleted)\n");
  ASSERT_TRUE(lib.has_value());
  EXPECT_EQ(lib->version, "");
  EXPECT_TRUE(lib->deleted);
  EXPECT_EQ(lib->path, "/opt/venv/lib/python3.10/site-packages/nvidia/nccl/lib/libnccl.so.2");
}

TEST(MapsParse, NoNcclOrGarbageGivesNothing) {
  EXPECT_FALSE(ParseNcclFromMaps("7f00-7f10 r-xp 00000000 08:01 77 /usr/lib/libc.so.6\n"));
  EXPECT_FALSE(ParseNcclFromMaps("libnccl.so.2.1.1\n"));
  EXPECT_FALSE(ParseNcclFromMaps("\xff\x00\x01"s));
}

TEST(MapsParse, VersionFromFileName) {
  EXPECT_EQ(NcclVersionFromFileName("libnccl.so.2.18.1"), "2.18.1");
  EXPECT_EQ(NcclVersionFromFileName("libnccl.so.2"), "");
  EXPECT_EQ(NcclVersionFromFileName("libnccl.so.2.18."), "");
  EXPECT_EQ(NcclVersionFromFileName("libnccl.so.2.18.1.4"), "");
  EXPECT_EQ(NcclVersionFromFileName("libnccl-net.so"), "");
}

TEST(NetDevParse, ListsInterfaceNames) {
  std::string text =
      "Inter-|   Receive                            |  Transmit\n"
      " face |bytes    packets errs drop fifo frame compressed multicast|bytes\n"
      "    lo:    1234      10    0    0    0     0          0         0     1234\n"
      "  eth0: 9876543   12345    0    0    0     0          0         0  1234567\n"
      "net1: 1 2 3 4 5 6 7 8 9\n";
  auto names = ParseNetDevNames(text);
  ASSERT_TRUE(names.has_value());
  EXPECT_EQ(*names, (std::vector<std::string>{"lo", "eth0", "net1"}));
}

TEST(NetDevParse, MissingHeaderIsNotANetDevFile) {
  EXPECT_FALSE(ParseNetDevNames("eth0: 1 2 3\n"));
  EXPECT_FALSE(ParseNetDevNames(""));
}

}  // namespace
}  // namespace nccl_triage::workload
