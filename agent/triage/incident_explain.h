// How the incident explains itself: the reason, its evidence lines and the fix; one row per
// log, the failing first; and the object its Event is posted on.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "triage/incident.h"
#include "triage/incident_decide.h"
#include "triage/incident_logs.h"
#include "triage/incident_scope.h"

namespace nccl_triage::triage {

// The incident's reason, the log lines that support it and the fix (Incident's fields of the
// same names), built first from the logs, then completed by the decision.
struct Explanation {
  std::string reason;
  std::vector<EvidenceLine> evidence;
  std::string remedy;  // empty: none yet
};

// What the logs tell: who failed first and whom it names (with its lines and its cause's fix),
// else the pod the side effects name and how its container ended, else why nothing is known.
Explanation ExplainLogs(const SortedLogs& logs, const LogFindings& found, const JobScope& scope);

// The logs' explanation completed by the decision: what the probes or the checks found when they
// decided, and the fix of the deciding cause (a cause the probes or the checks name replaces the
// logs' hint, which only said where to look), or how to learn more when nothing is known.
Explanation ExplainDecision(Explanation from_logs, const IncidentDecision& decision,
                            const ProbeFault* probe_fault, const Localisation& where);

// One row per log: the first failure, its peer, other failures, unread logs, side effects, the
// rest, healthy last; within each by time, then pod order.
std::vector<PodRow> PodRows(const std::vector<LogResult>& logs, const SortedLogs& sorted,
                            const LogFindings& found, const JobScope& scope);

// The Event goes on the first failing pod's owner (the job), else on the first pod's; the pod
// itself when it has no owner. Empty when there is no pod.
OwnerRef EventObject(const std::optional<FirstFailure>& first, const std::vector<JobPod>& pods,
                     const JobScope& scope);

}  // namespace nccl_triage::triage
