// A checker for the part of JSON Schema (draft 7) the configuration's kinds write into their
// fragments, and a converter from a YAML value to the JSON a chart's values become. A keyword it
// does not know is a violation: a kind that starts using one fails the tests until it is checked
// here too.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <string>

namespace nccl_triage::testing {

// "" when `value` satisfies `schema`, else what it violates and where ("[1]: not in enum").
inline std::string SchemaViolation(const nlohmann::ordered_json& schema,
                                   const nlohmann::ordered_json& value,
                                   const std::string& at = "") {
  auto is_type = [&](const std::string& type) {
    if (type == "integer") {
      return value.is_number_integer() ||
             (value.is_number_float() && std::trunc(value.get<double>()) == value.get<double>());
    }
    if (type == "number") return value.is_number();
    if (type == "string") return value.is_string();
    if (type == "boolean") return value.is_boolean();
    if (type == "array") return value.is_array();
    if (type == "object") return value.is_object();
    if (type == "null") return value.is_null();
    return false;
  };
  for (const auto& [keyword, arg] : schema.items()) {
    const std::string where = at + (at.empty() ? "" : ": ");
    if (keyword == "description") continue;
    if (keyword == "type") {
      bool ok = false;
      if (arg.is_string()) {
        ok = is_type(arg.get<std::string>());
      } else {
        for (const auto& t : arg) ok = ok || is_type(t.get<std::string>());
      }
      if (!ok) return where + value.dump() + " is not of type " + arg.dump();
    } else if (keyword == "enum") {
      bool found = false;
      for (const auto& e : arg) found = found || e == value;
      if (!found) return where + value.dump() + " is not in enum";
    } else if (keyword == "pattern") {
      if (value.is_string() &&
          !std::regex_search(value.get<std::string>(), std::regex(arg.get<std::string>()))) {
        return where + value.dump() + " does not match " + arg.get<std::string>();
      }
    } else if (keyword == "minimum") {
      if (value.is_number() && value.get<double>() < arg.get<double>()) {
        return where + value.dump() + " is below " + arg.dump();
      }
    } else if (keyword == "maximum") {
      if (value.is_number() && value.get<double>() > arg.get<double>()) {
        return where + value.dump() + " is above " + arg.dump();
      }
    } else if (keyword == "items") {
      if (!value.is_array()) continue;
      for (size_t i = 0; i < value.size(); ++i) {
        std::string v = SchemaViolation(arg, value[i], at + "[" + std::to_string(i) + "]");
        if (!v.empty()) return v;
      }
    } else if (keyword == "uniqueItems") {
      if (!value.is_array() || !arg.get<bool>()) continue;
      std::set<std::string> seen;
      for (const auto& item : value) {
        if (!seen.insert(item.dump()).second) return where + item.dump() + " is repeated";
      }
    } else if (keyword == "propertyNames" || keyword == "additionalProperties") {
      if (!value.is_object()) continue;
      for (const auto& [name, item] : value.items()) {
        const nlohmann::ordered_json& checked =
            keyword == "propertyNames" ? nlohmann::ordered_json(name) : item;
        std::string v = SchemaViolation(arg, checked, at + "." + name);
        if (!v.empty()) return v;
      }
    } else {
      return where + "keyword " + keyword + " is not known to this checker";
    }
  }
  return "";
}

// A YAML value as JSON, its plain scalars resolved as YAML 1.2's core schema does (the chart's
// values are read that way): quoted scalars are strings, plain ones null, booleans, integers
// (decimal or 0x) or floats where they look it, else strings.
inline nlohmann::ordered_json YamlToJson(const YAML::Node& node) {
  if (node.IsNull()) return nullptr;
  if (node.IsSequence()) {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const auto& item : node) out.push_back(YamlToJson(item));
    return out;
  }
  if (node.IsMap()) {
    nlohmann::ordered_json out = nlohmann::ordered_json::object();
    for (auto it = node.begin(); it != node.end(); ++it) {
      out[it->first.Scalar()] = YamlToJson(it->second);
    }
    return out;
  }
  const std::string& t = node.Scalar();
  if (node.Tag() == "!") return t;
  static const std::regex kBool("true|True|TRUE|false|False|FALSE");
  static const std::regex kDecimal("[-+]?[0-9]+");
  static const std::regex kHex("0x[0-9a-fA-F]+");
  static const std::regex kFloat(R"([-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?)");
  if (std::regex_match(t, kBool)) return t[0] == 't' || t[0] == 'T';
  if (std::regex_match(t, kDecimal)) return std::stoll(t);
  if (std::regex_match(t, kHex)) return std::stoll(t.substr(2), nullptr, 16);
  if (std::regex_match(t, kFloat)) return std::stod(t);
  return t;
}

}  // namespace nccl_triage::testing
