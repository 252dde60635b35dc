#include "planner/cluster_verdicts.h"

#include <algorithm>
#include <set>
#include <utility>

#include "core/catalogue.h"
#include "core/report.h"

namespace nccl_triage {
namespace {

bool FailsCheck(const NodeInfo& info, const std::string& check) {
  return std::any_of(info.findings.begin(), info.findings.end(), [&](const Finding& f) {
    return f.check == check && f.status == CheckStatus::kFail;
  });
}

// The nodes `node` failed a probe with in this sweep (pair or rail).
std::set<std::string> FailedWith(const SweepResult& result, const std::string& node) {
  std::set<std::string> peers;
  for (const auto& p : result.pairs) {
    if (!p.pair.Has(node)) continue;
    const bool rail_failed =
        std::any_of(p.rails.begin(), p.rails.end(), [](const auto& r) { return !r.passed; });
    if (p.judgement.status == PairStatus::kFail || rail_failed) peers.insert(p.pair.Other(node));
  }
  return peers;
}

// A pair's verdict names the failing checks of both its nodes. A node fault keeps the causes
// that are its own: a check that fails on a peer it failed with, and not on the node, is the
// peer's (its own verdict names it) and is dropped from this node's. Log-derived causes stay.
void KeepOwnCauses(LocalisedFault& f, const SweepResult& result,
                   const std::map<std::string, NodeInfo>& known) {
  const std::string& node = f.nodes[0];
  auto self = known.find(node);
  std::vector<const NodeInfo*> peers;
  for (const auto& p : FailedWith(result, node)) {
    if (auto it = known.find(p); it != known.end()) peers.push_back(&it->second);
  }
  std::vector<std::string> own;
  for (const auto& c : f.causes) {
    const bool mine = self != known.end() && FailsCheck(self->second, c);
    const bool peers_check = std::any_of(peers.begin(), peers.end(),
                                         [&](const NodeInfo* p) { return FailsCheck(*p, c); });
    if (mine || !peers_check) own.push_back(c);
  }
  // Nothing of its own left: the localisation still blames the node, so its causes stay
  // rather than publishing a fault with none.
  if (!own.empty()) f.causes = std::move(own);
}

// The order in which an operator needs a fault's causes (see the header).
void OrderCauses(SweepResult& result, const std::map<std::string, NodeInfo>& known) {
  for (auto& f : result.faults) {
    if (f.kind == FaultKind::kLink) {
      std::stable_partition(f.causes.begin(), f.causes.end(), [](const std::string& c) {
        const CauseInfo* info = FindCause(c);
        return info != nullptr && info->kind == CauseKind::kCrossNode;
      });
      continue;
    }
    KeepOwnCauses(f, result, known);
    auto info = known.find(f.nodes[0]);
    if (info != known.end()) {
      const std::vector<Finding>& own = info->second.findings;
      std::stable_partition(f.causes.begin(), f.causes.end(), [&](const std::string& c) {
        return std::any_of(own.begin(), own.end(), [&](const Finding& x) {
          return x.check == c && x.status == CheckStatus::kFail;
        });
      });
    }
    result.nodes[f.nodes[0]].causes = f.causes;
  }
}

bool ChecksFail(FaultClass c) {
  return c == FaultClass::kArchitecture || c == FaultClass::kIbResource;
}

}  // namespace

PublishedNodeVerdict ChecksVerdict(const NodeInfo& info, std::string reason) {
  std::vector<Finding> findings = info.findings;
  if (info.checks_passed.value_or(1) > 0) {
    // Stands for the passes, which the summary counts but does not list.
    Finding passed;
    passed.status = CheckStatus::kPass;
    findings.push_back(std::move(passed));
  }
  NodeReport report = MakeReport(info.name, std::move(findings), 0);
  PublishedNodeVerdict v;
  v.basis = Basis::kChecks;
  v.fault_class = report.fault_class;
  v.causes = std::move(report.causes);
  v.reason = std::move(reason);
  if (ProbesCannotRun(info)) {
    // Blind: the checks predict, no probe can confirm; an unfailing node is not known healthy.
    if (v.fault_class == FaultClass::kHealthy) v.fault_class = FaultClass::kUnknown;
    const std::string cause = "probe." + info.probe->reason;
    if (FindCause(cause) != nullptr) {
      std::erase(v.causes, cause);
      v.causes.insert(v.causes.begin(), cause);
    }
    v.reason = ProbesUnavailableText(info) + ": left out of the sweeps, no pair results" +
               (v.reason.empty() ? "" : "; " + v.reason);
  }
  return v;
}

ClusterVerdicts::ClusterVerdicts(int hold_down, size_t max_pair_records)
    : hold_down_(hold_down), max_pair_records_(std::max<size_t>(max_pair_records, 1)) {}

void ClusterVerdicts::Apply(SweepResult result, const std::map<std::string, NodeInfo>& known) {
  OrderCauses(result, known);
  hold_down_.Apply(result);
  RecordPairs(result);
  static const NodeInfo kNothingKnown;
  for (const auto& [node, outcome] : result.nodes) {
    auto info = known.find(node);
    PublishedNodeVerdict v =
        NodeVerdict(node, outcome, info != known.end() ? info->second : kNothingKnown);
    v.state = outcome.state;
    nodes_[node] = std::move(v);
    blind_.erase(node);
  }
}

bool ClusterVerdicts::UpdateProbeAvailability(const std::string& node, const NodeInfo& info) {
  auto it = nodes_.find(node);
  if (it != nodes_.end() && it->second.confirmed_fault) return false;
  PublishedNodeVerdict v;
  if (ProbesCannotRun(info)) {
    v = ChecksVerdict(info, "verdict from node checks");
    blind_.insert(node);
  } else if (blind_.erase(node) > 0) {
    v = ChecksVerdict(info, "probes can run again, not probed since; from node checks");
  } else {
    return false;
  }
  v.state = NodeState::kUntested;
  if (it != nodes_.end() && it->second == v) return false;
  nodes_[node] = std::move(v);
  return true;
}

void ClusterVerdicts::Forget(const std::string& node) {
  nodes_.erase(node);
  blind_.erase(node);
  hold_down_.Forget(node);
  std::erase_if(link_claimed_by_, [&](const auto& claim) {
    return claim.first.a == node || claim.first.b == node;
  });
  auto mine = pairs_by_node_.find(node);
  if (mine == pairs_by_node_.end()) return;
  for (const auto& [pair, rec] : mine->second) {
    auto other = pairs_by_node_.find(pair.Other(node));
    if (other != pairs_by_node_.end()) {
      other->second.erase(pair);
      if (other->second.empty()) pairs_by_node_.erase(other);
    }
    pairs_.erase(pair);
  }
  pairs_by_node_.erase(mine);
}

void ClusterVerdicts::RecordPairs(const SweepResult& result) {
  for (const auto& p : result.pairs) {
    PairRecord& rec = pairs_[p.pair];
    rec = {p.pair, p.judgement, p.localisation, result.number, p.round};
    pairs_by_node_[p.pair.a][p.pair] = &rec;
    pairs_by_node_[p.pair.b][p.pair] = &rec;
  }
  if (pairs_.size() <= max_pair_records_) return;
  // Bound the memory of a long-lived coordinator: forget the oldest healthy pairs first, down to
  // nine tenths of the bound so that this does not run on every sweep.
  std::vector<std::pair<uint64_t, NodePair>> healthy;
  for (const auto& [k, rec] : pairs_) {
    if (rec.judgement.status == PairStatus::kPass) healthy.emplace_back(rec.sweep, k);
  }
  std::sort(healthy.begin(), healthy.end());
  for (size_t i = 0; i < healthy.size() && pairs_.size() > max_pair_records_ * 9 / 10; ++i) {
    const NodePair& k = healthy[i].second;
    pairs_by_node_[k.a].erase(k);
    pairs_by_node_[k.b].erase(k);
    pairs_.erase(k);
  }
}

PublishedNodeVerdict ClusterVerdicts::NodeVerdict(const std::string& node,
                                                  const NodeOutcome& outcome,
                                                  const NodeInfo& info) const {
  const TrackedFault* tracked = hold_down_.FindNode(node);
  if (tracked && tracked->confirmed) {
    PublishedNodeVerdict v;
    v.fault_class = tracked->fault.fault_class;
    v.basis = Basis::kProbes;
    v.causes = tracked->fault.causes;
    v.reason = "node fault, confirmed over " + std::to_string(hold_down_.hold_down()) +
               " sweeps: " + tracked->fault.reason;
    v.confirmed_fault = true;
    return v;
  }
  if (outcome.state == NodeState::kGood) {
    PublishedNodeVerdict checks = ChecksVerdict(info, "");
    if (ChecksFail(checks.fault_class)) {
      // The pair probes pass, but the node's own checks fail on something two ranks over the
      // network do not exercise: the checks' prediction stands, marked as such.
      checks.reason = "probes pass (" + outcome.reason + ") but the node checks fail";
      return checks;
    }
    PublishedNodeVerdict v;
    v.fault_class = FaultClass::kHealthy;
    v.basis = Basis::kProbes;
    v.reason = outcome.reason;
    return v;
  }
  auto prev = nodes_.find(node);
  if (prev != nodes_.end() && !prev->second.confirmed_fault) {
    PublishedNodeVerdict v = prev->second;  // nothing new is confirmed: the published one stays
    if (tracked) {
      v.reason = "suspected node fault (seen " + std::to_string(tracked->seen) + " of " +
                 std::to_string(hold_down_.hold_down()) + " sweeps); " + v.reason;
    }
    return v;
  }
  return ChecksVerdict(info, tracked
                                 ? "suspected node fault, awaiting confirmation; from node checks"
                                 : "not localised by probes yet; from node checks");
}

std::vector<std::string> ClusterVerdicts::Restore(const std::vector<TrackedFault>& faults) {
  std::vector<std::string> changed;
  const std::string why = "confirmed before the coordinator restarted (kept in the API server)";
  for (const TrackedFault& t : faults) {
    if (!hold_down_.Restore(t)) continue;
    const std::vector<std::string>& at = t.fault.nodes;
    const TrackedFault* now = t.fault.kind == FaultKind::kNode
                                  ? hold_down_.FindNode(at[0])
                                  : hold_down_.FindLink(NodePair(at[0], at[1]));
    if (now == nullptr || !now->confirmed) continue;  // suspected: only its counters come back
    const LocalisedFault& f = now->fault;
    if (f.kind == FaultKind::kNode) {
      PublishResumedNode(f, "node fault, " + why + (f.reason.empty() ? "" : ": " + f.reason),
                         changed);
      continue;
    }
    if (PairRecord* rec = ResumedLinkRecord(NodePair(f.nodes[0], f.nodes[1]), changed)) {
      rec->judgement.verdict.fault_class = f.fault_class;
      rec->judgement.verdict.causes = f.causes;
      rec->judgement.verdict.reason = why;
      rec->judgement.verdict.basis = Basis::kProbes;
    }
  }
  return changed;
}

void ClusterVerdicts::PublishResumedNode(const LocalisedFault& f, std::string reason,
                                         std::vector<std::string>& changed) {
  PublishedNodeVerdict v;
  v.fault_class = f.fault_class;
  v.basis = Basis::kProbes;
  v.causes = f.causes;
  v.reason = std::move(reason);
  v.confirmed_fault = true;
  nodes_[f.nodes[0]] = std::move(v);
  changed.push_back(f.nodes[0]);
}

PairRecord* ClusterVerdicts::ResumedLinkRecord(const NodePair& key,
                                               std::vector<std::string>& changed) {
  changed.push_back(key.a);
  changed.push_back(key.b);
  PairRecord& rec = pairs_[key];
  if (rec.sweep != 0) return nullptr;  // a sweep has judged the pair since: its record stays
  rec.pair = key;
  rec.judgement.status = PairStatus::kFail;
  rec.localisation = PairLocalisation::kLink;
  pairs_by_node_[key.a][key] = &rec;
  pairs_by_node_[key.b][key] = &rec;
  return &rec;
}

std::vector<std::string> ClusterVerdicts::Resume(const std::string& node, const AgentVerdicts& told,
                                                 uint64_t sweep) {
  std::vector<std::string> changed;
  const std::string why = "confirmed before the coordinator restarted";
  if (told.node && told.node->confirmed && told.node->localisation == PairLocalisation::kNode &&
      told.node->verdict.basis == Basis::kProbes && ChecksFail(told.node->verdict.fault_class)) {
    LocalisedFault f{FaultKind::kNode, {node}, told.node->verdict.fault_class, told.node->verdict.causes, why};
    if (hold_down_.Resume(f, sweep)) {
      PublishResumedNode(f, "node fault, " + why + ": " + told.node->verdict.reason, changed);
    }
  }
  for (const auto& p : told.pairs) {
    if (!p.confirmed || p.localisation != PairLocalisation::kLink || p.peer == node ||
        !ChecksFail(p.verdict.fault_class)) {
      continue;
    }
    const NodePair key(node, p.peer);
    auto claimed = link_claimed_by_.find(key);
    if (claimed == link_claimed_by_.end()) {
      link_claimed_by_[key] = node;
      continue;
    }
    if (claimed->second == node) continue;  // the same node again: still one side
    LocalisedFault f{
        FaultKind::kLink, {key.a, key.b}, p.verdict.fault_class, p.verdict.causes, why};
    link_claimed_by_.erase(claimed);
    if (!hold_down_.Resume(f, sweep)) continue;
    if (PairRecord* rec = ResumedLinkRecord(key, changed)) {
      rec->judgement.verdict = p.verdict;
      rec->judgement.socket = p.socket;
      rec->judgement.ib = p.ib;
    }
  }
  return changed;
}

const PublishedNodeVerdict* ClusterVerdicts::Find(const std::string& node) const {
  auto it = nodes_.find(node);
  return it == nodes_.end() ? nullptr : &it->second;
}

AgentVerdicts ClusterVerdicts::ForAgent(const std::string& node) const {
  AgentVerdicts out;
  if (const PublishedNodeVerdict* v = Find(node)) {
    AgentVerdicts::Node n;
    n.verdict = *v;
    n.confirmed = v->confirmed_fault || v->basis == Basis::kProbes;
    n.localisation = v->state == NodeState::kInconclusive ? PairLocalisation::kInconclusive
                     : v->confirmed_fault                 ? PairLocalisation::kNode
                                                          : PairLocalisation::kNone;
    out.node = std::move(n);
  }
  auto pairs = pairs_by_node_.find(node);
  if (pairs == pairs_by_node_.end()) return out;
  std::vector<const PairRecord*> bad;
  std::vector<const PairRecord*> good;
  for (const auto& [k, rec] : pairs->second) {
    (rec->judgement.status == PairStatus::kPass ? good : bad).push_back(rec);
  }
  auto recent = [](const PairRecord* x, const PairRecord* y) { return x->sweep > y->sweep; };
  std::sort(bad.begin(), bad.end(), recent);
  if (good.size() > kMaxHealthyPairsPerAgent) {
    std::nth_element(good.begin(), good.begin() + kMaxHealthyPairsPerAgent, good.end(), recent);
    good.resize(kMaxHealthyPairsPerAgent);
  }
  std::sort(good.begin(), good.end(), recent);
  bad.insert(bad.end(), good.begin(), good.end());
  for (size_t i = 0; i < bad.size() && i < kMaxPairsPerAgent; ++i) {
    const PairRecord& rec = *bad[i];
    const TrackedFault* link = hold_down_.FindLink(rec.pair);
    out.pairs.push_back({rec.pair.Other(node), rec.judgement.verdict, rec.judgement.socket,
                         rec.judgement.ib, rec.localisation, link && link->confirmed});
  }
  return out;
}

}  // namespace nccl_triage
