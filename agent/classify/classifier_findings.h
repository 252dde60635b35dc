// Findings from more than one line, added to the causes once the log is done: two NCCL versions
// in one job, two MTUs on its connections; and, for a run that did not complete, what an expert
// reads across lines and ranks: a setting NCCL cannot honour, ranks on different networks or
// with and without GPUDirect RDMA or a NET plugin, an NCCL build for a CUDA the driver does not
// offer, an NCCL older than the GPU generation, a process without its GPU, a RoCE GID choice.
//
// A pure function of the facts, adding to the cause table. Thread-compatible.
#pragma once

#include "classify/classifier_causes.h"
#include "classify/classifier_facts.h"

namespace nccl_triage::classify {

// `completed`: the run completed (RunOutcome::completed); only the skews are read then.
void AddMultiLineFindings(const LogFacts& facts, bool completed, CauseTable& table);

}  // namespace nccl_triage::classify
