#include "planner/triage_plan.h"

#include <algorithm>
#include <set>

namespace nccl_triage {

TriagePlan PlanTriage(const std::vector<std::string>& requested,
                      const std::map<std::string, TriageAgent>& agents, size_t max_references) {
  TriagePlan plan;
  std::set<std::string> job;
  for (const std::string& node : requested) {
    if (!job.insert(node).second) continue;
    auto it = agents.find(node);
    if (it == agents.end() || !it->second.connected) {
      plan.skipped[node] = "absent";
      plan.reasons[node] = "no agent of this node is connected to the coordinator";
    } else if (!it->second.probes_unavailable.empty()) {
      plan.skipped[node] = "unavailable";
      plan.reasons[node] = it->second.probes_unavailable + ": not probed";
    } else if (it->second.gpus_busy) {
      plan.skipped[node] = "busy";
      plan.reasons[node] =
          "its GPUs are held by another process (another job may have started there): not "
          "probed";
    } else {
      plan.probed.push_back(node);
    }
  }
  for (const auto& [node, a] : agents) {
    if (plan.references.size() >= max_references) break;
    if (!job.count(node) && a.connected && !a.gpus_busy && !a.confirmed_fault &&
        a.probes_unavailable.empty()) {
      plan.references.push_back(node);
    }
  }
  // Round 1: the job's nodes pairwise; the odd one with a reference; the references together,
  // so that each has passed (or not) before round 2 needs one.
  size_t i = 0;
  for (; i + 1 < plan.probed.size(); i += 2)
    plan.round1.emplace_back(plan.probed[i], plan.probed[i + 1]);
  std::vector<std::string> refs = plan.references;
  if (i < plan.probed.size() && !refs.empty()) {
    plan.round1.emplace_back(plan.probed[i], refs.front());
    refs.erase(refs.begin());
  }
  if (refs.size() >= 2) plan.round1.emplace_back(refs[0], refs[1]);
  return plan;
}

TriageOutcome SummariseTriage(const std::vector<std::string>& requested, const TriagePlan& plan,
                              const SweepResult& result) {
  TriageOutcome out;
  out.references = plan.references;
  out.pairs_probed = static_cast<int>(result.pairs.size());
  out.rounds = result.rounds;
  std::set<std::string> seen;
  for (const std::string& node : requested) {
    if (!seen.insert(node).second) continue;
    TriageNodeOutcome n;
    n.node = node;
    if (auto s = plan.skipped.find(node); s != plan.skipped.end()) {
      n.state = s->second;
      n.reason = plan.reasons.at(node);
    } else if (auto r = result.nodes.find(node); r != result.nodes.end()) {
      switch (r->second.state) {
        case NodeState::kGood:
          n.state = "good";
          break;
        case NodeState::kNodeFault:
          n.state = "fault";
          break;
        case NodeState::kInconclusive:
          n.state = "inconclusive";
          break;
        case NodeState::kUntested:
          n.state = "untested";
          break;
      }
      n.fault_class = r->second.fault_class;
      n.causes = r->second.causes;
      n.reason = r->second.reason;
    } else {
      n.state = "untested";
      n.reason = "no pair of this node was probed";
    }
    out.nodes.push_back(std::move(n));
  }
  for (const LocalisedFault& f : result.faults) {
    const bool touches = std::any_of(f.nodes.begin(), f.nodes.end(),
                                     [&](const std::string& n) { return seen.count(n) > 0; });
    if (touches) out.faults.push_back(f);
  }
  return out;
}

namespace {

// The rail fault that names `rail` of `node`: a whole-node one, the node's rail, a link on it.
const RailFault* RailFaultOf(const std::vector<RailFault>& faults, const std::string& node,
                             int rail) {
  for (const RailFault& f : faults) {  // LocaliseRails' order: nodes, node rails, link rails
    if (std::find(f.nodes.begin(), f.nodes.end(), node) == f.nodes.end()) continue;
    if (f.kind == RailFaultKind::kNode || f.rail == rail) return &f;
  }
  return nullptr;
}

}  // namespace

std::vector<TriageRail> TriageRails(const NodeInfo& node, const std::vector<RailFault>& triage,
                                    const std::vector<RailFault>& sweep) {
  std::vector<TriageRail> out;
  for (const Rail& rail : node.rails) {
    TriageRail r;
    r.rail = rail;
    if (const RailFault* f = RailFaultOf(triage, node.name, rail.index)) {
      r.fault = *f;
      r.seen_by = "triage";
    } else if (const RailFault* g = RailFaultOf(sweep, node.name, rail.index)) {
      r.fault = *g;
      r.seen_by = "sweep";
    }
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace nccl_triage
