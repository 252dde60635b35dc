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

namespace nccl_triage {

enum class FaultClass { kHealthy, kArchitecture, kIbResource, kUnknown };
enum class CheckStatus { kPass, kWarn, kFail, kSkip };
// How a verdict was reached: from host checks alone (a prediction) or from NCCL probes.
enum class Basis { kChecks, kProbes };

std::string_view ToString(FaultClass c);
std::string_view ToString(CheckStatus s);
// The order that picks one status among several findings of one check: fail > warn > pass > skip.
int Severity(CheckStatus s);
std::string_view ToString(Basis b);
std::optional<FaultClass> ParseFaultClass(std::string_view s);
std::optional<CheckStatus> ParseCheckStatus(std::string_view s);
std::optional<Basis> ParseBasis(std::string_view s);

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

}  // namespace nccl_triage
