#include "planner/node_info.h"

namespace nccl_triage {

std::string ToString(const NodePair& p) { return p.a + "<->" + p.b; }

bool ProbesCannotRun(const NodeInfo& info) {
  // pending: the agent has not checked yet; its first probe will say (and it answers anyway).
  return info.probe && !info.probe->available && info.probe->reason != "pending";
}

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
