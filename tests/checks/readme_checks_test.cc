// The README's host-check table lists every host check of the catalogue, with the catalogue's
// class, title, why and remedy (the catalogue is the one source; the README must follow it).
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "core/catalogue.h"
#include "support/docs.h"

namespace nccl_triage {
namespace {

std::string ChecksSection() {
  return testing::DocSection("checks");
}

std::vector<std::string> Cells(const std::string& line) {
  std::vector<std::string> cells;
  std::string cell;
  for (size_t i = 1; i < line.size(); ++i) {
    if (line[i] != '|') {
      cell += line[i];
      continue;
    }
    while (!cell.empty() && cell.front() == ' ') cell.erase(cell.begin());
    while (!cell.empty() && cell.back() == ' ') cell.pop_back();
    cells.push_back(cell);
    cell.clear();
  }
  return cells;
}

TEST(ChecksReadme, TableMatchesTheCatalogue) {
  std::map<std::string, std::vector<std::string>> rows;  // id -> cells
  std::istringstream in(ChecksSection());
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("| `", 0) != 0) continue;
    auto cells = Cells(line);
    if (cells.size() != 7) continue;  // the exit-code table has two columns
    std::string id = cells[0].substr(1, cells[0].size() - 2);
    EXPECT_TRUE(rows.emplace(id, cells).second) << "listed twice: " << id;
  }
  size_t host_checks = 0;
  for (const auto& e : Catalogue()) {
    if (e.kind != CauseKind::kHostCheck) continue;
    ++host_checks;
    auto it = rows.find(std::string(e.id));
    ASSERT_NE(it, rows.end()) << "README check table lacks " << e.id;
    const auto& c = it->second;
    EXPECT_EQ(c[1], ToString(e.fault_class)) << e.id;
    EXPECT_EQ(c[2], e.title) << e.id;
    EXPECT_FALSE(c[3].empty()) << e.id << ": what it looks at";
    EXPECT_FALSE(c[4].empty()) << e.id << ": when it fails";
    EXPECT_EQ(c[5], e.why) << e.id;
    EXPECT_EQ(c[6], e.remedy) << e.id;
  }
  EXPECT_EQ(rows.size(), host_checks) << "the README lists ids that are not host checks";
}

}  // namespace
}  // namespace nccl_triage
