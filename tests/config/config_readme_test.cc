// The README's configuration table documents every key with its type and default, and agrees
// with what --dump-config prints for a default Config.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "config/config_loader.h"
#include "support/docs.h"

namespace nccl_triage {
namespace {

std::string ReadmeSection(const std::string& name) {
  return testing::DocSection(name);
}

std::string Trim(std::string s) {
  while (!s.empty() && s.front() == ' ') s.erase(s.begin());
  while (!s.empty() && s.back() == ' ') s.pop_back();
  if (s.size() >= 2 && s.front() == '`' && s.back() == '`') s = s.substr(1, s.size() - 2);
  return s;
}

struct Row {
  std::string type, default_value, meaning;
};

// Rows of the table whose first cell is a `key`.
std::map<std::string, Row> KeyTable(const std::string& section) {
  std::map<std::string, Row> rows;
  std::istringstream in(section);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("| `", 0) != 0) continue;
    std::vector<std::string> cells;
    std::string cell;
    for (size_t i = 1; i < line.size(); ++i) {
      if (line[i] == '|') {
        cells.push_back(Trim(cell));
        cell.clear();
      } else {
        cell += line[i];
      }
    }
    if (cells.size() >= 4) rows[cells[0]] = {cells[1], cells[2], cells[3]};
  }
  return rows;
}

// key -> the default as the README writes it: the dumped scalar, `unset` for ~, `[]`, `""`.
std::map<std::string, std::string> DumpedDefaults() {
  std::map<std::string, std::string> out;
  YAML::Node root = YAML::Load(DumpConfig(Config{}));
  for (auto section = root.begin(); section != root.end(); ++section) {
    for (auto key = section->second.begin(); key != section->second.end(); ++key) {
      const std::string name = section->first.Scalar() + "." + key->first.Scalar();
      const YAML::Node v = key->second;
      if (v.IsNull()) {
        out[name] = "unset";
      } else if (v.IsSequence()) {
        out[name] = v.size() == 0 ? "[]" : "(list)";
      } else if (v.Scalar().empty()) {
        out[name] = "\"\"";
      } else {
        out[name] = v.Scalar();
      }
    }
  }
  return out;
}

TEST(ConfigReadme, TableListsEveryKeyWithItsTypeAndDefault) {
  const auto table = KeyTable(ReadmeSection("config"));
  const auto defaults = DumpedDefaults();
  std::string expected_rows;
  for (const auto& k : ConfigKeys()) {
    const std::string key(k.key);
    expected_rows += "| `" + key + "` | " + std::string(k.type) + " | `" + defaults.at(key) +
                     "` | " + std::string(k.meaning) + " |\n";
  }
  SCOPED_TRACE("the README config table should hold these rows:\n" + expected_rows);
  EXPECT_EQ(table.size(), ConfigKeys().size());
  for (const auto& k : ConfigKeys()) {
    const std::string key(k.key);
    auto it = table.find(key);
    ASSERT_NE(it, table.end()) << "README lacks " << key;
    EXPECT_EQ(it->second.type, k.type) << key;
    EXPECT_EQ(it->second.default_value, defaults.at(key)) << key;
    EXPECT_FALSE(it->second.meaning.empty()) << key;
  }
}

TEST(ConfigReadme, ExampleYamlLoads) {
  const std::string section = ReadmeSection("config");
  const size_t a = section.find("```yaml\n");
  ASSERT_NE(a, std::string::npos) << "the config section has no ```yaml example";
  const size_t b = section.find("```", a + 8);
  auto c = LoadConfigFromString(section.substr(a + 8, b - a - 8), "README example");
  EXPECT_TRUE(c.ok()) << c.status().message();
}

}  // namespace
}  // namespace nccl_triage
