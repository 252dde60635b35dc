// The vocabulary every part of nccl-triage shares: fault classes, check statuses, findings.
//
// A finding's class is where its fix lives (see DESIGN "two meanings of class"); a probe verdict's
// class is which path failed. Both use FaultClass. All types here are plain values, safe to copy
// and to share between threads once built.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/reflect.h"

namespace nccl_triage {

enum class FaultClass { kHealthy, kArchitecture, kIbResource, kUnknown };
constexpr auto NamesOf(Type<FaultClass>) {
  return std::array{Named(FaultClass::kHealthy, "healthy"),
                    Named(FaultClass::kArchitecture, "architecture"),
                    Named(FaultClass::kIbResource, "ib_resource"),
                    Named(FaultClass::kUnknown, "unknown")};
}
enum class CheckStatus { kPass, kWarn, kFail, kSkip };
constexpr auto NamesOf(Type<CheckStatus>) {
  return std::array{Named(CheckStatus::kPass, "pass"), Named(CheckStatus::kWarn, "warn"),
                    Named(CheckStatus::kFail, "fail"), Named(CheckStatus::kSkip, "skip")};
}
// How a verdict was reached: from host checks alone (a prediction) or from NCCL probes.
enum class Basis { kChecks, kProbes };
constexpr auto NamesOf(Type<Basis>) {
  return std::array{Named(Basis::kChecks, "checks"), Named(Basis::kProbes, "probes")};
}

// The order that picks one status among several findings of one check: fail > warn > pass > skip.
int Severity(CheckStatus s);

// One value that a check looked at, and where it came from (a path relative to the root, a
// libibverbs call, a config key). Evidence is what lets an operator trust or dispute a verdict.
struct Evidence {
  std::string key;     // e.g. "mlx5_0/1 state"
  std::string value;   // e.g. "1: DOWN"
  std::string source;  // e.g. "sys/class/infiniband/mlx5_0/ports/1/state"

  friend bool operator==(const Evidence&, const Evidence&) = default;
};

// The evidence key under which a kernel-log finding carries the wall time of its last event
// (RFC 3339, UTC): what lets `nccl-triage triage` tell an event during a job from one before it.
inline constexpr std::string_view kLastEventAtKey = "last event at";

// The result of one check (or one workload check) on one node.
struct Finding {
  std::string check;  // stable id from the catalogue, e.g. "ib.port_state"
  FaultClass fault_class = FaultClass::kUnknown;
  CheckStatus status = CheckStatus::kSkip;
  std::string message;  // one line, specific to this node
  std::vector<Evidence> evidence;
  std::string remedy;  // from the catalogue unless the check has something more specific

  friend bool operator==(const Finding&, const Finding&) = default;
};
// The bounds are a finding's on the wire (v1::Finding of a node's summary).
constexpr auto FieldsOf(Type<Finding>) {
  return std::tuple{Field("check", &Finding::check, Bound{.max = 64}),
                    Field("fault_class", &Finding::fault_class),
                    Field("status", &Finding::status),
                    Field("message", &Finding::message),
                    Field("evidence", &Finding::evidence),
                    Field("remedy", &Finding::remedy)};
}

}  // namespace nccl_triage
