#include "workload/ras_watch.h"

#include <algorithm>
#include <charconv>
#include <tuple>

#include "base/text.h"
#include "classify/rules.h"
#include "ras/netns.h"
#include "ras/protocol.h"

namespace nccl_triage::workload {
namespace {

constexpr RasOutcome kOutcomes[] = {RasOutcome::kOk, RasOutcome::kRefused, RasOutcome::kTimeout,
                                    RasOutcome::kProtocolError, RasOutcome::kError};

// "2.28.9" -> (2, 28); nullopt when the text does not start with two numbers.
std::optional<std::pair<int, int>> MajorMinor(std::string_view v) {
  int major = 0;
  int minor = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), major);
  if (ec != std::errc() || p == v.data() + v.size() || *p != '.') return std::nullopt;
  auto [q, ec2] = std::from_chars(p + 1, v.data() + v.size(), minor);
  if (ec2 != std::errc() || q == p + 1) return std::nullopt;
  return std::make_pair(major, minor);
}

// NCCL is mapped and may run a RAS thread: 2.24 or later, or a version the file name hides
// (pip's nvidia-nccl ships libnccl.so.2).
bool MayHaveRas(const std::optional<NcclLibrary>& nccl) {
  if (!nccl) return false;
  if (nccl->version.empty()) return true;
  auto mm = MajorMinor(nccl->version);
  return !mm || *mm >= std::make_pair(2, 24);
}

std::string Get(const std::map<std::string, std::string>& m, const std::string& key) {
  auto it = m.find(key);
  return it == m.end() ? std::string() : it->second;
}

}  // namespace

std::vector<RasTarget> RasTargets(const ScanResult& scan,
                                  const std::vector<ContainerVerdict>& containers,
                                  const std::string& root) {
  std::map<std::string, const ContainerFacts*> facts;
  for (const auto& c : scan.containers) facts[c.ref.container_id] = &c;
  std::map<std::string, RasTarget> by_uid;
  for (const auto& c : containers) {
    if (!c.pod.pod_found || by_uid.count(c.pod.pod_uid) != 0) continue;
    if (!MayHaveRas(c.nccl) || Get(c.environ, "NCCL_RAS_ENABLE") == "0") continue;
    auto f = facts.find(c.container_id);
    if (f == facts.end() || f->second->processes.empty()) continue;
    const ProcessFacts& p = f->second->processes.front();  // pid order
    if (!p.netns.ok()) continue;  // exited, or not readable: nothing to enter
    RasTarget t;
    t.uid = c.pod.pod_uid;
    t.ns = c.pod.namespace_name;
    t.pod = c.pod.pod;
    t.pid = p.pid;
    t.enter_netns = !scan.host_netns.ok() || *scan.host_netns.value != *p.netns.value;
    t.netns_path = (root == "/" ? std::string() : root) + "/proc/" + std::to_string(p.pid) +
                   "/ns/net";
    auto addr = ras::SplitHostPort(Get(c.environ, "NCCL_RAS_ADDR"));
    if (!addr.ok()) continue;  // NCCL refuses such an address too: no port to ask
    t.host = addr->first;
    t.port = addr->second;
    by_uid[t.uid] = std::move(t);
  }
  std::vector<RasTarget> out;
  for (auto& [uid, t] : by_uid) out.push_back(std::move(t));
  std::sort(out.begin(), out.end(), [](const RasTarget& a, const RasTarget& b) {
    return std::tie(a.ns, a.pod) < std::tie(b.ns, b.pod);
  });
  return out;
}

RasOutcome OutcomeOf(const Status& failed) {
  switch (failed.code()) {
    case StatusCode::kOk:
      return RasOutcome::kOk;
    case StatusCode::kUnavailable:
      return RasOutcome::kRefused;
    case StatusCode::kDeadlineExceeded:
      return RasOutcome::kTimeout;
    case StatusCode::kInvalidArgument:
      return RasOutcome::kProtocolError;
    case StatusCode::kNotFound:
    case StatusCode::kInternal:
      return RasOutcome::kError;
  }
  return RasOutcome::kError;
}

