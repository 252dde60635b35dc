// Probe overhead with the fake libcuda/libnccl: how long a probe child takes from its spawn to its
// first NCCL call (exec, dynamic linking, dlopen of both libraries, argument parsing), and the
// peak RSS of a child outside NCCL (the fakes keep "device" buffers in host memory, so the probe
// runs at 4 KiB to leave only the probe's own footprint), and the wall time of a whole local pair.
//
//   bench_probe [--runs N] [--child-exe PATH]   (default child: the nccl-triage binary)
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "probe/runner.h"

namespace {

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int runs = 21;
  std::string child = NCCL_TRIAGE_BINARY_DIR "/nccl-triage";
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--runs") runs = std::max(1, std::atoi(argv[i + 1]));
    if (a == "--child-exe") child = argv[i + 1];
  }
  nccl_triage::ProbeConfig config;
  config.nccl_library_paths = {FAKE_NCCL_DIR};
  config.cuda_library_paths = {FAKE_CUDA_DIR};
  config.size_bytes = 4096;
  config.iterations = 5;
  config.warmup_iterations = 1;
  config.timeout_seconds = 30;
  config.socket_ifname = "lo";
  nccl_triage::ProbeRunnerOptions options;
  options.child_exe = child;
  options.work_dir =
      (std::filesystem::temp_directory_path() / ("bench-probe-" + std::to_string(getpid())))
          .string();
  options.default_library_search = false;
  options.parent_env = {{"PATH", "/usr/bin:/bin"}};
  nccl_triage::ProbeRunner runner(config, options);

  std::vector<double> startup, pair_wall;
  int failures = 0;
  for (int i = 0; i < runs; ++i) {
    auto start = std::chrono::steady_clock::now();
    auto ranks = runner.RunLocalRanks(nccl_triage::ProbeMode::kSocket);
    pair_wall.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    for (const auto& r : ranks) {
      if (r.outcome != nccl_triage::ProbeOutcome::kPass) {
        ++failures;
        std::fprintf(stderr, "rank %d: %s\n", r.rank, r.detail.c_str());
      }
      startup.push_back(r.startup_seconds);
    }
  }
  rusage ru{};
  getrusage(RUSAGE_CHILDREN, &ru);
  std::filesystem::remove_all(options.work_dir);
  std::printf("child: %s\n", child.c_str());
  std::printf("runs: %d pairs (%zu children), failures: %d\n", runs, startup.size(), failures);
  std::printf("spawn to first NCCL call: median %.1f ms, max %.1f ms\n", Median(startup) * 1e3,
              *std::max_element(startup.begin(), startup.end()) * 1e3);
  std::printf("whole local pair (socket, 4 KiB): median %.1f ms\n", Median(pair_wall) * 1e3);
  std::printf("peak RSS of the largest child: %.1f MiB\n", ru.ru_maxrss / 1024.0);
  return failures == 0 ? 0 : 1;
}
