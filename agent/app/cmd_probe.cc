// `nccl-triage probe`: the NCCL probe (agent/probe) with this binary's node checks, so that a
// local pair's verdict can name the node's failing checks next to the causes its logs show.
#include <string>
#include <vector>

#include "app/cli.h"
#include "checks/check.h"
#include "host/gatherer.h"
#include "probe/environment.h"
#include "probe/probe_cli.h"

extern char** environ;

namespace nccl_triage {

int RunProbeCommand(CliContext& ctx) {
  ProbeCliHooks hooks;
  hooks.self_exe = ctx.self_exe;
  hooks.environment = EnvironmentMap(environ);
  hooks.node_findings = [](const std::string& root,
                           const std::string& /*config_path*/) -> StatusOr<std::vector<Finding>> {
    GatherOptions options;
    options.root = root;
    auto snapshot = GatherSnapshot(options);
    if (!snapshot.ok()) return snapshot.status();
    CheckRegistry registry;
    RegisterBuiltinChecks(registry);
    return registry.Run(*snapshot, Config{}, CheckContext{});
  };
  return RunProbeCli(ctx.args, ctx.out, ctx.err, hooks);
}

}  // namespace nccl_triage
