// MergeRankResults: the ranks' results of one probe folded into the probe's one result.
//
// Every probe has several ranks (two for a pair, one per GPU inside a node) and each reports. The
// local pair's table, the intra-node probe and the coordinator's pair verdict all read the probe
// through this one rule, so a pair judged on one host and across two nodes reads the same:
//
// - The probe passed only when every rank passed. Then it is as fast as its slowest rank
//   (lowest busbw and algbw, longest time), and a rank that fell back from NET/IB counts.
// - Otherwise one rank explains the probe, and its result (outcome, detail, NCCL error) is the
//   probe's. The order, first wins:
//     1. a rank that crashed: nothing its peer does makes a process die;
//     2. a rank that failed with a cause of its own named by its log;
//     3. a rank that could not run the probe at all (unavailable): the pair was never tested,
//        and its peer's timeout or "no unique id" only waited for it;
//     4. a rank that failed by itself, its log naming nothing (a real error beats a timeout);
//     5. a rank that timed out;
//     6. a rank whose failure only reflects its peer (ncclRemoteError, "remote process exited",
//        "no unique id", stopped by the runner, or only consequence causes);
//     7. a rank that did not run (cancelled once its peer failed, or not started);
//   and among equals, the one whose log names the most, then the lower rank.
// - The explaining rank's causes come first; the other ranks add the causes of their own that it
//   lacks (a crashed rank's log is often empty while its peer's names the reason). A peer's
//   consequence causes ("peer.exited") are not added: they describe the explaining rank.
// - The detail says which rank explains the probe: "rank 1: killed by SIGSEGV".
// Pure.
#pragma once

#include <vector>

#include "core/probe_result.h"

namespace nccl_triage {

// The ranks in rank order; an empty list is a default (not run) result.
ProbeResult MergeRankResults(const std::vector<ProbeResult>& ranks);

// Whether a failed rank's failure only reflects what happened to its peer (rule 6 above).
bool FailedBecauseOfItsPeer(const ProbeResult& rank);

}  // namespace nccl_triage
