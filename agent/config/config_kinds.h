// The kinds of configuration values: each kind says, in one struct, how a value of its type is
// read from YAML (with the loader's error messages), written back by --dump-config, shown as JSON
// (the documented default), named in dump-schema, and described as a JSON-schema fragment (the
// chart's values.schema.json). A key names its kind in config_keys.cc; a new kind is a new struct
// here (and its test), nothing else. Internal to agent/config.
//
// A kind is a struct with a `Value` (the type of the Config members it sets) and the static
// members the concept ValueKind (config_schema.h) lists; KindDefaults gives the constants most
// kinds share. Optional<K> makes a kind that null unsets.
#pragma once

#include <yaml-cpp/yaml.h>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/byte_size.h"
#include "base/reflect.h"
#include "config/config_schema.h"
#include "core/catalogue.h"
#include "core/config.h"
#include "core/env_names.h"
#include "core/rail_selection.h"

namespace nccl_triage::config_internal {

// ---- helpers of the kinds (config_kinds.cc) ----

// A scalar written without quotes; quoted scalars are strings, never numbers or booleans.
bool IsPlainScalar(const YAML::Node& v);
// Decimal or 0x hexadecimal, with an optional sign; nullopt beyond int64.
std::optional<int64_t> ParseInteger(std::string_view text);
// Dotted numbers: "535", "550.54".
bool IsVersion(std::string_view text);
// host:port, the host possibly empty or a bracketed IPv6 address.
bool IsListen(std::string_view text);
// A node label's key as Kubernetes takes it: an optional DNS-subdomain prefix and '/', then a
// name of at most 63 characters, alphanumeric at both ends, with '-', '_' and '.' inside.
bool IsLabelKey(std::string_view key);
// A label value: such a name, or empty.
bool IsLabelValue(std::string_view value);
// The shortest text that reads back as `d`.
std::string FormatDouble(double d);
// "0x7fff".
std::string HexPkey(uint16_t v);
// A bound as JSON: an integer when it is one (most are), else a number.
Json JsonNumber(double v);

// A list of strings; null is empty. A non-string item is "expected a string".
Status ReadStrings(const ValueReader& in, const YAML::Node& v, std::vector<std::string>& out);
// ReadStrings, then "<key>: '<item>' <refusal>" at the first item `valid` refuses.
template <typename Valid>
Status ReadCheckedStrings(const ValueReader& in, const YAML::Node& v, std::vector<std::string>& out,
                          Valid valid, std::string_view refusal) {
  if (Status s = ReadStrings(in, v, out); !s.ok()) return s;
  size_t i = 0;
  for (const auto& item : v) {
    if (!valid(out[i])) {
      return in.Error(item.Mark(),
                      std::string(in.key()) + ": '" + out[i] + "' " + std::string(refusal));
    }
    ++i;
  }
  return Status::Ok();
}

// ---- the kinds ----

struct KindDefaults {
  static constexpr bool kOptional = false;
  static constexpr bool kUnsigned = false;
  // The grammar of the value's strings, printed as the key's `pattern` by dump-schema. Only the
  // byte sizes publish one there (their json_schema has it too, as every kind's does).
  static constexpr std::string_view kPattern = {};
};

// int: a plain integer within the key's range.
struct Int : KindDefaults {
  using Value = int;
  static constexpr std::string_view kName = "integer";
  static Status Parse(const ValueReader& in, const YAML::Node& v, int& out) {
    constexpr std::string_view kExpected = "an integer";
    if (!IsPlainScalar(v)) return in.TypeError(v, kExpected);
    const auto n = ParseInteger(v.Scalar());
    if (!n) return in.TypeError(v, kExpected);
    if (Status s = in.RangeCheck(v, static_cast<double>(*n)); !s.ok()) return s;
    if (*n < INT32_MIN || *n > INT32_MAX) return in.TypeError(v, kExpected);
    out = static_cast<int>(*n);
    return Status::Ok();
  }
  static void Emit(YAML::Emitter& out, int v) { out << v; }
  static Json ToJson(int v) { return v; }
  static Json Schema(const ConfigSchemaContext&) { return {{"type", "integer"}}; }
};

// uint64_t: a plain non-negative integer within the key's range.
struct Uint : KindDefaults {
  using Value = uint64_t;
  static constexpr std::string_view kName = "integer";
  static constexpr bool kUnsigned = true;
  static Status Parse(const ValueReader& in, const YAML::Node& v, uint64_t& out) {
    constexpr std::string_view kExpected = "a non-negative integer";
    if (!IsPlainScalar(v)) return in.TypeError(v, kExpected);
    const auto n = ParseInteger(v.Scalar());
    if (!n || *n < 0) return in.TypeError(v, kExpected);
    if (Status s = in.RangeCheck(v, static_cast<double>(*n)); !s.ok()) return s;
    out = static_cast<uint64_t>(*n);
    return Status::Ok();
  }
  static void Emit(YAML::Emitter& out, uint64_t v) { out << v; }
  static Json ToJson(uint64_t v) { return v; }
  static Json Schema(const ConfigSchemaContext&) { return {{"type", "integer"}}; }
};

// uint16_t: an InfiniBand partition key, an integer or the quoted hex string ibstat and the
// sysfs pkeys files print ("0x8001"); the membership bit is stripped.
struct Pkey : KindDefaults {
  using Value = uint16_t;
  static constexpr std::string_view kName = "pkey";
  static Status Parse(const ValueReader& in, const YAML::Node& v, uint16_t& out) {
    constexpr std::string_view kExpected = "a PKey (0x0000-0xffff)";
    const bool quoted_hex = v.IsScalar() && v.Scalar().size() > 2 && v.Scalar().size() <= 6 &&
                            (v.Scalar().starts_with("0x") || v.Scalar().starts_with("0X"));
    if (!IsPlainScalar(v) && !quoted_hex) return in.TypeError(v, kExpected);
    const auto n = ParseInteger(v.Scalar());
    if (!n || *n < 0 || *n > 0xffff) return in.TypeError(v, kExpected);
    out = static_cast<uint16_t>(*n & 0x7fff);
    return Status::Ok();
  }
  static void Emit(YAML::Emitter& out, uint16_t v) { out << HexPkey(v); }
  static Json ToJson(uint16_t v) { return v; }
  static Json Schema(const ConfigSchemaContext&) {
    return {{"type", {"integer", "string"}}, {"pattern", "^0[xX][0-9a-fA-F]{1,4}$"}};
  }
};

// uint64_t: a byte size, an integer or a size string (base/byte_size.h: "64Mi", "1Gi").
struct Bytes : KindDefaults {
  using Value = uint64_t;
  static constexpr std::string_view kName = "bytes";
  static constexpr bool kUnsigned = true;
  static constexpr std::string_view kPattern = kByteSizePattern;
  static Status Parse(const ValueReader& in, const YAML::Node& v, uint64_t& out) {
    constexpr std::string_view kExpected = "a size in bytes (an integer, or e.g. 64Mi, 1Gi)";
    if (!v.IsScalar()) return in.TypeError(v, kExpected);
    const auto n = ParseByteSize(v.Scalar());
    if (!n) return in.TypeError(v, kExpected);
    if (Status s = in.RangeCheck(v, static_cast<double>(*n)); !s.ok()) return s;
    out = *n;
    return Status::Ok();
  }
  static void Emit(YAML::Emitter& out, uint64_t v) { out << v; }
  static Json ToJson(uint64_t v) { return v; }
  static Json Schema(const ConfigSchemaContext&) {
    return {{"type", {"integer", "string"}}, {"pattern", kByteSizePattern}};
  }
};

// double: a plain finite number within the key's range.
struct Double : KindDefaults {
  using Value = double;
  static constexpr std::string_view kName = "number";
  static Status Parse(const ValueReader& in, const YAML::Node& v, double& out) {
    if (!IsPlainScalar(v)) return in.TypeError(v, "a number");
    const std::string& t = v.Scalar();
    double d = 0;
    auto [ptr, ec] = std::from_chars(t.data(), t.data() + t.size(), d);
    if (ec != std::errc() || ptr != t.data() + t.size() || !std::isfinite(d)) {
      return in.TypeError(v, "a number");
    }
    if (Status s = in.RangeCheck(v, d); !s.ok()) return s;
    out = d;
    return Status::Ok();
  }
  static void Emit(YAML::Emitter& out, double v) { out << FormatDouble(v); }
  static Json ToJson(double v) { return v; }
  static Json Schema(const ConfigSchemaContext&) { return {{"type", "number"}}; }
};

// bool: true or false, unquoted.
struct Bool : KindDefaults {
  using Value = bool;
  static constexpr std::string_view kName = "bool";
  static Status Parse(const ValueReader& in, const YAML::Node& v, bool& out) {
    if (!IsPlainScalar(v)) return in.TypeError(v, "true or false");
    const std::string& t = v.Scalar();
    if (t == "true" || t == "True" || t == "TRUE") {
      out = true;
    } else if (t == "false" || t == "False" || t == "FALSE") {
      out = false;
    } else {
      return in.TypeError(v, "true or false");
    }
    return Status::Ok();
  }
  static void Emit(YAML::Emitter& out, bool v) { out << (v ? "true" : "false"); }
  static Json ToJson(bool v) { return v; }
  static Json Schema(const ConfigSchemaContext&) { return {{"type", "boolean"}}; }
};

// A std::string any scalar gives, written back double-quoted. Kinds of strings with a grammar
// derive from it with their own Parse and Schema.
struct String : KindDefaults {
  using Value = std::string;
  static constexpr std::string_view kName = "string";
  static Status Parse(const ValueReader& in, const YAML::Node& v, std::string& out) {
    if (!v.IsScalar()) return in.TypeError(v, "a string");
    out = v.Scalar();
    return Status::Ok();
  }
  static void Emit(YAML::Emitter& out, const std::string& v) { out << YAML::DoubleQuoted << v; }
  static Json ToJson(const std::string& v) { return v; }
  static Json Schema(const ConfigSchemaContext&) { return {{"type", "string"}}; }
};

// A listen address, host:port.
struct Listen : String {
  static constexpr std::string_view kName = "listen";
  static Status Parse(const ValueReader& in, const YAML::Node& v, std::string& out) {
    if (!v.IsScalar() || !IsListen(v.Scalar())) return in.TypeError(v, "host:port");
    out = v.Scalar();
    return Status::Ok();
  }
  static Json Schema(const ConfigSchemaContext&) {
    return {{"type", "string"}, {"pattern", R"(^(\[[0-9a-fA-F:.]*\]|[^:\[\]]*):[0-9]{1,5}$)"}};
  }
};

// A version of dotted numbers, "550.54".
struct Version : String {
  static constexpr std::string_view kName = "version";
  static Status Parse(const ValueReader& in, const YAML::Node& v, std::string& out) {
    if (!v.IsScalar() || !IsVersion(v.Scalar())) {
      return in.TypeError(v, "a version such as \"550.54\"");
    }
    out = v.Scalar();
    return Status::Ok();
  }
  static Json Schema(const ConfigSchemaContext&) {
    return {{"type", "string"}, {"pattern", R"(^[0-9]+(\.[0-9]+)*$)"}};
  }
};

// The HTTP servers' authentication (core/config.h ServerConfig): kubernetes or none.
struct HttpAuth : String {
  static constexpr std::string_view kName = "http_auth";
  static Status Parse(const ValueReader& in, const YAML::Node& v, std::string& out) {
    if (!v.IsScalar() || (v.Scalar() != kHttpAuthKubernetes && v.Scalar() != kHttpAuthNone)) {
      return in.TypeError(v, "kubernetes or none");
    }
    out = v.Scalar();
    return Status::Ok();
  }
  static Json Schema(const ConfigSchemaContext&) {
    return {{"type", "string"}, {"enum", {kHttpAuthKubernetes, kHttpAuthNone}}};
  }
};

// A rail selection (core/rail_selection.h): all, a count or a list of rails and HCAs, kept as
// written.
struct Rails : String {
  static constexpr std::string_view kName = "rails";
  static Status Parse(const ValueReader& in, const YAML::Node& v, std::string& out) {
    if (!v.IsScalar()) return in.TypeError(v, "all, a number of rails or a list such as \"0,3\"");
    if (auto selection = ParseRailSelection(v.Scalar()); !selection.ok()) {
      return in.Error(v.Mark(), std::string(in.key()) + ": " + selection.status().message());
    }
    out = v.Scalar();
    return Status::Ok();
  }
  static Json Schema(const ConfigSchemaContext&) { return {{"type", {"string", "integer"}}}; }
};

// An enum with a name table (base/reflect.h), written by its names; the error lists them
// ("off, dry-run, taint or cordon").
template <NamedEnum E>
struct NamedEnumKind : KindDefaults {
  using Value = E;
  static Status Parse(const ValueReader& in, const YAML::Node& v, E& out) {
    const auto value = v.IsScalar() ? FromString<E>(v.Scalar()) : std::nullopt;
    if (!value) return in.TypeError(v, Alternatives());
    out = *value;
    return Status::Ok();
  }
  // Quoted: YAML 1.1 readers (helm's) take a bare off for false.
  static void Emit(YAML::Emitter& out, E v) {
    out << YAML::DoubleQuoted << std::string(ToString(v));
  }
  static Json ToJson(E v) { return std::string(ToString(v)); }
  // A string: YAML reads a bare off as false, which the schema must refuse.
  static Json Schema(const ConfigSchemaContext&) {
    Json names = Json::array();
    for (const auto& n : kNamesOf<E>) names.push_back(n.name);
    return {{"type", "string"}, {"enum", std::move(names)}};
  }
  static std::string Alternatives() {
    std::string out;
    const auto& names = kNamesOf<E>;
    for (size_t i = 0; i < names.size(); ++i) {
      if (i > 0) out += i + 1 == names.size() ? " or " : ", ";
      out += names[i].name;
    }
    return out;
  }
};

// What the coordinator does about a confirmed fault (core/config.h RemediationMode).
struct RemediationModeKind : NamedEnumKind<RemediationMode> {
  static constexpr std::string_view kName = "remediation_mode";
};

// A list of strings, written as a flow list of quoted strings; null is empty. Kinds of lists
// whose items have a grammar derive from it with their own Parse and Schema.
struct StringList : KindDefaults {
  using Value = std::vector<std::string>;
  static constexpr std::string_view kName = "string_list";
  static Status Parse(const ValueReader& in, const YAML::Node& v, Value& out) {
    return ReadStrings(in, v, out);
  }
  static void Emit(YAML::Emitter& out, const Value& v) {
    out << YAML::Flow << YAML::BeginSeq;
    for (const auto& s : v) out << YAML::DoubleQuoted << s;
    out << YAML::EndSeq;
  }
  static Json ToJson(const Value& v) { return v; }
  static Json Schema(const ConfigSchemaContext&) {
    return {{"type", "array"}, {"items", {{"type", "string"}}}};
  }
};

// Catalogue ids of host and workload checks.
struct CheckIds : StringList {
  static constexpr std::string_view kName = "check_ids";
  static Status Parse(const ValueReader& in, const YAML::Node& v, Value& out) {
    return ReadCheckedStrings(in, v, out, IsCheck,
                              "is not a check id (see nccl-triage check output)");
  }
  static Json Schema(const ConfigSchemaContext&) {
    Json ids = Json::array();
    for (const CauseInfo& c : Catalogue()) {
      if (IsCheck(c.id)) ids.push_back(c.id);
    }
    return {{"type", "array"},
            {"uniqueItems", true},
            {"items", {{"type", "string"}, {"enum", std::move(ids)}}}};
  }
  static bool IsCheck(std::string_view id) {
    const CauseInfo* info = FindCause(id);
    return info != nullptr &&
           (info->kind == CauseKind::kHostCheck || info->kind == CauseKind::kWorkloadCheck);
  }
};

// NCCL_* environment variable names (core/env_names.h).
struct NcclEnvNames : StringList {
  static constexpr std::string_view kName = "nccl_env_names";
  static Status Parse(const ValueReader& in, const YAML::Node& v, Value& out) {
    return ReadCheckedStrings(in, v, out, IsNcclVariableName,
                              "is not an NCCL_* variable name (only NCCL_ followed by upper-case "
                              "letters, digits and '_' reach the probe)");
  }
  static Json Schema(const ConfigSchemaContext&) {
    return {{"type", "array"}, {"items", {{"type", "string"}, {"pattern", "^NCCL_[A-Z0-9_]+$"}}}};
  }
};

// Names of the agent's metric families. Loaded as any strings: the metric table is not in this
// library, and the agent refuses an unknown name at start-up; the schema names them from the
// context. Shown as a string_list, as it always was.
struct AgentMetricNames : StringList {
  static Json Schema(const ConfigSchemaContext& context) {
    Json items = {{"type", "string"}};
    if (!context.agent_metric_names.empty()) {
      items["enum"] = Json::array();
      for (std::string_view name : context.agent_metric_names) items["enum"].push_back(name);
    }
    return {{"type", "array"}, {"items", std::move(items)}};
  }
};

// A nodeSelector: node label -> value, written as a flow mapping of quoted strings; null is empty.
struct LabelMap : KindDefaults {
  using Value = std::map<std::string, std::string>;
  static constexpr std::string_view kName = "label_map";
  static Status Parse(const ValueReader& in, const YAML::Node& v, Value& out) {
    out.clear();
    if (v.IsNull()) return Status::Ok();
    if (!v.IsMap()) return in.TypeError(v, "a mapping of node labels to values");
    const std::string key(in.key());
    for (auto it = v.begin(); it != v.end(); ++it) {
      const YAML::Node label = it->first;  // copies: the iterator yields a temporary pair
      const YAML::Node value = it->second;
      if (!label.IsScalar() || !IsLabelKey(label.Scalar())) {
        return in.Error(label.Mark(), key + ": '" +
                                          (label.IsScalar() ? label.Scalar() : std::string("?")) +
                                          "' is not a node label key");
      }
      if (!value.IsScalar() || !IsLabelValue(value.Scalar())) {
        return in.Error(value.IsScalar() ? value.Mark() : label.Mark(),
                        key + "." + label.Scalar() +
                            ": expected a label value (at most 63 letters, digits, '-', '_' or "
                            "'.', alphanumeric at both ends)");
      }
      if (!out.emplace(label.Scalar(), value.Scalar()).second) {
        return in.Error(label.Mark(), key + ": duplicate label '" + label.Scalar() + "'");
      }
    }
    return Status::Ok();
  }
  static void Emit(YAML::Emitter& out, const Value& v) {
    out << YAML::Flow << YAML::BeginMap;
    for (const auto& [label, value] : v) {
      out << YAML::Key << YAML::DoubleQuoted << label << YAML::Value << YAML::DoubleQuoted << value;
    }
    out << YAML::EndMap;
  }
  static Json ToJson(const Value& v) { return v; }
  // Label keys as Kubernetes takes them, string values.
  static Json Schema(const ConfigSchemaContext&) {
    return {{"type", {"object", "null"}},
            {"propertyNames",
             {{"pattern",
               R"(^([a-zA-Z0-9]([-a-zA-Z0-9_.]*[a-zA-Z0-9])?/)?)"
               R"([a-zA-Z0-9]([-a-zA-Z0-9_.]{0,61}[a-zA-Z0-9])?$)"}}},
            {"additionalProperties",
             {{"type", "string"},
              {"pattern", R"(^([a-zA-Z0-9]([-a-zA-Z0-9_.]{0,61}[a-zA-Z0-9])?)?$)"}}}};
  }
};

// K's value or unset: null (or ~) unsets it, --dump-config writes ~. The schema is K's: the
// chart leaves an unset key out (values.yaml has it commented out).
template <typename K>
struct Optional {
  using Value = std::optional<typename K::Value>;
  static constexpr std::string_view kName = K::kName;
  static constexpr bool kOptional = true;
  static constexpr bool kUnsigned = K::kUnsigned;
  static constexpr std::string_view kPattern = K::kPattern;
  static Status Parse(const ValueReader& in, const YAML::Node& v, Value& out) {
    if (v.IsNull()) {
      out.reset();
      return Status::Ok();
    }
    typename K::Value value{};
    if (Status s = K::Parse(in, v, value); !s.ok()) return s;
    out = std::move(value);
    return Status::Ok();
  }
  static void Emit(YAML::Emitter& out, const Value& v) {
    if (v) {
      K::Emit(out, *v);
    } else {
      out << YAML::Null;
    }
  }
  static Json ToJson(const Value& v) { return v ? K::ToJson(*v) : Json(nullptr); }
  static Json Schema(const ConfigSchemaContext& context) { return K::Schema(context); }
};

}  // namespace nccl_triage::config_internal
