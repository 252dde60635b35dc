#include "triage/incident_explain.h"

#include <algorithm>
#include <set>

#include "classify/classifier.h"
#include "core/catalogue.h"

namespace nccl_triage::triage {
namespace {

constexpr size_t kMaxEvidence = 8;
constexpr size_t kMaxSideEffectEvidence = 3;

std::string ClassText(FaultClass c) { return std::string(ToString(c)); }

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

std::string CatalogueRemedy(const std::string& cause) {
  const CauseInfo* info = FindCause(cause);
  return info != nullptr ? std::string(info->remedy) : std::string();
}

std::string PeerText(const PeerView& peer, const char* pod_prefix) {
  return peer.match.pod.empty() ? "node " + peer.match.node : pod_prefix + peer.match.pod;
}

Explanation ExplainFirstFailure(const LogView& f, const LogFindings& found) {
  Explanation out;
  const FirstFailure& first = *found.first;
  const std::string& cause = found.verdict.cause;
  out.reason = first.pod + (first.node.empty() ? "" : " on " + first.node) + " failed first" +
               (cause.empty() ? "" : " with " + cause);
  if (found.peer) out.reason += ", naming " + PeerText(*found.peer, "") + " as its peer";
  if (found.confirmed_by > 0) {
    out.reason += "; " + std::to_string(found.confirmed_by) + " other log(s) lost their " +
                  "connection to it";
  }
  out.evidence.push_back(first.line);
  const Classification& c = f.c();
  if (!c.causes.empty()) {
    out.remedy = c.causes.front().remedy;
    for (const auto& l : c.causes.front().evidence) {
      if (out.evidence.size() >= kMaxEvidence) break;
      if (l.number != first.line.line) out.evidence.push_back(EvidenceOf(*f.log, l));
    }
  }
  return out;
}

Explanation ExplainSideEffects(const std::vector<LogView>& side_effects,
                               const std::optional<PeerView>& peer, const JobScope& scope) {
  Explanation out;
  out.reason = std::to_string(side_effects.size()) +
               " logs show only the consequence of a failure elsewhere (a peer exited)";
  if (peer) {
    const std::string who = PeerText(*peer, "pod ");
    out.reason += "; they name " + who;
    const JobPod* pod = scope.Pod(peer->match.pod);
    if (pod != nullptr && !pod->containers.empty()) {
      out.reason += ", whose container is " + ContainerText(pod->containers.front());
    }
    out.remedy = "Read why " + who +
                 " stopped (kubectl describe, its previous log, the node's "
                 "kernel log): its own log names no NCCL failure";
  }
  for (const LogView& v : side_effects) {
    if (out.evidence.size() >= kMaxSideEffectEvidence) break;
    if (!v.c().roots.empty()) out.evidence.push_back(EvidenceOf(*v.log, v.c().roots.front().line));
  }
  return out;
}

PodRow RowOf(const LogResult& l, bool side_effect, const std::optional<FirstFailure>& first,
             const JobScope& scope) {
  const JobPod* pod = scope.Pod(l.pod);
  PodRow r;
  r.pod = l.pod;
  r.node = pod != nullptr ? pod->node : std::string();
  r.container = l.container;
  r.previous = l.previous;
  if (const ContainerState* cs = FindContainer(pod, l.container)) r.state = ContainerText(*cs);
  if (!l.read) {
    r.log = "not read: " + CutText(Printable(l.end.error), 200);
    return r;
  }
  const Classification& c = l.summary.classification;
  r.log = Bytes(l.summary.bytes) + ", " + std::to_string(l.summary.lines) + " lines";
  r.fault_class = c.fault_class;
  r.cause = c.causes.empty() ? std::string() : c.causes.front().cause;
  r.at_ns = l.summary.root_ns;
  if (!c.roots.empty()) r.first_line = CutText(c.roots.front().line.text, 200);
  if (first && first->pod == l.pod && first->container == l.container &&
      first->previous == l.previous) {
    r.note = "failed first";
  } else if (side_effect) {
    r.note = "side effect of a failure elsewhere";
  }
  if (l.end.tail && l.summary.overlap_lines == 0) {
    r.note += std::string(r.note.empty() ? "" : "; ") + "middle of the log skipped";
  }
  if (l.end.tail_cut) r.note += std::string(r.note.empty() ? "" : "; ") + "end of the log cut";
  return r;
}

}  // namespace

Explanation ExplainLogs(const SortedLogs& logs, const LogFindings& found, const JobScope& scope) {
  if (found.first) return ExplainFirstFailure(logs.faults.front(), found);
  if (!logs.side_effects.empty()) return ExplainSideEffects(logs.side_effects, found.peer, scope);
  Explanation out;
  if (found.verdict.fault_class == FaultClass::kHealthy) {
    out.reason = "the NCCL runs in the logs completed: NCCL did not fail";
  } else {
    out.reason = logs.read == 0 ? "no log could be read" : "no log names an NCCL failure";
  }
  return out;
}

Explanation ExplainDecision(Explanation out, const IncidentDecision& decision,
                            const ProbeFault* probe_fault, const Localisation& where) {
  if (decision.basis == "probes" && probe_fault != nullptr) {
    out.reason += "; the probes find a " + probe_fault->kind + " fault on " + probe_fault->node +
                  (probe_fault->kind == "link" ? " - " + probe_fault->peer : "") +
                  (probe_fault->reason.empty() ? "" : ": " + probe_fault->reason);
  } else if (decision.basis == "checks") {
    out.reason += "; the node checks predict " + ClassText(decision.fault_class) +
                  (decision.cause.empty() ? "" : " (" + decision.cause + ")") + " on " + where.node;
  }
  if ((out.remedy.empty() || decision.basis == "probes" || decision.basis == "checks") &&
      !decision.cause.empty() && !CatalogueRemedy(decision.cause).empty()) {
    out.remedy = CatalogueRemedy(decision.cause);
  }
  if (out.remedy.empty() && decision.fault_class == FaultClass::kUnknown) {
    out.remedy =
        "Rerun with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET so that the failing call is "
        "logged, and probe the job's nodes (--coordinator URL)";
  }
  return out;
}

std::vector<PodRow> PodRows(const std::vector<LogResult>& logs, const SortedLogs& sorted,
                            const LogFindings& found, const JobScope& scope) {
  std::set<const LogResult*> side_set;
  for (const auto& v : sorted.side_effects) side_set.insert(v.log);
  std::vector<PodRow> rows;
  for (const LogResult& l : logs)
    rows.push_back(RowOf(l, side_set.count(&l) > 0, found.first, scope));
  auto rank = [&](const PodRow& r) {
    if (r.note.rfind("failed first", 0) == 0) return 0;
    if (found.peer && r.pod == found.peer->match.pod) return 1;
    if (IsFault(r.fault_class)) return 2;
    if (r.log.rfind("not read", 0) == 0) return 3;
    if (r.note.rfind("side effect", 0) == 0) return 4;
    if (r.fault_class == FaultClass::kHealthy) return 6;
    return 5;
  };
  std::stable_sort(rows.begin(), rows.end(), [&](const PodRow& a, const PodRow& b) {
    if (rank(a) != rank(b)) return rank(a) < rank(b);
    if (a.at_ns.has_value() != b.at_ns.has_value()) return a.at_ns.has_value();
    if (a.at_ns && *a.at_ns != *b.at_ns) return *a.at_ns < *b.at_ns;
    return PodOrderLess(scope.Pod(a.pod), scope.Pod(b.pod), a.pod, b.pod);
  });
  return rows;
}

OwnerRef EventObject(const std::optional<FirstFailure>& first, const std::vector<JobPod>& pods,
                     const JobScope& scope) {
  const JobPod* anchor = first ? scope.Pod(first->pod) : nullptr;
  if (anchor == nullptr && !pods.empty()) anchor = &pods.front();
  if (anchor == nullptr) return {};
  return anchor->owner.kind.empty() ? OwnerRef{"v1", "Pod", anchor->name, anchor->uid}
                                    : anchor->owner;
}

}  // namespace nccl_triage::triage
