// The workload lookup: what a workload pass needs from outside the node's /proc, as one value
// that crosses a process boundary.
//
// `nccl-triage check --workloads` runs in the small executable, which links no HTTP, TLS or gRPC.
// It asks `nccl-triage-server workload-lookup` (a child process) for the API's pod list and node
// and the kubelet's device assignments, and reads back one JSON document, schema
// nccl-triage/workload-lookup/v1. A text contract between the two executables replaces C++ types
// across dlopen: a document of another schema is refused with a line, never misread.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "kube/kube_api.h"
#include "workload/pod_resources.h"

namespace nccl_triage::workload {

inline constexpr const char* kWorkloadLookupSchema = "nccl-triage/workload-lookup/v1";

struct WorkloadLookup {
  std::optional<KubeResponse> pods;  // ListPods(spec.nodeName=<node>); absent: not asked
  std::optional<KubeResponse> node;  // GetNode(<node>); absent: not asked
  // The kubelet's answer; absent: not asked (no socket under the root).
  std::optional<StatusOr<std::vector<PodResourcesEntry>>> pod_resources;
};

nlohmann::json ToJson(const WorkloadLookup& lookup);
// Errors: not an object, another schema, or a field of the wrong type (the message names it).
StatusOr<WorkloadLookup> WorkloadLookupFromJson(const nlohmann::json& j);

}  // namespace nccl_triage::workload
