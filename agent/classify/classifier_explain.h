// The verdict and its one-line reason: from the strongest kept cause down to what was seen when
// nothing names a failure (never healthy without positive evidence).
//
// A pure function of the ranked causes and the facts it is given. Thread-compatible.
#pragma once

#include <string>

#include "classify/classifier_causes.h"
#include "classify/classifier_facts.h"
#include "core/classification.h"

namespace nccl_triage::classify {

// What the explanation reads besides the kept causes. The references must outlive the call.
struct ExplainInputs {
  const LineCounts& counts;
  const RunProgress& run;
  const NetworkFacts& net;
  const std::string& nccl_version;
  const std::string& env_net;  // NCCL_NET's value, for context causes
  const RankFacts& ranks;
  bool completed = false;  // RunOutcome::completed
};

// Sets out.fault_class and out.reason (and out.result_code from a back-trace root when it has
// none). `out.causes` are `kept` ranked (RankCauses), `out.roots` filled (FillRoots).
void Explain(const ExplainInputs& in, const KeptMap& kept, Classification& out);

}  // namespace nccl_triage::classify
