// Where `nccl-triage ras` sends its query: an address, and the network namespace to send it from.
//
// --pid PID: the namespace of /proc/PID/ns/net. --pod NS/NAME: the pod's UID from the API (through
// `nccl-triage-server workload-lookup`, as `check --workloads` does), then the first process of
// the pod that holds a GPU, found by the workload scanner (cgroup path -> pod UID); a pod with
// hostNetwork, or a process in this process's namespace, is asked from here. The address is
// --addr, else the process's own NCCL_RAS_ADDR (read from its filtered environment), else
// localhost:28028.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "base/status.h"
#include "workload/pods.h"
#include "workload/workload.h"

namespace nccl_triage {

struct RasTarget {
  int pid = 0;            // 0: no process (--addr alone)
  bool enter_netns = false;  // false: the process shares this one's namespace (or hostNetwork)
  std::string netns_path;    // /proc/<pid>/ns/net
  std::string ras_addr;      // the process's NCCL_RAS_ADDR, "" when unset or unknown
  std::string what;          // "pod ml/train-0 container trainer pid 613"
};

// Pure: the pod's process that the query goes through (the lowest pid of the pod's first
// container holding a GPU), or why there is none.
StatusOr<RasTarget> PickPodProcess(const workload::ScanResult& scan, const workload::ApiPod& pod);

// The pod named NS/NAME among the API's pods on `node`, asked through `server_exe`.
StatusOr<workload::ApiPod> LookupPod(const std::string& server_exe, const std::string& node,
                                     const std::string& ns, const std::string& name);

// --pod: LookupPod, a workload scan of "/", PickPodProcess, then the namespace comparison.
StatusOr<RasTarget> ResolvePodTarget(const std::string& server_exe, const std::string& node,
                                     const std::string& pod_ref);

// --pid: the process's namespace and NCCL_RAS_ADDR.
StatusOr<RasTarget> ResolvePidTarget(int pid);

}  // namespace nccl_triage
