#include "core/rank_merge.h"

#include <algorithm>
#include <string>

#include "core/catalogue.h"
#include "core/ids.h"

namespace nccl_triage {
namespace {

// ncclRemoteError: the call failed because the other side went away (nccl.h).
constexpr int kNcclRemoteError = 6;

bool Named(const ClassifiedCause& c) { return !HasTrait(c.cause, kConsequenceOnly); }

// 2: the log names a cause of its own; 1: only consequences (peer exited, timeout); 0: nothing.
int Specificity(const ProbeResult& r) {
  if (!r.classification || r.classification->causes.empty()) return 0;
  const auto& causes = r.classification->causes;
  return std::any_of(causes.begin(), causes.end(), Named) ? 2 : 1;
}

// The rule of rank_merge.h: a higher rank explains the probe.
int Weight(const ProbeResult& r) {
  switch (r.outcome) {
    case ProbeOutcome::kCrashed:
      return 7;
    case ProbeOutcome::kFail:
      if (FailedBecauseOfItsPeer(r)) return 2;
      return Specificity(r) == 2 ? 6 : 4;
    case ProbeOutcome::kUnavailable:
      return 5;
    case ProbeOutcome::kTimeout:
      return 3;
    case ProbeOutcome::kNotRun:
      return 1;
    case ProbeOutcome::kPass:
      return 0;
  }
  return 0;
}

ProbeResult MergePasses(const std::vector<ProbeResult>& ranks) {
  ProbeResult merged = ranks.front();
  for (const auto& r : ranks) {
    merged.busbw_bytes_per_second =
        std::min(merged.busbw_bytes_per_second, r.busbw_bytes_per_second);
    merged.algbw_bytes_per_second =
        std::min(merged.algbw_bytes_per_second, r.algbw_bytes_per_second);
    merged.time_seconds = std::max(merged.time_seconds, r.time_seconds);
    merged.duration_seconds = std::max(merged.duration_seconds, r.duration_seconds);
    // Either rank falling back to sockets counts.
    if (r.transport != merged.transport && !r.transport.empty() && r.transport != "NET/IB") {
      merged.transport = r.transport;
    }
  }
  return merged;
}

}  // namespace

bool FailedBecauseOfItsPeer(const ProbeResult& r) {
  if (r.outcome != ProbeOutcome::kFail) return false;
  if (r.nccl_result == kNcclRemoteError) return true;
  if (r.detail.starts_with("no unique id") || r.detail.starts_with("stopped: ")) return true;
  return Specificity(r) == 1;
}

ProbeResult MergeRankResults(const std::vector<ProbeResult>& ranks) {
  if (ranks.empty()) return ProbeResult{};
  const bool all_passed = std::all_of(ranks.begin(), ranks.end(), [](const ProbeResult& r) {
    return r.outcome == ProbeOutcome::kPass;
  });
  if (all_passed) return MergePasses(ranks);

  size_t root = 0;
  for (size_t i = 1; i < ranks.size(); ++i) {
    const int w = Weight(ranks[i]);
    const int best = Weight(ranks[root]);
    if (w > best || (w == best && Specificity(ranks[i]) > Specificity(ranks[root]))) root = i;
  }
  ProbeResult merged = ranks[root];
  merged.detail = "rank " + std::to_string(merged.rank) + ": " + merged.detail;
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (i == root || !ranks[i].classification) continue;
    for (const auto& c : ranks[i].classification->causes) {
      if (!Named(c)) continue;
      if (!merged.classification) {
        // The explaining rank's log named nothing: the first peer that does classifies the probe.
        merged.classification = *ranks[i].classification;
        merged.classification->causes.clear();
      }
      auto& mine = merged.classification->causes;
      if (std::none_of(mine.begin(), mine.end(),
                       [&](const ClassifiedCause& m) { return m.cause == c.cause; })) {
        mine.push_back(c);
      }
    }
  }
  return merged;
}

}  // namespace nccl_triage
