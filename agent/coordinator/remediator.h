// Remediator: applies the remediation plan (planner/remediation.h) to the cluster's nodes, once
// per sweep (docs/remediation.md).
//
// A step reads every node (from the coordinator's NodeCache, kept by a watch, or else pages of
// GET /api/v1/nodes: taints, spec.unschedulable, the pool label, the annotations
// nccl-triage.io/remediated and nccl-triage.io/pending-event), plans from the
// coordinator's confirmed node faults and carries the plan out:
//   apply    a JSON merge patch of the node with its full spec.taints (the taints read plus
//            nccl-triage.io/fault=<class>:NoSchedule), spec.unschedulable in cordon mode and the
//            marker annotation saying what was placed ("taint=<class>" or "taint=<class>,cordon"),
//            guarded by metadata.resourceVersion; a Warning event on the node with the cause and
//            its fix;
//   release  the same patch without our taint and marker (and uncordoned when the marker says we
//            cordoned it and it still is); a Normal event. Only what carries the marker is ever
//            removed: a taint or a cordon an operator placed stays;
//   dry-run  nothing is patched; a Normal event "would taint" once per node and fault class.
// The taints are read every step, not trusted from the marker: a marked node without our taint
// (or a node we marked whose marker is gone) was released by an operator. Its marker is removed,
// it is no longer counted, a Normal event says so, and it is not tainted again until its fault
// has cleared and come back.
//
// An event is never lost between the patch and its post: the patch itself writes the event into
// the annotation nccl-triage.io/pending-event, and a step posts every pending event it reads
// (after a restart too) and then removes the annotation (at least once: a kill between the post
// and the removal posts it twice; coordinator/pending_event.h, shared with the validator).
//
// A 409 Conflict (the node changed since it was read) is retried once at once on a fresh read,
// from which the patch is computed again (an operator's new cordon is not taken for ours); any
// other error (403, 404, 5xx, no answer) is logged once per node until that node succeeds
// again, counted, and retried on the next step. A step stops before its next API call when a
// stop is requested or its deadline has passed (the rest waits for the next step), and reads at
// most a bounded number of pages. Nothing here throws or ends the process.
//
// Durations (healthy for recover_after, the step's deadline) are measured on the clock's
// monotonic time, never the wall clock, which is used for events and /status, and for what
// survives a restart: Memory() gives since when each remediated node has been healthy as a wall
// clock time (taken when the node's healthy time started), the dry-run announcements and the
// operators' releases; Restore() takes them back in a new coordinator (coordinator/state_store.h
// keeps them in the API server), converting each wall time into the monotonic time that leaves
// the same time to run. A wall clock that reads earlier than the stored time (stepped back)
// counts as no time healthy, never as more: a clock step may delay a release, never hasten one.
// Not thread-safe: the coordinator's sweep thread calls Step, Memory and Restore.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <stop_token>
#include <string>
#include <vector>

#include "base/clock.h"
#include "coordinator/pending_event.h"
#include "core/model.h"
#include "kube/kube_api.h"
#include "kube/node_cache.h"
#include "planner/remediation.h"

namespace nccl_triage {

class Logger;

struct RemediatorOptions {
  RemediationPolicy policy;
  std::string pool_label;  // node label naming the pool; empty: one pool
  std::string component = "nccl-triage-coordinator";  // events' source
  std::string event_namespace = "default";            // events about nodes live there
  int list_page = 500;                                // nodes per GET
  int max_listed_nodes = 50'000;  // pages beyond this many nodes are not read (a step fails)
  std::chrono::milliseconds step_deadline{120'000};  // no API call starts after this long
};

// What the remediator and the validator read of a node (their NodeCache keeps these fields).
NodeCacheOptions RemediationNodeFields(const std::string& pool_label);

// A node fault the coordinator has confirmed (probes and hold-down), as the remediator needs it.
struct ConfirmedNodeFault {
  FaultClass fault_class = FaultClass::kUnknown;
  std::vector<std::string> causes;  // catalogue ids, most likely first
};

// What a remediator keeps across a restart of the coordinator (coordinator/state_store.h).
struct RemediatorMemory {
  // Remediated nodes without a fault -> since when healthy (unix ms of the wall clock).
  std::map<std::string, int64_t> healthy_since_unix_ms;
  std::map<std::string, std::string> announced;  // dry-run: node -> taint value announced
  std::set<std::string> operator_released;       // see RemediationStatus
  bool breaker_open = false;  // as the last step found it (recomputed by every step)
  friend bool operator==(const RemediatorMemory&, const RemediatorMemory&) = default;
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
  // Our taint removed by someone else while the fault is confirmed: not counted, not tainted
  // again until the fault clears.
  std::vector<std::string> released_by_operator;
  std::vector<RemediationAction> actions;  // planned this step (in dry-run: not applied)
  bool breaker_open = false;
  std::map<std::string, std::string> errors;  // node -> why its last call failed
  std::string list_error;                     // the node list could not be read (no plan)
  std::string cut_short;  // "stop requested" or "deadline": actions left for the next step
  std::vector<RemediationOutcome> outcomes;
};

nlohmann::json ToJson(const RemediationStatus& status);

class Remediator {
 public:
  // `kube`, `log`, `clock` and `nodes` must outlive the remediator. With `nodes` (kept by a
  // watch, with RemediationNodeFields), a step reads the nodes from it; without, it lists them.
  // Either way the patches go to `kube`, and what they answer is handed to `nodes`.
  Remediator(KubeClient& kube, RemediatorOptions options, Logger& log, Clock& clock,
             NodeCache* nodes = nullptr);

