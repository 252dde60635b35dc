#include "planner/node_info.h"

#include "core/probe_availability.h"

namespace nccl_triage {

std::string ToString(const NodePair& p) { return p.a + "<->" + p.b; }

bool NodeProbeAvailability::CannotRun() const {
  // pending: the agent has not checked yet; its first probe will say (and it answers anyway).
  return !available && reason != kProbesPending;
}

bool ProbesCannotRun(const NodeInfo& info) { return info.probe && info.probe->CannotRun(); }

std::string_view ProbeAvailabilityReason(const NodeInfo& info) {
  return info.probe ? std::string_view(info.probe->reason) : kProbeAvailabilityUnknown;
}

std::string ProbesUnavailableText(const NodeInfo& info) {
  std::string text =
      "probes cannot run on this node (" + std::string(ProbeAvailabilityReason(info));
  if (info.probe && !info.probe->evidence.empty()) text += ": " + info.probe->evidence;
  return text + ")";
}

}  // namespace nccl_triage
