// Cleanup: what nccl-triage leaves on a cluster after `helm uninstall`, found and removed through
// the KubeClient interface (`nccl-triage-server cleanup`, docs/install.md "Uninstall").
//
// On a node: the taints whose key is under nccl-triage.io/ (remediation), the cordon the
// remediation marker says we placed, every nccl-triage.io/* annotation and the NcclFabricReady
// condition. On a pod: every nccl-triage.io/* annotation. Nothing else is touched: a taint, cordon
// or annotation of someone else stays.
//
// Planning is pure (a node or pod as the API returned it -> what to remove); RunCleanup lists,
// plans and, unless dry_run, patches: a node's spec and metadata with its resourceVersion as a
// precondition (re-read and planned again on 409 Conflict), its condition by a JSON patch whose
// test op guards the index, a pod's annotations with its UID as a precondition.
//
// With stop targets (the chart's pre-delete hook: `--stop NS/daemonset/NAME`), the release's
// agents and coordinator are stopped first, so that none writes again what the cleanup removes:
// each DaemonSet's pods are marked with kUninstallingAnnotation (an agent that finds its own pod
// marked when it stops removes its state directory from the host), the workloads are deleted
// (background propagation) and the cleanup waits until their pods are gone. Objects to delete
// (`--delete NS/configmap/NAME`, `NS/lease/NAME`: the coordinator's state and Lease, which it made
// itself and helm does not know) go next.
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "kube/kube_api.h"

namespace nccl_triage {

inline constexpr std::string_view kOwnedPrefix = "nccl-triage.io/";
inline constexpr std::string_view kFabricConditionType = "NcclFabricReady";
// On an agent's pod while its release is being uninstalled (set by the cleanup's stop step).
inline constexpr std::string_view kUninstallingAnnotation = "nccl-triage.io/uninstalling";

// A namespaced object of the release: a workload to stop before the cleanup, or an object to
// delete.
struct StopTarget {
  std::string ns;
  std::string resource;  // "daemonsets", "deployments", "configmaps" or "leases"
  std::string name;
  friend bool operator==(const StopTarget&, const StopTarget&) = default;
};
// "NS/KIND/NAME" -> the target; KIND daemonset or deployment (workloads = true), else configmap or
// lease (each also as the plural).
StatusOr<StopTarget> ParseStopTarget(const std::string& text, bool workloads = true);
// Whether a pod list (the API's answer to a list of pods) holds the pod ns/name with
// kUninstallingAnnotation: the agent's question as it stops.
bool PodMarkedUninstalling(const nlohmann::json& pod_list, const std::string& ns,
                           const std::string& name);
// Whether a pod (JSON of the API) belongs to the target: owned by the DaemonSet, or by one of the
// Deployment's ReplicaSets (<name>-<hash>).
bool PodOfTarget(const nlohmann::json& pod, const StopTarget& target);

// What to remove from one node.
struct NodeCleanup {
  std::string name;
  std::string resource_version;
  std::vector<std::string> taints;  // "nccl-triage.io/fault=ib_resource:NoSchedule"
  nlohmann::json kept_taints = nlohmann::json::array();  // spec.taints without ours
  bool uncordon = false;  // the remediation marker says we cordoned it, and it still is
  std::vector<std::string> annotations;  // nccl-triage.io/* keys
  std::optional<int> condition_index;    // of NcclFabricReady in status.conditions

  bool SpecOrMetadata() const { return !taints.empty() || uncordon || !annotations.empty(); }
  bool Empty() const { return !SpecOrMetadata() && !condition_index; }
};

// What to remove from one pod.
struct PodCleanup {
  std::string ns;
  std::string name;
  std::string uid;
  std::vector<std::string> annotations;  // nccl-triage.io/* keys

  bool Empty() const { return annotations.empty(); }
};

// A node or a pod object (JSON of the API) -> what of ours it carries.
NodeCleanup PlanNodeCleanup(const nlohmann::json& node);
PodCleanup PlanPodCleanup(const nlohmann::json& pod);

// The node's merge patch (the condition goes by KubeClient::RemoveNodeCondition).
NodePatch NodeCleanupPatch(const NodeCleanup& plan);

// One line for people: "node gpu-1: taint nccl-triage.io/fault=ib:NoSchedule, uncordon, ...".
std::string DescribeNodeCleanup(const NodeCleanup& plan);
std::string DescribePodCleanup(const PodCleanup& plan);

struct CleanupOptions {
  std::string node_selector;  // label selector of the nodes; empty: every node
  // Pods: with a node selector, only the pods on the selected nodes; without, every pod.
  bool dry_run = false;
  int max_conflict_retries = 5;
  std::vector<StopTarget> stop;    // stopped first, in order (see the file comment)
  std::vector<StopTarget> remove;  // then deleted (configmaps, leases)
  int stop_timeout_seconds = 300;
  std::chrono::milliseconds stop_poll{1000};
};

struct CleanupResult {
  std::vector<std::string> stopped;  // one per stop target: "daemonset ns/name: 2 pod(s)"
  std::vector<std::string> deleted;  // per object deleted (dry run: to delete), "configmap ns/x"
  std::vector<std::string> lines;   // one per object cleaned (or, dry run, to clean)
  std::vector<std::string> errors;  // one per call that failed
  int nodes = 0;                    // objects cleaned, or to clean
  int pods = 0;
};

// Lists, plans and (unless dry_run) removes. Never throws; a failed call is an error line and
// the rest goes on.
CleanupResult RunCleanup(KubeClient& client, const CleanupOptions& options);

// The flags of both cleanup commands: `nccl-triage cleanup` checks them, then runs
// `nccl-triage-server cleanup` with the same arguments.
struct CleanupFlags {
  bool help = false;
  CleanupOptions options;  // --dry-run, --selector, --stop, --stop-timeout, --delete
  std::string kubeconfig, context;
};
Status ParseCleanupFlags(const std::vector<std::string>& args, CleanupFlags& flags);
// What the cleanup does and its flags, for --help.
extern const char* const kCleanupHelp;

}  // namespace nccl_triage
