// nccl-triage-probe: the probe alone (child + local pair), for machines that have a GPU and NCCL
// but not the full binary's dependencies. Built from agent/core, agent/classify and agent/probe
// with the C++ standard library and nlohmann/json only (tests/gpu/build-standalone.sh). It answers
// the same `probe ...` command line as `nccl-triage probe`, without node checks or --config.
#include <limits.h>
#include <unistd.h>

#include <iostream>
#include <string>
#include <vector>

#include "probe/environment.h"
#include "probe/probe_cli.h"

extern char** environ;

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  // The runner starts children as `<exe> probe --child ...`, like the full binary.
  if (!args.empty() && args[0] == "probe") args.erase(args.begin());
  char self[PATH_MAX] = {};
  ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  nccl_triage::ProbeCliHooks hooks;
  hooks.self_exe = n > 0 ? std::string(self, static_cast<size_t>(n)) : argv[0];
  hooks.environment = nccl_triage::EnvironmentMap(environ);
  hooks.stderr_is_terminal = isatty(STDERR_FILENO) == 1;
  return nccl_triage::RunProbeCli(args, std::cout, std::cerr, hooks);
}
