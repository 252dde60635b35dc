// The command-line frame shared by the executables (`nccl-triage`, `nccl-triage-server`,
// `nccl-triage-demo`): `<program> <subcommand> [flags]`, dispatched to one function per
// subcommand.
//
// Each subcommand is a function from its arguments and two streams to an exit code, so tests run
// it in-process. Exit codes follow DESIGN.md: 0 ok, 1 a verdict of failure, 2 usage, configuration
// or unreadable input (with one line on stderr).
#pragma once

#include <iosfwd>
#include <span>
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
  const char* summary;  // nullptr: hidden from the usage (internal contracts between binaries)
  SubcommandFn run;
};

// One executable's command line: its name (for usage and errors), its version line and its
// subcommands. argv[0] is the program, argv[1] the subcommand.
struct CliProgram {
  const char* name;
  const char* version;
  std::span<const Subcommand> subcommands;
};

int RunProgram(const CliProgram& program, const std::vector<std::string>& argv, std::ostream& out,
               std::ostream& err);

// The path of the running executable (/proc/self/exe), or `argv0` when it cannot be read.
std::string SelfExe(const std::string& argv0);

// The path of a sibling executable `name` in the same directory as `self_exe`.
std::string SiblingExe(const std::string& self_exe, const std::string& name);

}  // namespace nccl_triage
