// The command line of `nccl-triage`, the small executable an SRE runs on a node or a laptop:
// `check`, `classify-log` and `probe`. It links no gRPC, protobuf, HTTP server, TLS or
// prometheus-cpp (tests/executables checks with ldd), so it starts in a few milliseconds. The
// long-running services (agent, coordinator) are the other executable, `nccl-triage-server`
// (cmd_nccl_triage_server/server_cli.h).
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "base/cli.h"

namespace nccl_triage {

int RunCli(int argc, char** argv);
int RunCli(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err);

// Subcommands (one file each: cmd_<name>.cc).
int RunCheckCommand(CliContext& ctx);
int RunClassifyLogCommand(CliContext& ctx);
int RunProbeCommand(CliContext& ctx);
int RunRasCommand(CliContext& ctx);
int RunTriageCommand(CliContext& ctx);
// Runs `nccl-triage-server cleanup` (what nccl-triage left on nodes and pods, removed).
int RunCleanupCommand(CliContext& ctx);

}  // namespace nccl_triage
