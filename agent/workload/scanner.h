// WorkloadScanner: finds the processes that hold a GPU device node and reads, through
// /proc/<pid> under the root, everything the workload checks judge about them.
//
// One pass lists proc/, reads the fd links of each process (uncounted, as the host gatherer
// does: there are thousands), and, for each GPU holder, reads each of its files at most once:
// cgroup, comm, limits, status, ns/net, mountinfo, net/dev, environ, maps, and lists
// root/dev/infiniband. A process that exits mid-read, an unreadable entry, a cgroup path of
// unknown shape or a garbled file is skipped (with a reason) or recorded as a Fact error; the
// pass never throws. The environment is filtered while it is parsed (environ.h); the raw buffer
// never leaves the function that read it.
//
// The GPU device pattern is injectable so that tests (which cannot create /dev/nvidia0) can
// use real processes holding an ordinary file open. Owns nothing shared: one RootReader per pass.
// Thread-compatible: one Scan at a time per scanner.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "workload/workload.h"

namespace nccl_triage::workload {

// The default GPU device pattern: /dev/nvidia<N> (not nvidiactl, nvidia-uvm, nvidia-caps).
inline constexpr const char* kDefaultGpuDevicePattern = "^/dev/nvidia[0-9]+$";

struct ScannerOptions {
  std::string root = "/";
  // RE2 pattern matched against the whole of each fd link target.
  std::string gpu_device_pattern = kDefaultGpuDevicePattern;
  // The agent's pid (host view): excluded, and so is every process of its pod (probe children
  // hold GPUs while they run). 0: nobody.
  int self_pid = 0;
  // Receives one line per skipped process or unreadable fact (debug level). Lines never contain
  // environment values. Empty: no lines.
  std::function<void(std::string_view)> debug;
};

class WorkloadScanner {
 public:
  explicit WorkloadScanner(ScannerOptions options);

  ScanResult Scan() const;
  const ScannerOptions& options() const { return options_; }

 private:
  ScannerOptions options_;
};

}  // namespace nccl_triage::workload
