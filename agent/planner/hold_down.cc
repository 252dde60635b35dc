#include "planner/hold_down.h"

#include <algorithm>
#include <set>

namespace nccl_triage {

HoldDown::Key HoldDown::KeyOf(const LocalisedFault& f) {
  if (f.kind == FaultKind::kNode) return {FaultKind::kNode, NodePair(f.nodes.at(0), "")};
  return {FaultKind::kLink, NodePair(f.nodes.at(0), f.nodes.at(1))};
}

void HoldDown::Apply(const SweepResult& sweep) {
  std::set<Key> seen;
  for (const auto& f : sweep.faults) {
    if (f.nodes.empty() || (f.kind == FaultKind::kLink && f.nodes.size() < 2)) continue;
    Key k = KeyOf(f);
    seen.insert(k);
    TrackedFault& t = faults_[k];
    if (t.seen == 0 && !t.confirmed) t.first_seen_sweep = sweep.number;
    t.fault = f;
    ++t.seen;
    t.unseen = 0;
    t.last_seen_sweep = sweep.number;
    if (t.seen >= hold_down_) t.confirmed = true;
  }
  for (auto it = faults_.begin(); it != faults_.end();) {
    const Key& k = it->first;
    if (seen.count(k)) {
      ++it;
      continue;
    }
    const bool tested = k.first == FaultKind::kNode ? sweep.tested_nodes.count(k.second.b) >
                                                          0  // NodePair(node, "") keeps node in b
                                                    : sweep.tested_pairs.count(k.second) > 0;
    if (!tested) {
      ++it;
      continue;
    }
    TrackedFault& t = it->second;
    t.seen = 0;
    if (!t.confirmed || ++t.unseen >= hold_down_) {
      it = faults_.erase(it);
    } else {
      ++it;
    }
  }
}

bool HoldDown::Resume(const LocalisedFault& fault, uint64_t sweep) {
  if (fault.nodes.empty() || (fault.kind == FaultKind::kLink && fault.nodes.size() < 2)) {
    return false;
  }
  auto [it, inserted] = faults_.try_emplace(KeyOf(fault));
  if (!inserted) return false;
  TrackedFault& t = it->second;
  t.fault = fault;
  t.seen = hold_down_;
  t.unseen = 0;
  t.confirmed = true;
  t.first_seen_sweep = sweep;
  t.last_seen_sweep = sweep;
  return true;
}

bool HoldDown::Restore(const TrackedFault& tracked) {
  const LocalisedFault& f = tracked.fault;
  if (f.nodes.empty() || (f.kind == FaultKind::kLink && f.nodes.size() < 2)) return false;
  auto [it, inserted] = faults_.try_emplace(KeyOf(f), tracked);
  if (!inserted) return false;
  TrackedFault& t = it->second;
  // Counters beyond what this hold-down needs mean nothing more (hold_down may have changed).
  t.seen = std::clamp(t.seen, 0, hold_down_);
  t.unseen = std::clamp(t.unseen, 0, hold_down_ - 1);
  if (t.seen >= hold_down_) t.confirmed = true;
  return true;
}

std::vector<TrackedFault> HoldDown::All() const {
  std::vector<TrackedFault> out;
  for (const auto& [k, t] : faults_) out.push_back(t);
  return out;
}

std::vector<TrackedFault> HoldDown::Confirmed() const {
  std::vector<TrackedFault> out;
  for (const auto& [k, t] : faults_) {
    if (t.confirmed) out.push_back(t);
  }
  return out;
}

std::vector<NodePair> HoldDown::LinksToRetest() const {
  std::vector<NodePair> out;
  for (const auto& [k, t] : faults_) {
    if (k.first == FaultKind::kLink) out.push_back(k.second);
  }
  return out;
}

void HoldDown::Forget(const std::string& node) {
  for (auto it = faults_.begin(); it != faults_.end();) {
    if (it->second.fault.nodes.size() > 0 &&
        std::find(it->second.fault.nodes.begin(), it->second.fault.nodes.end(), node) !=
            it->second.fault.nodes.end()) {
      it = faults_.erase(it);
    } else {
      ++it;
    }
  }
}

const TrackedFault* HoldDown::FindNode(const std::string& node) const {
  auto it = faults_.find({FaultKind::kNode, NodePair(node, "")});
  return it == faults_.end() ? nullptr : &it->second;
}

const TrackedFault* HoldDown::FindLink(const NodePair& pair) const {
  auto it = faults_.find({FaultKind::kLink, pair});
  return it == faults_.end() ? nullptr : &it->second;
}

}  // namespace nccl_triage
