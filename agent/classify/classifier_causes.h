// The causes a log's lines named, as the classifier accumulates them: each cause's tier (how
// directly a line named it), confidence, ordering key and evidence.
//
// Plain values and the operations that fold one more match into them. Thread-compatible.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "classify/message_catalogue.h"
#include "classify/rules.h"
#include "core/classification.h"

namespace nccl_triage::classify {

inline constexpr size_t kMaxEvidence = 5;      // lines kept per cause
inline constexpr size_t kMaxFieldBytes = 128;  // rank keys, timestamps, network, versions, values

// Ranking tiers: a cause's tier is that of its strongest match; lower ranks first.
enum Tier : int {
  // A failed check of NCCL's own diagnostics report (2.31+): NCCL tested the path itself and
  // names what failed, stronger than any WARN of the failure it explains.
  kTierDiag = -1,
  kTierRoot = 0,       // matched on a rank's first WARN
  kTierSecondary = 1,  // a precise rule on a later WARN or on quoted text (c10d `Last error:`)
  // No WARN on the rank, but its back-trace starts in a file that names the component
  // (`misc/socket.cc:564 -> 2`): where the error was raised, only in runs that did not complete.
  kTierTrace = 2,
  kTierSuspect = 3,  // INFO naming a likely cause of a run that did not complete
  kTierContext = 4,  // INFO context (IB wanted and missing); unmatched first WARNs rank here
  kTierFollow = 5,   // peer exits and wrappers: the cause is elsewhere
  kTierWeak = 6,     // error codes and their names only
  kTierNone = 99,
};

// The tier of a rule's match: root strengths are roots only on a rank's first WARN.
int TierFor(Strength s, bool first_warn, bool warn_line);

struct CauseAcc {
  const Rule* rule = nullptr;  // the rule of the strongest match (verdict, remedy)
  int tier = kTierNone;
  double confidence = 0;
  size_t order_line = 0;  // where the strongest tier was first reached
  std::string order_ts;
  std::vector<LogLine> evidence;
  size_t matches = 0;
  bool refined = false;
  // Named by the summary that followed a rank's first WARN from the same file (a wrapper's
  // error, then the operation's own message): ranked before the wrapper's cause of that WARN.
  bool summary = false;
  // For causes that come from result codes rather than rules.
  FaultClass code_verdict = FaultClass::kUnknown;
};

// Causes by id.
using CauseMap = std::map<std::string, CauseAcc, std::less<>>;
// The causes a classification keeps (a filtered copy of a CauseMap), by id.
using KeptMap = CauseMap;

// Counts one more match and keeps its line (sanitised), at most kMaxEvidence lines, one per line
// number in a row.
void AddEvidence(CauseAcc& acc, size_t number, std::string_view line);

// Every cause the lines named so far.
struct CauseTable {
  CauseMap causes;
  // Causes named only by the catalogue's path of a WARN (no rule): dropped when the run set up
  // cleanly after them, as an unmatched WARN before Init COMPLETE is set-up noise.
  std::set<std::string, std::less<>> path_only;
  // Causes derived from several lines that stay unless the run completed (not only set up).
  std::set<std::string, std::less<>> keep_unless_completed;

  // A rule's match on line `line_no`: the strongest tier wins, then the higher confidence; within
  // a tier the earliest timestamp orders it (ranks may be concatenated out of time order).
  void AddCause(const Rule& r, int tier, double confidence, size_t line_no, std::string_view line,
                std::string_view ts);
  // A WARN no rule names, on the catalogue's path: the path's cause with its verdict.
  void AddPathCause(const MessagePath& path, int tier, size_t line_no, std::string_view line,
                    std::string_view ts);
  // A finding from more than one line (evidence in order; the first orders it, else `line_no`).
  void AddDerived(const DerivedCause& derived, int tier, double confidence, size_t line_no,
                  std::vector<LogLine> evidence, bool keep_until_completed = false);
};

}  // namespace nccl_triage::classify
