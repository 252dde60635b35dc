#include <gtest/gtest.h>

#include <array>
#include <set>
#include <string>

#include "checks/builtin.h"
#include "checks/check.h"
#include "checks/snapshot_builder.h"
#include "core/catalogue.h"
#include "core/ids.h"
#include "core/report.h"

namespace nccl_triage {
namespace {

using testing::BareNode;
using testing::HealthyIbNode;
using testing::HealthyRoceNode;

CheckRegistry Builtins() { return BuiltinCheckRegistry(); }

TEST(CheckRegistry, RegistersEveryHostCheckOfTheCatalogueOnce) {
  CheckRegistry r = Builtins();
  std::set<std::string> registered;
  for (const auto& c : r.checks()) {
    EXPECT_TRUE(registered.insert(std::string(c.id)).second) << c.id;
  }
  std::set<std::string> catalogue;
  for (const auto& e : Catalogue()) {
    if (e.kind == CauseKind::kHostCheck) catalogue.insert(std::string(e.id));
  }
  EXPECT_EQ(registered, catalogue);
}

TEST(CheckRegistry, RegistersTheBuiltinsInCatalogueOrder) {
  CheckRegistry r = Builtins();
  auto host_checks = CatalogueIds<CauseKind::kHostCheck>();
  ASSERT_EQ(r.checks().size(), host_checks.size());
  for (size_t i = 0; i < host_checks.size(); ++i) EXPECT_EQ(r.checks()[i].id, host_checks[i]);
}

// An id that is not in the catalogue cannot even be written (tests/core/compile_fail); the ids
// that exist but are not host checks, and the other mistakes, are refused at registration.
TEST(CheckRegistry, RejectsIdsThatAreNotHostChecks) {
  CheckRegistry r;
  EXPECT_FALSE(r.Register({ids::kIbFabric, &checks::IbPortState}).ok());       // a log cause
  EXPECT_FALSE(r.Register({ids::kPairLinkLayer, &checks::IbPortState}).ok());  // cross-node
  EXPECT_FALSE(r.Register({ids::kEnvIbHca, &checks::IbPortState}).ok());       // workload
  EXPECT_FALSE(r.Register({ids::kIbPortState, nullptr}).ok());
  EXPECT_TRUE(r.Register({ids::kIbPortState, &checks::IbPortState}).ok());
  EXPECT_FALSE(r.Register({ids::kIbPortState, &checks::IbPortState}).ok());  // duplicate
  EXPECT_EQ(r.checks().size(), 1u);
}

TEST(CheckRegistry, BuiltinRegistrationReportsARejectedCheckInsteadOfDroppingIt) {
  CheckRegistry r;
  ASSERT_TRUE(r.Register({ids::kIbGid, &checks::IbGid}).ok());
  Status s = RegisterBuiltinChecks(r);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInternal);
  EXPECT_EQ(s.message(), "built-in checks: check 'ib.gid' is registered twice");
}

TEST(CheckRegistry, BuiltinRegistrationSucceedsOnAFreshRegistry) {
  CheckRegistry r;
  Status s = RegisterBuiltinChecks(r);
  EXPECT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(r.checks().size(), CatalogueIds<CauseKind::kHostCheck>().size());
}

TEST(CheckRegistry, OnlyKeepsTheNamedChecksInTheGivenOrder) {
  CheckRegistry all = Builtins();
  const std::array wanted = {ids::kShmSize, ids::kIbGid, ids::kShmSize};
  CheckRegistry some = all.Only(wanted);
  ASSERT_EQ(some.checks().size(), 2u);
  EXPECT_EQ(some.checks()[0].id, ids::kShmSize);
  EXPECT_EQ(some.checks()[1].id, ids::kIbGid);
  EXPECT_EQ(some.checks()[0].run, all.Find("shm.size")->run);

  CheckRegistry lacking;
  ASSERT_TRUE(lacking.Register({ids::kIbGid, &checks::IbGid}).ok());
  const std::array both = {ids::kShmSize, ids::kIbGid};
  CheckRegistry subset = lacking.Only(both);
  ASSERT_EQ(subset.checks().size(), 1u);
  EXPECT_EQ(subset.checks()[0].id, ids::kIbGid);
}

TEST(CheckRegistry, FindingsCarryClassAndRemedyFromTheCatalogue) {
  CheckRegistry r = Builtins();
  for (const NodeSnapshot& s : {HealthyIbNode(), HealthyRoceNode(), BareNode(), NodeSnapshot{}}) {
    for (const auto& f : r.Run(s, Config{}, {})) {
      const CauseInfo* info = FindCause(f.check);
      ASSERT_NE(info, nullptr) << f.check;
      EXPECT_EQ(f.fault_class, info->fault_class) << f.check;
      EXPECT_EQ(f.remedy, info->remedy) << f.check;
      EXPECT_FALSE(f.message.empty()) << f.check;
      EXPECT_FALSE(f.evidence.empty()) << f.check;
      for (const auto& e : f.evidence) EXPECT_FALSE(e.source.empty()) << f.check << " " << e.key;
    }
  }
}

TEST(CheckRegistry, HealthyIbNodeHasNoFailureOrWarning) {
  for (const NodeSnapshot& s : {HealthyIbNode(), HealthyRoceNode()}) {
    auto findings = Builtins().Run(s, Config{}, {});
    for (const auto& f : findings) {
      EXPECT_TRUE(f.status == CheckStatus::kPass || f.status == CheckStatus::kSkip)
          << f.check << ": " << ToString(f.status) << " " << f.message;
    }
    EXPECT_EQ(MakeReport(s.node, findings, 0).fault_class, FaultClass::kHealthy);
  }
}

TEST(CheckRegistry, BareNodeSkipsEveryIbCheckWithTheReason) {
  auto findings = Builtins().Run(BareNode(), Config{}, {});
  for (const auto& f : findings) {
    EXPECT_NE(f.status, CheckStatus::kFail) << f.check << ": " << f.message;
    if (f.check.rfind("ib.", 0) == 0) {
      EXPECT_EQ(f.status, CheckStatus::kSkip) << f.check;
      EXPECT_EQ(f.message, "no RDMA hardware on this node") << f.check;
    }
  }
}

TEST(CheckRegistry, UnreadableInputNeverFails) {
  for (NodeSnapshot s : {HealthyIbNode(), HealthyRoceNode(), BareNode(), NodeSnapshot{}}) {
    testing::MakeEveryFactUnreadable(s);
    for (const auto& f : Builtins().Run(s, Config{}, {})) {
      EXPECT_NE(f.status, CheckStatus::kFail) << f.check << ": " << f.message;
    }
  }
}

TEST(CheckRegistry, DisabledChecksAreReportedAsSkipped) {
  Config c;
  c.checks.disabled = {"ib.port_state"};
  NodeSnapshot s = HealthyIbNode();
  s.ib_devices[0].ports[0].state = testing::Have<std::string>("1: DOWN");
  auto findings = Builtins().Run(s, c, {});
  bool seen = false;
  for (const auto& f : findings) {
    if (f.check != "ib.port_state") continue;
    seen = true;
    EXPECT_EQ(f.status, CheckStatus::kSkip);
    EXPECT_NE(f.message.find("disabled"), std::string::npos);
  }
  EXPECT_TRUE(seen);
}

Finding Throwing(const NodeSnapshot&, const Config&, const CheckContext&) {
  throw std::runtime_error("boom");
}

TEST(CheckRegistry, ACheckThatThrowsBecomesASkipNotACrash) {
  CheckRegistry r;
  ASSERT_TRUE(r.Register({ids::kIbPortState, &Throwing}).ok());
  auto findings = r.Run(HealthyIbNode(), Config{}, {});
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].status, CheckStatus::kSkip);
  EXPECT_EQ(findings[0].evidence.at(0).value, "boom");
}

TEST(CheckRegistry, ArchitectureFailureWinsOverIbFailureInTheReport) {
  NodeSnapshot s = HealthyIbNode();
  s.ib_devices[0].ports[0].state = testing::Have<std::string>("1: DOWN");
  s.memlock = testing::Have(LimitPair{{false, 65536}, {false, 65536}});
  s.cap_eff = testing::Have<uint64_t>(0);
  auto report = MakeReport(s.node, Builtins().Run(s, Config{}, {}), 0);
  EXPECT_EQ(report.fault_class, FaultClass::kArchitecture);
  EXPECT_EQ(ExitCodeFor(report), 1);
}

}  // namespace
}  // namespace nccl_triage
