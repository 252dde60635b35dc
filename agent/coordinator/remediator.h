// Remediator: applies the remediation plan (planner/remediation.h) to the cluster's nodes, once
// per sweep (docs/remediation.md).
//
// A step reads every node (pages of GET /api/v1/nodes: taints, spec.unschedulable, labels, the
// annotation nccl-triage.io/remediated), plans from the coordinator's confirmed node faults and
// carries the plan out:
//   apply    a JSON merge patch of the node with its full spec.taints (the taints read plus
//            nccl-triage.io/fault=<class>:NoSchedule), spec.unschedulable in cordon mode and the
//            marker annotation saying what was placed ("taint=<class>" or "taint=<class>,cordon"),
//            guarded by metadata.resourceVersion; a Warning event on the node with the cause and
//            its fix;
//   release  the same patch without our taint and marker (and uncordoned when the marker says we
//            cordoned it and it still is); a Normal event. Only what carries the marker is ever
//            removed: a taint or a cordon an operator placed stays;
//   dry-run  nothing is patched; a Normal event "would taint" once per node and fault class.
// A 409 Conflict (the node changed since it was read) is retried once at once on a fresh read;
// any other error (403, 404, 5xx, no answer) is logged once per node until that node succeeds
// again, counted, and retried on the next step. Nothing here throws or ends the process.
//
// Since when a node has been healthy is kept in memory: after a restart the clock starts again,
// which only delays a release. Not thread-safe: the coordinator's sweep thread calls Step.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "core/model.h"
#include "kube/kube_api.h"
#include "planner/remediation.h"

namespace nccl_triage {

class Logger;

struct RemediatorOptions {
  RemediationPolicy policy;
  std::string pool_label;  // node label naming the pool; empty: one pool
  std::string component = "nccl-triage-coordinator";  // events' source
  std::string event_namespace = "default";            // events about nodes live there
  int list_page = 500;                                // nodes per GET
};

// A node fault the coordinator has confirmed (probes and hold-down), as the remediator needs it.
struct ConfirmedNodeFault {
  FaultClass fault_class = FaultClass::kUnknown;
  std::vector<std::string> causes;  // catalogue ids, most likely first
};

// One API call of a step, for the metrics: action taint|cordon|release|event, result
// ok|dry_run|conflict|error.
struct RemediationOutcome {
  std::string action;
  std::string result;
};

// What a step did, for /status and the metrics.
struct RemediationStatus {
  RemediationMode mode = RemediationMode::kOff;
  int64_t at_unix_ms = 0;
  int nodes_seen = 0;
  std::vector<std::string> remediated;   // carrying our marker after the step
  std::vector<std::string> held_back;    // confirmed faulty, kept untouched by the breaker
  std::vector<std::string> would_taint;  // dry-run: the nodes the plan would taint
  std::vector<RemediationAction> actions;  // planned this step (in dry-run: not applied)
  bool breaker_open = false;
  std::map<std::string, std::string> errors;  // node -> why its last call failed
  std::string list_error;                     // the node list could not be read (no plan)
  std::vector<RemediationOutcome> outcomes;
};

nlohmann::json ToJson(const RemediationStatus& status);

class Remediator {
 public:
  // `kube` and `log` must outlive the remediator.
  Remediator(KubeClient& kube, RemediatorOptions options, Logger& log);

  // One step at `now_ms` (Unix ms) with the faults confirmed now, by node. `watched`, when given,
  // names the nodes whose agents are connected: a node outside it is not being probed, so its
  // healthy time does not count (its clock starts again when its agent is back), and a node
  // whose agent went away is never released for a fault nobody has seen clear.
  RemediationStatus Step(const std::map<std::string, ConfirmedNodeFault>& confirmed,
                         int64_t now_ms, const std::set<std::string>* watched = nullptr);

  const RemediatorOptions& options() const { return options_; }

 private:
  // A node as read: the planner's view and what a patch needs.
  struct NodeState {
    RemediationNode plan;
    std::string resource_version;
    nlohmann::json taints = nlohmann::json::array();
  };

  // Every node, page by page, read with ReadNode; false (and `error`) when a page fails.
  bool ListNodes(const std::map<std::string, ConfirmedNodeFault>& confirmed, int64_t now_ms,
                 const std::set<std::string>* watched, std::vector<NodeState>* nodes,
                 std::string* error);
  NodeState ReadNode(const nlohmann::json& node,
                     const std::map<std::string, ConfirmedNodeFault>& confirmed, int64_t now_ms,
                     const std::set<std::string>* watched);
  // Patches one node for `action`; on 409 reads it again and retries once.
  KubeResponse Patch(const RemediationAction& action, const NodeState& node);
  // False when the patch failed (the node keeps its state).
  bool Apply(const RemediationAction& action, const NodeState& node,
             const std::map<std::string, ConfirmedNodeFault>& confirmed, int64_t now_ms,
             RemediationStatus& status);
  void AnnounceDryRun(const RemediationAction& action, int64_t now_ms, RemediationStatus& status);
  void PostEvent(const std::string& node, const std::string& type, const std::string& reason,
                 const std::string& message, int64_t now_ms, RemediationStatus& status);
  void Failed(const std::string& node, const std::string& what, const KubeResponse& r,
              RemediationStatus& status);
  void Succeeded(const std::string& node);

  KubeClient& kube_;
  RemediatorOptions options_;
  Logger& log_;
  std::map<std::string, int64_t> healthy_since_;     // node -> Unix ms, nodes without a fault
  std::map<std::string, std::string> failing_;       // node -> error already logged
  std::map<std::string, std::string> announced_;     // dry-run: node -> taint value announced
  bool list_failing_ = false;
};

// The marker annotation's value for what was placed, and back.
std::string RemediationMarker(const std::string& taint_value, bool cordoned);
bool MarkerSaysCordoned(const std::string& marker);

}  // namespace nccl_triage
