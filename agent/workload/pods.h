// The Kubernetes side of the workload view: which pod and container a cgroup's container id is,
// what the container requests, what the node advertises, and what the kubelet assigned.
//
// Parsing is pure (JSON from the API, the pod-resources reply as plain values) and tolerant: an
// item of the wrong shape is skipped, never thrown on. Resolution goes only by identity: the pod
// by the UID the cgroup path names, the container by the runtime's container id in the pod's
// container statuses. A name is never guessed, so an annotation can only go to the pod whose
// processes were judged. Thread-safe (no state).
#pragma once

#include <chrono>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "workload/cgroup.h"
#include "workload/judge.h"
#include "workload/workload.h"

namespace nccl_triage::workload {

struct ApiContainer {
  std::string name;
  std::string container_id;  // 64 hex from status.containerID, "" before it started
  std::map<std::string, std::string> limits;  // spec resources.limits
};

struct ApiPod {
  std::string uid;
  std::string namespace_name;
  std::string name;
  std::string node_name;  // spec.nodeName
  std::map<std::string, std::string> annotations;
  std::vector<ApiContainer> containers;  // init, regular and ephemeral
  bool host_network = false;
};

// A PodList (GET /api/v1/pods?fieldSelector=spec.nodeName=<node>) -> pods by UID.
std::map<std::string, ApiPod> ParsePodList(const nlohmann::json& list);
std::optional<ApiPod> ParsePod(const nlohmann::json& pod);

// A Node -> the rdma/* resources in status.allocatable with a non-zero quantity.
NodeResources ParseNodeResources(const nlohmann::json& node);

// One container's assignments from the kubelet's pod-resources List.
struct PodResourcesEntry {
  std::string namespace_name;
  std::string pod;
  std::string container;
  std::vector<DeviceAssignment> devices;
  friend bool operator==(const PodResourcesEntry&, const PodResourcesEntry&) = default;
};

// What the pass knows from the API and the kubelet.
struct PodDirectory {
  bool listed = false;      // the pod list was read (this pass or from the cache)
  bool fresh = false;       // read this pass (only then are annotations compared and patched)
  std::string list_error;   // why not, or why this pass used the cache
  std::string list_reason;  // why this pass listed (PodListReason); "" when the cache sufficed
  std::map<std::string, ApiPod> pods;  // by UID
  NodeResources node;
  std::optional<std::vector<PodResourcesEntry>> assignments;  // nullopt: socket absent or failed
  std::string assignments_error;
};

// The agent annotates only pods scheduled on its own node: the pod list is already selected by
// spec.nodeName, and this is checked again before every patch, so a wrong selector or a stale
// cache can never make one node's agent write to a pod elsewhere (README, "RBAC and blast radius").
bool OnNode(const ApiPod& pod, std::string_view node);

// When a pass lists the node's pods. The pod list is only a directory of names for the containers
// the scan found, so it is read when the directory cannot name one of them, not every pass:
// steady state is no LIST at all (a 4,096-node cluster listing every minute sends ~68 LIST/s).
struct PodListPolicy {
  // Re-list this often even when every container resolves (annotations edited by others).
  std::chrono::milliseconds resync{std::chrono::hours(1)};
  // A container that a fresh list did not name (a pod the API does not show yet, a watch cache
  // that lags) is looked up again only after this long, so it cannot make every pass a LIST.
  std::chrono::milliseconds miss_retry{std::chrono::minutes(5)};
};

struct PodListState {
  bool listed = false;                      // a list succeeded once
  std::chrono::milliseconds since_list{0};  // since that last successful list
  std::set<std::string> missed;             // "<pod uid>/<container id>" the last list lacked
};

// Why this pass must list ("" for no list): first list, resync, or a container the cache
// cannot name. No containers: no list (the API is not needed).
std::string PodListReason(const std::vector<CgroupRef>& containers,
                          const std::map<std::string, ApiPod>& cache, const PodListState& state,
                          const PodListPolicy& policy);

// The containers a directory cannot name ("<pod uid>/<container id>"), kept after a list.
std::set<std::string> UnresolvedContainers(const std::vector<CgroupRef>& containers,
                                           const std::map<std::string, ApiPod>& cache);

// The container a cgroup names, with what the directory knows about it. Without the pod in the
// directory, namespace is "" and the pod is "uid:<pod uid>"; without the container id in its
// statuses, the container is "id:<first 12 hex>": stable labels, never a guessed name.
PodContainer ResolveContainer(const CgroupRef& ref, const PodDirectory& directory);

}  // namespace nccl_triage::workload
