// The logs' side of the incident: each log sorted into failing, side effect (it only lost a
// peer) or healthy, the earliest failure among them (incident.h says how "earliest" is decided),
// and the peer the failing and the side-effect logs blame.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "core/classification.h"
#include "triage/incident.h"
#include "triage/incident_scope.h"

namespace nccl_triage::triage {

// A log beside the pod it came from (nullptr: not a pod of the job). Points into the logs and
// the pods it was made from.
struct LogView {
  const LogResult* log = nullptr;
  const JobPod* pod = nullptr;
  const Classification& c() const { return log->summary.classification; }
};

// The logs by what they show. `faults` and `side_effects` are in the order of their first
// failures (incident.h), so that neither the verdict nor the evidence follows the order the logs
// arrived in.
struct SortedLogs {
  std::vector<LogView> faults;
  std::vector<LogView> side_effects;
  int total = 0;       // logs asked for
  int read = 0;        // of those, read (in whole or in part)
  int healthy = 0;     // read, and the NCCL runs in them completed
  int unreadable = 0;  // not read at all
  // The peers the side effects name, each with how many of them name it, in the order first
  // named.
  std::vector<PeerView> named;
  std::vector<std::string> not_looked_at;  // logs not read, read in part or cut
};

SortedLogs SortLogs(const std::vector<LogResult>& logs, const std::vector<JobPod>& pods,
                    const JobScope& scope);

// The logs' verdict: the earliest failure, the peer it or else the side effects name, and how
// many side effects name the failing pod itself (they confirm it rather than name a peer).
struct LogFindings {
  BasisVerdict verdict;  // basis "log"
  std::optional<FirstFailure> first;
  std::optional<PeerView> peer;
  int confirmed_by = 0;
};

LogFindings NameFirstFailure(const SortedLogs& logs, const std::vector<JobPod>& pods);

// A line of a log as evidence: its text cut to a bounded length.
EvidenceLine EvidenceOf(const LogResult& log, const LogLine& line);

// `s` cut to at most `n` bytes at a UTF-8 sequence start, with "..." when cut.
std::string CutText(std::string s, size_t n);

}  // namespace nccl_triage::triage
