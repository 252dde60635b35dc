// The agent loop's two node-facing parts as the agent and the demo build them: gather a snapshot
// from a root, judge it with the built-in checks (the previous snapshot gives the counters'
// velocity).
#pragma once

#include "core/config.h"
#include "daemon/agent.h"
#include "host/gatherer.h"

namespace nccl_triage {

GatherFn MakeRootGatherFn(const GatherOptions& options);
JudgeFn MakeBuiltinJudgeFn(const Config& config);

}  // namespace nccl_triage
