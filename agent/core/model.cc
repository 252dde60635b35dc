#include "core/model.h"

namespace nccl_triage {

std::string_view ToString(FaultClass c) {
  switch (c) {
    case FaultClass::kHealthy:
      return "healthy";
    case FaultClass::kArchitecture:
      return "architecture";
    case FaultClass::kIbResource:
      return "ib_resource";
    case FaultClass::kUnknown:
      return "unknown";
  }
  return "unknown";
}

int Severity(CheckStatus s) {
  switch (s) {
    case CheckStatus::kFail:
      return 3;
    case CheckStatus::kWarn:
      return 2;
    case CheckStatus::kPass:
      return 1;
    case CheckStatus::kSkip:
      return 0;
  }
  return 0;
}

std::string_view ToString(CheckStatus s) {
  switch (s) {
    case CheckStatus::kPass:
      return "pass";
    case CheckStatus::kWarn:
      return "warn";
    case CheckStatus::kFail:
      return "fail";
    case CheckStatus::kSkip:
      return "skip";
  }
  return "skip";
}

std::string_view ToString(Basis b) { return b == Basis::kProbes ? "probes" : "checks"; }

std::optional<FaultClass> ParseFaultClass(std::string_view s) {
  for (auto c : {FaultClass::kHealthy, FaultClass::kArchitecture, FaultClass::kIbResource,
                 FaultClass::kUnknown}) {
    if (ToString(c) == s) return c;
  }
  return std::nullopt;
}

std::optional<CheckStatus> ParseCheckStatus(std::string_view s) {
  for (auto c : {CheckStatus::kPass, CheckStatus::kWarn, CheckStatus::kFail, CheckStatus::kSkip}) {
    if (ToString(c) == s) return c;
  }
  return std::nullopt;
}

std::optional<Basis> ParseBasis(std::string_view s) {
  if (s == "checks") return Basis::kChecks;
  if (s == "probes") return Basis::kProbes;
  return std::nullopt;
}

}  // namespace nccl_triage
