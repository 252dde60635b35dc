// Every catalogue entry is produced somewhere: a host check registers it, a workload or
// cross-node check returns it, a classifier rule (or result code) names it, or its entry says it
// is named from the probe's own result (kFromProbeResult) and the README documents where. An id
// that nothing produces is documentation of a cause nobody can ever see; a stale kind or trait
// misleads every table generated from the catalogue.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "checks/check.h"
#include "classify/message_catalogue.h"
#include "classify/rules.h"
#include "core/catalogue.h"
#include "kernel/kernel_judge.h"
#include "planner/cross_node.h"
#include "workload/judge.h"
#include "workload/nccl_env.h"
#include "support/docs.h"

namespace nccl_triage {
namespace {

std::set<std::string> HostCheckIds() {
  std::set<std::string> ids;
  const CheckRegistry registry = BuiltinCheckRegistry();
  for (const Check& c : registry.checks()) ids.emplace(c.id.str());
  return ids;
}

// What the workload-only checks return when they run (not what a list says they would).
std::set<std::string> WorkloadCheckFindingIds() {
  const workload::NcclSettings settings;
  const NodeSnapshot host;
  return {workload::EnvIbDisable(settings, host, "environ").check,
          workload::EnvIbHca(settings, host, {}, "environ").check};
}

std::set<std::string> CrossNodeIds() {
  std::set<std::string> ids;
  for (const Finding& f : CrossNodeChecks(NodeInfo{}, NodeInfo{})) ids.insert(f.check);
  return ids;
}

std::set<std::string> ClassifierIds() {
  std::set<std::string> ids;
  for (const Rule& r : Rules()) ids.emplace(r.cause);
  for (const ResultCodeCause& c : ResultCodeCauses()) ids.emplace(c.cause.str());
  for (const DerivedCause& c : DerivedCauses()) ids.emplace(c.cause.str());
  // A WARN no rule names is classified by its path in NCCL's message catalogue.
  for (const MessagePath& p : MessagePaths()) ids.emplace(p.cause.str());
  return ids;
}

// What the kernel-log judgement returns (its pass findings name every id it can produce).
std::set<std::string> KernelLogIds() {
  std::set<std::string> ids;
  for (const Finding& f : kernel::JudgeKernelEvents({}, kernel::KernelDevices{}, {})) {
    ids.insert(f.check);
  }
  return ids;
}

std::string Readme() {
  return testing::ReadUserDocs();
}

TEST(CatalogueUse, EveryEntryIsProducedByACheckTheClassifierOrTheProbeResult) {
  const auto host = HostCheckIds(), workload = WorkloadCheckFindingIds(), cross = CrossNodeIds(),
             classifier = ClassifierIds(), kernel_log = KernelLogIds();
  for (const CauseInfo& e : Catalogue()) {
    const std::string id(e.id);
    const bool produced = host.count(id) || workload.count(id) || cross.count(id) ||
                          classifier.count(id) || kernel_log.count(id) ||
                          e.Has(kFromProbeResult);
    EXPECT_TRUE(produced) << id
                          << " is produced by no check and no classifier rule, and its entry "
                             "does not say it comes from the probe result";
  }
}

TEST(CatalogueUse, EachKindIsProducedWhereItsEntrySays) {
  const auto host = HostCheckIds(), workload = WorkloadCheckFindingIds(), cross = CrossNodeIds(),
             classifier = ClassifierIds(), kernel_log = KernelLogIds();
  for (const CauseInfo& e : Catalogue()) {
    const std::string id(e.id);
    switch (e.kind) {
      case CauseKind::kKernelLog:
        EXPECT_EQ(kernel_log.count(id), 1u) << id << " is a kernel-log id nothing names";
        break;
      case CauseKind::kHostCheck:
        EXPECT_EQ(host.count(id), 1u) << id << " is a host check that is not registered";
        break;
      case CauseKind::kWorkloadCheck:
        EXPECT_EQ(workload.count(id), 1u) << id << " is a workload check that no check returns";
        break;
      case CauseKind::kCrossNode:
        EXPECT_EQ(cross.count(id), 1u) << id << " is a cross-node check that no check returns";
        break;
      case CauseKind::kLogCause:
        EXPECT_NE(classifier.count(id) == 1, e.Has(kFromProbeResult))
            << id << ": a log cause is named by a classifier rule or, only when no rule names "
            << "it, marked kFromProbeResult";
        break;
    }
  }
  // And each check returns ids of its own kind only.
  auto expect_kind = [](const std::set<std::string>& ids, CauseKind kind) {
    for (const auto& id : ids) EXPECT_EQ(FindCause(id)->kind, kind) << id;
  };
  expect_kind(host, CauseKind::kHostCheck);
  expect_kind(workload, CauseKind::kWorkloadCheck);
  expect_kind(cross, CauseKind::kCrossNode);
  expect_kind(kernel_log, CauseKind::kKernelLog);
}

TEST(CatalogueUse, ProbeResultCausesAreDocumentedInTheReadme) {
  const std::string readme = Readme();
  ASSERT_FALSE(readme.empty());
  for (const CauseInfo& e : Catalogue()) {
    if (!e.Has(kFromProbeResult)) continue;
    EXPECT_NE(readme.find("`" + std::string(e.id) + "`"), std::string::npos)
        << e.id << " comes from the probe result; the README must say when";
  }
}

TEST(CatalogueUse, ContainerChecksAreTheHostChecksMarkedForContainers) {
  std::set<std::string> marked;
  for (const CauseInfo& e : Catalogue()) {
    if (e.Has(kRunsInContainers)) marked.emplace(e.id);
  }
  std::set<std::string> judged;
  for (CauseId id : workload::kWorkloadHostChecks) judged.emplace(id.str());
  EXPECT_EQ(judged, marked);
  EXPECT_EQ(judged.size(), 9u);  // DESIGN's per-container checks; a change here is deliberate
}

}  // namespace
}  // namespace nccl_triage
