// `nccl-triage probe`: the NCCL probe (agent/probe) with this binary's configuration file and node
// checks, so that a local pair's verdict names the node's failing checks next to the causes its
// NCCL logs show.
#include <unistd.h>

#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "checks/check.h"
#include "classify/rule_files.h"
#include "cmd_nccl_triage/cli.h"
#include "config/config_loader.h"
#include "core/gpu_holders.h"
#include "core/rails.h"
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
    // The probe logs are classified with the configuration's rule files.
    if (Status rules = LoadAndActivateRules(config->classify.rule_files); !rules.ok()) {
      return rules;
    }
    return config->probe;
  };
  // One snapshot serves the node checks and the rail table.
  auto gathered = std::make_shared<std::optional<NodeSnapshot>>();
  hooks.node_findings = [gathered](
                            const std::string& root,
                            const std::string& config_path) -> StatusOr<std::vector<Finding>> {
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
    *gathered = *snapshot;
    return BuiltinCheckRegistry().Run(*snapshot, config, CheckContext{});
  };
  // The snapshot node_findings gathered, else one gathered now (with the default options).
  auto snapshot_of = [gathered](const std::string& root) -> StatusOr<const NodeSnapshot*> {
    if (!gathered->has_value()) {
      GatherOptions options;
      options.root = root;
      auto snapshot = GatherSnapshot(options);
      if (!snapshot.ok()) return snapshot.status();
      *gathered = std::move(*snapshot);
    }
    return &**gathered;
  };
  hooks.node_port_rates = [snapshot_of](const std::string& root) {
    std::map<std::string, double> rates;
    auto s = snapshot_of(root);
    if (!s.ok()) return rates;  // no rates: no bandwidth verdict, nothing else lost
    for (const auto& hca : (*s)->ib_devices) {
      for (const auto& port : hca.ports) {
        if (port.rate_gbps.ok())
          rates[hca.name + ":" + std::to_string(port.num)] = *port.rate_gbps.value;
      }
    }
    return rates;
  };
  hooks.node_rails = [snapshot_of](const std::string& root) -> StatusOr<std::vector<RailTarget>> {
    auto gathered = snapshot_of(root);
    if (!gathered.ok()) return gathered.status();
    const NodeSnapshot& s = **gathered;
    std::vector<RailTarget> out;
    for (auto& rail : RailTable(s)) {
      RailTarget t;
      if (!rail.gpu_bdf.empty()) {
        if (auto why = GpuBusyBy(s, rail.gpu_bdf)) t.gpu_busy_by = *why;
      }
      t.rail = std::move(rail);
      out.push_back(std::move(t));
    }
    return out;
  };
  return RunProbeCli(ctx.args, ctx.out, ctx.err, hooks);
}

}  // namespace nccl_triage
