#include "cmd_nccl_triage/cli.h"

#include <array>
#include <iostream>

#include "nccl_triage_version.h"

namespace nccl_triage {
namespace {

constexpr std::array kSubcommands = {
    Subcommand{"check",
               "judge this node (or a fixture root / saved snapshot) with every host check",
               &RunCheckCommand},
    Subcommand{"classify-log", "explain an NCCL log: class, cause, fix", &RunClassifyLogCommand},
    Subcommand{"probe", "NCCL all-reduce over sockets and over IB, then the verdict",
               &RunProbeCommand},
    Subcommand{"ras", "a hung NCCL job: ask its RAS port which ranks are dead, silent or behind",
               &RunRasCommand},
    Subcommand{"triage",
               "a job died: the rank that failed first, its node, the peer, the class and the fix",
               &RunTriageCommand},
    Subcommand{"cleanup",
               "after helm uninstall: remove nccl-triage's taints, condition and annotations",
               &RunCleanupCommand},
};

constexpr CliProgram kProgram{"nccl-triage", NCCL_TRIAGE_VERSION, kSubcommands};

}  // namespace

int RunCli(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err) {
  if (argv.size() >= 2 && (argv[1] == "agent" || argv[1] == "coordinator")) {
    err << "nccl-triage: '" << argv[1]
        << "' is a service of nccl-triage-server (run `nccl-triage-server " << argv[1] << "`)\n";
    return 2;
  }
  return RunProgram(kProgram, argv, out, err);
}

int RunCli(int argc, char** argv) {
  std::vector<std::string> args(argv, argv + argc);
  return RunCli(args, std::cout, std::cerr);
}

}  // namespace nccl_triage
