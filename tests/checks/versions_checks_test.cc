// versions.cuda_driver, versions.ofed_kernel, versions.nccl.
#include <gtest/gtest.h>

#include "checks/builtin.h"
#include "checks/check_util.h"
#include "checks/snapshot_builder.h"
#include "core/probe_result.h"

namespace nccl_triage {
namespace {

using namespace testing;  // NOLINT: test helpers
using checks::VersionsCudaDriver;
using checks::VersionsNccl;
using checks::VersionsOfedKernel;

NodeSnapshot WithGpuModel(std::string model, std::string driver) {
  NodeSnapshot s = HealthyIbNode();
  for (auto& g : s.gpus) g.model = model;
  s.nvidia_driver_version = Have(std::move(driver), "proc/driver/nvidia/version");
  return s;
}

TEST(GpuGeneration, IsFoundFromTheModelName) {
  EXPECT_EQ(checks::GenerationOf("NVIDIA A100-SXM4-80GB")->name, "Ampere");
  EXPECT_EQ(checks::GenerationOf("NVIDIA H100 80GB HBM3")->name, "Hopper");
  EXPECT_EQ(checks::GenerationOf("NVIDIA H200")->name, "Hopper");
  EXPECT_EQ(checks::GenerationOf("NVIDIA B200")->name, "Blackwell");
  EXPECT_EQ(checks::GenerationOf("NVIDIA A10G")->name, "Ampere");
  EXPECT_FALSE(checks::GenerationOf("NVIDIA GeForce GTX 1080").has_value());
  EXPECT_FALSE(checks::GenerationOf("NVIDIA H1000").has_value());
}

TEST(Versions, CompareNumerically) {
  using checks::CompareVersions;
  using checks::ParseVersion;
  EXPECT_LT(CompareVersions(ParseVersion("470.57.02"), ParseVersion("525")), 0);
  EXPECT_EQ(CompareVersions(ParseVersion("525.0"), ParseVersion("525")), 0);
  EXPECT_GT(CompareVersions(ParseVersion("2.18.1"), ParseVersion("2.7.8")), 0);
  EXPECT_EQ(ParseVersion("24.07-0.6.1"), (std::vector<int>{24, 7, 0, 6, 1}));
  EXPECT_TRUE(ParseVersion("abc").empty());
}

TEST(CudaDriverCheck, PassesForA100On535) {
  Finding f = RunOne(&VersionsCudaDriver, HealthyIbNode());
  EXPECT_EQ(f.status, CheckStatus::kPass);
  EXPECT_NE(f.message.find(">= 450"), std::string::npos);
}

TEST(CudaDriverCheck, FailsForH100On470) {
  Finding f = RunOne(&VersionsCudaDriver, WithGpuModel("NVIDIA H100 80GB HBM3", "470.199.02"));
  EXPECT_EQ(f.status, CheckStatus::kFail);
  EXPECT_NE(f.message.find("older than 525 required by Hopper"), std::string::npos);
  EXPECT_TRUE(HasEvidenceFrom(f, "proc/driver/nvidia/version"));
}

TEST(CudaDriverCheck, FailsForB200On565) {
  EXPECT_EQ(RunOne(&VersionsCudaDriver, WithGpuModel("NVIDIA B200", "565.57.01")).status,
            CheckStatus::kFail);
  EXPECT_EQ(RunOne(&VersionsCudaDriver, WithGpuModel("NVIDIA B200", "570.86.15")).status,
            CheckStatus::kPass);
}

TEST(CudaDriverCheck, UsesTheConfiguredMinimum) {
  Config c;
  c.expect.gpu_driver_min = "550.54";
  EXPECT_EQ(RunOne(&VersionsCudaDriver, HealthyIbNode(), c).status, CheckStatus::kFail);
}

TEST(CudaDriverCheck, FailsWhenGpusArePresentButTheDriverIsNotLoaded) {
  NodeSnapshot s = HealthyIbNode();
  s.gpus.clear();
  s.nvidia_driver_version = Missing<std::string>("proc/driver/nvidia/version");
  for (auto& m : s.modules) {
    if (m.name == "nvidia") m.loaded = false;
  }
  EXPECT_EQ(RunOne(&VersionsCudaDriver, s).status, CheckStatus::kFail);
}

TEST(CudaDriverCheck, SkipsWhenTheVersionIsUnreadable) {
  NodeSnapshot s = HealthyIbNode();
  s.nvidia_driver_version = Unreadable<std::string>();
  s.modules.erase(std::remove_if(s.modules.begin(), s.modules.end(),
                                 [](const KernelModule& m) { return m.name == "nvidia"; }),
                  s.modules.end());
  EXPECT_EQ(RunOne(&VersionsCudaDriver, s).status, CheckStatus::kSkip);
}

TEST(CudaDriverCheck, SkipsForAnUnknownGeneration) {
  EXPECT_EQ(RunOne(&VersionsCudaDriver, WithGpuModel("NVIDIA GeForce GTX 1080", "535.1")).status,
            CheckStatus::kSkip);
}

TEST(CudaDriverCheck, SkipsWithoutGpus) {
  EXPECT_EQ(RunOne(&VersionsCudaDriver, BareNode()).status, CheckStatus::kSkip);
}

void SetModule(NodeSnapshot& s, const std::string& name, bool loaded, std::string version) {
  for (auto& m : s.modules) {
    if (m.name == name) {
      m.loaded = loaded;
      m.version = std::move(version);
      return;
    }
  }
  s.modules.push_back({name, loaded, std::move(version), "sys/module/" + name});
}

TEST(OfedKernelCheck, PassesForAConsistentOfed) {
  Finding f = RunOne(&VersionsOfedKernel, HealthyIbNode());
  EXPECT_EQ(f.status, CheckStatus::kPass);
  EXPECT_NE(f.message.find("MLNX_OFED 5.8-3.0.7"), std::string::npos);
  EXPECT_TRUE(HasEvidenceFrom(f, "sys/module/mlx5_core/version"));
}

TEST(OfedKernelCheck, PassesForTheInboxStack) {
  NodeSnapshot s = HealthyIbNode();
  for (const char* m : {"ib_core", "mlx5_core", "mlx5_ib", "ib_uverbs", "rdma_ucm"}) {
    SetModule(s, m, true, "");
  }
  SetModule(s, "mlx_compat", false, "");
  Finding f = RunOne(&VersionsOfedKernel, s);
  EXPECT_EQ(f.status, CheckStatus::kPass);
  EXPECT_NE(f.message.find("inbox"), std::string::npos);
}

TEST(OfedKernelCheck, FailsForOfedMlx5CoreOverInboxIbCore) {
  NodeSnapshot s = HealthyIbNode();
  for (const char* m : {"ib_core", "mlx5_ib", "ib_uverbs", "rdma_ucm"}) SetModule(s, m, true, "");
  SetModule(s, "mlx_compat", false, "");
  SetModule(s, "mlx5_core", true, "24.07-0.6.1");
  Finding f = RunOne(&VersionsOfedKernel, s);
  EXPECT_EQ(f.status, CheckStatus::kFail);
  EXPECT_NE(f.message.find("ib_core is the inbox one"), std::string::npos);
}

TEST(OfedKernelCheck, DoesNotInferInboxIbCoreWhenMlxCompatWasNotLookedAt) {
  NodeSnapshot s = HealthyIbNode();
  std::erase_if(s.modules, [](const KernelModule& m) { return m.name == "mlx_compat"; });
  SetModule(s, "ib_core", true, "");
  EXPECT_EQ(RunOne(&VersionsOfedKernel, s).status, CheckStatus::kPass);
}

TEST(OfedKernelCheck, FailsForInboxMlx5CoreUnderAnOfedCore) {
  NodeSnapshot s = HealthyIbNode();
  SetModule(s, "mlx5_core", true, "");
  EXPECT_EQ(RunOne(&VersionsOfedKernel, s).status, CheckStatus::kFail);
}

TEST(OfedKernelCheck, FailsForTwoOfedReleases) {
  NodeSnapshot s = HealthyIbNode();
  SetModule(s, "mlx5_ib", true, "5.4-1.0.3");
  Finding f = RunOne(&VersionsOfedKernel, s);
  EXPECT_EQ(f.status, CheckStatus::kFail);
  EXPECT_NE(f.message.find("5.4-1.0.3, 5.8-3.0.7"), std::string::npos);
}

TEST(OfedKernelCheck, SkipsWithoutRdmaModules) {
  EXPECT_EQ(RunOne(&VersionsOfedKernel, BareNode()).status, CheckStatus::kSkip);
}

TEST(NcclVersionCheck, SkipsWithoutAProbe) {
  Finding f = RunOne(&VersionsNccl, HealthyIbNode());
  EXPECT_EQ(f.status, CheckStatus::kSkip);
  EXPECT_NE(f.message.find("probe"), std::string::npos);
}

TEST(NcclVersionCheck, FailsWhenTooOldForTheGpu) {
  ProbeResult p;
  p.nccl_version = "2.14.3";
  p.gpu_name = "NVIDIA H100 80GB HBM3";
  Finding f = RunOne(&VersionsNccl, HealthyIbNode(), Config{}, CheckContext{nullptr, &p});
  EXPECT_EQ(f.status, CheckStatus::kFail);
  EXPECT_NE(f.message.find("older than 2.18"), std::string::npos);
}

TEST(NcclVersionCheck, PassesForARecentRelease) {
  ProbeResult p;
  p.nccl_version = "2.28.9";
  p.nccl_library = "/usr/lib/x86_64-linux-gnu/libnccl.so.2";
  EXPECT_EQ(RunOne(&VersionsNccl, HealthyIbNode(), Config{}, CheckContext{nullptr, &p}).status,
            CheckStatus::kPass);
}

TEST(NcclVersionCheck, SkipsWhenTheProbeLoadedNoNccl) {
  ProbeResult p;
  p.outcome = ProbeOutcome::kUnavailable;
  p.detail = "libnccl.so.2: cannot open shared object file";
  Finding f = RunOne(&VersionsNccl, HealthyIbNode(), Config{}, CheckContext{nullptr, &p});
  EXPECT_EQ(f.status, CheckStatus::kSkip);
  EXPECT_NE(f.evidence.at(0).value.find("cannot open"), std::string::npos);
}

}  // namespace
}  // namespace nccl_triage
