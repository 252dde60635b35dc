#include "triage/incident_scope.h"

#include <algorithm>

namespace nccl_triage::triage {

const JobPod* JobScope::Pod(const std::string& name) const {
  auto it = pods.find(name);
  return it == pods.end() ? nullptr : it->second;
}

JobScope ScopeOfJob(const std::vector<JobPod>& pods, const std::vector<std::string>& extra_nodes) {
  JobScope scope;
  scope.nodes.insert(extra_nodes.begin(), extra_nodes.end());
  for (const JobPod& p : pods) {
    scope.pods[p.name] = &p;
    if (!p.node.empty()) scope.nodes.insert(p.node);
  }
  return scope;
}

bool PodOrderLess(const JobPod* a, const JobPod* b, const std::string& an, const std::string& bn) {
  auto index = [](const JobPod* p) -> long long {
    if (p == nullptr || p->index.empty() || p->index.size() > 12) return -1;
    long long v = 0;
    for (char c : p->index) {
      if (c < '0' || c > '9') return -1;
      v = v * 10 + (c - '0');
    }
    return v;
  };
  const long long ia = index(a), ib = index(b);
  if ((ia >= 0) != (ib >= 0)) return ia >= 0;
  if (ia != ib) return ia < ib;
  return an < bn;
}

std::vector<std::string> FocusNodes(const std::optional<FirstFailure>& first,
                                    const std::optional<PeerView>& peer) {
  std::vector<std::string> focus;
  if (first && !first->node.empty()) focus.push_back(first->node);
  if (peer && !peer->match.node.empty() &&
      std::find(focus.begin(), focus.end(), peer->match.node) == focus.end()) {
    focus.push_back(peer->match.node);
  }
  return focus;
}

}  // namespace nccl_triage::triage
