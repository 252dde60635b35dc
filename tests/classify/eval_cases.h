// Labelled NCCL logs for measuring the classifier: the corpus (tests/classify/corpus), the
// unseen evaluation set (tests/classify/unseen) and the real failure captures of the GPU machine
// (tests/fixtures/nccl-logs/*-failures). One loader, one scoring rule and one report for all of
// them, so the figures in docs/logs.md are computed the same way for every set.
#pragma once

#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/classification.h"
#include "core/model.h"

namespace nccl_triage::eval {

struct Case {
  std::string file;         // the case's file (or scenario folder) name
  std::string source;       // owner/repo#N, or the capture's scenario
  std::string environment;
  FaultClass expected = FaultClass::kUnknown;
  std::string cause;        // catalogue id, or empty when the thread names none
  std::string basis;        // resolution | maintainer | log | capture
  bool log_tells = true;    // false: only the thread, not the log, shows the cause
  std::string note;
  std::string log;
};

// Threads kept out of the corpus, so that a set measured on them stays unseen: the earlier
// evaluation threads and every source of the unseen sets (tests/classify/unseen, unseen-2).
bool IsHeldOut(const std::string& source);
bool IsEarlierEvaluationThread(const std::string& source);

// A folder of `<owner>_<repo>_<N>.yaml` cases. `refuse_held_out`: a case whose source is held out
// is an error (the corpus); errors name the file and what is wrong, one line each.
std::vector<Case> LoadThreadCases(const std::filesystem::path& dir, bool refuse_held_out,
                                  std::vector<std::string>& errors);

// The GPU captures: every `<set>/<scenario>/case.yaml` under `dir` whose set name ends in
// `-failures`, with the scenario's rank logs (r0.log, r1.log, ...) concatenated in rank order,
// as on-call concatenates a job's logs.
std::vector<Case> LoadCaptureCases(const std::filesystem::path& dir,
                                   std::vector<std::string>& errors);

// The one-line classifier this project has to beat: `ibv_|NET/IB` -> ib_resource, else
// architecture.
FaultClass Baseline(const std::string& log);

// A case whose log does not tell is answered right by its label or by `unknown`; `healthy` needs
// proof in the log, never the thread's word.
bool ClassRight(const Case& k, const Classification& c);
// Right when the label names no cause and the class is right, or when the top cause is the
// labelled one (or, for a log that does not tell, the answer is unknown).
bool CauseRight(const Case& k, const Classification& c);

struct Tally {
  size_t n = 0, ours = 0, base = 0, cause = 0;
  double Ours() const { return n ? static_cast<double>(ours) / static_cast<double>(n) : 1; }
  double Base() const { return n ? static_cast<double>(base) / static_cast<double>(n) : 1; }
  double Cause() const { return n ? static_cast<double>(cause) / static_cast<double>(n) : 1; }
};

struct Report {
  std::map<FaultClass, Tally> split;
  Tally all;
  size_t untold_unknown = 0;     // right by answering unknown on a log that does not tell
  size_t healthy_on_failed = 0;  // `healthy` on a log whose label is not healthy
  std::map<std::pair<FaultClass, FaultClass>, size_t> confusion, base_confusion;
  std::vector<std::string> misses;  // one line per miss
};

// Classifies every case and tallies the answers.
Report Score(const std::vector<Case>& cases);
// Prints the misses, the confusion tables and the per-split table, under `title`.
void Print(const std::string& title, const Report& r);

}  // namespace nccl_triage::eval
