#include "core/gpu_use.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace nccl_triage {
namespace {

NodeSnapshot EightGpus() {
  NodeSnapshot s;
  for (int i = 0; i < 8; ++i) {
    GpuInfo g;
    g.bdf = "0000:0" + std::to_string(i) + ":00.0";
    g.minor = i;
    g.uuid = "GPU-6f4d3b8e-21c7-9a0e-5b1d-0c2e7a4f91a" + std::to_string(i);
    s.gpus.push_back(g);
  }
  return s;
}

void HoldEveryGpu(NodeSnapshot& s, int pid, const std::string& comm) {
  for (int i = 0; i < 8; ++i)
    s.gpu_holders.push_back({pid, comm, "/dev/nvidia" + std::to_string(i)});
}

TEST(JudgeGpuUse, PersistencedAndDcgmHoldingEveryGpuLeaveThemAllIdle) {
  NodeSnapshot s = EightGpus();
  HoldEveryGpu(s, 1201, "nvidia-persiste");
  HoldEveryGpu(s, 2202, "dcgm-exporter");
  GpuUse use = JudgeGpuUse(s);
  EXPECT_EQ(use.idle.size(), 8u);
  EXPECT_TRUE(use.busy.empty());
}

TEST(JudgeGpuUse, AJobWithACudaContextOnGpu0LeavesGpu1First) {
  NodeSnapshot s = EightGpus();
  HoldEveryGpu(s, 1201, "nvidia-persiste");
  s.gpu_holders.push_back({5150, "python3", "/dev/nvidia0", true});
  GpuUse use = JudgeGpuUse(s);
  ASSERT_EQ(use.idle.size(), 7u);
  EXPECT_EQ(use.idle.front(), "0000:01:00.0");
  EXPECT_EQ(use.busy, (std::vector<std::string>{"python3 pid 5150 holds /dev/nvidia0"}));
}

TEST(JudgeGpuUse, AHolderWithoutACudaContextOrASystemOneWithItIsNoWorkload) {
  NodeSnapshot s = EightGpus();
  s.gpu_holders.push_back({77, "nvtop", "/dev/nvidia2"});                  // opens, never computes
  s.gpu_holders.push_back({78, "nccl-triage-pro", "/dev/nvidia3", true});  // our own probe child
  EXPECT_EQ(JudgeGpuUse(s).idle.size(), 8u);
}

TEST(JudgeGpuUse, WithoutMinorsOrAGpuListAnyWorkloadMakesEveryGpuBusy) {
  NodeSnapshot s = EightGpus();
  for (auto& g : s.gpus) g.minor = -1;
  EXPECT_EQ(JudgeGpuUse(s).idle.size(), 8u);
  s.gpu_holders.push_back({5150, "python3", "/dev/nvidia4", true});
  EXPECT_TRUE(JudgeGpuUse(s).idle.empty());

  NodeSnapshot unlisted;
  EXPECT_EQ(JudgeGpuUse(unlisted).idle, (std::vector<std::string>{""}));  // the default device
  unlisted.gpu_holders.push_back({5150, "python3", "/dev/nvidia0", true});
  EXPECT_TRUE(JudgeGpuUse(unlisted).idle.empty());
}

TEST(JudgeGpuUse, AgreesWithGpuBusyByOnEveryGpu) {
  NodeSnapshot s = EightGpus();
  HoldEveryGpu(s, 1201, "nvidia-persiste");
  s.gpu_holders.push_back({77, "nvtop", "/dev/nvidia2"});
  s.gpu_holders.push_back({5150, "python3", "/dev/nvidia0", true});
  s.gpu_holders.push_back({5151, "pt_main_thread", "/dev/nvidia5", true});
  s.gpu_allocations =
      std::vector<GpuAllocation>{{"ml/train-0/worker", "nvidia.com/gpu", s.gpus[6].uuid}};
  const GpuUse use = JudgeGpuUse(s);
  EXPECT_EQ(use.idle.size(), 5u);
  for (const auto& g : s.gpus) {
    const bool idle = std::find(use.idle.begin(), use.idle.end(), g.bdf) != use.idle.end();
    EXPECT_EQ(idle, !GpuBusyBy(s, g.bdf).has_value()) << g.bdf;
  }
  EXPECT_EQ(GpuBusyBy(s, "0000:05:00.0"), "pt_main_thread pid 5151 holds /dev/nvidia5");
  EXPECT_EQ(GpuBusyBy(s, "0000:06:00.0"), "assigned to ml/train-0/worker (nvidia.com/gpu)");
  EXPECT_EQ(GpuBusyBy(s, "0000:99:00.0"), "python3 pid 5150 holds /dev/nvidia0");  // not listed
}

// The kubelet assigned GPU 3 to a container whose job has not made its first CUDA call yet (no
// process holds /dev/nvidia3): the GPU is the container's, and a probe must not take it.
TEST(JudgeGpuUse, AGpuTheKubeletAssignedIsBusyBeforeAnyProcessOpensIt) {
  NodeSnapshot s = EightGpus();
  HoldEveryGpu(s, 1201, "nvidia-persiste");
  EXPECT_EQ(JudgeGpuUse(s).idle.size(), 8u);
  s.gpu_allocations = std::vector<GpuAllocation>{
      {"ml/train-0/worker", "nvidia.com/gpu", "GPU-6F4D3B8E-21C7-9A0E-5B1D-0C2E7A4F91A3"}};
  GpuUse use = JudgeGpuUse(s);
  EXPECT_EQ(use.idle.size(), 7u);
  EXPECT_EQ(std::find(use.idle.begin(), use.idle.end(), "0000:03:00.0"), use.idle.end());
  EXPECT_EQ(use.busy, (std::vector<std::string>{"assigned to ml/train-0/worker (nvidia.com/gpu)"}));
}

TEST(JudgeGpuUse, ReplicasAndIndicesNameTheirGpu) {
  NodeSnapshot s = EightGpus();
  std::reverse(s.gpus.begin(), s.gpus.end());  // the gatherer's order is not NVML's
  EXPECT_EQ(GpuOfDeviceId(s, "GPU-6f4d3b8e-21c7-9a0e-5b1d-0c2e7a4f91a4::2"), "0000:04:00.0");
  EXPECT_EQ(GpuOfDeviceId(s, "1"), "0000:01:00.0");  // NVML index: PCI bus id order
  EXPECT_EQ(GpuOfDeviceId(s, "8"), std::nullopt);
  EXPECT_EQ(GpuOfDeviceId(s, "MIG-5c9e2a1b-7d3f-5e8a-9b0c-1d2e3f4a5b6c"), std::nullopt);
  EXPECT_EQ(GpuOfDeviceId(s, "GPU-00000000-0000-0000-0000-000000000000"), std::nullopt);
  EXPECT_EQ(GpuOfDeviceId(s, ""), std::nullopt);
  EXPECT_EQ(GpuOfDeviceId(s, "GPU-"), std::nullopt);
}

// A MIG slice (or a UUID this node does not list) cannot be placed on one GPU: every GPU is busy,
// and the reason says why, rather than probing on a GPU a job may own.
TEST(JudgeGpuUse, AnAssignmentThatNamesNoGpuMakesEveryGpuBusy) {
  NodeSnapshot s = EightGpus();
  s.gpu_allocations = std::vector<GpuAllocation>{
      {"ml/infer-1/server", "nvidia.com/mig-1g.10gb", "MIG-5c9e2a1b-7d3f-5e8a-9b0c-1d2e3f4a5b6c"}};
  GpuUse use = JudgeGpuUse(s);
  EXPECT_TRUE(use.idle.empty());
  ASSERT_EQ(use.busy.size(), 8u);
  EXPECT_NE(use.busy[0].find("names no GPU of this node"), std::string::npos) << use.busy[0];

  NodeSnapshot unlisted;  // no GPU information at all: an assignment still makes the device busy
  unlisted.gpu_allocations = std::vector<GpuAllocation>{};
  EXPECT_EQ(JudgeGpuUse(unlisted).idle, (std::vector<std::string>{""}));
  unlisted.gpu_allocations->push_back({"ml/train-0/worker", "nvidia.com/gpu", "0"});
  EXPECT_TRUE(JudgeGpuUse(unlisted).idle.empty());
}

}  // namespace
}  // namespace nccl_triage
