// The schema behind config_loader.h: one KeySpec per Config field, naming the field through typed
// member pointers and saying through its value kind (config_kinds.h) how the value is read,
// written and described. Internal to agent/config.
//
// A KeySpec is made by Key<Kind, &Config::section, &SectionConfig::member>(info, min, max) in
// config_keys.cc; the member's type must be the kind's Value (checked when it is compiled). The
// loader, DumpConfig and ConfigKeySchemas only call the spec's functions: none knows a kind.
#pragma once

#include <yaml-cpp/yaml.h>

#include <concepts>
#include <limits>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "base/status.h"
#include "config/config_loader.h"

namespace nccl_triage::config_internal {

// Key order matters: values.schema.json is written in the order a fragment lists its keywords.
using Json = nlohmann::ordered_json;

// "<file>:<line>: <what>", the form of every error of the loader.
Status ErrorAt(std::string_view file, const YAML::Mark& mark, const std::string& what);

// What a kind's Parse needs to report an error the way the loader does: the file, the key and
// where it was written, and the key's range.
class ValueReader {
 public:
  ValueReader(std::string_view file, std::string_view key, const YAML::Mark& key_mark, double min,
              double max)
      : file_(file), key_(key), key_mark_(key_mark), min_(min), max_(max) {}

  std::string_view key() const { return key_; }

  // "<file>:<line>: <what>".
  Status Error(const YAML::Mark& mark, const std::string& what) const {
    return ErrorAt(file_, mark, what);
  }
  // "<key>: expected <expected>, got <what v is>", at `v`, or at the key when `v` is an implicit
  // null without a position of its own.
  Status TypeError(const YAML::Node& v, std::string_view expected) const;
  // "<key>: <v> is out of range [min, max]" when `value` is outside the key's range.
  Status RangeCheck(const YAML::Node& v, double value) const;

 private:
  std::string_view file_;
  std::string_view key_;
  YAML::Mark key_mark_;
  double min_;
  double max_;
};

// What a kind (config_kinds.h) provides; Key<> refuses a type that lacks any of it.
template <typename K>
concept ValueKind = requires(const ValueReader& in, const YAML::Node& node, typename K::Value& v,
                             YAML::Emitter& out, const ConfigSchemaContext& context) {
  { K::kName } -> std::convertible_to<std::string_view>;  // dump-schema's "kind"
  { K::kOptional } -> std::convertible_to<bool>;          // null unsets it
  { K::kUnsigned } -> std::convertible_to<bool>;          // bounded below by 0 by its type
  { K::kPattern } -> std::convertible_to<std::string_view>;
  { K::Parse(in, node, v) } -> std::same_as<Status>;
  K::Emit(out, std::as_const(v));                         // as --dump-config writes it
  { K::ToJson(std::as_const(v)) } -> std::same_as<Json>;  // the documented default
  { K::Schema(context) } -> std::same_as<Json>;           // JSON schema, without the range
};

// What every key of one kind shares.
struct KindInfo {
  std::string_view name;  // ConfigKeySchema::kind
  bool optional;          // null unsets it
  bool is_unsigned;       // the type itself bounds it below by 0
  std::string_view pattern;  // ConfigKeySchema::pattern
  Json (*schema)(const ConfigSchemaContext&);  // the JSON-schema fragment, without range
};

template <ValueKind Kind>
inline constexpr KindInfo kKindInfo = {Kind::kName, Kind::kOptional, Kind::kUnsigned,
                                       Kind::kPattern, &Kind::Schema};

struct KeySpec {
  ConfigKeyInfo info;
  double min = -std::numeric_limits<double>::infinity();
  double max = std::numeric_limits<double>::infinity();
  const KindInfo* kind = nullptr;
  // Reads `v` into the key's member of `config`.
  Status (*set)(const ValueReader& in, const YAML::Node& v, Config& config) = nullptr;
  // Writes the member's value as --dump-config shows it.
  void (*emit)(YAML::Emitter& out, const Config& config) = nullptr;
  // The member's value as JSON (the default column of the documentation).
  Json (*value_json)(const Config& config) = nullptr;
};

// The spec of the key `info` whose value is config.*kSection.*kMember, written as `Kind` says.
template <ValueKind Kind, auto kSection, auto kMember>
constexpr KeySpec Key(ConfigKeyInfo info, double min = -std::numeric_limits<double>::infinity(),
                      double max = std::numeric_limits<double>::infinity()) {
  using Member = std::remove_cvref_t<decltype(std::declval<Config&>().*kSection.*kMember)>;
  static_assert(std::is_same_v<Member, typename Kind::Value>,
                "the key's kind reads and writes another type than its member's");
  return KeySpec{
      info,
      min,
      max,
      &kKindInfo<Kind>,
      [](const ValueReader& in, const YAML::Node& v, Config& c) {
        return Kind::Parse(in, v, c.*kSection.*kMember);
      },
      [](YAML::Emitter& out, const Config& c) { Kind::Emit(out, c.*kSection.*kMember); },
      [](const Config& c) { return Kind::ToJson(c.*kSection.*kMember); },
  };
}

std::span<const KeySpec> KeySpecs();

}  // namespace nccl_triage::config_internal
