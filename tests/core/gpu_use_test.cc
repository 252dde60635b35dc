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
  EXPECT_TRUE(use.workload.empty());
}

TEST(JudgeGpuUse, AJobWithACudaContextOnGpu0LeavesGpu1First) {
  NodeSnapshot s = EightGpus();
  HoldEveryGpu(s, 1201, "nvidia-persiste");
  s.gpu_holders.push_back({5150, "python3", "/dev/nvidia0", true});
  GpuUse use = JudgeGpuUse(s);
  ASSERT_EQ(use.idle.size(), 7u);
  EXPECT_EQ(use.idle.front(), "0000:01:00.0");
  ASSERT_EQ(use.workload.size(), 1u);
  EXPECT_EQ(DescribeHolder(use.workload[0]), "python3 pid 5150 holds /dev/nvidia0");
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

TEST(JudgeGpuUse, AgreesWithWorkloadHolderOfGpuOnEveryGpu) {
  NodeSnapshot s = EightGpus();
  HoldEveryGpu(s, 1201, "nvidia-persiste");
  s.gpu_holders.push_back({77, "nvtop", "/dev/nvidia2"});
  s.gpu_holders.push_back({5150, "python3", "/dev/nvidia0", true});
  s.gpu_holders.push_back({5151, "pt_main_thread", "/dev/nvidia5", true});
  const GpuUse use = JudgeGpuUse(s);
  EXPECT_EQ(use.idle.size(), 6u);
  for (const auto& g : s.gpus) {
    const bool idle = std::find(use.idle.begin(), use.idle.end(), g.bdf) != use.idle.end();
    const DeviceHolder* holder = WorkloadHolderOfGpu(s, g.bdf);
    EXPECT_EQ(idle, holder == nullptr) << g.bdf;
    if (holder != nullptr) {
      EXPECT_EQ(holder->device, "/dev/nvidia" + std::to_string(g.minor));
    }
  }
  EXPECT_EQ(WorkloadHolderOfGpu(s, "0000:05:00.0")->pid, 5151);
  EXPECT_EQ(WorkloadHolderOfGpu(s, "0000:99:00.0")->pid, 5150);  // not listed: any workload
}

}  // namespace
}  // namespace nccl_triage
