// `nccl-triage-server cleanup [--dry-run] [--selector LABELS] [--kubeconfig FILE] [--context N]`:
// removes what nccl-triage leaves on the cluster after `helm uninstall` (kube/cleanup.h): our
// taints, the cordon our remediation placed, nccl-triage.io/* annotations of nodes and pods and
// the NcclFabricReady condition. Prints one line per object; --dry-run changes nothing.
//
// Exit 0 when everything listed was removed (or, dry run, listed); 1 when a call failed (each
// failure on stderr); 2 for bad flags or no usable API.
#include <ostream>

#include "base/flags.h"
#include "kube/cleanup.h"
#include "server/server_cli.h"
#include "server/triage_api.h"

namespace nccl_triage {

int RunServerCleanupCommand(CliContext& ctx) {
  bool help = false, dry_run = false;
  std::string kubeconfig, context, selector;
  Status parsed = FlagParser()
                      .Switch({"--help", "-h"}, &help)
                      .Switch({"--dry-run"}, &dry_run)
                      .String({"--selector", "-l"}, &selector)
                      .String({"--kubeconfig"}, &kubeconfig)
                      .String({"--context"}, &context)
                      .Parse(ctx.args);
  if (!parsed.ok()) {
    ctx.err << "nccl-triage-server cleanup: " << parsed.message() << "\n";
    return 2;
  }
  if (help) {
    ctx.out << "usage: nccl-triage-server cleanup [--dry-run] [--selector LABELS]\n"
               "                                  [--kubeconfig FILE] [--context NAME]\n\n"
               "Removes what nccl-triage leaves on the cluster after helm uninstall: taints\n"
               "nccl-triage.io/*, the cordon its remediation placed, the NcclFabricReady node\n"
               "condition and nccl-triage.io/* annotations of nodes and pods. A taint, cordon or\n"
               "annotation of anyone else stays. Run it once the agents and the coordinator are\n"
               "gone (or remediation is off), or they write them again.\n\n"
               "  --dry-run         list what would be removed, change nothing\n"
               "  --selector, -l    only the nodes matching this label selector, and the pods\n"
               "                    on them (default: every node and every pod)\n"
               "  --kubeconfig, --context   credentials as kubectl finds them (else KUBECONFIG,\n"
               "                    ~/.kube/config, the pod's service account)\n";
    return 0;
  }
  auto access = TriageApiAccess(kubeconfig, context);
  if (!access.ok()) {
    ctx.err << "nccl-triage-server cleanup: " << access.status().message() << "\n";
    return 2;
  }
  auto client = TriageClient(*access);
  if (!client.ok()) {
    ctx.err << "nccl-triage-server cleanup: " << client.status().message() << "\n";
    return 2;
  }
  CleanupOptions options;
  options.node_selector = selector;
  options.dry_run = dry_run;
  const CleanupResult result = RunCleanup(**client, options);
  const char* verb = dry_run ? "would remove from " : "removed from ";
  for (const auto& line : result.lines) ctx.out << verb << line << "\n";
  for (const auto& e : result.errors) ctx.err << "nccl-triage-server cleanup: " << e << "\n";
  ctx.out << (dry_run ? "dry run: " : "") << result.nodes << " node(s) and " << result.pods
          << " pod(s) carried nccl-triage's taints, condition or annotations"
          << (dry_run ? "; nothing was changed" : "") << "\n";
  return result.errors.empty() ? 0 : 1;
}

}  // namespace nccl_triage