  // One step now with the faults confirmed now, by node. `watched`, when given, names the nodes
  // whose agents are connected: a node outside it is not being probed, so its healthy time does
  // not count (its clock starts again when its agent is back), and a node whose agent went away
  // is never released for a fault nobody has seen clear. No API call starts once `stop` is
  // requested.
  RemediationStatus Step(const std::map<std::string, ConfirmedNodeFault>& confirmed,
                         const std::set<std::string>* watched = nullptr,
                         std::stop_token stop = {});

  const RemediatorOptions& options() const { return options_; }

  // What must survive a restart (see the header comment); stable between steps that change
  // nothing, so that a store writes it only when it changes.
  RemediatorMemory Memory() const;
  // Takes back what an earlier remediator kept; call before the first Step. A node's healthy time
  // goes on from what the wall clock says has passed since it started (none when the clock reads
  // earlier than that).
  void Restore(const RemediatorMemory& memory);

 private:
  // A node as read: the planner's view and what a patch needs.
  struct NodeState {
    RemediationNode plan;
    std::string resource_version;
    nlohmann::json taints = nlohmann::json::array();
    bool marked = false;     // carries our marker annotation
    bool our_taint = false;  // carries our taint
    std::string pending_event;  // the annotation's value: an event not yet posted
  };
  // An event as the pending-event annotation holds it (coordinator/pending_event.h).
  using PendingEvent = PendingNodeEvent;
  // Why no further API call may start now ("" when one may).
  std::string CutShort() const { return CutShortReason(stop_, deadline_, clock_); }

  // Every node, from the cache or page by page; false (and `error`) when the cache has no list
  // to serve, a page fails or the step is cut short.
  bool ListNodes(std::vector<NodeState>* nodes, std::string* error);
  static NodeState ParseNode(const CachedNode& node, const std::string& pool_label);
  // The action's patch and the event it announces, computed from the node as read.
  std::pair<NodePatch, PendingEvent> Build(const RemediationAction& action,
                                           const NodeState& node) const;
  // Patches one node for `action`; on 409 reads it again, computes the action again from what
  // is there now (`action` is updated; `skip` set when there is nothing left to do) and retries
  // once. `event` is the event the patch left pending.
  KubeResponse Patch(RemediationAction& action, const NodeState& node, PendingEvent* event,
                     bool* skip);
  // False when the patch failed (the node keeps its state).
  bool Apply(RemediationAction action, const NodeState& node, RemediationStatus& status);
  // Our taint gone by an operator's hand: the marker removed, the release told.
  void Forget(const NodeState& node, RemediationStatus& status);
  // Posts a pending event of `node`, then removes the annotation.
  void Deliver(const std::string& node, const PendingEvent& event, const std::string& encoded,
               RemediationStatus& status);
  void AnnounceDryRun(const RemediationAction& action, RemediationStatus& status);
  bool PostEvent(const std::string& node, const PendingEvent& event, RemediationStatus& status);
  void Failed(const std::string& node, const std::string& what, const KubeResponse& r,
              RemediationStatus& status);
  void Succeeded(const std::string& node);

  KubeClient& kube_;
  RemediatorOptions options_;
  Logger& log_;
  Clock& clock_;
  NodeCache* nodes_;
  std::map<std::string, int64_t> healthy_since_;     // node -> monotonic ms, nodes without a fault
  std::map<std::string, int64_t> healthy_since_unix_;  // the same times, on the wall clock
  bool breaker_open_ = false;
  std::map<std::string, std::string> failing_;       // node -> error already logged
  std::map<std::string, std::string> announced_;     // dry-run: node -> taint value announced
  std::set<std::string> placed_;                     // carrying our marker after the last step
  std::set<std::string> operator_released_;          // see RemediationStatus
  PendingEvents pending_{std::string(kPendingEventAnnotation)};
  bool list_failing_ = false;
  // During a step: its faults, its stop and its deadline.
  const std::map<std::string, ConfirmedNodeFault>* confirmed_ = nullptr;
  std::stop_token stop_;
  Clock::TimePoint deadline_{};
};

// The marker annotation's value for what was placed, and back.
std::string RemediationMarker(const std::string& taint_value, bool cordoned);
bool MarkerSaysCordoned(const std::string& marker);

}  // namespace nccl_triage
