#include "triage/incident_logs.h"

#include <algorithm>

#include "classify/classifier.h"
#include "core/ids.h"
#include "triage/peers.h"

namespace nccl_triage::triage {
namespace {

constexpr size_t kMaxLineText = 300;

// Causes of a log that only shows the consequence of a failure elsewhere.
bool IsSideEffect(const Classification& c) {
  if (c.fault_class != FaultClass::kUnknown || c.causes.empty()) return false;
  return std::all_of(c.causes.begin(), c.causes.end(), [](const ClassifiedCause& cc) {
    return ids::kPeerExited == cc.cause || ids::kNcclInternal == cc.cause;
  });
}

std::string LogName(const LogResult& l) {
  return l.pod + "/" + l.container + (l.previous ? " (previous instance)" : "");
}

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

void CountPeer(const PeerMatch& m, std::vector<PeerView>& named) {
  for (PeerView& p : named) {
    if (p.match.pod == m.pod && p.match.node == m.node) {
      ++p.named_by;
      return;
    }
  }
  named.push_back({m, 1});
}

// Earliest first failure: logs with a time before those without, then by time, then by the
// previous instance of a container before its current one, then pod order.
bool EarlierFailure(const LogView& a, const LogView& b) {
  const auto& ta = a.log->summary.root_ns;
  const auto& tb = b.log->summary.root_ns;
  if (ta.has_value() != tb.has_value()) return ta.has_value();
  if (ta && *ta != *tb) return *ta < *tb;
  if (a.log->previous != b.log->previous) return a.log->previous;
  return PodOrderLess(a.pod, b.pod, a.log->pod, b.log->pod);
}

std::string LogCounts(const SortedLogs& s) {
  std::string text = std::to_string(s.faults.size()) + " failing, " +
                     std::to_string(s.side_effects.size()) + " only lost a peer, " +
                     std::to_string(s.healthy) + " healthy";
  const int other = s.read - static_cast<int>(s.faults.size() + s.side_effects.size()) - s.healthy;
  if (other > 0) text += ", " + std::to_string(other) + " without an NCCL failure or success";
  if (s.unreadable > 0) text += ", " + std::to_string(s.unreadable) + " not read";
  return text + " (of " + std::to_string(s.total) + " logs)";
}

FirstFailure FirstOf(const std::vector<LogView>& faults) {
  const LogView& f = faults.front();
  const Classification& c = f.c();
  const bool all_timed = std::all_of(faults.begin(), faults.end(), [](const LogView& v) {
    return v.log->summary.root_ns.has_value();
  });
  FirstFailure first;
  first.pod = f.log->pod;
  first.container = f.log->container;
  first.previous = f.log->previous;
  first.node = f.pod != nullptr ? f.pod->node : std::string();
  if (!c.roots.empty()) {
    first.rank = c.roots.front().rank;
    first.line = EvidenceOf(*f.log, c.roots.front().line);
  }
  first.at_ns = f.log->summary.root_ns;
  first.order = faults.size() == 1 ? "the only log that names a failure"
                : all_timed        ? "the earliest by the runtime's timestamps"
                            : "the earliest by timestamp where logs have one, then pod order";
  return first;
}

// The verdict of logs none of which names a failure of its own.
void WithoutFailure(const SortedLogs& logs, const std::string& counts, BasisVerdict& verdict) {
  if (!logs.side_effects.empty()) {
    verdict.cause = std::string(ids::kPeerExited);
    verdict.summary = "no log names the failing call; " + counts;
  } else if (logs.healthy > 0) {
    verdict.fault_class = FaultClass::kHealthy;
    verdict.summary = "the NCCL runs in the logs completed; " + counts;
  } else {
    verdict.summary =
        logs.read == 0 ? "no log could be read; " + counts : "no NCCL failure found; " + counts;
  }
}

// Side effects that name the first failing pod confirm it; the peer is someone else: the one
// the first failure names, else the one the side effects name most.
void NamePeer(std::vector<PeerView> named, LogFindings& out) {
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
  if (out.peer || named.empty()) return;
  auto most = std::max_element(
      named.begin(), named.end(),
      [](const PeerView& a, const PeerView& b) { return a.named_by < b.named_by; });
  out.peer = *most;
  if (!out.first) {
    out.verdict.summary +=
        "; they name " +
        (most->match.pod.empty() ? "node " + most->match.node : "pod " + most->match.pod) + " (" +
        std::to_string(most->named_by) + " logs)";
  }
}

}  // namespace

std::string CutText(std::string s, size_t n) {
  if (s.size() <= n) return s;
  size_t end = n;
  while (end > 0 && (static_cast<unsigned char>(s[end]) & 0xC0) == 0x80) --end;  // UTF-8 start
  return s.substr(0, end) + "...";
}

EvidenceLine EvidenceOf(const LogResult& log, const LogLine& line) {
  return {log.pod, log.container, line.number, CutText(line.text, kMaxLineText)};
}

SortedLogs SortLogs(const std::vector<LogResult>& logs, const std::vector<JobPod>& pods,
                    const JobScope& scope) {
  SortedLogs out;
  out.total = static_cast<int>(logs.size());
  for (const LogResult& l : logs) {
    if (!l.read) {
      ++out.unreadable;
      out.not_looked_at.push_back(LogName(l) + ": log not read: " + Printable(l.end.error));
      continue;
    }
    ++out.read;
    if (!l.end.error.empty()) {
      out.not_looked_at.push_back(LogName(l) + ": log read in part: " + Printable(l.end.error));
    }
    if (l.end.tail_cut) {
      out.not_looked_at.push_back(LogName(l) + ": the end of its log (beyond the byte limit)");
    }
    const LogView v{&l, scope.Pod(l.pod)};
    const FaultClass c = l.summary.classification.fault_class;
    if (IsFault(c)) {
      out.faults.push_back(v);
    } else if (IsSideEffect(l.summary.classification)) {
      out.side_effects.push_back(v);
    } else if (c == FaultClass::kHealthy) {
      ++out.healthy;
    }
  }
  std::stable_sort(out.faults.begin(), out.faults.end(), EarlierFailure);
  std::stable_sort(out.side_effects.begin(), out.side_effects.end(), EarlierFailure);
  // The first failure's own peers are counted by NameFirstFailure.
  for (const LogView& v : out.side_effects) {
    for (const PeerMatch& m : PeersOf(v, pods)) CountPeer(m, out.named);
  }
  return out;
}

LogFindings NameFirstFailure(const SortedLogs& logs, const std::vector<JobPod>& pods) {
  LogFindings out;
  out.verdict = {"log", logs.read > 0, FaultClass::kUnknown, "", ""};
  const std::string counts = LogCounts(logs);
  if (logs.faults.empty()) {
    WithoutFailure(logs, counts, out.verdict);
    NamePeer(logs.named, out);
    return out;
  }
  const Classification& c = logs.faults.front().c();
  out.first = FirstOf(logs.faults);
  out.verdict.fault_class = c.fault_class;
  out.verdict.cause = c.causes.empty() ? std::string() : c.causes.front().cause;
  out.verdict.summary = out.first->pod + " failed first (" + out.verdict.cause + "); " + counts;
  std::vector<PeerMatch> own = PeersOf(logs.faults.front(), pods);
  if (!own.empty()) {
    PeerView p{own.front(), 1};
    for (const PeerView& n : logs.named) {
      if (n.match.pod == p.match.pod && n.match.node == p.match.node) p.named_by += n.named_by;
    }
    out.peer = p;
  }
  NamePeer(logs.named, out);
  return out;
}

}  // namespace nccl_triage::triage
