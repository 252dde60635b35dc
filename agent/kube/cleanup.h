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
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "kube/kube_api.h"

namespace nccl_triage {

inline constexpr std::string_view kOwnedPrefix = "nccl-triage.io/";
inline constexpr std::string_view kFabricConditionType = "NcclFabricReady";

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
};

struct CleanupResult {
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
  CleanupOptions options;  // --dry-run, --selector
  std::string kubeconfig, context;
};
Status ParseCleanupFlags(const std::vector<std::string>& args, CleanupFlags& flags);
// What the cleanup does and its flags, for --help.
extern const char* const kCleanupHelp;

}  // namespace nccl_triage
