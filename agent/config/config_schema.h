// The schema behind config_loader.h: one KeySpec per Config field, with how to parse and print
// it. Internal to agent/config.
#pragma once

#include <limits>
#include <span>

#include "config/config_loader.h"

namespace nccl_triage::config_internal {

enum class KeyKind {
  kInt,           // int
  kOptInt,        // std::optional<int>
  kUint,          // uint64_t
  kBytes,         // uint64_t, integer or size string
  kOptBytes,      // std::optional<uint64_t>, integer or size string
  kDouble,        // double
  kOptDouble,     // std::optional<double>
  kBool,          // bool
  kString,        // std::string
  kOptString,     // std::optional<std::string>
  kListen,        // std::string "host:port"
  kStringList,    // std::vector<std::string>
  kCheckIds,      // std::vector<std::string> of catalogue check ids
  kNcclEnvNames,  // std::vector<std::string> of NCCL_* environment variable names
  kOptPkey,       // std::optional<uint16_t>, the membership bit stripped
  kOptVersion,    // std::optional<std::string> of dotted numbers "535.0"
  kOptRails,      // std::optional<std::string>: all, a count or a list (core/rail_selection.h)
  kHttpAuth,      // std::string: kubernetes | none (core/config.h ServerConfig)
  kRemediationMode,  // RemediationMode: off, dry-run, taint or cordon (core/config.h)
  kLabelMap,  // std::map<std::string, std::string>: node label -> value (a nodeSelector)
};

struct KeySpec {
  ConfigKeyInfo info;
  KeyKind kind;
  void* (*field)(Config&);  // the member this key sets, typed by `kind`
  double min = -std::numeric_limits<double>::infinity();
  double max = std::numeric_limits<double>::infinity();
};

std::span<const KeySpec> KeySpecs();

}  // namespace nccl_triage::config_internal
