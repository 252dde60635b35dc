// What the workload view publishes, as pure functions of the containers' verdicts: the pod-level
// verdict, the annotation patch a pod needs (if any), and the findings for the agent state
// (which the exporter turns into nccl_triage_workload_check_status and the /status section).
//
// Annotations on a workload pod (the runtime contract's keys): nccl-triage.io/verdict, /causes,
// /basis ("checks": a prediction from the pod's own settings) and /updated (RFC 3339). They are
// set while the pod has a failing check, compared with what the pod carries now (so a patch is
// sent only on change, and an agent restart does not re-send), and removed with JSON merge-patch
// nulls when the pod is healthy again. Other annotations are never named in a patch.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kube/kube_api.h"
#include "state/agent_state.h"
#include "workload/workload.h"

namespace nccl_triage::workload {

// The keys a workload pod may carry (the agent's own pod additionally has /report).
inline constexpr std::string_view kWorkloadAnnotationKeys[] = {
    "nccl-triage.io/verdict", "nccl-triage.io/causes", "nccl-triage.io/basis",
    "nccl-triage.io/updated"};

// On every judged GPU pod while its node has a fault the coordinator confirmed (a node fault, or
// a link fault to a peer): the node's verdict, so the job owner sees it with `kubectl describe
// pod`. Independent of the pod's own keys; removed when the fault is no longer confirmed.
inline constexpr std::string_view kNodeVerdictAnnotationKey = "nccl-triage.io/node-verdict";
inline constexpr size_t kMaxNodeVerdictAnnotationBytes = 256;

// The value of kNodeVerdictAnnotationKey for this node, or nullopt when no fault is confirmed:
// "ib_resource (node fault confirmed by probes): ib.port_state,ib.fabric; link fault confirmed by
// probes to node-b", cut to kMaxNodeVerdictAnnotationBytes.
std::optional<std::string> NodeFaultAnnotation(const std::optional<NodeVerdict>& coordinator);

// The verdict on a pod: over all of its judged GPU containers.
struct PodVerdict {
  std::string uid;
  std::string namespace_name;
  std::string pod;
  bool in_api = false;  // the pod was found in the API (only those are annotated)
  FaultClass verdict = FaultClass::kUnknown;
  std::vector<std::string> causes;      // failing ids, catalogue order, no duplicates
  std::vector<std::string> containers;  // judged container names
};

std::vector<PodVerdict> PodVerdicts(const std::vector<ContainerVerdict>& containers);

// The patch that brings `current` (the pod's annotations now) to what `pod` deserves, or nullopt
// when nothing needs to change. A failing pod: verdict, causes, basis and updated (= now);
// a healthy pod: every workload key that is present, set to null; unknown (nothing could be
// judged): no change. Whatever the pod's own verdict, kNodeVerdictAnnotationKey is set to
// `node_fault` (NodeFaultAnnotation) or removed when there is none.
std::optional<AnnotationPatch> AnnotationChange(
    const PodVerdict& pod, const std::map<std::string, std::string>& current, int64_t now_unix_ms,
    const std::optional<std::string>& node_fault = std::nullopt);

// One WorkloadFinding per container and check, for AgentState::SetWorkloadFindings.
std::vector<WorkloadFinding> StateFindings(const std::vector<ContainerVerdict>& containers);

}  // namespace nccl_triage::workload
