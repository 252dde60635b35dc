#include "planner/remediation.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace nccl_triage {

RemediationPlan PlanRemediation(const std::vector<RemediationNode>& nodes,
                                const RemediationPolicy& policy, int64_t now_ms) {
  RemediationPlan plan;
  plan.mode = policy.mode;
  if (policy.mode == RemediationMode::kOff) return plan;

  std::vector<const RemediationNode*> sorted;
  for (const RemediationNode& n : nodes) sorted.push_back(&n);
  std::sort(sorted.begin(), sorted.end(),
            [](const RemediationNode* a, const RemediationNode* b) { return a->node < b->node; });

  std::map<std::string, int> pool_size, pool_used;
  int used = 0;
  for (const RemediationNode* n : sorted) ++pool_size[n->pool];

  // Releases first: a node healthy long enough frees its place in the budget.
  for (const RemediationNode* n : sorted) {
    if (!n->remediated) continue;
    const bool healed = !n->confirmed_fault && n->healthy_since_ms &&
                        now_ms - *n->healthy_since_ms >= policy.healthy_ms;
    if (healed) {
      const int64_t healthy_s = (now_ms - *n->healthy_since_ms) / 1000;
      plan.actions.push_back({RemediationActionKind::kRelease, n->node, "", n->cordoned_by_us,
                              "healthy for " + std::to_string(healthy_s) +
                                  " s: nccl-triage removes its taint" +
                                  (n->cordoned_by_us ? " and cordon" : "")});
      continue;
    }
    ++used;
    ++pool_used[n->pool];
  }

  auto pool_limit = [&](const std::string& pool) {
    return static_cast<int>(std::floor(pool_size[pool] * policy.max_percent / 100.0 + 1e-9));
  };
  for (const RemediationNode* n : sorted) {
    if (!n->confirmed_fault || n->remediated || n->released_by_operator) continue;
    if (used >= policy.max_nodes || pool_used[n->pool] >= pool_limit(n->pool)) {
      plan.held_back.push_back(n->node);
      plan.breaker_open = true;
      continue;
    }
    ++used;
    ++pool_used[n->pool];
    const std::string klass(ToString(n->fault_class));
    std::string reason = "confirmed " + klass + " fault";
    if (!n->causes.empty()) reason += " (" + n->causes.front() + ")";
    reason += ": nccl-triage taints the node " + std::string(kFaultTaintKey) + "=" + klass +
              ":NoSchedule";
    const bool cordon = policy.mode == RemediationMode::kCordon && !n->unschedulable;
    if (cordon) reason += " and cordons it";
    plan.actions.push_back({RemediationActionKind::kApply, n->node, klass, cordon, reason});
  }
  plan.remediated_after = used;
  return plan;
}

}  // namespace nccl_triage
