#include "exporter/annotations.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "test_state.h"

namespace nccl_triage {
namespace {

using testing::FillCycle;
using testing::TestFinding;
using testing::TestSnapshot;

TEST(PascalCase, ConvertsClassNames) {
  EXPECT_EQ(PascalCase("ib_resource"), "IbResource");
  EXPECT_EQ(PascalCase("healthy"), "Healthy");
  EXPECT_EQ(PascalCase("architecture"), "Architecture");
}

TEST(AnnotationsFor, CarriesVerdictCausesBasisAndReportButNotUpdated) {
  AgentState state("n1", "v", 0);
  FillCycle(state, TestSnapshot(1),
            {TestFinding("limits.memlock", FaultClass::kArchitecture, CheckStatus::kFail),
             TestFinding("ib.port_state", FaultClass::kIbResource, CheckStatus::kFail)},
            1000);
  DesiredAnnotations a = AnnotationsFor(state.View());
  EXPECT_EQ(a.values.at("nccl-triage.io/verdict"), "architecture");
  EXPECT_EQ(a.values.at("nccl-triage.io/basis"), "checks");
  EXPECT_EQ(a.values.at("nccl-triage.io/causes"), "limits.memlock,ib.port_state");
  EXPECT_FALSE(a.values.contains("nccl-triage.io/updated"));
  auto report = nlohmann::json::parse(a.values.at("nccl-triage.io/report"));
  EXPECT_EQ(report["class"], "architecture");
  EXPECT_EQ(report["findings"].size(), 2u);
}

TEST(AnnotationsFor, FingerprintIgnoresEvidenceAndTimeButNotStatus) {
  AgentState state("n1", "v", 0);
  Finding f = TestFinding("ib.port_errors", FaultClass::kIbResource, CheckStatus::kPass);
  FillCycle(state, TestSnapshot(1), {f}, 1000);
  std::string first = AnnotationsFor(state.View()).fingerprint;
  f.evidence[0].value = "symbol_error=12";
  FillCycle(state, TestSnapshot(1), {f}, 61000);
  EXPECT_EQ(AnnotationsFor(state.View()).fingerprint, first);
  f.status = CheckStatus::kWarn;
  FillCycle(state, TestSnapshot(1), {f}, 121000);
  EXPECT_NE(AnnotationsFor(state.View()).fingerprint, first);
}

TEST(CompactReportJson, StaysUnder16KiBAndKeepsTheVerdictWithThousandsOfFindings) {
  AgentState state("n1", "v", 0);
  std::vector<Finding> findings;
  for (int i = 0; i < 2000; ++i) {
    Finding f = TestFinding("ib.port_state", FaultClass::kIbResource,
                            i % 10 == 0 ? CheckStatus::kFail : CheckStatus::kPass);
    f.message = std::string(300, 'x');
    f.evidence.assign(5, {"key", std::string(100, 'v'), "source"});
    findings.push_back(f);
  }
  FillCycle(state, TestSnapshot(1), findings, 1000);
  std::string text = CompactReportJson(state.View(), kReportAnnotationMaxBytes);
  EXPECT_LE(text.size(), kReportAnnotationMaxBytes);
  auto j = nlohmann::json::parse(text);
  EXPECT_EQ(j["class"], "ib_resource");
  EXPECT_EQ(j["causes"][0], "ib.port_state");
  EXPECT_EQ(j["truncated"], true);
}

TEST(CompactReportJson, DropsPassingDetailFirst) {
  AgentState state("n1", "v", 0);
  std::vector<Finding> findings;
  for (int i = 0; i < 40; ++i) {
    findings.push_back(TestFinding("check." + std::to_string(i), FaultClass::kArchitecture,
                                   i == 0 ? CheckStatus::kFail : CheckStatus::kPass));
    findings.back().evidence.assign(3, {"key", std::string(100, 'v'), "source"});
  }
  FillCycle(state, TestSnapshot(1), findings, 1000);
  auto full = nlohmann::json::parse(CompactReportJson(state.View(), 1 << 20));
  EXPECT_EQ(full["findings"].size(), 40u);
  auto small = nlohmann::json::parse(CompactReportJson(state.View(), 3000));
  ASSERT_EQ(small["findings"].size(), 1u);
  EXPECT_EQ(small["findings"][0]["check"], "check.0");
  EXPECT_EQ(small["passed"].size(), 39u);
  EXPECT_FALSE(small.contains("truncated"));  // nothing about the failing check was cut
}

TEST(CompactReportJson, KeepsTheLastKernelEventTimeAtEveryLevel) {
  AgentState state("n1", "v", 0);
  std::vector<Finding> findings;
  for (const char* at : {"2025-02-11T09:14:00Z", "2025-02-11T11:00:00Z"}) {
    findings.push_back(TestFinding("kernel.xid", FaultClass::kUnknown, CheckStatus::kFail));
    findings.back().evidence.push_back({std::string(kLastEventAtKey), at, "dev/kmsg"});
  }
  findings.push_back(TestFinding("kernel.link_flap", FaultClass::kIbResource, CheckStatus::kPass));
  findings.back().evidence.push_back(
      {std::string(kLastEventAtKey), "2025-02-11T12:00:00Z", "dev/kmsg"});
  FillCycle(state, TestSnapshot(1), findings, 1000);
  for (size_t max : {size_t{1} << 20, size_t{10}}) {  // 10 bytes: only the verdict is left
    auto j = nlohmann::json::parse(CompactReportJson(state.View(), max));
    EXPECT_EQ(j["kernel_last_event"],
              nlohmann::json({{"kernel.xid", "2025-02-11T11:00:00Z"}}));  // a pass gives none
  }
}

TEST(ConditionFor, MapsClassesToStatusAndPascalCaseReason) {
  AgentState state("n1", "v", 0);
  FillCycle(state, TestSnapshot(1),
            {TestFinding("ib.port_state", FaultClass::kIbResource, CheckStatus::kFail)}, 1000);
  NodeCondition c = ConditionFor(state.View());
  EXPECT_EQ(c.type, "NcclFabricReady");
  EXPECT_EQ(c.status, "False");
  EXPECT_EQ(c.reason, "IbResource");
  EXPECT_EQ(c.message, "ib.port_state");
  FillCycle(state, TestSnapshot(1),
            {TestFinding("ib.port_state", FaultClass::kIbResource, CheckStatus::kPass)}, 2000);
  c = ConditionFor(state.View());
  EXPECT_EQ(c.status, "True");
  EXPECT_EQ(c.reason, "Healthy");
  FillCycle(state, TestSnapshot(1),
            {TestFinding("ib.port_state", FaultClass::kIbResource, CheckStatus::kSkip)}, 3000);
  EXPECT_EQ(ConditionFor(state.View()).status, "Unknown");
}

}  // namespace
}  // namespace nccl_triage
