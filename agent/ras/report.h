// An NCCL RAS status report as plain values, the parsers that build it and the judgement on it.
//
// NCCL answers STATUS in one of two formats (docs/ras.md has both, from NCCL's source and from
// recorded runs):
//   text (2.24+): a job summary, a table of communicator groups, then "Errors" and "Warnings"
//     sections that name only what is wrong: processes that did not answer (INCOMPLETE) or are
//     considered dead (DEAD), and per communicator the ranks missing, in error, or whose status
//     or collective operation counts differ from the others (MISMATCH). Ranks that agree with the
//     majority are only counted ("3 ranks have launched up to operation 1200").
//   json (2.28.7+): every communicator with every rank that answered (status and the count of
//     each collective launched) and every rank that did not (unresponsive, considered dead).
// Both parse into the same Report; what the text does not print stays unknown (-1, empty).
//
// Pure functions of text (no I/O), never throw; thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/reflect.h"
#include "base/status.h"

namespace nccl_triage::ras {

// A rank as the report names it: the communicator rank, the process and node that run it.
struct RankRef {
  int rank = -1;
  std::string host;  // the node's IP address as NCCL prints it; "" when not printed
  int pid = -1;
  std::string gpu;  // CUDA device, "0", or "0 (NVML 2)" when NVML numbers it differently
  friend bool operator==(const RankRef&, const RankRef&) = default;
};

enum class RankState {
  kUnknown,       // the text report did not say
  kRunning,       // initialised, not finalising
  kInit,          // still initialising (or failed to)
  kFinalize,      // ncclCommFinalize / ncclCommDestroy called
  kAbort,         // ncclCommAbort called
  kNoComm,        // its process answered but no longer has this communicator
  kUnresponsive,  // its process did not answer this query
  kDead,          // its process is considered dead by the RAS network
};
constexpr auto NamesOf(Type<RankState>) {
  return std::array{Named(RankState::kUnknown, "unknown"), Named(RankState::kRunning, "running"),
                    Named(RankState::kInit, "init"), Named(RankState::kFinalize, "finalize"),
                    Named(RankState::kAbort, "abort"), Named(RankState::kNoComm, "nocomm"),
                    Named(RankState::kUnresponsive, "unresponsive"),
                    Named(RankState::kDead, "dead")};
}

struct RankInfo {
  RankRef ref;
  RankState state = RankState::kUnknown;
  // Collective operations launched so far, by NCCL's name ("AllReduce"); only where reported.
  // NCCL 2.24/2.25 text reports do not name the operation: the key is then "collective".
  std::map<std::string, uint64_t> op_counts;
  std::string error;  // "Remote process error", "Initialization: System error"; "" when none
};

// "N ranks have launched up to operation X" in a text report: ranks counted, not all listed.
struct CountGroup {
  std::string op;
  int ranks = 0;
  uint64_t count = 0;
  std::vector<int> listed;  // the ranks printed under the line (NCCL lists only outliers)
};

struct Communicator {
  std::string hash;     // 16 lower-case hex digits, as the text report prints it
  int size = -1;        // ranks in the communicator; -1 when not printed
  int responding = -1;  // ranks whose process answered with this communicator
  int missing = 0;      // ranks without an answer (unresponsive, dead or no longer in it)
  int dead = 0;          // of the missing: ranks whose process is considered dead
  int unresponsive = 0;  // of the missing: ranks whose process did not answer (text: also
                         // those counted missing but not named)
  std::vector<std::string> problems;  // NCCL's words: INCOMPLETE, ERROR, MISMATCH
  std::vector<RankInfo> ranks;        // json: every rank; text: the ranks the report names
  std::vector<CountGroup> count_groups;  // text only
  // Text only: how many ranks the report counts in each status when they differ ("7 ranks have
  // status RUNNING", "Rank 3 has status INIT"); the judgement takes the most common as usual.
  std::map<RankState, int> status_counts;
};

// One row of the text report's group table (communicators of the same shape and state).
struct CommGroup {
  int group = -1;
  int comms = 0;
  int nodes = 0;
  std::string ranks_per_node;  // "2" or "1-2"
  int ranks_per_comm = 0;
  int ranks_in_group = 0;
  std::string status;  // RUNNING, INIT, FINALIZE, ABORT, NOCOMM
  std::string errors;  // OK, or NCCL's comma list (INCOMPLETE,ERROR,MISMATCH)
};

struct Process {
  int pid = -1;
  std::string host;
  std::string gpus;  // "0,1" or "0,1 (NVML 2,3)"
  friend bool operator==(const Process&, const Process&) = default;
};

struct Report {
  std::string format;        // "text" or "json"
  std::string nccl_version;  // "2.28.9"; "" when not printed
  int nodes = -1;            // job summary (text only)
  int processes = -1;
  int gpus = -1;
  double collection_s = -1;  // how long NCCL's own gathering took
  int timeouts = 0;          // RAS communication timeouts while gathering
  std::vector<CommGroup> groups;            // text only
  std::vector<Communicator> communicators;  // json: all; text: those the report details
  int missing_processes = 0;                // processes that did not answer
  std::vector<Process> missing;             // the ones named
  int dead_processes = 0;                   // processes considered dead
  std::vector<Process> dead;                // the ones named
  std::vector<std::string> notes;  // what the parser repaired or could not place, one line each
};

// Sets each communicator's dead and unresponsive counts from its ranks (both parsers call it).
void TallyRanks(Communicator& c);

// The text report (the bytes after STATUS). Error: nothing in it looks like a RAS report.
StatusOr<Report> ParseTextReport(std::string_view body);

// The JSON report. NCCL 2.28.7-2.28.9 print no comma after a missing rank's "nvml_dev" (the
// document is invalid whenever a rank is missing); that one defect is repaired, with a note.
StatusOr<Report> ParseJsonReport(std::string_view body);

// ---- The judgement: which ranks hold the job up.

enum class FindingKind {
  kDead,          // a rank's process is considered dead
  kUnresponsive,  // a rank's process did not answer
  kLagging,       // a rank launched fewer collectives than the others of its communicator
  kError,         // a rank reported an initialisation or asynchronous error
  kStatus,        // a rank's status differs from the others (INIT, FINALIZE, ABORT, NOCOMM)
};
constexpr auto NamesOf(Type<FindingKind>) {
  return std::array{Named(FindingKind::kDead, "dead"),
                    Named(FindingKind::kUnresponsive, "unresponsive"),
                    Named(FindingKind::kLagging, "lagging"), Named(FindingKind::kError, "error"),
                    Named(FindingKind::kStatus, "status")};
}

struct Finding {
  FindingKind kind;
  std::string comm;  // the communicator's hash; "" for a process-level finding
  RankRef rank;      // rank -1 when only the process is known
  int ranks = 1;     // > 1: a group the report counts without naming each one
  std::string detail;  // one line: "AllReduce 484 launched, the others 485"
};

struct Judgement {
  // "ok": every rank answered and agrees; "stuck": dead, unresponsive or lagging ranks;
  // "error": ranks report errors or differ in status; never both stuck and error: stuck wins.
  std::string state;
  std::string summary;  // one line naming the ranks that hold the job up
  std::vector<Finding> findings;  // dead, unresponsive, lagging, then errors and status
};

Judgement Judge(const Report& report);

// Two reports of the same job some seconds apart. Collective counts are gathered from each
// process at slightly different moments, so a running job can show a rank one or two operations
// behind; a hung one shows the same counts again. A lagging finding whose communicator's lowest
// count for that operation moved between the two is dropped (the job advances), and the
// judgement says so.
Judgement JudgeTwice(const Report& first, const Report& second);

}  // namespace nccl_triage::ras
