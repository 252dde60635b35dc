#include "triage/incident.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "base/log.h"
#include "classify/classifier.h"
#include "core/catalogue.h"
#include "core/ids.h"

namespace nccl_triage::triage {
namespace {

constexpr size_t kMaxEvidence = 8;
constexpr size_t kMaxLineText = 300;

bool IsFault(FaultClass c) {
  return c == FaultClass::kArchitecture || c == FaultClass::kIbResource;
}

// Causes that involve the other end of a connection: with a named peer on another node, the
// log localises them to a link rather than to the failing rank's node.
bool IsLinkCause(const std::string& cause) {
  return ids::kIbFabric == cause || ids::kNetConnect == cause || ids::kPairPkeyPartition == cause ||
         ids::kPairLinkLayer == cause;
}

// Causes of a log that only shows the consequence of a failure elsewhere.
bool IsSideEffect(const Classification& c) {
  if (c.fault_class != FaultClass::kUnknown || c.causes.empty()) return false;
  return std::all_of(c.causes.begin(), c.causes.end(), [](const ClassifiedCause& cc) {
    return ids::kPeerExited == cc.cause || ids::kNcclInternal == cc.cause;
  });
}

std::string Cut(std::string s, size_t n) {
  if (s.size() <= n) return s;
  size_t end = n;
  while (end > 0 && (static_cast<unsigned char>(s[end]) & 0xC0) == 0x80) --end;  // UTF-8 start
  return s.substr(0, end) + "...";
}

std::string Bytes(uint64_t b) {
  char buf[32];
  if (b >= (1ULL << 20)) {
    std::snprintf(buf, sizeof(buf), "%.1f MiB", static_cast<double>(b) / (1 << 20));
  } else if (b >= 1024) {
    std::snprintf(buf, sizeof(buf), "%.1f KiB", static_cast<double>(b) / 1024);
  } else {
    std::snprintf(buf, sizeof(buf), "%llu B", static_cast<unsigned long long>(b));
  }
  return buf;
}

std::string ContainerText(const ContainerState& c) {
  std::string s = c.state;
  if (!c.reason.empty()) s += " " + c.reason;
  if (c.state == "terminated" && c.exit_code >= 0)
    s += " (exit " + std::to_string(c.exit_code) + ")";
  if (c.restart_count > 0) {
    s += ", restarted " + std::to_string(c.restart_count) + "x";
    if (!c.last_reason.empty()) {
      s += ", last " + c.last_reason;
      if (c.last_exit_code >= 0) s += " (exit " + std::to_string(c.last_exit_code) + ")";
    }
  }
  return Printable(s);
}

const ContainerState* FindContainer(const JobPod* pod, const std::string& name) {
  if (pod == nullptr) return nullptr;
  for (const auto& c : pod->containers) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

std::string LogName(const LogResult& l) {
  return l.pod + "/" + l.container + (l.previous ? " (previous instance)" : "");
}

// A numeric job index sorts as a number; pods without one after, by name.
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

struct LogView {
  const LogResult* log = nullptr;
  const JobPod* pod = nullptr;
  const Classification& c() const { return log->summary.classification; }
};

// The lines of a log that say who it blames: its first failure and its top cause's evidence.
std::vector<std::string> BlameLines(const Classification& c) {
  std::vector<std::string> lines;
  if (!c.roots.empty()) lines.push_back(c.roots.front().line.text);
  if (!c.causes.empty()) {
    for (const auto& l : c.causes.front().evidence) lines.push_back(l.text);
  }
  return lines;
}

std::vector<PeerMatch> PeersOf(const LogView& v, const std::vector<JobPod>& pods) {
  std::vector<PeerMatch> out;
  for (const std::string& line : BlameLines(v.c())) {
    for (const std::string& name : PeerNamesIn(line)) {
      auto m = ResolvePeer(name, pods);
      if (!m) continue;
      if (v.pod != nullptr &&
          (m->pod == v.pod->name || (m->pod.empty() && m->node == v.pod->node))) {
        continue;  // itself
      }
      const bool seen = std::any_of(out.begin(), out.end(), [&](const PeerMatch& p) {
        return p.pod == m->pod && p.node == m->node;
      });
      if (!seen) out.push_back(*m);
    }
  }
  return out;
}

EvidenceLine Evidence(const LogResult& l, const LogLine& line) {
  return {l.pod, l.container, line.number, Cut(line.text, kMaxLineText)};
}

std::string CatalogueRemedy(const std::string& cause) {
  const CauseInfo* info = FindCause(cause);
  return info != nullptr ? std::string(info->remedy) : std::string();
}

std::string ClassText(FaultClass c) { return std::string(ToString(c)); }

}  // namespace

Incident JudgeIncident(const IncidentInput& in) {
  Incident out;
  out.ns = in.ns;
  out.target = in.target;
  out.at_ms = in.now_ms;
  out.pods = static_cast<int>(in.pods.size());
  std::set<std::string> nodes(in.nodes.begin(), in.nodes.end());
  std::map<std::string, const JobPod*> by_name;
  for (const JobPod& p : in.pods) {
    by_name[p.name] = &p;
    if (!p.node.empty()) nodes.insert(p.node);
  }
  out.nodes = static_cast<int>(nodes.size());
  for (const std::string& m : in.missing) out.not_looked_at.push_back("pod " + m + ": not found");

  // ------------------------------------------------------------------ the logs
  std::vector<LogView> faults, side_effects;
  int read = 0, healthy = 0, unreadable = 0;
  for (const LogResult& l : in.logs) {
    auto it = by_name.find(l.pod);
    LogView v{&l, it == by_name.end() ? nullptr : it->second};
    if (!l.read) {
      ++unreadable;
      out.not_looked_at.push_back(LogName(l) + ": log not read: " + Printable(l.end.error));
      continue;
    }
    ++read;
    if (!l.end.error.empty()) {
      out.not_looked_at.push_back(LogName(l) + ": log read in part: " + Printable(l.end.error));
    }
    if (l.end.tail_cut) {
      out.not_looked_at.push_back(LogName(l) + ": the end of its log (beyond the byte limit)");
    }
    const FaultClass c = l.summary.classification.fault_class;
    if (IsFault(c)) {
      faults.push_back(v);
    } else if (IsSideEffect(l.summary.classification)) {
      side_effects.push_back(v);
    } else if (c == FaultClass::kHealthy) {
      ++healthy;
    }
  }
  // Earliest first failure: logs with a time before those without, then by time, then by the
  // previous instance of a container before its current one, then pod order. The side effects
  // in the same order, so that their evidence does not follow the order the logs arrived in.
  const auto earliest = [](const LogView& a, const LogView& b) {
    const auto& ta = a.log->summary.root_ns;
    const auto& tb = b.log->summary.root_ns;
    if (ta.has_value() != tb.has_value()) return ta.has_value();
    if (ta && *ta != *tb) return *ta < *tb;
    if (a.log->previous != b.log->previous) return a.log->previous;
    return PodOrderLess(a.pod, b.pod, a.log->pod, b.log->pod);
  };
  std::stable_sort(faults.begin(), faults.end(), earliest);
  std::stable_sort(side_effects.begin(), side_effects.end(), earliest);
  const bool all_timed = std::all_of(faults.begin(), faults.end(), [](const LogView& v) {
    return v.log->summary.root_ns.has_value();
  });

  // Peers named: by the first failure's own lines first, then by the side effects.
  std::vector<PeerView> named;
  auto count_peer = [&](const PeerMatch& m) {
    for (PeerView& p : named) {
      if (p.match.pod == m.pod && p.match.node == m.node) {
        ++p.named_by;
        return;
      }
    }
    named.push_back({m, 1});
  };
  for (const LogView& v : side_effects) {
    for (const PeerMatch& m : PeersOf(v, in.pods)) count_peer(m);
  }

  BasisVerdict log{"log", read > 0, FaultClass::kUnknown, "", ""};
  const auto counts = [&] {
    std::string s = std::to_string(faults.size()) + " failing, " +
                    std::to_string(side_effects.size()) + " only lost a peer, " +
                    std::to_string(healthy) + " healthy";
    const int other = read - static_cast<int>(faults.size() + side_effects.size()) - healthy;
    if (other > 0) s += ", " + std::to_string(other) + " without an NCCL failure or success";
    if (unreadable > 0) s += ", " + std::to_string(unreadable) + " not read";
    return s + " (of " + std::to_string(in.logs.size()) + " logs)";
  }();
  if (!faults.empty()) {
    const LogView& f = faults.front();
    const Classification& c = f.c();
    FirstFailure first;
    first.pod = f.log->pod;
    first.container = f.log->container;
    first.previous = f.log->previous;
    first.node = f.pod != nullptr ? f.pod->node : std::string();
    if (!c.roots.empty()) {
      first.rank = c.roots.front().rank;
      first.line = Evidence(*f.log, c.roots.front().line);
    }
    first.at_ns = f.log->summary.root_ns;
    first.order = faults.size() == 1 ? "the only log that names a failure"
                  : all_timed        ? "the earliest by the runtime's timestamps"
                              : "the earliest by timestamp where logs have one, then pod order";
    out.first = first;
    log.fault_class = c.fault_class;
    log.cause = c.causes.empty() ? std::string() : c.causes.front().cause;
    log.summary = first.pod + " failed first (" + log.cause + "); " + counts;
    std::vector<PeerMatch> own = PeersOf(f, in.pods);
    if (!own.empty()) {
      PeerView p{own.front(), 1};
      for (const PeerView& n : named) {
        if (n.match.pod == p.match.pod && n.match.node == p.match.node) p.named_by += n.named_by;
      }
      out.peer = p;
    }
  } else if (!side_effects.empty()) {
    log.cause = std::string(ids::kPeerExited);
    log.summary = "no log names the failing call; " + counts;
  } else if (healthy > 0) {
    log.fault_class = FaultClass::kHealthy;
    log.summary = "the NCCL runs in the logs completed; " + counts;
  } else {
    log.summary =
        read == 0 ? "no log could be read; " + counts : "no NCCL failure found; " + counts;
  }
  // Side effects that name the first failing pod confirm it; the peer is someone else.
  if (out.first) {
    for (auto it = named.begin(); it != named.end();) {
      if (it->match.pod == out.first->pod) {
        out.confirmed_by = it->named_by;
        it = named.erase(it);
      } else {
        ++it;
      }
    }
  }
  if (!out.peer && !named.empty()) {
    auto most = std::max_element(
        named.begin(), named.end(),
        [](const PeerView& a, const PeerView& b) { return a.named_by < b.named_by; });
    out.peer = *most;
    if (!out.first) {
      log.summary +=
          "; they name " +
          (most->match.pod.empty() ? "node " + most->match.node : "pod " + most->match.pod) + " (" +
          std::to_string(most->named_by) + " logs)";
    }
  }

  // ------------------------------------------------------------------ the node checks
  std::vector<std::string> focus;  // nodes the logs point at
  if (out.first && !out.first->node.empty()) focus.push_back(out.first->node);
  if (out.peer && !out.peer->match.node.empty() &&
      std::find(focus.begin(), focus.end(), out.peer->match.node) == focus.end()) {
    focus.push_back(out.peer->match.node);
  }
  BasisVerdict checks{"checks", false, FaultClass::kUnknown, "", ""};
  if (!in.checks_read) {
    checks.summary = "not read: " + in.checks_error;
    out.not_looked_at.push_back("node checks: " + in.checks_error);
  } else {
    std::map<std::string, const AgentVerdict*> by_node;
    for (const AgentVerdict& a : in.agents) by_node.emplace(a.node, &a);
    std::vector<std::string> missing;
    for (const std::string& n : nodes) {
      if (!by_node.count(n)) missing.push_back(n);
    }
    if (!missing.empty()) {
      std::string list;
      for (size_t i = 0; i < missing.size() && i < 5; ++i)
        list += (i == 0 ? "" : ", ") + missing[i];
      if (missing.size() > 5) list += " and " + std::to_string(missing.size() - 5) + " more";
      out.not_looked_at.push_back("node checks: no agent verdict on " +
                                  std::to_string(missing.size()) + " node(s): " + list);
    }
    // A fault on a node the logs point at first, then on any node of the job.
    const AgentVerdict* hit = nullptr;
    for (const auto& n : focus) {
      auto it = by_node.find(n);
      if (hit == nullptr && it != by_node.end()) {
        auto c = ParseFaultClass(it->second->verdict);
        if (c && IsFault(*c)) hit = it->second;
      }
    }
    int healthy_nodes = 0;
    for (const auto& [n, a] : by_node) {
      if (!nodes.count(n)) continue;
      auto c = ParseFaultClass(a->verdict);
      if (c == FaultClass::kHealthy) ++healthy_nodes;
      if (hit == nullptr && c && IsFault(*c)) hit = a;
    }
    const int seen = static_cast<int>(nodes.size() - missing.size());
    checks.looked = seen > 0;
    if (hit != nullptr) {
      checks.fault_class = ParseFaultClass(hit->verdict).value_or(FaultClass::kUnknown);
      checks.cause = hit->causes.empty() ? std::string() : hit->causes.front();
      checks.summary = "agent on " + hit->node + ": " + hit->verdict + " (basis " + hit->basis +
                       ")" + (checks.cause.empty() ? "" : ", " + checks.cause) + "; " +
                       std::to_string(healthy_nodes) + " of " + std::to_string(seen) +
                       " nodes healthy";
    } else if (seen > 0 && healthy_nodes == seen) {
      checks.fault_class = FaultClass::kHealthy;
      checks.summary = "the agents on all " + std::to_string(seen) + " nodes report healthy";
    } else if (seen == 0) {
      checks.summary = "no agent has published a verdict on the job's nodes";
    } else {
      checks.summary = std::to_string(healthy_nodes) + " of " + std::to_string(seen) +
                       " nodes healthy, the others unknown";
    }
  }

  // ------------------------------------------------------------------ the probes
  BasisVerdict probes{"probes", false, FaultClass::kUnknown, "", ""};
  const ProbeFault* probe_fault = nullptr;
  if (!in.probes.asked) {
    probes.summary = "not run: " + in.probes.not_asked;
    out.not_looked_at.push_back("probes: " + in.probes.not_asked);
  } else if (!in.probes.error.empty()) {
    probes.summary = "the coordinator did not answer: " + in.probes.error;
    out.not_looked_at.push_back("probes: the coordinator did not answer: " + in.probes.error);
  } else {
    int good = 0;
    for (const ProbeNodeState& n : in.probes.nodes) {
      if (n.state == "good") ++good;
      if (n.state == "busy" || n.state == "absent" || n.state == "inconclusive" ||
          n.state == "untested") {
        out.not_looked_at.push_back("probes on " + n.node + ": " + n.state +
                                    (n.reason.empty() ? "" : " (" + n.reason + ")"));
      }
    }
    // A fault on a node the logs point at first, then any.
    auto in_focus = [&](const ProbeFault& f) {
      return std::find(focus.begin(), focus.end(), f.node) != focus.end() ||
             std::find(focus.begin(), focus.end(), f.peer) != focus.end();
    };
    for (const ProbeFault& f : in.probes.faults) {
      if (probe_fault == nullptr || (in_focus(f) && !in_focus(*probe_fault))) probe_fault = &f;
    }
    probes.looked = good > 0 || probe_fault != nullptr;
    if (probe_fault != nullptr) {
      probes.fault_class = probe_fault->fault_class;
      probes.cause = probe_fault->causes.empty() ? std::string() : probe_fault->causes.front();
      probes.summary = probe_fault->kind + " fault " + probe_fault->node +
                       (probe_fault->kind == "link" ? " - " + probe_fault->peer : "") + ": " +
                       ClassText(probe_fault->fault_class) +
                       (probes.cause.empty() ? "" : " (" + probes.cause + ")") + "; " +
                       std::to_string(in.probes.pairs_probed) + " pairs probed";
    } else if (good > 0) {
      probes.fault_class = FaultClass::kHealthy;
      probes.summary =
          std::to_string(good) + " nodes pass the socket and the IB probe now (" +
          std::to_string(in.probes.pairs_probed) + " pairs probed" +
          (in.probes.references.empty()
               ? std::string()
               : ", " + std::to_string(in.probes.references.size()) + " known-good reference(s)") +
          ")";
    } else {
      probes.summary = "no node could be probed";
    }
  }

  // ------------------------------------------------------------------ the verdict
  const BasisVerdict* decided = nullptr;
  if (IsFault(log.fault_class)) {
    decided = &log;
  } else if (IsFault(probes.fault_class)) {
    decided = &probes;
  } else if (log.fault_class == FaultClass::kHealthy) {
    decided = &log;
  } else if (IsFault(checks.fault_class)) {
    decided = &checks;
  } else if (probes.fault_class == FaultClass::kHealthy) {
    decided = &probes;
  }
  if (decided != nullptr) {
    out.fault_class = decided->fault_class;
    out.cause = decided->cause;
    out.basis = decided->basis;
  }
  if (IsFault(log.fault_class) && probes.looked && probes.fault_class != log.fault_class) {
    out.disagreements.push_back(
        probes.fault_class == FaultClass::kHealthy
            ? "the log shows " + ClassText(log.fault_class) + " (" + log.cause +
                  ") but the probes pass now between the job's nodes: a transient fault, or one "
                  "fixed since"
            : "the log says " + ClassText(log.fault_class) + ", the probes say " +
                  ClassText(probes.fault_class));
  }
  if (checks.looked && out.basis != "checks" && IsFault(out.fault_class) &&
      checks.fault_class != out.fault_class && checks.fault_class != FaultClass::kUnknown) {
    out.disagreements.push_back("the " + out.basis + " says " + ClassText(out.fault_class) +
                                ", the node checks say " + ClassText(checks.fault_class) +
                                " (node checks see the host, not the job's containers)");
  }
  if (out.fault_class == FaultClass::kHealthy && IsFault(checks.fault_class)) {
    out.disagreements.push_back("the " + out.basis +
                                " shows no fault but the node checks predict " +
                                ClassText(checks.fault_class) + " (" + checks.cause + ")");
  }
  out.bases = {log, checks, probes};

  // ------------------------------------------------------------------ where, why, the fix
  if (probe_fault != nullptr && IsFault(probe_fault->fault_class)) {
    out.where = {probe_fault->kind, probe_fault->node, probe_fault->peer, "probes"};
  } else if (out.first) {
    const bool link = out.peer && !out.peer->match.node.empty() &&
                      out.peer->match.node != out.first->node && IsLinkCause(log.cause);
    out.where = link ? Localisation{"link", out.first->node, out.peer->match.node, "log"}
                     : Localisation{"node", out.first->node, "", "log"};
  } else if (out.peer && !out.peer->match.node.empty()) {
    out.where = {"node", out.peer->match.node, "", "log"};
  } else if (out.basis == "checks") {
    for (const AgentVerdict& a : in.agents) {
      if (ParseFaultClass(a.verdict) == checks.fault_class && nodes.count(a.node)) {
        out.where = {"node", a.node, "", "checks"};
        break;
      }
    }
  }

  if (out.first) {
    const LogView& f = faults.front();
    const Classification& c = f.c();
    out.reason = out.first->pod + (out.first->node.empty() ? "" : " on " + out.first->node) +
                 " failed first" + (log.cause.empty() ? "" : " with " + log.cause);
    if (out.peer) {
      out.reason +=
          ", naming " +
          (out.peer->match.pod.empty() ? "node " + out.peer->match.node : out.peer->match.pod) +
          " as its peer";
    }
    if (out.confirmed_by > 0) {
      out.reason += "; " + std::to_string(out.confirmed_by) + " other log(s) lost their " +
                    "connection to it";
    }
    out.evidence.push_back(out.first->line);
    if (!c.causes.empty()) {
      out.remedy = c.causes.front().remedy;
      for (const auto& l : c.causes.front().evidence) {
        if (out.evidence.size() >= kMaxEvidence) break;
        if (l.number != out.first->line.line) out.evidence.push_back(Evidence(*f.log, l));
      }
    }
  } else if (!side_effects.empty()) {
    out.reason = std::to_string(side_effects.size()) +
                 " logs show only the consequence of a failure elsewhere (a peer exited)";
    if (out.peer) {
      const std::string who = out.peer->match.pod.empty() ? "node " + out.peer->match.node
                                                          : "pod " + out.peer->match.pod;
      out.reason += "; they name " + who;
      std::string state;
      auto it = by_name.find(out.peer->match.pod);
      if (it != by_name.end() && !it->second->containers.empty()) {
        state = ContainerText(it->second->containers.front());
        out.reason += ", whose container is " + state;
      }
      out.remedy = "Read why " + who +
                   " stopped (kubectl describe, its previous log, the node's "
                   "kernel log): its own log names no NCCL failure";
    }
    for (const LogView& v : side_effects) {
      if (out.evidence.size() >= 3) break;
      if (!v.c().roots.empty()) out.evidence.push_back(Evidence(*v.log, v.c().roots.front().line));
    }
  } else if (log.fault_class == FaultClass::kHealthy) {
    out.reason = "the NCCL runs in the logs completed: NCCL did not fail";
  } else {
    out.reason = read == 0 ? "no log could be read" : "no log names an NCCL failure";
  }
  for (const ProbeRailFault& f : in.probes.rail_faults) {
    std::string causes;
    for (const auto& c : f.causes) causes += (causes.empty() ? "" : ", ") + c;
    out.rails.push_back(f.node + " rail " + std::to_string(f.rail) + " (" + f.device + "): " +
                        (f.rate_degraded          ? "rate-degraded"
                         : f.fault == "link_rail" ? "link fault"
                                                  : "fault") +
                        (causes.empty() ? "" : " (" + causes + ")") + ", seen by " +
                        (f.seen_by == "triage" ? "these probes" : "the last sweep") +
                        (f.reason.empty() ? "" : ": " + f.reason));
  }
  for (const AgentVerdict& a : in.agents) {
    if (!nodes.count(a.node)) continue;
    for (const std::string& c : a.causes) {
      const CauseInfo* info = FindCause(c);
      if (info == nullptr || info->kind != CauseKind::kKernelLog) continue;
      out.kernel.push_back(a.node + ": " + c + " (" + std::string(info->title) +
                           "), reported by its agent" +
                           (a.updated.empty() ? "" : " at " + a.updated));
    }
  }
  if (out.basis == "probes" && probe_fault != nullptr) {
    out.reason += "; the probes find a " + probe_fault->kind + " fault on " + probe_fault->node +
                  (probe_fault->kind == "link" ? " - " + probe_fault->peer : "") +
                  (probe_fault->reason.empty() ? "" : ": " + probe_fault->reason);
  } else if (out.basis == "checks") {
    out.reason += "; the node checks predict " + ClassText(out.fault_class) +
                  (out.cause.empty() ? "" : " (" + out.cause + ")") + " on " + out.where.node;
  }
  // The fix of the cause that decided: a cause the probes or the checks name replaces the hint
  // of the logs (which only said where to look).
  if ((out.remedy.empty() || out.basis == "probes" || out.basis == "checks") &&
      !out.cause.empty() && !CatalogueRemedy(out.cause).empty()) {
    out.remedy = CatalogueRemedy(out.cause);
  }
  if (out.remedy.empty() && out.fault_class == FaultClass::kUnknown) {
    out.remedy =
        "Rerun with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET so that the failing call is "
        "logged, and probe the job's nodes (--coordinator URL)";
  }

  // ------------------------------------------------------------------ one row per log
  std::set<const LogResult*> fault_set, side_set;
  for (const auto& v : faults) fault_set.insert(v.log);
  for (const auto& v : side_effects) side_set.insert(v.log);
  for (const LogResult& l : in.logs) {
    auto it = by_name.find(l.pod);
    const JobPod* pod = it == by_name.end() ? nullptr : it->second;
    PodRow r;
    r.pod = l.pod;
    r.node = pod != nullptr ? pod->node : std::string();
    r.container = l.container;
    r.previous = l.previous;
    if (const ContainerState* cs = FindContainer(pod, l.container)) r.state = ContainerText(*cs);
    if (!l.read) {
      r.log = "not read: " + Cut(Printable(l.end.error), 200);
      out.rows.push_back(std::move(r));
      continue;
    }
    const Classification& c = l.summary.classification;
    r.log = Bytes(l.summary.bytes) + ", " + std::to_string(l.summary.lines) + " lines";
    r.fault_class = c.fault_class;
    r.cause = c.causes.empty() ? std::string() : c.causes.front().cause;
    r.at_ns = l.summary.root_ns;
    if (!c.roots.empty()) r.first_line = Cut(c.roots.front().line.text, 200);
    if (out.first && out.first->pod == l.pod && out.first->container == l.container &&
        out.first->previous == l.previous) {
      r.note = "failed first";
    } else if (side_set.count(&l)) {
      r.note = "side effect of a failure elsewhere";
    }
    if (l.end.tail && l.summary.overlap_lines == 0) {
      r.note += std::string(r.note.empty() ? "" : "; ") + "middle of the log skipped";
    }
    if (l.end.tail_cut) r.note += std::string(r.note.empty() ? "" : "; ") + "end of the log cut";
    out.rows.push_back(std::move(r));
  }
  auto rank = [&](const PodRow& r) {
    if (r.note.rfind("failed first", 0) == 0) return 0;
    if (out.peer && r.pod == out.peer->match.pod) return 1;
    if (IsFault(r.fault_class)) return 2;
    if (r.log.rfind("not read", 0) == 0) return 3;
    if (r.note.rfind("side effect", 0) == 0) return 4;
    if (r.fault_class == FaultClass::kHealthy) return 6;
    return 5;
  };
  std::stable_sort(out.rows.begin(), out.rows.end(), [&](const PodRow& a, const PodRow& b) {
    if (rank(a) != rank(b)) return rank(a) < rank(b);
    if (a.at_ns.has_value() != b.at_ns.has_value()) return a.at_ns.has_value();
    if (a.at_ns && *a.at_ns != *b.at_ns) return *a.at_ns < *b.at_ns;
    auto pa = by_name.find(a.pod), pb = by_name.find(b.pod);
    return PodOrderLess(pa == by_name.end() ? nullptr : pa->second,
                        pb == by_name.end() ? nullptr : pb->second, a.pod, b.pod);
  });

  // ------------------------------------------------------------------ where the event goes
  const JobPod* anchor = nullptr;
  if (out.first) anchor = by_name.count(out.first->pod) ? by_name[out.first->pod] : nullptr;
  if (anchor == nullptr && !in.pods.empty()) anchor = &in.pods.front();
  if (anchor != nullptr) {
    out.event_object = anchor->owner.kind.empty() ? OwnerRef{"v1", "Pod", anchor->name, anchor->uid}
                                                  : anchor->owner;
  }

  out.exit_code = IsFault(out.fault_class) ? 1 : out.fault_class == FaultClass::kHealthy ? 0 : 3;
  return out;
}

StatusOr<ProbeOutcome> ProbeOutcomeFromJson(const nlohmann::json& j) {
  using nlohmann::json;
  if (!j.is_object()) return InvalidArgument("the coordinator's answer is not a JSON object");
  ProbeOutcome out;
  out.asked = true;
  auto str = [](const json& o, const char* k) {
    auto it = o.find(k);
    return it != o.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  auto strs = [](const json& o, const char* k) {
    std::vector<std::string> v;
    auto it = o.find(k);
    if (it == o.end() || !it->is_array()) return v;
    for (const json& s : *it) {
      if (s.is_string()) v.push_back(s.get<std::string>());
    }
    return v;
  };
  for (const json& n : j.value("nodes", json::array())) {
    if (!n.is_object())
      return InvalidArgument("a node of the coordinator's answer is not an object");
    out.nodes.push_back({str(n, "node"), str(n, "state"), str(n, "reason")});
    for (const json& r : n.value("rails", json::array())) {
      if (!r.is_object() || str(r, "fault").empty()) continue;
      const json& index = r.value("rail", json(-1));
      if (!index.is_number_unsigned()) continue;  // a rail without its number names nothing
      ProbeRailFault f;
      f.node = str(n, "node");
      f.rail = static_cast<int>(std::min<uint64_t>(index.get<uint64_t>(), 1 << 16));
      f.device = str(r, "device");
      f.fault = str(r, "fault");
      const json& slow = r.value("rate_degraded", json(false));
      f.rate_degraded = slow.is_boolean() && slow.get<bool>();
      f.causes = strs(r, "causes");
      f.reason = str(r, "reason");
      f.seen_by = str(r, "seen_by");
      out.rail_faults.push_back(std::move(f));
    }
  }
  for (const json& f : j.value("faults", json::array())) {
    if (!f.is_object())
      return InvalidArgument("a fault of the coordinator's answer is not an object");
    const std::vector<std::string> nodes = strs(f, "nodes");
    ProbeFault pf;
    pf.kind = str(f, "kind");
    pf.node = nodes.empty() ? std::string() : nodes[0];
    pf.peer = nodes.size() > 1 ? nodes[1] : std::string();
    pf.fault_class = ParseFaultClass(str(f, "class")).value_or(FaultClass::kUnknown);
    pf.causes = strs(f, "causes");
    pf.reason = str(f, "reason");
    out.faults.push_back(std::move(pf));
  }
  out.references = strs(j, "references");
  const json& pairs = j.value("pairs_probed", json(0));
  out.pairs_probed = pairs.is_number_integer() ? pairs.get<int>() : 0;
  return out;
}

nlohmann::json ToJson(const Incident& in) {
  using nlohmann::json;
  auto cls = [](FaultClass c) { return std::string(ToString(c)); };
  auto time = [](const std::optional<int64_t>& ns) -> json {
    if (!ns) return nullptr;
    return FormatRfc3339(*ns / 1'000'000, true);
  };
  auto evidence = [](const EvidenceLine& e) {
    return json{{"pod", e.pod}, {"container", e.container}, {"line", e.line}, {"text", e.text}};
  };
  json j = {{"schema", kIncidentSchema},
            {"namespace", in.ns},
            {"target", in.target},
            {"at", FormatRfc3339(in.at_ms)},
            {"pods", in.pods},
            {"nodes", in.nodes},
            {"class", cls(in.fault_class)},
            {"cause", in.cause.empty() ? json(nullptr) : json(in.cause)},
            {"basis", in.basis.empty() ? json(nullptr) : json(in.basis)},
            {"reason", in.reason},
            {"remedy", in.remedy},
            {"disagreements", in.disagreements},
            {"not_looked_at", in.not_looked_at},
            {"confirmed_by_logs", in.confirmed_by},
            {"exit_code", in.exit_code}};
  json bases = json::array();
  for (const auto& b : in.bases) {
    bases.push_back({{"basis", b.basis},
                     {"looked", b.looked},
                     {"class", cls(b.fault_class)},
                     {"cause", b.cause.empty() ? json(nullptr) : json(b.cause)},
                     {"summary", b.summary}});
  }
  j["bases"] = bases;
  j["first_failure"] = nullptr;
  if (in.first) {
    j["first_failure"] = {{"pod", in.first->pod},           {"container", in.first->container},
                          {"previous", in.first->previous}, {"node", in.first->node},
                          {"rank", in.first->rank},         {"at", time(in.first->at_ns)},
                          {"order", in.first->order},       {"line", evidence(in.first->line)}};
  }
  j["peer"] = nullptr;
  if (in.peer) {
    j["peer"] = {{"name", in.peer->match.name},
                 {"pod", in.peer->match.pod},
                 {"node", in.peer->match.node},
                 {"matched_by", in.peer->match.how},
                 {"named_by_logs", in.peer->named_by}};
  }
  j["localisation"] = nullptr;
  if (!in.where.kind.empty()) {
    j["localisation"] = {{"kind", in.where.kind},
                         {"node", in.where.node},
                         {"peer_node", in.where.peer_node},
                         {"basis", in.where.basis}};
  }
  json ev = json::array();
  for (const auto& e : in.evidence) ev.push_back(evidence(e));
  j["evidence"] = ev;
  json rows = json::array();
  for (const auto& r : in.rows) {
    rows.push_back({{"pod", r.pod},
                    {"node", r.node},
                    {"container", r.container},
                    {"previous", r.previous},
                    {"state", r.state},
                    {"log", r.log},
                    {"class", cls(r.fault_class)},
                    {"cause", r.cause},
                    {"first_failure_at", time(r.at_ns)},
                    {"first_failing_line", r.first_line},
                    {"note", r.note}});
  }
  j["logs"] = rows;
  j["rails"] = in.rails;
  j["kernel"] = in.kernel;
  j["event_object"] = {{"api_version", in.event_object.api_version},
                       {"kind", in.event_object.kind},
                       {"name", in.event_object.name}};
  return j;
}

}  // namespace nccl_triage::triage