RasCounts CountRanks(const ras::Report& report) {
  RasCounts out;
  for (const auto& c : report.communicators) {
    out.unresponsive = std::max(out.unresponsive, c.unresponsive);
    out.dead = std::max(out.dead, c.dead);
    // Each collective's counts in this communicator: the ranks that report them (JSON, and the
    // ranks a text report names) and the text report's groups ("N ranks have launched up to X").
    std::map<std::string, std::pair<uint64_t, uint64_t>> range;  // op -> (lowest, highest)
    auto see = [&range](const std::string& op, uint64_t n) {
      auto [it, inserted] = range.emplace(op, std::make_pair(n, n));
      if (!inserted) {
        it->second.first = std::min(it->second.first, n);
        it->second.second = std::max(it->second.second, n);
      }
    };
    for (const auto& r : c.ranks) {
      for (const auto& [op, n] : r.op_counts) see(op, n);
    }
    for (const auto& g : c.count_groups) see(g.op, g.count);
    for (const auto& [op, lo_hi] : range) out.lag = std::max(out.lag, lo_hi.second - lo_hi.first);
  }
  return out;
}

std::optional<std::string> RasAnnotation(const ras::Judgement& judgement) {
  if (judgement.state == "ok" || judgement.state.empty()) return std::nullopt;
  std::string text = judgement.state + ": " + judgement.summary;
  for (char& ch : text) {
    if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f) ch = '?';  // the peer's bytes
  }
  if (text.size() > kMaxRasAnnotationBytes) {
    size_t cut = kMaxRasAnnotationBytes - 3;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;  // UTF-8
    text.resize(cut);
    text += "...";
  }
  return text;
}

std::optional<std::string> RasDiagnosticsAnnotation(const ras::DiagJudgement& judgement) {
  if (judgement.findings.empty()) return std::nullopt;
  ras::Judgement as_status;
  as_status.state = judgement.state;
  as_status.summary = judgement.summary;
  return RasAnnotation(as_status);
}

std::optional<AnnotationPatch> RasAnnotationChange(
    const std::optional<std::string>& wanted, const std::map<std::string, std::string>& current,
    std::string_view key_view) {
  const std::string key(key_view);
  auto now = current.find(key);
  if (wanted && (now == current.end() || now->second != *wanted)) {
    return AnnotationPatch{{key, *wanted}};
  }
  if (!wanted && now != current.end()) return AnnotationPatch{{key, std::nullopt}};
  return std::nullopt;
}

StatusOr<ras::DiagnosticsReply> NamespaceRasQuerier::Diagnostics(
    const RasTarget& target, const ras::QueryOptions& options) {
  if (!target.enter_netns) return ras::QueryRasDiagnostics(options);
  std::optional<StatusOr<ras::DiagnosticsReply>> reply;
  Status entered = ras::RunInNetworkNamespace(
      target.netns_path, [&] { reply = ras::QueryRasDiagnostics(options); });
  if (!entered.ok() || !reply) {
    return Status(StatusCode::kInternal, "entering the network namespace " + target.netns_path +
                                             ": " + entered.message());
  }
  return std::move(*reply);
}

StatusOr<ras::RawReply> NamespaceRasQuerier::Query(const RasTarget& target,
                                                   const ras::QueryOptions& options) {
  if (!target.enter_netns) return ras::QueryRas(options);
  std::optional<StatusOr<ras::RawReply>> reply;
  Status entered =
      ras::RunInNetworkNamespace(target.netns_path, [&] { reply = ras::QueryRas(options); });
  if (!entered.ok() || !reply) {
    return Status(StatusCode::kInternal, "entering the network namespace " + target.netns_path +
                                             ": " + entered.message());
  }
  return std::move(*reply);
}

RasWatch::RasWatch(RasConfig config, RasQuerier& querier, Clock& clock, Logger& log)
    : config_(config), querier_(querier), clock_(clock), log_(log) {
  for (RasOutcome o : kOutcomes) totals_[std::string(ToString(o))] = 0;
  if (config_.diagnostics) {
    for (RasOutcome o : kOutcomes) diagnostics_totals_[std::string(ToString(o))] = 0;
    diagnostics_totals_["busy"] = 0;
    diagnostics_totals_["unsupported"] = 0;
  }
}

