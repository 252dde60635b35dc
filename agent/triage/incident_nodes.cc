#include "triage/incident_nodes.h"

#include <algorithm>
#include <map>

#include "base/log.h"
#include "core/catalogue.h"
#include "triage/log_reader.h"

namespace nccl_triage::triage {
namespace {

std::string ClassText(FaultClass c) { return std::string(ToString(c)); }

bool InFocus(const std::vector<std::string>& focus, const std::string& node) {
  return std::find(focus.begin(), focus.end(), node) != focus.end();
}

// "node checks: no agent verdict on 7 node(s): a, b, c, d, e and 2 more"
std::string MissingAgents(const std::vector<std::string>& missing) {
  std::string list;
  for (size_t i = 0; i < missing.size() && i < 5; ++i) list += (i == 0 ? "" : ", ") + missing[i];
  if (missing.size() > 5) list += " and " + std::to_string(missing.size() - 5) + " more";
  return "node checks: no agent verdict on " + std::to_string(missing.size()) + " node(s): " + list;
}

// The agent that reports a fault: on a node the logs point at first, then on any of the job's.
const AgentVerdict* FaultyAgent(const std::map<std::string, const AgentVerdict*>& by_node,
                                const std::set<std::string>& nodes,
                                const std::vector<std::string>& focus) {
  auto is_fault = [](const AgentVerdict& a) {
    auto c = FromString<FaultClass>(a.verdict);
    return c && IsFault(*c);
  };
  for (const auto& n : focus) {
    auto it = by_node.find(n);
    if (it != by_node.end() && is_fault(*it->second)) return it->second;
  }
  for (const auto& [n, a] : by_node) {
    if (nodes.count(n) && is_fault(*a)) return a;
  }
  return nullptr;
}

std::string Ago(int64_t ms) {
  const int64_t min = ms / 60'000;
  if (min < 60) return std::to_string(min) + " min";
  return std::to_string(min / 60) + " h " + std::to_string(min % 60) + " min";
}

// Where one kernel cause of an agent goes: in the window, or outside it (and why).
void PlaceKernelCause(const AgentVerdict& a, const std::string& cause, const std::string& title,
                      const KernelWindow& window, KernelLines& out) {
  std::string line = a.node + ": " + cause + " (" + title + ")";
  auto at = a.kernel_last_event.find(cause);
  const auto at_ns = at == a.kernel_last_event.end() ? std::nullopt : ParseRfc3339Nanos(at->second);
  if (!at_ns) {
    out.in_window.push_back(line + ", reported by its agent" +
                            (a.updated.empty() ? "" : " at " + a.updated) +
                            " (the time of its events is not known)");
    return;
  }
  const int64_t at_ms = *at_ns / 1'000'000;
  line += ", last event at " + FormatRfc3339(at_ms);
  if (!window.from_ms) {
    out.in_window.push_back(line);
  } else if (at_ms < *window.from_ms) {
    out.outside.push_back(line + ", before the job: " + Ago(window.first_failure_ms - at_ms) +
                          " before the first failure, not blamed");
  } else if (at_ms > *window.to_ms) {
    out.outside.push_back(line + ", after the job failed: " + Ago(at_ms - window.last_failure_ms) +
                          " after the last failure, not blamed");
  } else {
    out.in_window.push_back(line);
  }
}

}  // namespace

ChecksFindings JudgeChecks(bool read, const std::string& error,
                           const std::vector<AgentVerdict>& agents,
                           const std::set<std::string>& nodes,
                           const std::vector<std::string>& focus) {
  ChecksFindings out;
  BasisVerdict& v = out.verdict;
  v = {"checks", false, FaultClass::kUnknown, "", ""};
  if (!read) {
    v.summary = "not read: " + error;
    out.not_looked_at.push_back("node checks: " + error);
    return out;
  }
  std::map<std::string, const AgentVerdict*> by_node;
  for (const AgentVerdict& a : agents) by_node.emplace(a.node, &a);
  std::vector<std::string> missing;
  for (const std::string& n : nodes) {
    if (!by_node.count(n)) missing.push_back(n);
  }
  if (!missing.empty()) out.not_looked_at.push_back(MissingAgents(missing));
  const AgentVerdict* hit = FaultyAgent(by_node, nodes, focus);
  int healthy = 0;
  for (const auto& [n, a] : by_node) {
    if (nodes.count(n) && FromString<FaultClass>(a->verdict) == FaultClass::kHealthy) ++healthy;
  }
  const int seen = static_cast<int>(nodes.size() - missing.size());
  v.looked = seen > 0;
  const std::string of_seen = std::to_string(healthy) + " of " + std::to_string(seen);
  if (hit != nullptr) {
    v.fault_class = FromString<FaultClass>(hit->verdict).value_or(FaultClass::kUnknown);
    v.cause = hit->causes.empty() ? std::string() : hit->causes.front();
    v.summary = "agent on " + hit->node + ": " + hit->verdict + " (basis " + hit->basis + ")" +
                (v.cause.empty() ? "" : ", " + v.cause) + "; " + of_seen + " nodes healthy";
  } else if (seen > 0 && healthy == seen) {
    v.fault_class = FaultClass::kHealthy;
    v.summary = "the agents on all " + std::to_string(seen) + " nodes report healthy";
  } else if (seen == 0) {
    v.summary = "no agent has published a verdict on the job's nodes";
  } else {
    v.summary = of_seen + " nodes healthy, the others unknown";
  }
  return out;
}

ProbesFindings JudgeProbes(const ProbeOutcome& p, const std::vector<std::string>& focus) {
  ProbesFindings out;
  BasisVerdict& v = out.verdict;
  v = {"probes", false, FaultClass::kUnknown, "", ""};
  if (!p.asked) {
    v.summary = "not run: " + p.not_asked;
    out.not_looked_at.push_back("probes: " + p.not_asked);
    return out;
  }
  if (!p.error.empty()) {
    v.summary = "the coordinator did not answer: " + p.error;
    out.not_looked_at.push_back("probes: the coordinator did not answer: " + p.error);
    return out;
  }
  int good = 0;
  for (const ProbeNodeState& n : p.nodes) {
    if (n.state == "good") ++good;
    if (n.state == "busy" || n.state == "absent" || n.state == "inconclusive" ||
        n.state == "untested" || n.state == "unavailable") {
      out.not_looked_at.push_back("probes on " + n.node + ": " + n.state +
                                  (n.reason.empty() ? "" : " (" + n.reason + ")"));
    }
  }
  // The first fault, unless a later one is on a node the logs point at and it is not.
  auto in_focus = [&](const ProbeFault& f) {
    return InFocus(focus, f.node) || InFocus(focus, f.peer);
  };
  for (const ProbeFault& f : p.faults) {
    if (out.fault == nullptr || (in_focus(f) && !in_focus(*out.fault))) out.fault = &f;
  }
  const ProbeFault* f = out.fault;
  v.looked = good > 0 || f != nullptr;
  const std::string pairs = std::to_string(p.pairs_probed) + " pairs probed";
  if (f != nullptr) {
    v.fault_class = f->fault_class;
    v.cause = f->causes.empty() ? std::string() : f->causes.front();
    v.summary = f->kind + " fault " + f->node + (f->kind == "link" ? " - " + f->peer : "") + ": " +
                ClassText(f->fault_class) + (v.cause.empty() ? "" : " (" + v.cause + ")") + "; " +
                pairs;
  } else if (good > 0) {
    v.fault_class = FaultClass::kHealthy;
    v.summary = std::to_string(good) + " nodes pass the socket and the IB probe now (" + pairs +
                (p.references.empty()
                     ? std::string()
                     : ", " + std::to_string(p.references.size()) + " known-good reference(s)") +
                ")";
  } else {
    v.summary = "no node could be probed";
  }
  return out;
}

KernelWindow JobKernelWindow(const std::vector<LogResult>& logs, const std::vector<JobPod>& pods) {
  KernelWindow w;
  std::optional<int64_t> first_ns, last_ns;
  for (const LogResult& l : logs) {
    if (!l.read || !l.summary.root_ns) continue;
    const int64_t t = *l.summary.root_ns;
    if (!first_ns || t < *first_ns) first_ns = t;
    if (!last_ns || t > *last_ns) last_ns = t;
  }
  if (!first_ns) {
    w.bounds = "no log gives the failure a time: kernel events are not placed";
    return w;
  }
  const int64_t first_ms = *first_ns / 1'000'000;
  w.first_failure_ms = first_ms;
  w.last_failure_ms = *last_ns / 1'000'000;
  int64_t from = first_ms - kKernelLookBackMs;
  std::string from_text = "2 h before the first failure";
  std::optional<int64_t> start_ms;
  for (const JobPod& p : pods) {
    const auto ns = ParseRfc3339Nanos(p.start_time);
    if (ns && (!start_ms || *ns / 1'000'000 < *start_ms)) start_ms = *ns / 1'000'000;
  }
  if (start_ms && *start_ms > from && *start_ms <= first_ms) {
    from = *start_ms;
    from_text = "the job's first pod start";
  }
  w.from_ms = from;
  w.to_ms = *last_ns / 1'000'000 + kKernelGraceMs;
  w.bounds = "from " + from_text + " (" + FormatRfc3339(from) +
             ") to 10 min after the last failure (" + FormatRfc3339(*w.to_ms) + ")";
  return w;
}

KernelLines KernelCauses(const std::vector<AgentVerdict>& agents,
                         const std::set<std::string>& nodes, const KernelWindow& window) {
  KernelLines out;
  for (const AgentVerdict& a : agents) {
    if (!nodes.count(a.node)) continue;
    for (const std::string& c : a.causes) {
      const CauseInfo* info = FindCause(c);
      if (info == nullptr || info->kind != CauseKind::kKernelLog) continue;
      PlaceKernelCause(a, c, std::string(info->title), window, out);
    }
  }
  return out;
}

std::vector<std::string> RailLines(const std::vector<ProbeRailFault>& rail_faults) {
  std::vector<std::string> lines;
  for (const ProbeRailFault& f : rail_faults) {
    std::string causes;
    for (const auto& c : f.causes) causes += (causes.empty() ? "" : ", ") + c;
    lines.push_back(f.node + " rail " + std::to_string(f.rail) + " (" + f.device + "): " +
                    (f.rate_degraded          ? "rate-degraded"
                     : f.fault == "link_rail" ? "link fault"
                                              : "fault") +
                    (causes.empty() ? "" : " (" + causes + ")") + ", seen by " +
                    (f.seen_by == "triage" ? "these probes" : "the last sweep") +
                    (f.reason.empty() ? "" : ": " + f.reason));
  }
  return lines;
}

}  // namespace nccl_triage::triage
