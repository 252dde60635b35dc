// What the agent publishes to Kubernetes, as pure functions of an AgentStateView: the pod
// annotations, the NcclFabricReady node condition and the verdict-change event.
//
// Annotation keys (the runtime contract):
//   nccl-triage.io/verdict  healthy | architecture | ib_resource | unknown
//   nccl-triage.io/causes   comma list of catalogue ids, most likely first ("" when none)
//   nccl-triage.io/basis    checks | probes
//   nccl-triage.io/updated  RFC 3339 time of the last change of the above (added when sending)
//   nccl-triage.io/report   compact JSON of the report, at most 16 KiB (agent pod only); its
//                           "kernel_last_event" ({check id: RFC 3339}) is never cut
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "kube/kube_api.h"
#include "state/agent_state.h"

namespace nccl_triage {

inline constexpr std::string_view kAnnotationVerdict = "nccl-triage.io/verdict";
inline constexpr std::string_view kAnnotationCauses = "nccl-triage.io/causes";
inline constexpr std::string_view kAnnotationBasis = "nccl-triage.io/basis";
inline constexpr std::string_view kAnnotationUpdated = "nccl-triage.io/updated";
inline constexpr std::string_view kAnnotationReport = "nccl-triage.io/report";
inline constexpr std::string_view kAnnotationKeys[] = {
    kAnnotationVerdict, kAnnotationCauses, kAnnotationBasis, kAnnotationUpdated, kAnnotationReport};
inline constexpr size_t kReportAnnotationMaxBytes = 16 * 1024;
inline constexpr std::string_view kConditionType = "NcclFabricReady";

struct DesiredAnnotations {
  std::map<std::string, std::string> values;  // every key but `updated`
  // What a change is judged on: verdict, basis, causes and each check's status. Evidence values
  // (counters, timestamps) move every cycle and must not cause a patch per cycle.
  std::string fingerprint;
};

DesiredAnnotations AnnotationsFor(const AgentStateView& view,
                                  size_t report_max_bytes = kReportAnnotationMaxBytes);

// The report as compact JSON of at most `max_bytes`, shrinking step by step (evidence of passing
// checks, then passing checks to ids, then evidence, then messages) and never dropping the verdict
// and the causes. Sets "truncated": true when anything about a failing check was cut.
std::string CompactReportJson(const AgentStateView& view, size_t max_bytes);

// "ib_resource" -> "IbResource".
std::string PascalCase(std::string_view snake);

// NcclFabricReady: True when healthy, False for architecture / ib_resource, Unknown otherwise.
// Times are left 0 (the publisher keeps transition and heartbeat times).
NodeCondition ConditionFor(const AgentStateView& view);

}  // namespace nccl_triage