RasPodResult RasWatch::Ask(const RasTarget& t, std::chrono::milliseconds deadline, Memory& m) {
  const auto until = clock_.Now() + deadline;
  RasPodResult r;
  r.target = t;
  ras::QueryOptions o;
  o.host = t.host;
  o.port = t.port;
  o.deadline = deadline;
  o.connect_timeout = std::min(o.connect_timeout, deadline);
  o.max_reply_bytes = size_t{4} << 20;  // a job of tens of thousands of ranks fits
  const std::string who = "pod " + t.ns + "/" + t.pod + " (pid " + std::to_string(t.pid) + ")";
  auto reply = querier_.Query(t, o);
  StatusOr<ras::Report> report = reply.ok() ? (reply->format == ras::ReplyFormat::kJson
                                                   ? ras::ParseJsonReport(reply->body)
                                                   : ras::ParseTextReport(reply->body))
                                            : StatusOr<ras::Report>(reply.status());
  if (!reply.ok()) {
    r.outcome = OutcomeOf(reply.status());
    r.error = reply.status().message();
  } else if (!report.ok()) {
    r.outcome = RasOutcome::kProtocolError;
    r.error = "the status report does not parse: " + report.status().message();
  } else {
    r.outcome = RasOutcome::kOk;
  }
  ++totals_[std::string(ToString(r.outcome))];
  if (r.outcome != RasOutcome::kOk) {
    const std::string line = "RAS query of " + who + ": " + std::string(ToString(r.outcome)) +
                             ": " + r.error;
    if (m.streak != line) {
      log_.Info("ras", line);
    } else {
      log_.Debug("ras", line);
    }
    m.streak = line;
    return r;
  }
  if (!m.streak.empty()) log_.Info("ras", "RAS query of " + who + " answered again");
  m.streak.clear();
  r.judgement = m.report ? ras::JudgeTwice(*m.report, *report) : ras::Judge(*report);
  // A lag on the first answer alone is not yet stuck: a running job shows one too.
  bool unconfirmed_lag = !m.report && r.judgement.state == "stuck";
  for (const auto& f : r.judgement.findings) {
    if (f.kind != ras::FindingKind::kLagging && f.kind != ras::FindingKind::kError &&
        f.kind != ras::FindingKind::kStatus) {
      unconfirmed_lag = false;
    }
  }
  r.annotate = !unconfirmed_lag;
  r.annotation = RasAnnotation(r.judgement);
  const RasCounts counts = CountRanks(*report);
  r.status.ns = t.ns;
  r.status.pod = t.pod;
  r.status.state = r.judgement.state;
  r.status.ranks_unresponsive = counts.unresponsive;
  r.status.ranks_dead = counts.dead;
  r.status.collective_lag = counts.lag;
  r.status.answered_at_unix_ms = clock_.NowUnixMs();
  if (m.status) {  // the last diagnostics answer stands until a new one
    r.status.diagnostics_findings = m.status->diagnostics_findings;
    r.status.diagnostics_causes = m.status->diagnostics_causes;
  }
  m.report = std::move(report).value();
  Diagnose(t, until, who, m, r);
  m.status = r.status;
  log_.Debug("ras", "RAS query of " + who + ": " + r.judgement.state + " (" +
                        r.judgement.summary + ")");
  return r;
}

