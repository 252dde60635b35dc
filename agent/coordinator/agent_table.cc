#include "coordinator/agent_table.h"

#include <algorithm>

namespace nccl_triage {

const std::string* AgentTable::NodeOf(const AgentSession* session) const {
  auto it = sessions_.find(session);
  return it == sessions_.end() ? nullptr : &it->second;
}

AgentTable::Admission AgentTable::Admit(const std::string& node) {
  Admission admission{.admitted = true};
  if (!known_.contains(node) && known_.size() >= limits_.max_nodes) {
    auto oldest = std::min_element(
        left_at_.begin(), left_at_.end(),
        [](const auto& x, const auto& y) { return x.second < y.second; });
    if (oldest == left_at_.end()) return {};
    admission.evicted = oldest->first;
    Forget(admission.evicted);
  }
  left_at_.erase(node);
  return admission;
}

std::optional<NodeProbeAvailability> AgentTable::Connect(const std::string& node,
                                                         AgentSession* session,
                                                         const NodeInfo& info,
                                                         const std::string& peer,
                                                         Clock::time_point now) {
  std::optional<NodeProbeAvailability> before;
  if (auto k = known_.find(node); k != known_.end()) before = k->second.probe;
  Agent& a = agents_[node];
  a.session = session;
  a.info = info;
  a.last_seen = now;
  known_[node] = info;
  last_peer_[node] = peer;
  left_at_.erase(node);  // a replaced session's Disconnect counted it as gone
  sessions_[session] = node;
  return before;
}

bool AgentTable::Heard(const std::string& node, const AgentSession* session,
                       Clock::time_point now) {
  auto agent = agents_.find(node);
  if (agent == agents_.end() || agent->second.session != session) return false;
  agent->second.last_seen = now;
  return true;
}

void AgentTable::Update(const std::string& node, const NodeInfo& info) {
  auto agent = agents_.find(node);
  if (agent == agents_.end()) return;
  agent->second.info = info;
  known_[node] = info;
}

std::optional<std::string> AgentTable::EndSession(const AgentSession* session) {
  auto it = sessions_.find(session);
  if (it == sessions_.end()) return std::nullopt;
  std::string node = std::move(it->second);
  sessions_.erase(it);
  auto agent = agents_.find(node);
  if (agent == agents_.end() || agent->second.session != session) return std::nullopt;
  return node;
}

bool AgentTable::Disconnect(const std::string& node, Clock::time_point now) {
  auto agent = agents_.find(node);
  if (agent == agents_.end()) return false;
  sessions_.erase(agent->second.session);
  agents_.erase(agent);
  left_at_[node] = now;
  return true;
}

void AgentTable::DropConnections() { agents_.clear(); }

AgentTable::Overdue AgentTable::Housekeeping(Clock::time_point now) {
  Overdue overdue;
  for (const auto& [node, since] : left_at_) {
    if (now - since >= limits_.node_expiry) overdue.forgotten.push_back(node);
  }
  for (const auto& node : overdue.forgotten) Forget(node);
  for (const auto& [node, a] : agents_) {
    if (now - a.last_seen > limits_.heartbeat_timeout) overdue.silent.emplace_back(node, a.session);
  }
  return overdue;
}

AgentTable::SweepMembers AgentTable::StartSweep() {
  SweepMembers out;
  std::map<std::string, uint64_t> unprobed;
  for (const auto& [node, a] : agents_) {
    // A node whose probes cannot run (no NCCL, no GPU, ...) is no member of the coverage
    // schedule: its pairs could never be tested.
    if (ProbesCannotRun(a.info)) {
      out.blind.push_back(node);
      unprobed[node] = 0;  // not left out for busy GPUs: probe_unavailable_nodes counts it
      continue;
    }
    out.members.emplace_back(node, a.info.topology);
    if (!a.info.gpus_busy) out.available.push_back(node);
    auto before = unprobed_sweeps_.find(node);
    unprobed[node] =
        a.info.gpus_busy ? (before == unprobed_sweeps_.end() ? 0 : before->second) + 1 : 0;
  }
  unprobed_sweeps_ = std::move(unprobed);
  return out;
}

const AgentTable::Agent* AgentTable::Find(const std::string& node) const {
  auto it = agents_.find(node);
  return it == agents_.end() ? nullptr : &it->second;
}

const NodeInfo& AgentTable::Known(const std::string& node) const {
  static const NodeInfo kNothingKnown;
  auto it = known_.find(node);
  return it != known_.end() ? it->second : kNothingKnown;
}

void AgentTable::Forget(const std::string& node) {
  known_.erase(node);
  last_peer_.erase(node);
  left_at_.erase(node);
}

}  // namespace nccl_triage
