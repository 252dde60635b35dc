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

// One judgement, in the order a reader follows it: the logs (who failed first, whom they name),
// the node checks and the probes (each a verdict of its own), the verdict that decides, then the
// explanation, one row per log and the object the event is posted on. Each step reads what the
// steps before it left in the members.
class IncidentJudge {
 public:
  explicit IncidentJudge(const IncidentInput& in) : in_(in) {}

  Incident Run() {
    Setup();
    ReadLogs();
    NameFirstFailure();
    Focus();
    ReadChecks();
    ReadProbes();
    Decide();
    Locate();
    Explain();
    Rows();
    EventObject();
    out_.exit_code =
        IsFault(out_.fault_class) ? 1 : out_.fault_class == FaultClass::kHealthy ? 0 : 3;
    return std::move(out_);
  }

 private:
  void Setup() {
    out_.ns = in_.ns;
    out_.target = in_.target;
    out_.at_ms = in_.now_ms;
    out_.pods = static_cast<int>(in_.pods.size());
    nodes_.insert(in_.nodes.begin(), in_.nodes.end());
    for (const JobPod& p : in_.pods) {
      by_name_[p.name] = &p;
      if (!p.node.empty()) nodes_.insert(p.node);
    }
    out_.nodes = static_cast<int>(nodes_.size());
    for (const std::string& m : in_.missing) out_.not_looked_at.push_back("pod " + m + ": not found");
  }

  const JobPod* PodNamed(const std::string& name) const {
    auto it = by_name_.find(name);
    return it == by_name_.end() ? nullptr : it->second;
  }

