// Judging a read log: how far the run got, which of the named causes stay, in which order, and
// which rank failed first.
//
// Pure functions of the facts and causes they are given. Thread-compatible.
#pragma once

#include <span>
#include <vector>

#include "classify/classifier_causes.h"
#include "classify/classifier_facts.h"
#include "classify/rules.h"
#include "core/classification.h"

namespace nccl_triage::classify {

// How the run went, from what its lines showed.
struct RunOutcome {
  bool success = false;  // Init COMPLETE, channel lines or nccl-tests' results: it set up
  // Positive evidence that the run worked and no WARN after it: nccl-tests' results, the
  // program's steps, or a clean teardown of every rank that completed its init.
  bool completed = false;
  // Set up without a failure after it: suspects (a bridge interface, GDR off) explain failures
  // to set up, so they are dropped then.
  bool set_up = false;
  bool socket_network = false;  // the network is sockets (chosen, or the only channels)
  bool ib_in_use = false;       // some HCA opened, or NET/IB channels
};
RunOutcome JudgeRun(const RunProgress& run, const NetworkFacts& net);

// The causes that stay, with the evidence they show: context only when the run failed and IB
// was wanted, suspects only when it did not complete, wrappers only without a real cause, an
// orphan result code or a back-trace only when nothing else explains a failed run; refinements
// take their general cause's place. `rules` are those the causes' rule pointers and the trace
// root's index refer to.
KeptMap KeepCauses(const CauseTable& table, const RunOutcome& outcome, const RunProgress& run,
                   const NetworkFacts& net, const EnvFacts& env, const RankFacts& ranks,
                   std::span<const Rule> rules);

// The kept causes, ranked: by tier, then by time (timestamps when every cause of the tier has
// one, else line numbers), then refinements and summaries first, then confidence, then id.
std::vector<ClassifiedCause> RankCauses(const KeptMap& kept);

// The roots (the first WARN of every rank, or quoted errors without WARNs; the rank that failed
// first at the front) and the ncclResult_t that reached the API.
void FillRoots(const RankFacts& ranks, bool success, Classification& out);

}  // namespace nccl_triage::classify
