#include "core/report.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace nccl_triage {
namespace {

Finding F(std::string id, FaultClass c, CheckStatus s) {
  Finding f;
  f.check = std::move(id);
  f.fault_class = c;
  f.status = s;
  f.message = "m";
  f.evidence = {{"k", "v", "sys/x"}};
  f.remedy = "r";
  return f;
}

TEST(ClassFromFindings, ArchitectureBeforeIbResource) {
  std::vector<Finding> f = {F("ib.port_state", FaultClass::kIbResource, CheckStatus::kFail),
                            F("limits.memlock", FaultClass::kArchitecture, CheckStatus::kFail)};
  EXPECT_EQ(ClassFromFindings(f), FaultClass::kArchitecture);
}

TEST(ClassFromFindings, IbResourceWhenOnlyIbChecksFail) {
  std::vector<Finding> f = {F("ib.port_state", FaultClass::kIbResource, CheckStatus::kFail),
                            F("limits.memlock", FaultClass::kArchitecture, CheckStatus::kPass)};
  EXPECT_EQ(ClassFromFindings(f), FaultClass::kIbResource);
}

TEST(ClassFromFindings, WarningsAndSkipsAreHealthy) {
  std::vector<Finding> f = {F("ib.peermem", FaultClass::kIbResource, CheckStatus::kWarn),
                            F("ib.port_state", FaultClass::kIbResource, CheckStatus::kSkip)};
  EXPECT_EQ(ClassFromFindings(f), FaultClass::kHealthy);
}

TEST(ClassFromFindings, AllSkippedIsUnknown) {
  std::vector<Finding> f = {F("ib.port_state", FaultClass::kIbResource, CheckStatus::kSkip)};
  EXPECT_EQ(ClassFromFindings(f), FaultClass::kUnknown);
  EXPECT_EQ(ClassFromFindings({}), FaultClass::kUnknown);
}

TEST(MakeReport, CausesAreFailingIdsInCatalogueOrder) {
  auto r = MakeReport("n1",
                      {F("ib.port_state", FaultClass::kIbResource, CheckStatus::kFail),
                       F("shm.size", FaultClass::kArchitecture, CheckStatus::kWarn),
                       F("limits.memlock", FaultClass::kArchitecture, CheckStatus::kFail)},
                      42);
  EXPECT_EQ(r.causes, (std::vector<std::string>{"limits.memlock", "ib.port_state"}));
  EXPECT_EQ(r.basis, Basis::kChecks);
  EXPECT_EQ(ExitCodeFor(r), 1);
}

TEST(MakeReport, ExitCodeZeroWithoutFailures) {
  auto r = MakeReport("n1", {F("ib.peermem", FaultClass::kIbResource, CheckStatus::kWarn)}, 1);
  EXPECT_EQ(ExitCodeFor(r), 0);
}

TEST(ReportJson, MatchesDesignContractAndRoundTrips) {
  auto r = MakeReport("gpu-7", {F("ib.port_state", FaultClass::kIbResource, CheckStatus::kFail)},
                      1700000000000);
  auto j = ToJson(r);
  EXPECT_EQ(j["schema"], "nccl-triage/node-report/v1");
  EXPECT_EQ(j["node"], "gpu-7");
  EXPECT_EQ(j["class"], "ib_resource");
  EXPECT_EQ(j["basis"], "checks");
  ASSERT_EQ(j["findings"].size(), 1u);
  for (const char* key : {"check", "class", "status", "message", "evidence", "remedy"}) {
    EXPECT_TRUE(j["findings"][0].contains(key)) << key;
  }
  NodeReport back = ReportFromJson(j);
  EXPECT_EQ(back.node, r.node);
  EXPECT_EQ(back.fault_class, r.fault_class);
  EXPECT_EQ(back.causes, r.causes);
  EXPECT_EQ(back.findings, r.findings);
}

}  // namespace
}  // namespace nccl_triage