void RasWatch::Diagnose(const RasTarget& t, Clock::TimePoint until, const std::string& who,
                        Memory& m, RasPodResult& r) {
  if (!config_.diagnostics || m.no_diagnostics) return;
  const auto now = clock_.Now();
  const auto interval = std::chrono::seconds(config_.diagnostics_interval_seconds);
  if (m.diagnosed && now - *m.diagnosed < interval) return;
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - now);
  if (left <= std::chrono::milliseconds(0)) return;  // the status query took it all: next time
  ras::QueryOptions o;
  o.host = t.host;
  o.port = t.port;
  o.deadline = left;
  o.connect_timeout = std::min(o.connect_timeout, left);
  o.max_reply_bytes = size_t{1} << 20;  // a few lines per check and communicator
  auto reply = querier_.Diagnostics(t, o);
  std::string line;
  if (!reply.ok() && reply.status().code() == StatusCode::kNotFound) {
    r.diagnostics = "unsupported";
    m.no_diagnostics = true;
    log_.Info("ras", "RAS diagnostics of " + who + ": " + reply.status().message() +
                         "; not asked again");
  } else if (!reply.ok()) {
    r.diagnostics = std::string(ToString(OutcomeOf(reply.status())));
    r.diagnostics_error = reply.status().message();
    line = "RAS diagnostics of " + who + ": " + r.diagnostics + ": " + r.diagnostics_error;
  } else if (reply->busy) {
    r.diagnostics = "busy";  // another client's request runs: asked again at the next query
    log_.Debug("ras", "RAS diagnostics of " + who + ": busy");
  } else {
    r.diagnostics = "ok";
    m.diagnosed = now;
    r.diagnostics_judgement =
        ras::JudgeDiagnostics(ras::ParseDiagnostics(reply->lines), *ActiveRules());
    r.diagnostics_annotation = RasDiagnosticsAnnotation(r.diagnostics_judgement);
    r.status.diagnostics_findings = r.diagnostics_judgement.faults;
    r.status.diagnostics_causes = Join(r.diagnostics_judgement.causes, ",");
    log_.Debug("ras", "RAS diagnostics of " + who + ": " + r.diagnostics_judgement.state + " (" +
                          r.diagnostics_judgement.summary + ")");
  }
  ++diagnostics_totals_[r.diagnostics];
  if (!line.empty() && line != m.diagnostics_streak) log_.Info("ras", line);
  m.diagnostics_streak = line;
}

RasCycle RasWatch::RunCycle(const std::vector<RasTarget>& targets) {
  // Pods that are gone are forgotten (a new pod of the same name starts afresh).
  std::map<std::string, Memory> kept;
  for (const auto& t : targets) {
    auto it = pods_.find(t.uid);
    if (it != pods_.end()) kept[t.uid] = std::move(it->second);
  }
  pods_ = std::move(kept);

  const auto start = clock_.Now();
  const auto interval = std::chrono::seconds(config_.interval_seconds);
  std::vector<const RasTarget*> due;
  for (const auto& t : targets) {
    const Memory& m = pods_[t.uid];
    if (!m.asked || start - *m.asked >= interval) due.push_back(&t);
  }
  // The longest-waiting first: never asked, then by the time of the last query.
  std::stable_sort(due.begin(), due.end(), [this](const RasTarget* a, const RasTarget* b) {
    const auto& x = pods_[a->uid].asked;
    const auto& y = pods_[b->uid].asked;
    if (x.has_value() != y.has_value()) return !x.has_value();
    return x && *x < *y;
  });

  RasCycle cycle;
  const auto budget = std::chrono::milliseconds(config_.cycle_budget_ms);
  size_t next = 0;
  for (; next < due.size(); ++next) {
    if (static_cast<int>(cycle.asked.size()) >= config_.max_pods_per_cycle) break;
    const auto used = clock_.Now() - start;
    if (used >= budget) break;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(budget - used);
    const auto deadline = std::min(std::chrono::milliseconds(config_.timeout_ms), left);
    Memory& m = pods_[due[next]->uid];
    m.asked = clock_.Now();
    cycle.asked.push_back(Ask(*due[next], deadline, m));
  }
  cycle.due_left = static_cast<int>(due.size() - next);
  if (cycle.due_left > 0) {
    log_.Debug("ras", std::to_string(cycle.due_left) +
                          " pod(s) left for the next pass (ras.max_pods_per_cycle or "
                          "ras.cycle_budget_ms reached)");
  }
  return cycle;
}

std::vector<RasJobStatus> RasWatch::Jobs() const {
  std::vector<RasJobStatus> out;
  for (const auto& [uid, m] : pods_) {
    if (m.status) out.push_back(*m.status);
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return std::tie(a.ns, a.pod) < std::tie(b.ns, b.pod);
  });
  return out;
}

}  // namespace nccl_triage::workload
