// `check --workloads`: one read-only workload pass on the root, in the small executable.
//
// The scan and the judgement run here; the pod list, the node and the kubelet's device
// assignments come from `nccl-triage-server workload-lookup`, run once as a child process when
// the pass first needs them (workload/lookup.h). Without the server executable beside this one
// (or outside a pod), the pass still judges every container and says what it could not read.
#pragma once

#include <iosfwd>
#include <nlohmann/json.hpp>
#include <string>

#include "core/config.h"
#include "core/snapshot.h"

namespace nccl_triage {

// The workload section of `check --workloads`: the report's "workloads" object, the table
// section for the terminal, and the exit code it contributes (1 when a container fails a check).
struct WorkloadCheckOutput {
  nlohmann::json json;
  std::string table;
  int exit_code = 0;
};

// `server_exe`: the nccl-triage-server to ask for the lookups.
WorkloadCheckOutput CheckWorkloads(const std::string& root, const NodeSnapshot& snapshot,
                                   const Config& config, const std::string& server_exe,
                                   std::ostream& err);

}  // namespace nccl_triage
