// The agent's probe function on top of the probe runner (probe/runner.h): one rank of one probe
// per call, with the NCCL unique id handed over through the assignment's callbacks (rank 0
// publishes the id its child printed; rank 1 waits for the relayed id and feeds it to its child).
//
// A stop request on the token (the coordinator cancelled the probe, or the agent is shutting
// down) kills the child's process group at once; the result then reads not_run, "cancelled".
// Thread-compatible like the runner; the agent calls it one probe at a time.
#pragma once

#include <memory>

#include "daemon/agent.h"
#include "probe/runner.h"

namespace nccl_triage {

// `runner` is shared by every call; an assignment that asks for another size or a shorter
// deadline gets a runner of its own with those values (clamped to the configured timeout).
ProbeFn MakeRunnerProbeFn(std::shared_ptr<const ProbeRunner> runner);

// The intra-node probe on the snapshot's idle GPUs (core/gpu_use.h; every GPU the driver lists
// when `allow_when_gpus_busy` and none is idle). A node whose GPUs are all busy gets a skip.
IntraNodeFn MakeIntraNodeFn(std::shared_ptr<const ProbeRunner> runner, bool allow_when_gpus_busy);

}  // namespace nccl_triage
