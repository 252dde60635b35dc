#include "classify/classifier_explain.h"

#include <algorithm>
#include <string>

#include "classify/line_text.h"
#include "core/catalogue.h"

namespace nccl_triage::classify {
namespace {

std::string PathSentence(FaultClass c) {
  switch (c) {
    case FaultClass::kIbResource:
      return "the failing call is on the IB path (ibverbs or NET/IB): ib_resource";
    case FaultClass::kArchitecture:
      return "the failing call is outside the IB path (socket, bootstrap, shared memory, CUDA, "
             "NCCL version or setup): architecture";
    default:
      return "the failing call is not named";
  }
}

std::string Joined(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& t : items) out += (out.empty() ? "" : ", ") + t;
  return out;
}

size_t FirstEvidenceLine(const ClassifiedCause& c) {
  return c.evidence.empty() ? 0 : c.evidence.front().number;
}

// A cause at root or secondary tier (or a failed diagnostics check) names the failing call.
void ExplainStrong(const KeptMap& kept, Classification& out) {
  const ClassifiedCause& top = out.causes.front();
  const CauseAcc& acc = kept.at(top.cause);
  std::string who;
  if (acc.tier == kTierDiag) {
    who = "NCCL's diagnostics report (line " + std::to_string(acc.order_line) + ") names it";
  } else if (!out.roots.empty() && acc.tier == kTierRoot) {
    who = "rank " + (out.roots.front().rank.empty() ? std::string("-") : out.roots.front().rank) +
          " failed first (line " + std::to_string(out.roots.front().line.number) + ")";
  } else {
    who = "line " + std::to_string(FirstEvidenceLine(top));
  }
  out.fault_class = top.fault_class;
  out.reason = who + ": " + top.cause + "; " + PathSentence(top.fault_class);
}

void ExplainTrace(const TraceRoot& trace, Classification& out) {
  const ClassifiedCause& top = out.causes.front();
  out.fault_class = top.fault_class;
  out.reason = "no WARN names the failing call, but the back-trace of rank " +
               Sanitize(trace.rank) + " starts in " + Sanitize(Cap(trace.line.text, 160)) +
               " (line " + std::to_string(trace.line.number) + "): " + top.cause + "; " +
               PathSentence(top.fault_class) +
               "; confirm with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET";
  if (!out.result_code) out.result_code = trace.code;
}

// No line names a failing call and the run did not complete; INFO lines show what is likely
// wrong.
void ExplainSuspect(Classification& out) {
  const ClassifiedCause& top = out.causes.front();
  const CauseInfo* info = FindCause(top.cause);
  out.fault_class = top.fault_class;
  out.reason = "no line names a failing call and the run did not complete, but line " +
               std::to_string(FirstEvidenceLine(top)) + " shows " +
               (info != nullptr ? std::string(info->title) : top.cause) + ": " + top.cause +
               "; " + PathSentence(top.fault_class);
}

// NCCL_NET=IB forced and the IB path missing, in INFO lines only (the log was cut before the
// WARN, or NCCL printed none): the INFO names the missing piece.
void ExplainContext(const std::string& env_net, const NetworkFacts& net, Classification& out) {
  const ClassifiedCause& top = out.causes.front();
  out.fault_class = top.fault_class;
  const std::string asked =
      !env_net.empty() ? "NCCL_NET=" + Sanitize(env_net)
      : net.rdma_plugin_line
          ? "an RDMA net plugin loaded at line " + std::to_string(net.rdma_plugin_line->number)
          : std::string("by the job's NCCL_IB_* settings");
  out.reason = "IB was wanted (" + asked + ") and line " + std::to_string(FirstEvidenceLine(top)) +
               " says why it is missing: " + top.cause + "; no WARN named the failing call";
}

void ExplainCompleted(const ExplainInputs& in, Classification& out) {
  const RunProgress& run = in.run;
  out.fault_class = FaultClass::kHealthy;
  const std::string via = Joined(in.net.transports);
  const std::string proof =
      run.tests_passed
          ? "a finished collective's result at line " + std::to_string(run.last_success_line)
      : run.progress_seen
          ? "the program's steps after NCCL set up, at line " +
                std::to_string(run.last_success_line)
      : run.init_complete ? "Init COMPLETE and Destroy COMPLETE"
                          : "Destroy COMPLETE";
  out.reason = "run completed (" + proof + (via.empty() ? "" : ", channels via " + via) + ")";
  if (in.counts.unmatched_warns > 0) {
    out.reason += "; " + std::to_string(in.counts.unmatched_warns) +
                  " WARN line(s) matched no rule and no error code followed them";
  } else {
    out.reason += " without a WARN";
  }
}

void ExplainWeak(Classification& out) {
  const ClassifiedCause& top = out.causes.front();
  out.fault_class = top.fault_class;
  out.reason = "only an error code or its text (" + top.cause +
               "), no WARN naming the failing call: rerun with NCCL_DEBUG=INFO "
               "NCCL_DEBUG_SUBSYS=INIT,NET, and run the A/B probe (the job once more with "
               "NCCL_IB_DISABLE=1: works -> the IB path, still fails -> architecture)";
}

// NCCL set up and no line names a failure, but nothing shows that the run worked either: a job
// that hung, or a log cut before the failure, looks like this. Say what was seen.
void ExplainUnproven(const ExplainInputs& in, Classification& out) {
  const RunProgress& run = in.run;
  out.fault_class = FaultClass::kUnknown;
  std::string seen = std::to_string(in.counts.nccl) + " NCCL line(s)";
  if (!in.nccl_version.empty()) seen += ", NCCL " + in.nccl_version;
  if (!in.net.network.empty()) seen += ", network " + in.net.network;
  const std::string via = Joined(in.net.transports);
  if (!via.empty()) seen += ", channels via " + via;
  if (in.counts.diag > 0) seen += ", a diagnostics report with no failed check";
  if (run.init_complete) seen += ", Init COMPLETE at line " + std::to_string(run.last_init_line);
  if (run.teardown) seen += ", Destroy COMPLETE at line " + std::to_string(run.last_success_line);
  if (run.last_warn_line > 0) seen += ", last WARN at line " + std::to_string(run.last_warn_line);
  std::string why;
  if (run.teardown && run.last_warn_line > run.last_success_line) {
    why = "a WARN came after the last teardown";
  } else if (run.teardown) {
    why = std::to_string(run.ranks_initialised - run.ranks_torn_down) + " of " +
          std::to_string(run.ranks_initialised) +
          " initialised rank(s) never tore down: the log ends before the job did";
  } else if (run.init_complete) {
    why = "the log ends after Init COMPLETE without a finished collective or a teardown "
          "(Destroy COMPLETE): it ends before the job did (a hang, a killed peer, a cut log)";
  } else {
    why = "no Init COMPLETE and no finished collective";
  }
  out.reason = "no failure named and no proof that the run worked (" + seen + "): " + why +
               "; if the job hung or failed later, classify the rest of the log";
}

// The first WARN that no rule named, by line; nullptr when every first WARN was named.
const RootCandidate* FirstUnmatched(const std::vector<RootCandidate>& roots) {
  const RootCandidate* first = nullptr;
  for (const auto& r : roots) {
    if (!r.matched && (first == nullptr || r.line.number < first->line.number)) first = &r;
  }
  return first;
}

// An unmatched first WARN followed by an error code on its rank.
bool UnmatchedFailed(const RankFacts& ranks) {
  bool failed = false;
  for (const auto& r : ranks.roots) {
    const RankState* rs = ranks.Find(r.rank);
    if (!r.matched && rs != nullptr && rs->code_after_warn > 0) failed = true;
  }
  return failed;
}

// The reasons when no kept cause names a failing call.
void ExplainWithoutNamedCause(const ExplainInputs& in, Classification& out, bool has_weak) {
  const LineCounts& counts = in.counts;
  const RootCandidate* first_unmatched = FirstUnmatched(in.ranks.roots);
  if (in.completed && !has_weak && !UnmatchedFailed(in.ranks)) {
    ExplainCompleted(in, out);
  } else if (has_weak) {
    ExplainWeak(out);
  } else if (first_unmatched != nullptr) {
    out.fault_class = FaultClass::kUnknown;
    out.reason = "the first WARN (line " + std::to_string(first_unmatched->line.number) +
                 ") matches no rule: " +
                 Sanitize(Cap(first_unmatched->line.text, 200));  // re-sanitise the cut
  } else if ((in.run.setup_seen || counts.nccl >= 2) && out.causes.empty() &&
             in.ranks.orphan_code < 0 && in.ranks.text_code < 0) {
    ExplainUnproven(in, out);
  } else if (counts.nccl > 0) {
    out.fault_class = FaultClass::kUnknown;
    out.reason =
        "NCCL lines but no WARN, no error code and no success marker (Init COMPLETE, channel "
        "lines): the log is incomplete or NCCL_DEBUG was not INFO";
  } else {
    out.fault_class = FaultClass::kUnknown;
    out.reason = "no NCCL log lines in " + std::to_string(counts.lines) + " line(s)";
    if (counts.binary > 0) out.reason += " (the input looks binary)";
  }
}

}  // namespace

