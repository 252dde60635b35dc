// The schema of the keys (what `dump-schema` prints and the documentation's tables are generated
// from) agrees with what --dump-config prints for a default Config, and the documentation's
// example configuration loads.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "config/config_loader.h"
#include "support/docs.h"

namespace nccl_triage {
namespace {

// key -> the default as --dump-config writes it, as JSON (null, a number, a string, a list, a
// mapping).
std::map<std::string, nlohmann::json> DumpedDefaults() {
  std::map<std::string, nlohmann::json> out;
  YAML::Node root = YAML::Load(DumpConfig(Config{}));
  for (auto section = root.begin(); section != root.end(); ++section) {
    if (!section->second.IsMap()) continue;  // pools: a list, not keys
    for (auto key = section->second.begin(); key != section->second.end(); ++key) {
      const std::string name = section->first.Scalar() + "." + key->first.Scalar();
      const YAML::Node v = key->second;
      if (v.IsNull()) {
        out[name] = nullptr;
      } else if (v.IsSequence()) {
        nlohmann::json list = nlohmann::json::array();
        for (const auto& item : v) list.push_back(item.Scalar());
        out[name] = list;
      } else if (v.IsMap()) {
        nlohmann::json map = nlohmann::json::object();
        for (auto item = v.begin(); item != v.end(); ++item) {
          map[item->first.Scalar()] = item->second.Scalar();
        }
        out[name] = map;
      } else {
        out[name] = v.Scalar();
      }
    }
  }
  return out;
}

// A JSON default compared with the dumped text: numbers and booleans by their value.
bool SameDefault(const nlohmann::json& schema, const nlohmann::json& dumped) {
  if (schema.is_null() || dumped.is_null() || schema.is_array() || schema.is_object()) {
    return schema == dumped;
  }
  const std::string text = dumped.get<std::string>();
  if (schema.is_string()) return schema.get<std::string>() == text;
  if (schema.is_boolean()) return (schema.get<bool>() ? "true" : "false") == text;
  if (schema.is_number_float()) return schema.get<double>() == std::stod(text);
  if (schema.is_number_unsigned()) return schema.get<uint64_t>() == std::stoull(text);
  return schema.get<int64_t>() == std::stoll(text);
}

TEST(ConfigKeySchemas, ListEveryKeyWithTheDefaultDumpConfigPrints) {
  const auto dumped = DumpedDefaults();
  const auto keys = ConfigKeySchemas();
  ASSERT_EQ(keys.size(), dumped.size());
  ASSERT_EQ(keys.size(), ConfigKeys().size());
  for (const auto& k : keys) {
    const std::string name(k.info.key);
    auto it = dumped.find(name);
    ASSERT_NE(it, dumped.end()) << name << " is not in --dump-config";
    const auto schema = nlohmann::json::parse(k.default_json);
    EXPECT_TRUE(SameDefault(schema, it->second))
        << name << ": schema " << schema.dump() << ", dumped " << it->second.dump();
    EXPECT_FALSE(k.info.meaning.empty()) << name;
    EXPECT_FALSE(k.kind.empty()) << name;
    if (schema.is_null()) {
      EXPECT_TRUE(k.optional) << name << " is unset by default";
    }
    if (k.min && k.max) {
      EXPECT_LE(*k.min, *k.max) << name;
    }
  }
}

TEST(ConfigKeySchemas, RangesAreTheOnesTheLoaderEnforces) {
  for (const auto& k : ConfigKeySchemas()) {
    if (!k.max || (k.kind != "integer" && k.kind != "number")) continue;
    const std::string name(k.info.key);
    const size_t dot = name.find('.');
    const std::string above = k.kind == "integer" ? std::to_string(static_cast<int64_t>(*k.max) + 1)
                                                  : std::to_string(*k.max * 2 + 1);
    const std::string yaml = name.substr(0, dot) + ":\n  " + name.substr(dot + 1) + ": " + above;
    EXPECT_FALSE(LoadConfigFromString(yaml).ok()) << name << " accepted " << above;
  }
}

TEST(ConfigReadme, ExampleYamlLoads) {
  const std::string section = testing::DocSection("config");
  const size_t a = section.find("```yaml\n");
  ASSERT_NE(a, std::string::npos) << "the config section has no ```yaml example";
  const size_t b = section.find("```", a + 8);
  auto c = LoadConfigFromString(section.substr(a + 8, b - a - 8), "README example");
  EXPECT_TRUE(c.ok()) << c.status().message();
}

}  // namespace
}  // namespace nccl_triage
