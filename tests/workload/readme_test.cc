// The README's workloads section follows the code: every check a workload verdict can carry has a
// row, the workload-only checks show the catalogue's remedy, the allow-list is the code's, and the
// kubectl example reads the annotation keys the publisher writes.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "core/catalogue.h"
#include "workload/environ.h"
#include "workload/judge.h"
#include "workload/publish.h"
#include "support/docs.h"

namespace nccl_triage::workload {
namespace {

std::string Section() {
  return testing::DocSection("workloads", /*with_open_marker=*/true);
}

// "| `id` | ... | fix |" rows of the findings table, by id -> the last cell.
std::map<std::string, std::string> FindingRows(const std::string& section) {
  std::map<std::string, std::string> rows;
  std::istringstream lines(section);
  std::string line;
  while (std::getline(lines, line)) {
    if (!line.starts_with("| `")) continue;
    const size_t end = line.find('`', 3);
    const std::string id = line.substr(3, end - 3);
    if (FindCause(id) == nullptr) continue;
    std::string rest = line.substr(0, line.size() - 1);  // without the closing '|'
    while (!rest.empty() && rest.back() == ' ') rest.pop_back();
    const size_t bar = rest.rfind('|');
    std::string last = rest.substr(bar + 1);
    while (!last.empty() && last.front() == ' ') last.erase(last.begin());
    rows[id] = last;
  }
  return rows;
}

TEST(WorkloadsReadme, EveryWorkloadCheckHasARow) {
  const std::string section = Section();
  ASSERT_FALSE(section.empty());
  auto rows = FindingRows(section);
  for (auto id : WorkloadCheckIds()) {
    EXPECT_EQ(rows.count(std::string(id)), 1u) << "README workloads table lacks " << id;
  }
  for (const auto& [id, fix] : rows) {
    const auto ids = WorkloadCheckIds();
    EXPECT_NE(std::find(ids.begin(), ids.end(), id), ids.end())
        << id << " is in the README workloads table but not a workload check";
  }
}

TEST(WorkloadsReadme, WorkloadOnlyChecksShowTheCataloguesRemedy) {
  auto rows = FindingRows(Section());
  for (const auto& e : Catalogue()) {
    if (e.kind != CauseKind::kWorkloadCheck) continue;
    ASSERT_EQ(rows.count(std::string(e.id)), 1u) << e.id;
    EXPECT_EQ(rows[std::string(e.id)], e.remedy) << e.id;
  }
}

TEST(WorkloadsReadme, AllowListIsTheCodes) {
  const std::string section = Section();
  for (auto name : EnvironAllowList()) {
    EXPECT_NE(section.find("`" + std::string(name) + "`"), std::string::npos) << name;
  }
}

TEST(WorkloadsReadme, KubectlExampleReadsThePublishedKeys) {
  const std::string section = Section();
  EXPECT_NE(section.find("kubectl get pods -A -o custom-columns=NAMESPACE:.metadata.namespace,"
                         "POD:.metadata.name,VERDICT:.metadata.annotations.nccl-triage\\.io/"
                         "verdict,CAUSES:.metadata.annotations.nccl-triage\\.io/causes"),
            std::string::npos);
  for (auto key : kWorkloadAnnotationKeys) {
    EXPECT_NE(section.find("`" + std::string(key) + "`"), std::string::npos) << key;
  }
}

}  // namespace
}  // namespace nccl_triage::workload
