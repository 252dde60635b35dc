#include "classify/classifier_causes.h"

#include <utility>

#include "classify/line_text.h"

namespace nccl_triage::classify {

int TierFor(Strength s, bool first_warn, bool warn_line) {
  switch (s) {
    case Strength::kRoot:
    case Strength::kGeneric:
      return first_warn && warn_line ? kTierRoot : kTierSecondary;
    case Strength::kSuspect:
      return kTierSuspect;
    case Strength::kContext:
      return kTierContext;
    case Strength::kFollow:
    case Strength::kPeer:
      return kTierFollow;
    case Strength::kWeak:
      return kTierWeak;
    case Strength::kIgnore:
      return kTierNone;
  }
  return kTierNone;
}

void AddEvidence(CauseAcc& acc, size_t number, std::string_view line) {
  ++acc.matches;
  if (acc.evidence.size() >= kMaxEvidence) return;
  if (!acc.evidence.empty() && acc.evidence.back().number == number) return;
  acc.evidence.push_back({number, Sanitize(line)});
}

void CauseTable::AddCause(const Rule& r, int tier, double confidence, size_t line_no,
                          std::string_view line, std::string_view ts) {
  auto found = causes.find(r.cause);
  CauseAcc& acc =
      found != causes.end() ? found->second : causes.emplace(r.cause, CauseAcc{}).first->second;
  if (!path_only.empty()) path_only.erase(std::string(r.cause));
  AddEvidence(acc, line_no, line);
  if (tier < acc.tier) {
    acc.tier = tier;
    acc.rule = &r;
    acc.confidence = confidence;
    acc.order_line = line_no;
    acc.order_ts = std::string(Cap(ts, kMaxFieldBytes));
  } else if (tier == acc.tier) {
    if (confidence > acc.confidence) {
      acc.confidence = confidence;
      acc.rule = &r;
    }
    if (!ts.empty() && !acc.order_ts.empty() && ts < acc.order_ts) {
      acc.order_ts = std::string(Cap(ts, kMaxFieldBytes));
      acc.order_line = line_no;
    }
  }
}

void CauseTable::AddPathCause(const MessagePath& path, int tier, size_t line_no,
                              std::string_view line, std::string_view ts) {
  auto [it, inserted] = causes.try_emplace(std::string(path.cause.str()));
  CauseAcc& acc = it->second;
  if (inserted) path_only.insert(it->first);
  AddEvidence(acc, line_no, line);
  if (tier < acc.tier) {
    acc.tier = tier;
    acc.rule = nullptr;
    acc.code_verdict = path.verdict;
    acc.confidence = 0.5;
    acc.order_line = line_no;
    acc.order_ts = std::string(Cap(ts, kMaxFieldBytes));
  }
}

void CauseTable::AddDerived(const DerivedCause& derived, int tier, double confidence,
                            size_t line_no, std::vector<LogLine> evidence,
                            bool keep_until_completed) {
  const CauseId cause = derived.cause;
  CauseAcc& acc = causes[std::string(cause.str())];
  if (tier < acc.tier) {
    acc.tier = tier;
    acc.rule = nullptr;
    acc.code_verdict = derived.verdict;
    acc.confidence = confidence;
    acc.order_line = evidence.empty() ? line_no : evidence.front().number;
    acc.order_ts.clear();
  }
  for (const auto& line : evidence) AddEvidence(acc, line.number, line.text);
  if (keep_until_completed) keep_unless_completed.insert(std::string(cause.str()));
}

}  // namespace nccl_triage::classify
