// The serving half of nccl-triage (see app/services.h): the agent, coordinator and demo
// subcommands and `check --workloads`, built into the module nccl-triage-services.so and, for
// in-process tests, into the static library nccl_triage::services.
#pragma once

#include "app/services.h"

namespace nccl_triage {

int RunAgentCommand(CliContext& ctx);
int RunCoordinatorCommand(CliContext& ctx);
int RunDemoCommand(CliContext& ctx);

// One workload pass on the root, read only: pod names from the API when running in a pod, device
// assignments from the kubelet's socket when the root has it; nothing is patched.
WorkloadCheckOutput CheckWorkloads(const std::string& root, const NodeSnapshot& snapshot,
                                   const Config& config, std::ostream& err);

// The table the module exports.
const Services& LinkedServices();

}  // namespace nccl_triage
