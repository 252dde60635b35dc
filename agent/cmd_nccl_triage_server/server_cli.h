// The command line of `nccl-triage-server`: the long-running services (the node agent and the
// coordinator) with everything they link (gRPC, protobuf, HTTP, TLS, prometheus-cpp), apart from
// the small `nccl-triage` (cmd_nccl_triage/cli.h) so that a check on a node never pays for them.
//
// `workload-lookup` is the internal contract with the small binary: `nccl-triage check
// --workloads` runs it to read the Kubernetes API and the kubelet's pod-resources socket, and
// reads back one JSON document (schema nccl-triage/workload-lookup/v1, see workload/lookup.h).
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "base/cli.h"

namespace nccl_triage {

int RunServerCli(int argc, char** argv);
int RunServerCli(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err);

int RunAgentCommand(CliContext& ctx);
int RunCoordinatorCommand(CliContext& ctx);
int RunWorkloadLookupCommand(CliContext& ctx);
// Every config key, metric family and catalogue row as JSON (the source of the generated docs).
int RunDumpSchemaCommand(CliContext& ctx);
// The internal children of `nccl-triage triage` (triage/frames.h): the API reads, streamed,
// keeping the incident (annotations, the Event) and the coordinator's calls (probes, count).
int RunTriageFetchCommand(CliContext& ctx);
int RunTriageKeepCommand(CliContext& ctx);
int RunTriageCoordinatorCommand(CliContext& ctx);
// What nccl-triage leaves on nodes and pods after helm uninstall, removed (kube/cleanup.h).
int RunServerCleanupCommand(CliContext& ctx);

}  // namespace nccl_triage
