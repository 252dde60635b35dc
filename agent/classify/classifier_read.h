// Reading a log line by line: each line goes to the handler of its kind (WARN, INFO/TRACE, DIAG,
// text), which records what it showed (LogFacts) and which causes its rules or the catalogue's
// paths named (CauseTable). Nothing is judged here: the findings, the ranking and the explanation
// read the result once the log is done.
//
// Thread-compatible: one reader per log. The rules and the catalogue are borrowed and must
// outlive it.
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

#include "classify/classifier_causes.h"
#include "classify/classifier_facts.h"
#include "classify/log_line.h"
#include "classify/message_catalogue.h"
#include "classify/rules.h"

namespace nccl_triage::classify {

// Longer lines are cut: a log line is never that long.
inline constexpr size_t kMaxLineBytes = 4096;

// Feeds lines to their handlers; owns what they recorded.
class LineReader {
 public:
  // `catalogue` may be null: text lines are then never read as NCCL's bare messages.
  LineReader(const CompiledRules& rules, const MessageCatalogue* catalogue);

  void Feed(std::string_view line);  // one line; a trailing CR/LF is dropped, long lines cut

  const LogFacts& facts() const { return facts_; }
  // The causes named so far; the multi-line findings add theirs when the log is done.
  CauseTable& causes() { return causes_; }

 private:
  // One message of the line being fed, parsed, to the handler of its kind.
  void Dispatch(const ParsedLine& p, std::string_view line);
  void OnWarn(const ParsedLine& p, std::string_view line);
  // What a WARN's causes make of it as its rank's root candidate: the best tier, whether a rule
  // or a path named it, whether only a generic rule (a wrapper's error) did.
  struct WarnRanking {
    int root_tier = kTierContext;
    bool named = false;
    bool first_generic = false;
  };
  WarnRanking AddWarnCauses(const std::vector<CompiledRules::LineMatch>& matches,
                            const ParsedLine& p, std::string_view line, RankState* rs,
                            bool first_warn);
  void NoteFirstWarn(const ParsedLine& p, RankState& rs, const WarnRanking& ranking);
  void NoteRejectedSetting(const ParsedLine& p, std::string_view line);
  void OnCode(std::string_view rank, int code, std::string_view message, std::string_view line);
  void OnNamedLine(const Rule& r, std::string_view msg, std::string_view line);
  void OnNoDevice(std::string_view msg, std::string_view line);
  void OnNetNotFound(std::string_view msg, std::string_view line);
  void OnDiag(const ParsedLine& p, std::string_view line);

  void OnInfo(const ParsedLine& p, std::string_view line);
  void OnInitOrTeardown(std::string_view rank, std::string_view msg);
  void OnSetupInfo(const ParsedLine& p, std::string_view line);
  void OnVersion(std::string v, std::string_view line);
  void OnDriverVersion(std::string_view digits, std::string_view line);
  void OnMtu(std::string_view msg, std::string_view line);
  void OnTransport(std::string_view rank, std::string_view msg);
  void OnNetChannel(std::string_view rank, std::string_view name, std::string_view via);
  void OnIbChannel(std::string_view via, std::string_view msg);
  void OnIbUsing(std::string_view msg);
  void KeepIbLine(std::string_view line);
  void OnEnv(std::string_view msg);
  void OnPluginLine(std::string_view rank, std::string_view msg, std::string_view line);

  void OnText(const ParsedLine& p, std::string_view line);
  bool OnProgressText(const ParsedLine& p, bool result_row);
  void OnTestsBanner(std::string_view msg, std::string_view line);
  void OnTestsHeaderOrSummary(std::string_view msg, bool result_row, std::string_view line);
  void OnRankGpu(std::string_view rank_key, std::string_view msg, std::string_view line);
  void AddTextRoot(const ParsedLine& p, std::string_view line);
  bool OnBareNcclMessage(const ParsedLine& p, std::string_view line);

  // The current line as evidence: its number and its text, cut to `max` bytes and sanitised.
  LogLine Here(std::string_view line, size_t max = 512) const;

  const CompiledRules& rules_;
  const MessageCatalogue* catalogue_;
  LogFacts facts_;
  CauseTable causes_;
  std::string_view current_line_;  // the line being fed
};

}  // namespace nccl_triage::classify
