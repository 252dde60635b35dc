// The command line: `nccl-triage <subcommand> [flags]`, dispatched to one function per subcommand.
//
// Each subcommand is a function from its arguments and two streams to an exit code, so tests run
// it in-process. Exit codes follow DESIGN.md: 0 ok, 1 a verdict of failure, 2 usage, configuration
// or unreadable input (with one line on stderr).
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace nccl_triage {

struct CliContext {
  std::vector<std::string> args;  // arguments after the subcommand
  std::ostream& out;
  std::ostream& err;
  std::string self_exe;  // path of this binary (children re-execute it)
};

using SubcommandFn = int (*)(CliContext& ctx);

struct Subcommand {
  const char* name;
  const char* summary;
  SubcommandFn run;
};

// Runs the binary's command line; argv[0] is the program, argv[1] the subcommand.
int RunCli(int argc, char** argv);
int RunCli(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err);

// Subcommands (one file each: cmd_<name>.cc). agent, coordinator and demo live in the serving
// module (agent/services, loaded through app/services.h).
int RunCheckCommand(CliContext& ctx);
int RunClassifyLogCommand(CliContext& ctx);
int RunProbeCommand(CliContext& ctx);

}  // namespace nccl_triage
