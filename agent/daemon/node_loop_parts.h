// The agent loop's two node-facing parts as the agent and the demo build them: gather a snapshot
// from a root, judge it with the built-in checks (the previous snapshot gives the counters'
// velocity; the port memory, when given, the first poll, the ports seen up and the flaps).
#pragma once

#include <memory>

#include "core/config.h"
#include "daemon/agent.h"
#include "host/gatherer.h"
#include "state/port_memory.h"

namespace nccl_triage {

GatherFn MakeRootGatherFn(const GatherOptions& options);
// `ports` (shared with nothing else; may be null): the agent's port memory, read and updated by
// every judgement, so the function must be called from one thread (the agent loop).
JudgeFn MakeBuiltinJudgeFn(const Config& config, std::shared_ptr<PortMemory> ports = nullptr);

}  // namespace nccl_triage
