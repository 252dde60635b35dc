// Helpers for the coordinator's integration tests: a DemoCluster with the fake libraries of this
// build, small probes, quick deadlines and a scratch directory of its own.
#pragma once

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <memory>
#include <sstream>
#include <string>

#include "base/log.h"
#include "support/demo_cluster.h"

namespace nccl_triage::testing_util {

inline std::string ScratchDir(const std::string& what) {
  static std::atomic<int> counter{0};
  std::error_code ec;
  std::filesystem::path base =
      access("/dev/shm", W_OK) == 0 && std::filesystem::is_directory("/dev/shm", ec)
          ? std::filesystem::path("/dev/shm")
          : std::filesystem::temp_directory_path();
  auto dir = base / ("coord-test-" + what + "-" + std::to_string(getpid()) + "-" +
                     std::to_string(counter++));
  std::filesystem::remove_all(dir);
  return dir.string();
}

inline DemoOptions TestOptions(int nodes, const std::string& what) {
  DemoOptions o;
  o.nodes = nodes;
  o.probe_exe = PROBE_CHILD_EXE;
  o.fakes_dir = FAKES_DIR;
  o.work_dir = ScratchDir(what);
  o.hold_down = 1;
  o.probe_timeout_seconds = 15;
  return o;
}

// Owns the log stream and removes the scratch directory.
struct TestCluster {
  explicit TestCluster(DemoOptions options)
      : work_dir(options.work_dir),
        log(log_text, LogLevel::kInfo),
        cluster(std::move(options), log) {}
  ~TestCluster() {
    cluster.Stop();
    std::error_code ec;
    std::filesystem::remove_all(work_dir, ec);
  }
  std::string work_dir;
  std::ostringstream log_text;
  Logger log;
  DemoCluster cluster;
};

}  // namespace nccl_triage::testing_util
