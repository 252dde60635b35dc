// `nccl-triage probe`: the command line of the probe, shared by the full binary
// (agent/cmd_nccl_triage/cmd_probe.cc, which adds node checks and --config) and the standalone
// `nccl-triage-probe` built for GPU machines from agent/core, agent/classify and agent/probe only.
//
//   probe --child --mode socket|ib --rank R --nranks N ...   one rank (started by the runner)
//   probe --pair-local [--mode socket|ib|both] [--format table|json] [--size 64M] [--iters N]
//         [--warmup W] [--timeout S] [--socket-ifname IF] [--ib-hca HCA] [--nccl-lib PATH]...
//         [--cuda-lib PATH]... [--only-configured-libs] [--env-allow NAME]... [--root DIR]
//         [--work-dir DIR] [--config FILE] [--rails all|N|LIST]
//   probe --intra-node [--gpus LIST] [--format table|json] [the size, timeout, library, root,
//         work-dir and config flags above]
// Exit codes: 0 healthy, 1 a fault verdict, 2 usage, 3 nothing to conclude.
#pragma once

#include <functional>
#include <iosfwd>
#include <map>
#include <string>
#include <vector>

#include "base/status.h"
#include "core/config.h"
#include "core/model.h"
#include "probe/pair_local.h"

namespace nccl_triage {

struct ProbeCliHooks {
  std::string self_exe;                            // the binary that implements `probe --child`
  std::map<std::string, std::string> environment;  // this process's environment
  bool stderr_is_terminal = false;                 // a progress line goes to stderr only then
  // Loads a configuration file's probe section (the full binary only).
  std::function<StatusOr<ProbeConfig>(const std::string& path)> load_config;
  // The node checks of the host at `root` (the full binary only); config_path may be empty.
  std::function<StatusOr<std::vector<Finding>>(const std::string& root,
                                               const std::string& config_path)>
      node_findings;
  // The rail table of the host at `root`, each rail with the workload process that holds its GPU
  // (the full binary only; without it --rails takes HCA names only).
  std::function<StatusOr<std::vector<RailTarget>>(const std::string& root)> node_rails;
  // The IB/RoCE port rates of the host at `root` in Gb/s ("mlx5_0:1" -> 200), for the expected
  // busbw of --pair-local's IB probe (the full binary only; without it no bandwidth verdict).
  std::function<std::map<std::string, double>(const std::string& root)> node_port_rates;
};

int RunProbeCli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
                const ProbeCliHooks& hooks);

}  // namespace nccl_triage
