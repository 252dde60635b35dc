// `nccl-triage probe`: the NCCL probe (agent/probe) with this binary's configuration file and node
// checks, so that a local pair's verdict names the node's failing checks next to the causes its
// NCCL logs show.
#include <unistd.h>

#include <iostream>
#include <string>
#include <vector>

#include "app/cli.h"
#include "checks/check.h"
#include "config/config_loader.h"
#include "host/gatherer.h"
#include "probe/environment.h"
#include "probe/probe_cli.h"

extern char** environ;

namespace nccl_triage {

int RunProbeCommand(CliContext& ctx) {
  ProbeCliHooks hooks;
  hooks.self_exe = ctx.self_exe;
  hooks.environment = EnvironmentMap(environ);
  hooks.stderr_is_terminal = &ctx.err == &std::cerr && isatty(STDERR_FILENO) == 1;
  hooks.load_config = [](const std::string& path) -> StatusOr<ProbeConfig> {
    auto config = LoadConfigFile(path);
    if (!config.ok()) return config.status();
    return config->probe;
  };
  hooks.node_facts = [](const std::string& root,
                        const std::string& config_path) -> StatusOr<ProbeNodeFacts> {
    Config config;
    if (!config_path.empty()) {
      auto loaded = LoadConfigFile(config_path);
      if (!loaded.ok()) return loaded.status();
      config = *loaded;
    }
    GatherOptions options;
    options.root = root;
    options.mr_register_bytes = config.checks.mr_register_bytes;
    auto snapshot = GatherSnapshot(options);
    if (!snapshot.ok()) return snapshot.status();
    ProbeNodeFacts facts;
    facts.findings = BuiltinCheckRegistry().Run(*snapshot, config, CheckContext{});
    for (const auto& hca : snapshot->ib_devices) {
      for (const auto& port : hca.ports) {
        if (port.rate_gbps.ok()) {
          facts.port_rates_gbps[hca.name + ":" + std::to_string(port.num)] = *port.rate_gbps.value;
        }
      }
    }
    return facts;
  };
  return RunProbeCli(ctx.args, ctx.out, ctx.err, hooks);
}

}  // namespace nccl_triage
