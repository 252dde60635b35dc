// `nccl-triage cleanup [--dry-run] [--selector LABELS] [--kubeconfig FILE] [--context NAME]`:
// what nccl-triage leaves on nodes and pods after helm uninstall, removed. The Kubernetes API
// needs HTTPS, which this small binary does not link: it checks the flags, then runs
// `nccl-triage-server cleanup` beside it with the same arguments and the API environment only,
// streaming its lines (cmd_nccl_triage_server/cmd_cleanup.cc, kube/cleanup.h).
#include <unistd.h>

#include <chrono>
#include <ostream>
#include <string>

#include "cmd_nccl_triage/cli.h"
#include "cmd_nccl_triage/triage_children.h"
#include "kube/cleanup.h"
#include "probe/subprocess.h"

namespace nccl_triage {

int RunCleanupCommand(CliContext& ctx) {
  CleanupFlags flags;
  if (Status parsed = ParseCleanupFlags(ctx.args, flags); !parsed.ok()) {
    ctx.err << "nccl-triage cleanup: " << parsed.message() << "\n";
    return 2;
  }
  if (flags.help) {
    ctx.out << "usage: nccl-triage cleanup [--dry-run] [--selector LABELS]\n"
               "                           [--stop NS/KIND/NAME]... [--stop-timeout S]\n"
               "                           [--delete NS/KIND/NAME]...\n"
               "                           [--kubeconfig FILE] [--context NAME]\n\n"
            << kCleanupHelp
            << "\nRuns nccl-triage-server cleanup, installed beside nccl-triage. Exit 0: done;\n"
               "1: a call failed (each on stderr); 2: bad flags or no usable API.\n";
    return 0;
  }
  const std::string server = SiblingExe(ctx.self_exe, "nccl-triage-server");
  if (::access(server.c_str(), X_OK) != 0) {
    ctx.err << "nccl-triage cleanup: " << server
            << " not found: the cleanup calls the Kubernetes API through nccl-triage-server, "
               "installed beside nccl-triage\n";
    return 2;
  }
  SubprocessOptions o;
  o.argv = {server, "cleanup"};
  o.argv.insert(o.argv.end(), ctx.args.begin(), ctx.args.end());
  o.env = ApiEnvironment();
  o.timeout = std::chrono::hours(1);  // a fleet of nodes and every pod, one patch at a time
  o.on_stdout = [&](std::string_view bytes) {
    ctx.out << bytes << std::flush;
    return true;
  };
  const SubprocessResult r = RunSubprocess(std::move(o));
  ctx.err << r.err;
  if (r.kind == ExitKind::kExited) return r.exit_code;
  ctx.err << "nccl-triage cleanup: nccl-triage-server cleanup " << ToString(r.kind)
          << (r.error.empty() ? "" : ": " + r.error) << "\n";
  return 1;
}

}  // namespace nccl_triage
