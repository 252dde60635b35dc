// Strict YAML configuration: the one way a Config is read from text, and written back.
//
// Every key of Config has one entry in ConfigKeys() (its dotted name, type, meaning); the loader
// accepts exactly those keys, nested by their dots:
//
//   expect:
//     rate_gbps: 200
//
// An unknown key is rejected with its line ("config:12: unknown key 'expect.rates_gbps' (did you
// mean 'expect.rate_gbps'?)"), and so is a value of the wrong type ("config:3: expect.nofile_min:
// expected an integer, got 'lots'"), a duplicate key or a value out of range. Keys that are not
// given keep the defaults of core/config.h. `null` (or `~`) unsets an optional key. Byte sizes take
// an integer or a binary size string ("64Mi", "1Gi"). DumpConfig writes every key with its
// effective value; loading the dump gives back an equal Config.
//
// One key is not a dotted leaf: `pools`, a list of {name, selector: {label: value}, expect: {...}}
// (core/config.h PoolConfig), each expect checked like the top-level one and applied over it.
//
// Pure functions except LoadConfigFile, which reads one file. Thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "core/config.h"

namespace nccl_triage {

// `name` prefixes error messages ("<name>:<line>: ..."); the file loader passes the path.
StatusOr<Config> LoadConfigFromString(std::string_view yaml, std::string_view name = "config");
StatusOr<Config> LoadConfigFile(const std::string& path);

// YAML of every key with its effective value (unset optionals as `~`).
std::string DumpConfig(const Config& config);

// The documentation of one key, as the README's configuration table shows it.
struct ConfigKeyInfo {
  std::string_view key;      // "expect.rate_gbps"
  std::string_view type;     // "number", "integer", "bytes", "string", ...
  std::string_view meaning;  // one sentence
};
std::vector<ConfigKeyInfo> ConfigKeys();  // in documentation order

// Facts a key's JSON schema may name that live outside this library.
struct ConfigSchemaContext {
  // The agent's metric families (exporter/metrics.h), the names agent.metrics_disabled takes;
  // empty: any string.
  std::vector<std::string_view> agent_metric_names;
};

// Everything the schema knows of one key: what `nccl-triage-server dump-schema` prints and the
// generated documentation (values.schema.json, values.yaml, docs/configuration.md) is made of.
struct ConfigKeySchema {
  ConfigKeyInfo info;
  // How a value is written: integer, number, bytes (integer or "64Mi"), bool, string, listen
  // (host:port), version ("550.54"), pkey, rails (all, N or "0,3"), http_auth, remediation_mode,
  // string_list, check_ids, nccl_env_names, label_map.
  std::string_view kind;
  bool optional = false;     // may be unset (`~`), and is by default when its default is null
  std::optional<double> min;  // the accepted range, when bounded
  std::optional<double> max;
  std::string default_json;  // the default Config's value as JSON: 65536, "0.0.0.0:9500", null, []
  // The JSON schema (draft 7) of a value, range included, description not: the chart's
  // values.schema.json takes it verbatim. An unset optional key is left out, not null.
  std::string json_schema;
  std::string_view pattern;  // bytes only: the grammar of its strings (also in json_schema)
};
std::vector<ConfigKeySchema> ConfigKeySchemas(  // in documentation order
    const ConfigSchemaContext& context = {});

}  // namespace nccl_triage
