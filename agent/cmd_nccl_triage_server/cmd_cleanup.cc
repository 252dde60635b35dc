// `nccl-triage-server cleanup [--dry-run] [--selector LABELS] [--stop NS/KIND/NAME]...
// [--stop-timeout S] [--delete NS/KIND/NAME]... [--kubeconfig FILE] [--context N]`:
// removes what nccl-triage leaves on the cluster after `helm uninstall` (kube/cleanup.h): our
// taints, the cordon our remediation placed, nccl-triage.io/* annotations of nodes and pods and
// the NcclFabricReady condition. Prints one line per object; --dry-run changes nothing.
//
// Exit 0 when everything listed was removed (or, dry run, listed); 1 when a call failed (each
// failure on stderr); 2 for bad flags or no usable API.
#include <ostream>

#include "cmd_nccl_triage_server/server_cli.h"
#include "cmd_nccl_triage_server/triage_api.h"
#include "kube/cleanup.h"

namespace nccl_triage {

int RunServerCleanupCommand(CliContext& ctx) {
  CleanupFlags flags;
  if (Status parsed = ParseCleanupFlags(ctx.args, flags); !parsed.ok()) {
    ctx.err << "nccl-triage-server cleanup: " << parsed.message() << "\n";
    return 2;
  }
  if (flags.help) {
    ctx.out << "usage: nccl-triage-server cleanup [--dry-run] [--selector LABELS]\n"
               "                                  [--stop NS/KIND/NAME]... [--stop-timeout S]\n"
               "                                  [--delete NS/KIND/NAME]...\n"
               "                                  [--kubeconfig FILE] [--context NAME]\n\n"
            << kCleanupHelp;
    return 0;
  }
  auto access = TriageApiAccess(flags.kubeconfig, flags.context);
  if (!access.ok()) {
    ctx.err << "nccl-triage-server cleanup: " << access.status().message() << "\n";
    return 2;
  }
  auto client = TriageClient(*access);
  if (!client.ok()) {
    ctx.err << "nccl-triage-server cleanup: " << client.status().message() << "\n";
    return 2;
  }
  const bool dry_run = flags.options.dry_run;
  const CleanupResult result = RunCleanup(**client, flags.options);
  for (const auto& line : result.stopped) {
    ctx.out << (dry_run ? "would stop " : "stopped ") << line << "\n";
  }
  for (const auto& line : result.deleted) {
    ctx.out << (dry_run ? "would delete " : "deleted ") << line << "\n";
  }
  const char* verb = dry_run ? "would remove from " : "removed from ";
  for (const auto& line : result.lines) ctx.out << verb << line << "\n";
  for (const auto& e : result.errors) ctx.err << "nccl-triage-server cleanup: " << e << "\n";
  ctx.out << (dry_run ? "dry run: " : "") << result.nodes << " node(s) and " << result.pods
          << " pod(s) carried nccl-triage's taints, condition or annotations"
          << (dry_run ? "; nothing was changed" : "") << "\n";
  return result.errors.empty() ? 0 : 1;
}

}  // namespace nccl_triage
