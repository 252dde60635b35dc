// The README's table of classifier causes is checked against the rule table and the catalogue:
// the same cause ids, the verdict classes the rules give, the catalogue's class and remedy, and
// log snippets that the rules of that cause would actually pick up.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "classify/message_catalogue.h"
#include "classify/rules.h"
#include "core/catalogue.h"
#include "support/docs.h"

namespace nccl_triage {
namespace {

struct Row {
  std::string id, classes, fix_in, says, fix;
};

std::string ReadReadme() {
  return testing::ReadUserDocs();
}

std::vector<Row> TableRows() {
  std::string readme = ReadReadme();
  const std::string begin = "<!-- classify-causes:begin -->";
  const std::string end = "<!-- classify-causes:end -->";
  size_t a = readme.find(begin);
  size_t b = readme.find(end);
  if (a == std::string::npos || b == std::string::npos || b < a) return {};
  std::stringstream table(readme.substr(a + begin.size(), b - a - begin.size()));
  std::vector<Row> rows;
  std::string line;
  while (std::getline(table, line)) {
    if (line.rfind("| `", 0) != 0) continue;
    std::vector<std::string> cells;
    size_t pos = 2;  // after "| "
    while (true) {
      size_t next = line.find(" | ", pos);
      if (next == std::string::npos) break;
      cells.push_back(line.substr(pos, next - pos));
      pos = next + 3;
    }
    std::string last = line.substr(pos);
    if (last.size() >= 2 && last.substr(last.size() - 2) == " |") last.resize(last.size() - 2);
    cells.push_back(last);
    if (cells.size() != 5) {
      ADD_FAILURE() << "a causes row needs 5 cells: " << line;
      continue;
    }
    std::string id = cells[0];
    if (id.size() > 2 && id.front() == '`' && id.back() == '`') id = id.substr(1, id.size() - 2);
    rows.push_back({id, cells[1], cells[2], cells[3], cells[4]});
  }
  return rows;
}

// cause id -> the verdict classes its rules (and result codes) give, as the README writes them.
std::map<std::string, std::string> ExpectedClasses() {
  std::map<std::string, std::set<std::string>> sets;
  for (const auto& r : Rules()) {
    if (r.strength != Strength::kIgnore) {
      sets[std::string(r.cause)].insert(std::string(ToString(r.verdict)));
    }
  }
  for (const auto& c : ResultCodeCauses()) {
    sets[std::string(c.cause)].insert(std::string(ToString(c.verdict)));
  }
  for (const auto& c : DerivedCauses()) {
    sets[std::string(c.cause)].insert(std::string(ToString(c.verdict)));
  }
  // A WARN no rule names gets the cause of its path in NCCL's message catalogue.
  for (const auto& p : MessagePaths()) {
    sets[std::string(p.cause.str())].insert(std::string(ToString(p.verdict)));
  }
  std::map<std::string, std::string> out;
  for (const auto& [id, s] : sets) {
    std::string joined;
    for (const auto& x : s) joined += (joined.empty() ? "" : ", ") + x;
    out[id] = joined;
  }
  return out;
}

std::vector<std::string> Snippets(const std::string& says) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (true) {
    size_t a = says.find('`', pos);
    if (a == std::string::npos) break;
    size_t b = says.find('`', a + 1);
    if (b == std::string::npos) break;
    out.push_back(says.substr(a + 1, b - a - 1));
    pos = b + 1;
  }
  return out;
}

TEST(ReadmeTable, ListsExactlyTheCausesTheRulesProduce) {
  auto rows = TableRows();
  ASSERT_FALSE(rows.empty()) << "no causes table between the classify-causes markers";
  auto expected = ExpectedClasses();
  std::set<std::string> listed;
  for (const auto& r : rows) {
    EXPECT_TRUE(listed.insert(r.id).second) << "listed twice: " << r.id;
    EXPECT_TRUE(expected.count(r.id)) << r.id << " is in the README but no rule produces it";
  }
  for (const auto& [id, classes] : expected) {
    EXPECT_TRUE(listed.count(id)) << id << " is produced by the rules but not in the README";
  }
}

TEST(ReadmeTable, ClassesAndFixesMatchRulesAndCatalogue) {
  auto expected = ExpectedClasses();
  for (const auto& r : TableRows()) {
    const CauseInfo* info = FindCause(r.id);
    ASSERT_NE(info, nullptr) << r.id;
    EXPECT_EQ(r.classes, expected[r.id]) << r.id;
    EXPECT_EQ(r.fix_in, ToString(info->fault_class)) << r.id;
    EXPECT_EQ(r.fix, info->remedy) << r.id;
  }
}

TEST(ReadmeTable, LogSnippetsAreOnesTheCauseRulesPickUp) {
  for (const auto& r : TableRows()) {
    auto snippets = Snippets(r.says);
    EXPECT_FALSE(snippets.empty()) << r.id << ": quote what the log says";
    for (const auto& s : snippets) {
      bool ok = false;
      // As the message of a WARN, INFO or DIAG line, as a text line, or as the file of a WARN
      // line.
      const std::vector<std::string> lines = {"h:1:1 [0] x.cc:1 NCCL WARN " + s,
                                              "h:1:1 [0] NCCL INFO " + s, "h:1 NCCL DIAG " + s, s,
                                              "h:1 NCCL DIAG [INFO] " + s,
                                              "h:1:1 [0] " + s + ":1 NCCL WARN -"};
      for (const auto& rule : Rules()) {
        if (rule.cause != r.id) continue;
        auto alone = CompiledRules::Compile({rule});
        ASSERT_TRUE(alone.ok()) << alone.status().message();
        for (const auto& line : lines) ok = ok || !RuleNamesForLine(line, **alone).empty();
      }
      // Back-trace codes (`-> 2`) and environment lines name a cause through the code table
      // and the context.
      if (s.rfind("-> ", 0) == 0) {
        const ResultCodeCause* rc = FindResultCode(std::atoi(s.c_str() + 3));
        ok = rc != nullptr && rc->cause == r.id;
      }
      if (s.rfind("NCCL_", 0) == 0) ok = true;
      // Causes named from several lines together (classifier_test covers their lines).
      for (const auto& d : DerivedCauses()) ok = ok || d.cause == r.id;
      // Causes only a catalogue path names (message_catalogue_test covers them).
      const bool by_rule = std::any_of(Rules().begin(), Rules().end(),
                                       [&](const Rule& x) { return x.cause == r.id; });
      for (const auto& p : MessagePaths()) ok = ok || (!by_rule && p.cause == r.id);
      EXPECT_TRUE(ok) << r.id << ": no rule of this cause would pick up `" << s << "`";
    }
  }
}

}  // namespace
}  // namespace nccl_triage
