#include "classify/classifier_rank.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "classify/line_text.h"
#include "core/catalogue.h"
#include "core/ids.h"

namespace nccl_triage::classify {
namespace {

// Orders by tier, then by time: timestamps when every item of the tier has one (a rank that
// failed first is the primary root), else line numbers; then by `tie`.
template <typename T, typename TierFn, typename TsFn, typename LineFn, typename TieFn>
void SortByTierAndTime(std::vector<T>& v, TierFn tier, TsFn ts, LineFn line, TieFn tie) {
  std::map<int, bool> all_ts;
  for (const auto& x : v) {
    auto [it, inserted] = all_ts.emplace(tier(x), true);
    if (ts(x).empty()) it->second = false;
  }
  std::stable_sort(v.begin(), v.end(), [&](const T& a, const T& b) {
    if (tier(a) != tier(b)) return tier(a) < tier(b);
    if (all_ts[tier(a)] && ts(a) != ts(b)) return ts(a) < ts(b);
    if (line(a) != line(b)) return line(a) < line(b);
    return tie(a, b);
  });
}

double Round2(double x) { return std::round(x * 100.0) / 100.0; }

// What decides which causes stay.
struct KeepPolicy {
  bool any_strong = false;    // a cause at root or secondary tier
  bool keep_context = false;  // context causes explain this run
};

// Context stays only when the run failed and IB was wanted (forced, or an IB call failed), or
// when IB was asked for and the run fell back to sockets anyway.
KeepPolicy DecidePolicy(const CauseMap& causes, const RunOutcome& outcome, const EnvFacts& env,
                        const NetworkFacts& net) {
  KeepPolicy policy;
  bool strong_ib = false;
  for (const auto& [id, acc] : causes) {
    if (acc.tier <= kTierSecondary) {
      policy.any_strong = true;
      if (acc.rule != nullptr && acc.rule->verdict == FaultClass::kIbResource) strong_ib = true;
    }
  }
  // IB is wanted when it is forced (NCCL_NET=IB), when an IB call failed, or when the job's
  // settings ask for it (NCCL_IB_HCA names HCAs, NCCL_IB_DISABLE set to 0 on purpose), or
  // when the image loaded an RDMA network plugin (built to run on InfiniBand).
  bool ib_asked = net.rdma_plugin_line.has_value();
  for (size_t i = 0; i < env.names.size(); ++i) {
    if (env.names[i] == "NCCL_IB_HCA" ||
        (env.names[i] == "NCCL_IB_DISABLE" && (env.values[i] == "0" || env.values[i] == "0."))) {
      ib_asked = true;
    }
  }
  const bool ib_wanted = strong_ib || IEqualsPrefix(env.net, "IB") || ib_asked;
  const bool fell_back = ib_asked && outcome.socket_network && !outcome.ib_in_use;
  policy.keep_context = ib_wanted && (!outcome.success || policy.any_strong || fell_back);
  return policy;
}

bool Keeps(const std::string& id, const CauseAcc& acc, const KeepPolicy& policy,
           const CauseTable& table, const RunOutcome& outcome, const RunProgress& run,
           const NetworkFacts& net) {
  if (acc.tier == kTierContext && !policy.keep_context) return false;
  if (acc.tier == kTierNone) return false;
  // INFO that names a likely cause: only for a run that did not complete, and only where its
  // condition holds (the network it needs; GDR off on every HCA while IB was used).
  const bool derived = table.keep_unless_completed.count(id) > 0;
  if (outcome.set_up && table.path_only.count(id) > 0) return false;
  if (acc.tier == kTierSuspect && (derived ? outcome.completed : outcome.set_up)) return false;
  // A line of another layer (a rule that reads only text lines: libfabric, libmlx5, a
  // framework's CUDA error) before NCCL's proof that the collectives finished did not stop
  // them: the run is judged by that proof.
  if (outcome.completed && acc.rule != nullptr && acc.rule->lines == kTextLine &&
      acc.order_line < run.last_success_line) {
    return false;
  }
  if (acc.rule != nullptr && !acc.rule->network.empty() &&
      !(outcome.socket_network ? IEqualsPrefix(acc.rule->network, "SOCKET")
                               : IEqualsPrefix(net.network, ToUpper(acc.rule->network)))) {
    return false;
  }
  if (id == ids::kIbPeermem && acc.tier == kTierSuspect && !derived &&
      (net.gdr_enabled || net.gdrdma || !outcome.ib_in_use)) {
    return false;
  }
  // Wrappers (`[Proxy Service] Failed to execute operation`) only repeat a failure that a
  // real cause already names; peer exits stay, they show which ranks saw it.
  return !(policy.any_strong && acc.tier == kTierFollow && acc.rule != nullptr &&
           acc.rule->strength == Strength::kFollow);
}

// A rule that holds after an NCCL_* setting shows that line too, first.
void ShowSettingLines(const Rule& rule, const EnvFacts& env, CauseAcc& k) {
  for (size_t i = 0; i < env.names.size(); ++i) {
    const bool shown =
        std::any_of(k.evidence.begin(), k.evidence.end(),
                    [&](const LogLine& l) { return l.number == env.lines[i].number; });
    if (!shown && std::find(rule.after_env.begin(), rule.after_env.end(), env.names[i]) !=
                      rule.after_env.end()) {
      k.evidence.insert(k.evidence.begin(), env.lines[i]);
      if (k.evidence.size() > kMaxEvidence) k.evidence.pop_back();
    }
  }
}

// Result codes on ranks without any WARN: weak evidence, only when nothing else explains a
// failed run (`-> 3` from net_ib when IB is disabled is routine in successful runs).
void AddOrphanCode(const RankFacts& ranks, bool success, KeptMap& kept) {
  if (!ranks.roots.empty() || success || ranks.orphan_code <= 0 || !kept.empty()) return;
  const ResultCodeCause* rc = FindResultCode(ranks.orphan_code);
  if (rc == nullptr) return;
  CauseAcc acc;
  acc.tier = kTierWeak;
  acc.confidence = 0.25;
  acc.order_line = ranks.orphan_line.number;
  acc.evidence.push_back(ranks.orphan_line);
  acc.matches = 1;
  acc.code_verdict = rc->verdict;
  kept.emplace(std::string(rc->cause), std::move(acc));
}

// A back-trace that starts in a known component, on a rank without a WARN, in a run that did
// not complete. Channel lines do not count against it: ranks connect channels before one of
// them fails.
void AddTraceRoot(const RankFacts& ranks, const RunProgress& run, std::span<const Rule> rules,
                  KeptMap& kept) {
  if (!ranks.trace_root || run.init_complete || run.tests_passed) return;
  const TraceRoot& trace = *ranks.trace_root;
  const Rule& r = rules[trace.rule];
  CauseAcc& acc = kept[std::string(r.cause)];
  if (acc.tier <= kTierTrace) return;
  acc.tier = kTierTrace;
  acc.rule = &r;
  acc.confidence = std::max(acc.confidence, r.confidence * 0.8);
  acc.order_line = trace.line.number;
  acc.evidence.insert(acc.evidence.begin(), trace.line);
  if (acc.evidence.size() > kMaxEvidence) acc.evidence.pop_back();
  ++acc.matches;
}

// A specific cause takes the place of the general one it refines.
void ApplyRefinements(KeptMap& kept) {
  for (const auto& ref : Refinements()) {
    auto g = kept.find(ref.general.str());
    auto s = kept.find(ref.specific.str());
    if (g == kept.end() || s == kept.end() || g->second.tier > kTierSecondary) continue;
    // The specific takes the general's place in the order when it stands behind it (a lower
    // tier, or the same tier on a later line: the explanation printed after the failure).
    const bool behind = s->second.tier > g->second.tier ||
                        (s->second.tier == g->second.tier &&
                         s->second.order_line > g->second.order_line);
    if (behind) {
      s->second.tier = g->second.tier;
      s->second.order_line = g->second.order_line;
      s->second.order_ts = g->second.order_ts;
    }
    s->second.refined = true;
    s->second.confidence = std::max(s->second.confidence, g->second.confidence);
  }
}

}  // namespace

RunOutcome JudgeRun(const RunProgress& run, const NetworkFacts& net) {
  RunOutcome out;
  out.success = run.init_complete || run.channels || run.tests_passed;
  // Init COMPLETE and channel lines alone are not proof: ranks connect before one of them
  // fails, and the log of a rank whose peer was killed, or of a job that hung, ends right after.
  const bool every_rank_torn_down = run.teardown && run.ranks_torn_down >= run.ranks_initialised;
  // A WARN after init means the run went on to fail, even when a teardown follows it.
  const size_t clean_until = run.init_complete
                                 ? std::min(run.last_init_line, run.last_success_line)
                                 : run.last_success_line;
  out.completed = (every_rank_torn_down || run.tests_passed || run.progress_seen) &&
                  run.last_success_line > 0 && run.last_warn_line <= clean_until;
  const size_t last_setup_line = std::max(run.last_init_line, run.last_success_line);
  out.set_up = (run.init_complete || run.teardown || run.tests_passed || run.progress_seen) &&
               last_setup_line > 0 && run.last_warn_line <= last_setup_line;
  const auto& transports = net.transports;
  out.socket_network = IEqualsPrefix(net.network, "SOCKET") ||
                       (net.network.empty() && std::find(transports.begin(), transports.end(),
                                                         "NET/Socket") != transports.end());
  out.ib_in_use = net.ib_devices_used ||
                  std::find(transports.begin(), transports.end(), "NET/IB") != transports.end();
  return out;
}

KeptMap KeepCauses(const CauseTable& table, const RunOutcome& outcome, const RunProgress& run,
                   const NetworkFacts& net, const EnvFacts& env, const RankFacts& ranks,
                   std::span<const Rule> rules) {
  CauseMap causes = table.causes;
  // An HCA NCCL could not open is skipped; it is the fault only when NCCL then used no HCA at
  // all (it fell back to sockets, or IB was missing), not when it went on with other HCAs.
  if (!net.ib_devices_used) {
    for (auto& [id, acc] : causes) {
      if (acc.tier == kTierContext && acc.rule != nullptr &&
          acc.rule->cause == ids::kContainerRdmaDevices) {
        acc.tier = kTierSecondary;
      }
    }
  }
  const KeepPolicy policy = DecidePolicy(causes, outcome, env, net);
  KeptMap kept;
  for (const auto& [id, acc] : causes) {
    if (!Keeps(id, acc, policy, table, outcome, run, net)) continue;
    CauseAcc& k = kept.emplace(id, acc).first->second;
    if (acc.rule != nullptr && !acc.rule->after_env.empty()) ShowSettingLines(*acc.rule, env, k);
  }
  AddOrphanCode(ranks, outcome.success, kept);
  AddTraceRoot(ranks, run, rules, kept);
  ApplyRefinements(kept);
  return kept;
}

std::vector<ClassifiedCause> RankCauses(const KeptMap& kept) {
  struct Ranked {
    const std::string* id;
    const CauseAcc* acc;
  };
  std::vector<Ranked> ranked;
  for (const auto& [id, acc] : kept) ranked.push_back({&id, &acc});
  SortByTierAndTime(
      ranked, [](const Ranked& r) { return r.acc->tier; },
      [](const Ranked& r) -> const std::string& { return r.acc->order_ts; },
      [](const Ranked& r) { return r.acc->order_line; },
      [](const Ranked& a, const Ranked& b) {
        if (a.acc->refined != b.acc->refined) return a.acc->refined;
        if (a.acc->summary != b.acc->summary) return a.acc->summary;
        if (a.acc->confidence != b.acc->confidence) return a.acc->confidence > b.acc->confidence;
        return *a.id < *b.id;
      });
  std::vector<ClassifiedCause> out;
  for (const auto& r : ranked) {
    ClassifiedCause c;
    c.cause = *r.id;
    c.fault_class = r.acc->rule != nullptr ? r.acc->rule->verdict : r.acc->code_verdict;
    const CauseInfo* info = FindCause(*r.id);
    c.fix_class = info != nullptr ? info->fault_class : FaultClass::kUnknown;
    c.confidence = Round2(r.acc->confidence);
    c.evidence = r.acc->evidence;
    c.diagnostics = r.acc->tier == kTierDiag;
    if (r.acc->rule != nullptr && !r.acc->rule->remedy.empty()) {
      c.remedy = std::string(r.acc->rule->remedy);
    } else if (info != nullptr) {
      c.remedy = std::string(info->remedy);
    }
    out.push_back(std::move(c));
  }
  return out;
}

void FillRoots(const RankFacts& ranks, bool success, Classification& out) {
  std::vector<RootCandidate> root_list = ranks.roots.empty() ? ranks.text_roots : ranks.roots;
  SortByTierAndTime(
      root_list, [](const RootCandidate& r) { return r.tier; },
      [](const RootCandidate& r) -> const std::string& { return r.ts; },
      [](const RootCandidate& r) { return r.line.number; },
      [](const RootCandidate&, const RootCandidate&) { return false; });
  // Ranks are told apart by their raw text, but shown sanitized: two ranks that differ only in
  // bytes Sanitize replaces are one rank in the output (found by classify_log_fuzz).
  std::set<std::string> shown;
  for (auto& r : root_list) {
    std::string rank = Sanitize(r.rank);
    if (shown.insert(rank).second) out.roots.push_back({std::move(rank), std::move(r.line)});
  }
  // The ncclResult_t that reached the API: first `-> N` after the primary rank's WARN.
  for (const auto& r : root_list) {
    const RankState* rs = ranks.Find(r.rank);
    if (rs != nullptr && rs->code_after_warn > 0) {
      out.result_code = rs->code_after_warn;
      break;
    }
  }
  if (!out.result_code && ranks.text_code > 0) out.result_code = ranks.text_code;
  if (!out.result_code && !success && ranks.orphan_code > 0) out.result_code = ranks.orphan_code;
}

}  // namespace nccl_triage::classify
