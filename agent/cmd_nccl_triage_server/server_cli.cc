#include "cmd_nccl_triage_server/server_cli.h"

#include <array>
#include <iostream>

#include "nccl_triage_version.h"

namespace nccl_triage {
namespace {

constexpr std::array kSubcommands = {
    Subcommand{"agent", "run the node agent: checks every interval, metrics, /status, annotations",
               &RunAgentCommand},
    Subcommand{"coordinator", "pair the agents, run the probes, localise faults to node or link",
               &RunCoordinatorCommand},
    Subcommand{"dump-schema",
               "print every config key, metric family and catalogue row as JSON (make generate)",
               &RunDumpSchemaCommand},
    Subcommand{"cleanup",
               "after helm uninstall: remove nccl-triage's taints, condition and annotations",
               &RunServerCleanupCommand},
    Subcommand{"workload-lookup", nullptr, &RunWorkloadLookupCommand},
    Subcommand{"triage-fetch", nullptr, &RunTriageFetchCommand},
    Subcommand{"triage-keep", nullptr, &RunTriageKeepCommand},
    Subcommand{"triage-coordinator", nullptr, &RunTriageCoordinatorCommand},
};

constexpr CliProgram kProgram{"nccl-triage-server", NCCL_TRIAGE_VERSION, kSubcommands};

}  // namespace

int RunServerCli(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err) {
  return RunProgram(kProgram, argv, out, err);
}

int RunServerCli(int argc, char** argv) {
  std::vector<std::string> args(argv, argv + argc);
  return RunServerCli(args, std::cout, std::cerr);
}

}  // namespace nccl_triage
