#include "app/cli.h"

#include <unistd.h>

#include <array>
#include <climits>
#include <iostream>
#include <string_view>

#include "app/services.h"

namespace nccl_triage {
namespace {

// The serving subcommands run from the module (app/services.h); these load it first.
int RunFromServices(CliContext& ctx, const char* name, SubcommandFn Services::*fn) {
  auto services = LoadServices(ctx.self_exe);
  if (!services.ok()) {
    ctx.err << "nccl-triage " << name << ": " << services.status().message() << "\n";
    return 2;
  }
  return ((*services)->*fn)(ctx);
}
int LoadAndRunAgent(CliContext& ctx) { return RunFromServices(ctx, "agent", &Services::agent); }
int LoadAndRunCoordinator(CliContext& ctx) {
  return RunFromServices(ctx, "coordinator", &Services::coordinator);
}
int LoadAndRunDemo(CliContext& ctx) { return RunFromServices(ctx, "demo", &Services::demo); }

constexpr std::array kSubcommands = {
    Subcommand{"check",
               "judge this node (or a fixture root / saved snapshot) with every host check",
               &RunCheckCommand},
    Subcommand{"classify-log", "explain an NCCL log: class, cause, fix", &RunClassifyLogCommand},
    Subcommand{"agent", "run the node agent: checks every interval, metrics, /status, annotations",
               &LoadAndRunAgent},
    Subcommand{"probe", "NCCL all-reduce over sockets and over IB, then the verdict",
               &RunProbeCommand},
    Subcommand{"coordinator", "pair the agents, run the probes, localise faults to node or link",
               &LoadAndRunCoordinator},
    Subcommand{"demo", "a coordinator and N agents on this machine with injected faults",
               &LoadAndRunDemo},
};

void PrintUsage(std::ostream& os) {
  os << "usage: nccl-triage <command> [flags]\n\ncommands:\n";
  for (const auto& s : kSubcommands) {
    os << "  " << s.name << std::string(16 - std::string_view(s.name).size(), ' ') << s.summary
       << "\n";
  }
  os << "\n`nccl-triage <command> --help` shows the flags of one command.\n";
}

std::string SelfExe(const std::string& argv0) {
  std::array<char, PATH_MAX> buf{};
  ssize_t n = readlink("/proc/self/exe", buf.data(), buf.size() - 1);
  return n > 0 ? std::string(buf.data(), static_cast<size_t>(n)) : argv0;
}

}  // namespace

int RunCli(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err) {
  if (argv.size() < 2 || argv[1] == "--help" || argv[1] == "-h" || argv[1] == "help") {
    PrintUsage(argv.size() < 2 ? err : out);
    return argv.size() < 2 ? 2 : 0;
  }
  if (argv[1] == "--version" || argv[1] == "version") {
    out << "nccl-triage " << NCCL_TRIAGE_VERSION << "\n";
    return 0;
  }
  for (const auto& s : kSubcommands) {
    if (argv[1] == s.name) {
      CliContext ctx{{argv.begin() + 2, argv.end()}, out, err, SelfExe(argv[0])};
      return s.run(ctx);
    }
  }
  err << "nccl-triage: unknown command '" << argv[1] << "' (try --help)\n";
  return 2;
}

int RunCli(int argc, char** argv) {
  std::vector<std::string> args(argv, argv + argc);
  return RunCli(args, std::cout, std::cerr);
}

}  // namespace nccl_triage