  // Sorts each log into failing, side effect (it lost a peer) or healthy, and notes what could
  // not be read.
  void ReadLogs() {
    for (const LogResult& l : in_.logs) {
      LogView v{&l, PodNamed(l.pod)};
      if (!l.read) {
        ++unreadable_;
        out_.not_looked_at.push_back(LogName(l) + ": log not read: " + Printable(l.end.error));
        continue;
      }
      ++read_;
      if (!l.end.error.empty()) {
        out_.not_looked_at.push_back(LogName(l) + ": log read in part: " + Printable(l.end.error));
      }
      if (l.end.tail_cut) {
        out_.not_looked_at.push_back(LogName(l) + ": the end of its log (beyond the byte limit)");
      }
      const FaultClass c = l.summary.classification.fault_class;
      if (IsFault(c)) {
        faults_.push_back(v);
      } else if (IsSideEffect(l.summary.classification)) {
        side_effects_.push_back(v);
      } else if (c == FaultClass::kHealthy) {
        ++healthy_;
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
    std::stable_sort(faults_.begin(), faults_.end(), earliest);
    std::stable_sort(side_effects_.begin(), side_effects_.end(), earliest);
    // Peers named by the side effects (the first failure's own lines are counted in
    // NameFirstFailure).
    for (const LogView& v : side_effects_) {
      for (const PeerMatch& m : PeersOf(v, in_.pods)) CountPeer(m);
    }
  }

  void CountPeer(const PeerMatch& m) {
    for (PeerView& p : named_) {
      if (p.match.pod == m.pod && p.match.node == m.node) {
        ++p.named_by;
        return;
      }
    }
    named_.push_back({m, 1});
  }

  std::string LogCounts() const {
    std::string s = std::to_string(faults_.size()) + " failing, " +
                    std::to_string(side_effects_.size()) + " only lost a peer, " +
                    std::to_string(healthy_) + " healthy";
    const int other = read_ - static_cast<int>(faults_.size() + side_effects_.size()) - healthy_;
    if (other > 0) s += ", " + std::to_string(other) + " without an NCCL failure or success";
    if (unreadable_ > 0) s += ", " + std::to_string(unreadable_) + " not read";
    return s + " (of " + std::to_string(in_.logs.size()) + " logs)";
  }

  // The logs' verdict: the earliest failure and its peer, or why there is none.
  void NameFirstFailure() {
    log_ = {"log", read_ > 0, FaultClass::kUnknown, "", ""};
    const std::string counts = LogCounts();
    if (!faults_.empty()) {
      const LogView& f = faults_.front();
      const Classification& c = f.c();
      const bool all_timed = std::all_of(faults_.begin(), faults_.end(), [](const LogView& v) {
        return v.log->summary.root_ns.has_value();
      });
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
      first.order = faults_.size() == 1 ? "the only log that names a failure"
                    : all_timed         ? "the earliest by the runtime's timestamps"
                                : "the earliest by timestamp where logs have one, then pod order";
      out_.first = first;
      log_.fault_class = c.fault_class;
      log_.cause = c.causes.empty() ? std::string() : c.causes.front().cause;
      log_.summary = first.pod + " failed first (" + log_.cause + "); " + counts;
      std::vector<PeerMatch> own = PeersOf(f, in_.pods);
      if (!own.empty()) {
        PeerView p{own.front(), 1};
        for (const PeerView& n : named_) {
          if (n.match.pod == p.match.pod && n.match.node == p.match.node) p.named_by += n.named_by;
        }
        out_.peer = p;
      }
    } else if (!side_effects_.empty()) {
      log_.cause = std::string(ids::kPeerExited);
      log_.summary = "no log names the failing call; " + counts;
    } else if (healthy_ > 0) {
      log_.fault_class = FaultClass::kHealthy;
      log_.summary = "the NCCL runs in the logs completed; " + counts;
    } else {
      log_.summary =
          read_ == 0 ? "no log could be read; " + counts : "no NCCL failure found; " + counts;
    }
    // Side effects that name the first failing pod confirm it; the peer is someone else.
    if (out_.first) {
      for (auto it = named_.begin(); it != named_.end();) {
        if (it->match.pod == out_.first->pod) {
          out_.confirmed_by = it->named_by;
          it = named_.erase(it);
        } else {
          ++it;
        }
      }
    }
    if (!out_.peer && !named_.empty()) {
      auto most = std::max_element(
          named_.begin(), named_.end(),
          [](const PeerView& a, const PeerView& b) { return a.named_by < b.named_by; });
      out_.peer = *most;
      if (!out_.first) {
        log_.summary += "; they name " +
                        (most->match.pod.empty() ? "node " + most->match.node
                                                 : "pod " + most->match.pod) +
                        " (" + std::to_string(most->named_by) + " logs)";
      }
    }
  }

  // The nodes the logs point at: the first failure's, then its peer's.
  void Focus() {
    if (out_.first && !out_.first->node.empty()) focus_.push_back(out_.first->node);
    if (out_.peer && !out_.peer->match.node.empty() && !InFocus(out_.peer->match.node)) {
      focus_.push_back(out_.peer->match.node);
    }
  }

  bool InFocus(const std::string& node) const {
    return std::find(focus_.begin(), focus_.end(), node) != focus_.end();
  }

  // The agents' verdicts: a fault on a node the logs point at first, then on any node of the job.
  void ReadChecks() {
    checks_ = {"checks", false, FaultClass::kUnknown, "", ""};
    if (!in_.checks_read) {
      checks_.summary = "not read: " + in_.checks_error;
      out_.not_looked_at.push_back("node checks: " + in_.checks_error);
      return;
    }
    std::map<std::string, const AgentVerdict*> by_node;
    for (const AgentVerdict& a : in_.agents) by_node.emplace(a.node, &a);
    std::vector<std::string> missing;
    for (const std::string& n : nodes_) {
      if (!by_node.count(n)) missing.push_back(n);
    }
    if (!missing.empty()) {
      std::string list;
      for (size_t i = 0; i < missing.size() && i < 5; ++i)
        list += (i == 0 ? "" : ", ") + missing[i];
      if (missing.size() > 5) list += " and " + std::to_string(missing.size() - 5) + " more";
      out_.not_looked_at.push_back("node checks: no agent verdict on " +
                                   std::to_string(missing.size()) + " node(s): " + list);
    }
    const AgentVerdict* hit = nullptr;
    for (const auto& n : focus_) {
      auto it = by_node.find(n);
      if (hit == nullptr && it != by_node.end()) {
        auto c = FromString<FaultClass>(it->second->verdict);
        if (c && IsFault(*c)) hit = it->second;
      }
    }
    int healthy_nodes = 0;
    for (const auto& [n, a] : by_node) {
      if (!nodes_.count(n)) continue;
      auto c = FromString<FaultClass>(a->verdict);
      if (c == FaultClass::kHealthy) ++healthy_nodes;
      if (hit == nullptr && c && IsFault(*c)) hit = a;
    }
    const int seen = static_cast<int>(nodes_.size() - missing.size());
    checks_.looked = seen > 0;
    if (hit != nullptr) {
      checks_.fault_class = FromString<FaultClass>(hit->verdict).value_or(FaultClass::kUnknown);
      checks_.cause = hit->causes.empty() ? std::string() : hit->causes.front();
      checks_.summary = "agent on " + hit->node + ": " + hit->verdict + " (basis " + hit->basis +
                        ")" + (checks_.cause.empty() ? "" : ", " + checks_.cause) + "; " +
                        std::to_string(healthy_nodes) + " of " + std::to_string(seen) +
                        " nodes healthy";
    } else if (seen > 0 && healthy_nodes == seen) {
      checks_.fault_class = FaultClass::kHealthy;
      checks_.summary = "the agents on all " + std::to_string(seen) + " nodes report healthy";
    } else if (seen == 0) {
      checks_.summary = "no agent has published a verdict on the job's nodes";
    } else {
      checks_.summary = std::to_string(healthy_nodes) + " of " + std::to_string(seen) +
                        " nodes healthy, the others unknown";
    }
  }

  // The probes run for this incident: a fault on a node the logs point at first, then any.
  void ReadProbes() {
    probes_ = {"probes", false, FaultClass::kUnknown, "", ""};
    const ProbeOutcome& p = in_.probes;
    if (!p.asked) {
      probes_.summary = "not run: " + p.not_asked;
      out_.not_looked_at.push_back("probes: " + p.not_asked);
      return;
    }
    if (!p.error.empty()) {
      probes_.summary = "the coordinator did not answer: " + p.error;
      out_.not_looked_at.push_back("probes: the coordinator did not answer: " + p.error);
      return;
    }
    int good = 0;
    for (const ProbeNodeState& n : p.nodes) {
      if (n.state == "good") ++good;
      if (n.state == "busy" || n.state == "absent" || n.state == "inconclusive" ||
          n.state == "untested" || n.state == "unavailable") {
        out_.not_looked_at.push_back("probes on " + n.node + ": " + n.state +
                                     (n.reason.empty() ? "" : " (" + n.reason + ")"));
      }
    }
    auto in_focus = [&](const ProbeFault& f) { return InFocus(f.node) || InFocus(f.peer); };
    for (const ProbeFault& f : p.faults) {
      if (probe_fault_ == nullptr || (in_focus(f) && !in_focus(*probe_fault_))) probe_fault_ = &f;
    }
    probes_.looked = good > 0 || probe_fault_ != nullptr;
    if (probe_fault_ != nullptr) {
      probes_.fault_class = probe_fault_->fault_class;
      probes_.cause = probe_fault_->causes.empty() ? std::string() : probe_fault_->causes.front();
      probes_.summary = probe_fault_->kind + " fault " + probe_fault_->node +
                        (probe_fault_->kind == "link" ? " - " + probe_fault_->peer : "") + ": " +
                        ClassText(probe_fault_->fault_class) +
                        (probes_.cause.empty() ? "" : " (" + probes_.cause + ")") + "; " +
                        std::to_string(p.pairs_probed) + " pairs probed";
    } else if (good > 0) {
      probes_.fault_class = FaultClass::kHealthy;
      probes_.summary =
          std::to_string(good) + " nodes pass the socket and the IB probe now (" +
          std::to_string(p.pairs_probed) + " pairs probed" +
          (p.references.empty()
               ? std::string()
               : ", " + std::to_string(p.references.size()) + " known-good reference(s)") +
          ")";
    } else {
      probes_.summary = "no node could be probed";
    }
  }

  // A fault in the logs, then in the probes; a healthy log; a predicted fault; healthy probes.
  // Where two bases disagree, the incident says so.
  void Decide() {
    const BasisVerdict* decided = nullptr;
    if (IsFault(log_.fault_class)) {
      decided = &log_;
    } else if (IsFault(probes_.fault_class)) {
      decided = &probes_;
    } else if (log_.fault_class == FaultClass::kHealthy) {
      decided = &log_;
    } else if (IsFault(checks_.fault_class)) {
      decided = &checks_;
    } else if (probes_.fault_class == FaultClass::kHealthy) {
      decided = &probes_;
    }
    if (decided != nullptr) {
      out_.fault_class = decided->fault_class;
      out_.cause = decided->cause;
      out_.basis = decided->basis;
    }
    if (IsFault(log_.fault_class) && probes_.looked && probes_.fault_class != log_.fault_class) {
      out_.disagreements.push_back(
          probes_.fault_class == FaultClass::kHealthy
              ? "the log shows " + ClassText(log_.fault_class) + " (" + log_.cause +
                    ") but the probes pass now between the job's nodes: a transient fault, or "
                    "one fixed since"
              : "the log says " + ClassText(log_.fault_class) + ", the probes say " +
                    ClassText(probes_.fault_class));
    }
    if (checks_.looked && out_.basis != "checks" && IsFault(out_.fault_class) &&
        checks_.fault_class != out_.fault_class && checks_.fault_class != FaultClass::kUnknown) {
      out_.disagreements.push_back("the " + out_.basis + " says " + ClassText(out_.fault_class) +
                                   ", the node checks say " + ClassText(checks_.fault_class) +
                                   " (node checks see the host, not the job's containers)");
    }
    if (out_.fault_class == FaultClass::kHealthy && IsFault(checks_.fault_class)) {
      out_.disagreements.push_back("the " + out_.basis +
                                   " shows no fault but the node checks predict " +
                                   ClassText(checks_.fault_class) + " (" + checks_.cause + ")");
    }
    out_.bases = {log_, checks_, probes_};
  }

  // Where: the probes' fault, else the first failure (a link when its peer is on another node
  // and the cause involves the other end), else the peer the side effects name, else the node
  // the checks blame.
  void Locate() {
    if (probe_fault_ != nullptr && IsFault(probe_fault_->fault_class)) {
      out_.where = {probe_fault_->kind, probe_fault_->node, probe_fault_->peer, "probes"};
    } else if (out_.first) {
      const bool link = out_.peer && !out_.peer->match.node.empty() &&
                        out_.peer->match.node != out_.first->node && IsLinkCause(log_.cause);
      out_.where = link ? Localisation{"link", out_.first->node, out_.peer->match.node, "log"}
                        : Localisation{"node", out_.first->node, "", "log"};
    } else if (out_.peer && !out_.peer->match.node.empty()) {
      out_.where = {"node", out_.peer->match.node, "", "log"};
    } else if (out_.basis == "checks") {
      for (const AgentVerdict& a : in_.agents) {
        if (FromString<FaultClass>(a.verdict) == checks_.fault_class && nodes_.count(a.node)) {
          out_.where = {"node", a.node, "", "checks"};
          break;
        }
      }
    }
  }

  // Why, with its evidence lines, the rail faults, and the fix of the cause that decided.
  void Explain() {
    if (out_.first) {
      ExplainFirstFailure();
    } else if (!side_effects_.empty()) {
      ExplainSideEffects();
    } else if (log_.fault_class == FaultClass::kHealthy) {
      out_.reason = "the NCCL runs in the logs completed: NCCL did not fail";
    } else {
      out_.reason = read_ == 0 ? "no log could be read" : "no log names an NCCL failure";
    }
    for (const ProbeRailFault& f : in_.probes.rail_faults) {
      std::string causes;
      for (const auto& c : f.causes) causes += (causes.empty() ? "" : ", ") + c;
      out_.rails.push_back(f.node + " rail " + std::to_string(f.rail) + " (" + f.device + "): " +
                           (f.rate_degraded          ? "rate-degraded"
                            : f.fault == "link_rail" ? "link fault"
                                                     : "fault") +
                           (causes.empty() ? "" : " (" + causes + ")") + ", seen by " +
                           (f.seen_by == "triage" ? "these probes" : "the last sweep") +
                           (f.reason.empty() ? "" : ": " + f.reason));
    }
    KernelCauses();
    if (out_.basis == "probes" && probe_fault_ != nullptr) {
      out_.reason += "; the probes find a " + probe_fault_->kind + " fault on " +
                     probe_fault_->node +
                     (probe_fault_->kind == "link" ? " - " + probe_fault_->peer : "") +
                     (probe_fault_->reason.empty() ? "" : ": " + probe_fault_->reason);
    } else if (out_.basis == "checks") {
      out_.reason += "; the node checks predict " + ClassText(out_.fault_class) +
                     (out_.cause.empty() ? "" : " (" + out_.cause + ")") + " on " +
                     out_.where.node;
    }
    // The fix of the cause that decided: a cause the probes or the checks name replaces the hint
    // of the logs (which only said where to look).
    if ((out_.remedy.empty() || out_.basis == "probes" || out_.basis == "checks") &&
        !out_.cause.empty() && !CatalogueRemedy(out_.cause).empty()) {
      out_.remedy = CatalogueRemedy(out_.cause);
    }
    if (out_.remedy.empty() && out_.fault_class == FaultClass::kUnknown) {
      out_.remedy =
          "Rerun with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET so that the failing call is "
          "logged, and probe the job's nodes (--coordinator URL)";
    }
  }

  // The window kernel-log events must fall in (incident.h): bounded by the logs' failure times
  // and the pods' start; none when no log gives a failure a time.
  void KernelWindow() {
    std::optional<int64_t> first_ns, last_ns;
    for (const LogResult& l : in_.logs) {
      if (!l.read || !l.summary.root_ns) continue;
      const int64_t t = *l.summary.root_ns;
      if (!first_ns || t < *first_ns) first_ns = t;
      if (!last_ns || t > *last_ns) last_ns = t;
    }
    if (!first_ns) {
      out_.kernel_window = "no log gives the failure a time: kernel events are not placed";
      return;
    }
    const int64_t first_ms = *first_ns / 1'000'000;
    first_failure_ms_ = first_ms;
    last_failure_ms_ = *last_ns / 1'000'000;
    int64_t from = first_ms - kKernelLookBackMs;
    std::string from_text = "2 h before the first failure";
    std::optional<int64_t> start_ms;
    for (const JobPod& p : in_.pods) {
      const auto ns = ParseRfc3339Nanos(p.start_time);
      if (ns && (!start_ms || *ns / 1'000'000 < *start_ms)) start_ms = *ns / 1'000'000;
    }
    if (start_ms && *start_ms > from && *start_ms <= first_ms) {
      from = *start_ms;
      from_text = "the job's first pod start";
    }
    out_.kernel_from_ms = from;
    out_.kernel_to_ms = *last_ns / 1'000'000 + kKernelGraceMs;
    out_.kernel_window = "from " + from_text + " (" + FormatRfc3339(from) +
                         ") to 10 min after the last failure (" +
                         FormatRfc3339(*out_.kernel_to_ms) + ")";
  }

  // The kernel-log causes the agents report on the job's nodes: an Xid or a GPU off the bus is
  // never a network fault, but a job that died beside one died of it. One whose last event lies
  // outside the job's window is shown apart and not blamed.
  void KernelCauses() {
    KernelWindow();
    for (const AgentVerdict& a : in_.agents) {
      if (!nodes_.count(a.node)) continue;
      for (const std::string& c : a.causes) {
        const CauseInfo* info = FindCause(c);
        if (info == nullptr || info->kind != CauseKind::kKernelLog) continue;
        std::string line = a.node + ": " + c + " (" + std::string(info->title) + ")";
        auto at = a.kernel_last_event.find(c);
        const auto at_ns =
            at == a.kernel_last_event.end() ? std::nullopt : ParseRfc3339Nanos(at->second);
        if (!at_ns) {
          out_.kernel.push_back(line + ", reported by its agent" +
                                (a.updated.empty() ? "" : " at " + a.updated) +
                                " (the time of its events is not known)");
          continue;
        }
        const int64_t at_ms = *at_ns / 1'000'000;
        line += ", last event at " + FormatRfc3339(at_ms);
        if (!out_.kernel_from_ms) {
          out_.kernel.push_back(line);
        } else if (at_ms < *out_.kernel_from_ms) {
          out_.kernel_outside.push_back(line + ", before the job: " +
                                        Ago(first_failure_ms_ - at_ms) +
                                        " before the first failure, not blamed");
        } else if (at_ms > *out_.kernel_to_ms) {
          out_.kernel_outside.push_back(line + ", after the job failed: " +
                                        Ago(at_ms - last_failure_ms_) +
                                        " after the last failure, not blamed");
        } else {
          out_.kernel.push_back(line);
        }
      }
    }
  }

  static std::string Ago(int64_t ms) {
    const int64_t min = ms / 60'000;
    if (min < 60) return std::to_string(min) + " min";
    return std::to_string(min / 60) + " h " + std::to_string(min % 60) + " min";
  }

  void ExplainFirstFailure() {
    const LogView& f = faults_.front();
    const Classification& c = f.c();
    out_.reason = out_.first->pod + (out_.first->node.empty() ? "" : " on " + out_.first->node) +
                  " failed first" + (log_.cause.empty() ? "" : " with " + log_.cause);
    if (out_.peer) {
      out_.reason +=
          ", naming " +
          (out_.peer->match.pod.empty() ? "node " + out_.peer->match.node : out_.peer->match.pod) +
          " as its peer";
    }
    if (out_.confirmed_by > 0) {
      out_.reason += "; " + std::to_string(out_.confirmed_by) + " other log(s) lost their " +
                     "connection to it";
    }
    out_.evidence.push_back(out_.first->line);
    if (!c.causes.empty()) {
      out_.remedy = c.causes.front().remedy;
      for (const auto& l : c.causes.front().evidence) {
        if (out_.evidence.size() >= kMaxEvidence) break;
        if (l.number != out_.first->line.line) out_.evidence.push_back(Evidence(*f.log, l));
      }
    }
  }

  void ExplainSideEffects() {
    out_.reason = std::to_string(side_effects_.size()) +
                  " logs show only the consequence of a failure elsewhere (a peer exited)";
    if (out_.peer) {
      const std::string who = out_.peer->match.pod.empty() ? "node " + out_.peer->match.node
                                                           : "pod " + out_.peer->match.pod;
      out_.reason += "; they name " + who;
      const JobPod* pod = PodNamed(out_.peer->match.pod);
      if (pod != nullptr && !pod->containers.empty()) {
        out_.reason += ", whose container is " + ContainerText(pod->containers.front());
      }
      out_.remedy = "Read why " + who +
                    " stopped (kubectl describe, its previous log, the node's "
                    "kernel log): its own log names no NCCL failure";
    }
    for (const LogView& v : side_effects_) {
      if (out_.evidence.size() >= 3) break;
      if (!v.c().roots.empty()) out_.evidence.push_back(Evidence(*v.log, v.c().roots.front().line));
    }
  }

  // One row per log: the first failure, its peer, other failures, unread logs, side effects,
  // the rest, healthy last; within a rank by time, then pod order.
  void Rows() {
    std::set<const LogResult*> side_set;
    for (const auto& v : side_effects_) side_set.insert(v.log);
    for (const LogResult& l : in_.logs) out_.rows.push_back(RowOf(l, side_set.count(&l) > 0));
    auto rank = [&](const PodRow& r) {
      if (r.note.rfind("failed first", 0) == 0) return 0;
      if (out_.peer && r.pod == out_.peer->match.pod) return 1;
      if (IsFault(r.fault_class)) return 2;
      if (r.log.rfind("not read", 0) == 0) return 3;
      if (r.note.rfind("side effect", 0) == 0) return 4;
      if (r.fault_class == FaultClass::kHealthy) return 6;
      return 5;
    };
    std::stable_sort(out_.rows.begin(), out_.rows.end(), [&](const PodRow& a, const PodRow& b) {
      if (rank(a) != rank(b)) return rank(a) < rank(b);
      if (a.at_ns.has_value() != b.at_ns.has_value()) return a.at_ns.has_value();
      if (a.at_ns && *a.at_ns != *b.at_ns) return *a.at_ns < *b.at_ns;
      return PodOrderLess(PodNamed(a.pod), PodNamed(b.pod), a.pod, b.pod);
    });
  }

  PodRow RowOf(const LogResult& l, bool side_effect) const {
    const JobPod* pod = PodNamed(l.pod);
    PodRow r;
    r.pod = l.pod;
    r.node = pod != nullptr ? pod->node : std::string();
    r.container = l.container;
    r.previous = l.previous;
    if (const ContainerState* cs = FindContainer(pod, l.container)) r.state = ContainerText(*cs);
    if (!l.read) {
      r.log = "not read: " + Cut(Printable(l.end.error), 200);
      return r;
    }
    const Classification& c = l.summary.classification;
    r.log = Bytes(l.summary.bytes) + ", " + std::to_string(l.summary.lines) + " lines";
    r.fault_class = c.fault_class;
    r.cause = c.causes.empty() ? std::string() : c.causes.front().cause;
    r.at_ns = l.summary.root_ns;
    if (!c.roots.empty()) r.first_line = Cut(c.roots.front().line.text, 200);
    if (out_.first && out_.first->pod == l.pod && out_.first->container == l.container &&
        out_.first->previous == l.previous) {
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

  // The event goes on the first failing pod's owner (the job), else the first pod's.
  void EventObject() {
    const JobPod* anchor = out_.first ? PodNamed(out_.first->pod) : nullptr;
    if (anchor == nullptr && !in_.pods.empty()) anchor = &in_.pods.front();
    if (anchor != nullptr) {
      out_.event_object = anchor->owner.kind.empty()
                              ? OwnerRef{"v1", "Pod", anchor->name, anchor->uid}
                              : anchor->owner;
    }
  }

  const IncidentInput& in_;
  Incident out_;
  std::set<std::string> nodes_;
  int64_t first_failure_ms_ = 0;  // the kernel window's failure times (KernelWindow)
  int64_t last_failure_ms_ = 0;
  std::map<std::string, const JobPod*> by_name_;
  std::vector<LogView> faults_, side_effects_;
  int read_ = 0, healthy_ = 0, unreadable_ = 0;
  std::vector<PeerView> named_;
  std::vector<std::string> focus_;  // nodes the logs point at
  BasisVerdict log_, checks_, probes_;
  const ProbeFault* probe_fault_ = nullptr;
};

}  // namespace

Incident JudgeIncident(const IncidentInput& in) { return IncidentJudge(in).Run(); }

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
    pf.fault_class = FromString<FaultClass>(str(f, "class")).value_or(FaultClass::kUnknown);
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
  j["kernel_outside_window"] = in.kernel_outside;
  j["kernel_window"] = {
      {"from", in.kernel_from_ms ? json(FormatRfc3339(*in.kernel_from_ms)) : json(nullptr)},
      {"to", in.kernel_to_ms ? json(FormatRfc3339(*in.kernel_to_ms)) : json(nullptr)},
      {"bounds", in.kernel_window}};
  j["event_object"] = {{"api_version", in.event_object.api_version},
                       {"kind", in.event_object.kind},
                       {"name", in.event_object.name}};
  return j;
}

}  // namespace nccl_triage::triage
