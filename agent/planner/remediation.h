// Remediation: which nodes to taint (and cordon) and which to release, decided as a pure function.
//
// A node is remediated only when its fault is confirmed: localised to the node by the A/B probes
// and kept through hold-down (planner/hold_down.h). It gets the NoSchedule taint
// `nccl-triage.io/fault=<class>` (and, in cordon mode, spec.unschedulable) and the annotation
// `nccl-triage.io/remediated` that marks both as ours: only what carries that mark is ever
// removed. A remediated node is released once it has been healthy (no confirmed fault) for
// `healthy_ms`. A node whose taint an operator removed is theirs again: it is not counted, and
// not tainted again while the fault that was confirmed then stays confirmed.
//
// Times are milliseconds of a monotonic clock (any epoch, the same for `now_ms` and every
// node's healthy_since_ms): a step of the wall clock must not release a node early.
//
// The circuit breaker: never more than `max_nodes` nodes remediated at once, nor more than
// `max_percent` % of the nodes of one pool (rounded down). Faulty nodes beyond the budget are held
// back and the breaker is open: a fault on many nodes at once is more likely the fabric, the
// coordinator or a bad rollout than that many broken nodes, and draining them all would do more
// harm than the fault. Within the budget nodes are taken in name order (deterministic).
//
// Dry-run plans the same actions and marks them as not applied; off plans nothing. Pure: the
// caller reads the nodes' taints, annotations and verdicts and applies the plan.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/reflect.h"
#include "core/config.h"
#include "core/model.h"

namespace nccl_triage {

inline constexpr std::string_view kFaultTaintKey = "nccl-triage.io/fault";
inline constexpr std::string_view kRemediatedAnnotation = "nccl-triage.io/remediated";
// An event about the node written with the patch that caused it and removed once it is posted
// (coordinator/remediator.h): a coordinator killed in between posts it after its restart.
inline constexpr std::string_view kPendingEventAnnotation = "nccl-triage.io/pending-event";
// The same for the events of the validation of new nodes (coordinator/node_validator.h), apart
// so that neither overwrites an event of the other not yet posted.
inline constexpr std::string_view kPendingValidationEventAnnotation =
    "nccl-triage.io/pending-validation-event";

// RemediationMode and its names (off, dry-run, taint, cordon) are in core/config.h: the
// configuration key remediation.mode holds one.

struct RemediationPolicy {
  RemediationMode mode = RemediationMode::kOff;
  int max_nodes = 2;
  double max_percent = 10.0;
  int64_t healthy_ms = 3'600'000;
};

// What the planner knows of one node.
struct RemediationNode {
  std::string node;
  std::string pool;                // the value of remediation.pool_label ("" for one pool)
  bool confirmed_fault = false;    // a node fault, confirmed by probes and hold-down
  FaultClass fault_class = FaultClass::kUnknown;
  std::vector<std::string> causes;  // catalogue ids, most likely first
  bool remediated = false;         // carries our mark (and so our taint)
  bool cordoned_by_us = false;     // our mark says we cordoned it
  bool unschedulable = false;      // spec.unschedulable, whoever set it
  // An operator removed our taint while the fault was confirmed: never tainted again until the
  // fault has cleared (the caller forgets this then), and never counted.
  bool released_by_operator = false;
  // Since when the node has had no confirmed fault (monotonic ms); nullopt while it has one.
  std::optional<int64_t> healthy_since_ms;
};

enum class RemediationActionKind { kApply, kRelease };
constexpr auto NamesOf(Type<RemediationActionKind>) {
  return std::array{Named(RemediationActionKind::kApply, "apply"),
                    Named(RemediationActionKind::kRelease, "release")};
}

struct RemediationAction {
  RemediationActionKind kind = RemediationActionKind::kApply;
  std::string node;
  std::string taint_value;  // kApply: the fault class, the taint's value
  bool cordon = false;      // kApply: also cordon; kRelease: also uncordon (we cordoned it)
  std::string reason;       // one line for the node's event
};

struct RemediationPlan {
  RemediationMode mode = RemediationMode::kOff;
  std::vector<RemediationAction> actions;  // in dry-run: what would be done
  std::vector<std::string> held_back;      // confirmed faulty nodes the breaker kept untouched
  bool breaker_open = false;
  int remediated_after = 0;  // nodes carrying our mark once the actions are applied
  bool applies() const {
    return mode == RemediationMode::kTaint || mode == RemediationMode::kCordon;
  }
};

RemediationPlan PlanRemediation(const std::vector<RemediationNode>& nodes,
                                const RemediationPolicy& policy, int64_t now_ms);

}  // namespace nccl_triage
