#include "core/probe_availability.h"

#include <algorithm>

namespace nccl_triage {
namespace {
constexpr std::string_view kUnavailablePrefix = "probe.no_";
}  // namespace

std::string_view AvailabilityReason(std::string_view cause) {
  return cause.starts_with("probe.") ? cause.substr(6) : cause;
}

std::optional<std::string> UnavailableCause(const ProbeResult& r) {
  if (r.outcome != ProbeOutcome::kUnavailable) return std::nullopt;
  if (!r.unavailable_cause.empty()) return r.unavailable_cause;
  if (r.classification) {
    for (const auto& c : r.classification->causes) {
      if (c.cause.starts_with(kUnavailablePrefix)) return c.cause;
    }
  }
  return std::nullopt;
}

std::optional<ProbeAvailability> AvailabilityFromProbe(const ProbeResult& r, int64_t now_unix_ms) {
  if (r.outcome == ProbeOutcome::kNotRun) return std::nullopt;
  ProbeAvailability a;
  a.updated_at_unix_ms = now_unix_ms;
  a.nccl_version = r.nccl_version;
  a.nccl_library = r.nccl_library;
  if (r.outcome != ProbeOutcome::kUnavailable) {
    a.reason = std::string(kProbesAvailable);
    a.detail = "NCCL " + (r.nccl_version.empty() ? std::string("(version unknown)") : r.nccl_version) +
               (r.nccl_library.empty() ? "" : " from " + r.nccl_library) +
               (r.gpu_name.empty() ? "" : " on " + r.gpu_name);
    return a;
  }
  auto cause = UnavailableCause(r);
  a.cause = cause.value_or("");
  a.reason = cause ? std::string(AvailabilityReason(*cause)) : std::string(kProbesError);
  a.detail = r.detail;
  return a;
}

std::optional<Finding> AvailabilityFinding(const ProbeAvailability& a) {
  const CauseInfo* info = a.cause.empty() ? nullptr : FindCause(a.cause);
  if (info == nullptr) return std::nullopt;
  Finding f;
  f.check = std::string(info->id);
  f.fault_class = info->fault_class;
  f.status = CheckStatus::kWarn;
  f.message = "probes cannot run: " + a.detail;
  f.remedy = std::string(info->remedy);
  return f;
}

void PrependCause(Classification& c, const CauseInfo& info, const std::string& evidence) {
  ClassifiedCause cause;
  cause.cause = std::string(info.id);
  cause.fault_class = info.fault_class;
  cause.fix_class = info.fault_class;
  cause.confidence = 1.0;
  cause.evidence.push_back(LogLine{0, evidence});
  cause.remedy = std::string(info.remedy);
  auto dup = std::find_if(c.causes.begin(), c.causes.end(),
                          [&](const ClassifiedCause& x) { return x.cause == info.id; });
  if (dup != c.causes.end()) c.causes.erase(dup);
  c.causes.insert(c.causes.begin(), std::move(cause));
  if (c.fault_class == FaultClass::kHealthy || c.fault_class == FaultClass::kUnknown) {
    c.fault_class = info.fault_class;
    c.reason = evidence;
  }
}

}  // namespace nccl_triage