void Explain(const ExplainInputs& in, const KeptMap& kept, Classification& out) {
  auto has_tier = [&](int tier) {
    return std::any_of(out.causes.begin(), out.causes.end(),
                       [&](const auto& c) { return kept.at(c.cause).tier == tier; });
  };
  const bool has_follow = has_tier(kTierFollow);
  const bool has_weak = has_tier(kTierWeak);
  const int top_tier = out.causes.empty() ? kTierNone : kept.at(out.causes.front().cause).tier;
  if (in.counts.lines == 0) {
    out.fault_class = FaultClass::kUnknown;
    out.reason = "empty input: no lines to classify";
  } else if (!out.causes.empty() && top_tier <= kTierSecondary) {
    ExplainStrong(kept, out);
  } else if (top_tier == kTierTrace) {
    ExplainTrace(*in.ranks.trace_root, out);
  } else if (top_tier == kTierSuspect) {
    ExplainSuspect(out);
  } else if (top_tier == kTierContext) {
    ExplainContext(in.env_net, in.net, out);
  } else if (has_follow) {
    out.fault_class = FaultClass::kUnknown;
    out.reason =
        "only side effects of a failure elsewhere (a peer exited, a proxy wrapper): the log of "
        "the rank that failed first is not in this input";
  } else {
    ExplainWithoutNamedCause(in, out, has_weak);
  }
}

}  // namespace nccl_triage::classify
