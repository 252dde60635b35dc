// The workload view's plain values: what one pass read about each GPU process (through
// /proc/<pid> under the root), how the processes group into containers and pods, and the
// verdict on each container.
//
// Produced by the scanner (scanner.h, the only part that reads files) and the pod directory
// (pods.h, the Kubernetes API and the kubelet's pod-resources socket); judged by judge.h;
// published by publish.h. Plain values: safe to copy and to share between threads once built.
//
// Secrets: a ProcessFacts holds only the filtered environment (environ.h); nothing else from a
// workload's environment exists in these types.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/model.h"
#include "core/snapshot.h"
#include "workload/cgroup.h"
#include "workload/environ.h"
#include "workload/proc_text.h"

namespace nccl_triage::workload {

// Everything read about one process that holds a GPU device. Each fact carries its source path
// (relative to the root) or the reason it could not be read.
struct ProcessFacts {
  int pid = 0;
  std::string comm;
  std::vector<std::string> gpu_devices;  // "/dev/nvidia0", the fd link targets that matched
  Fact<LimitPair> memlock;               // proc/<pid>/limits
  Fact<LimitPair> nofile;
  Fact<uint64_t> cap_eff;  // proc/<pid>/status
  Fact<int> seccomp_mode;
  Fact<std::string> netns;  // proc/<pid>/ns/net link target
  // proc/<pid>/root/dev/infiniband: what the container was given.
  bool dev_infiniband_present = false;
  std::vector<std::string> dev_infiniband;
  std::string dev_infiniband_error;      // empty when listed (or simply absent)
  Fact<std::vector<MountEntry>> mounts;  // proc/<pid>/mountinfo, /dev/shm and /dev/infiniband only
  // The namespace's interfaces: names from proc/<pid>/net/dev; in a private namespace also their
  // operstate and type from the container's own sysfs (proc/<pid>/root/sys/class/net/<if>/),
  // which shows the namespace it was mounted in. In the host namespace the judge uses the node
  // snapshot's interfaces instead (with addresses when gathered live).
  Fact<std::vector<NetInterface>> interfaces;
  Fact<FilteredEnviron> environ;          // proc/<pid>/environ, filtered while parsing
  Fact<std::optional<NcclLibrary>> nccl;  // proc/<pid>/maps (nullopt value: NCCL not mapped)
};

// The processes of one container (same cgroup), in pid order.
struct ContainerFacts {
  CgroupRef ref;
  std::vector<ProcessFacts> processes;
};

// A process the pass did not judge, and why (debug output and /status; never a verdict).
struct SkippedProcess {
  int pid = 0;
  std::string reason;  // "exited during the scan", "cgroup path of unknown shape", ...
};

// One pass of the scanner.
struct ScanResult {
  Fact<std::string> host_netns;            // proc/1/ns/net: the host's network namespace
  std::vector<ContainerFacts> containers;  // ordered by container id
  std::vector<SkippedProcess> skipped;
  int processes_scanned = 0;
  std::string error;  // the pass could not look at all (proc missing); empty otherwise
  std::map<std::string, int> files_read;  // every file/link read in the pass, with a count
};

// A device plugin assignment from the kubelet's pod-resources API.
struct DeviceAssignment {
  std::string resource;  // "nvidia.com/gpu", "rdma/rdma_shared_device_a"
  std::vector<std::string> ids;
  friend bool operator==(const DeviceAssignment&, const DeviceAssignment&) = default;
};

// What the Kubernetes side says about one container of a GPU pod.
struct PodContainer {
  std::string namespace_name;
  std::string pod;
  std::string container;
  std::string pod_uid;
  std::map<std::string, std::string> limits;  // resources.limits of the container spec
  bool pod_found = false;                     // the API listed the pod
  bool container_found = false;               // a container status carried this container id
  // From the kubelet's pod-resources List; nullopt when the socket is not mounted or failed.
  std::optional<std::vector<DeviceAssignment>> assigned;
};

// The verdict on one container.
struct ContainerVerdict {
  PodContainer pod;
  std::string container_id;
  std::vector<int> pids;
  std::vector<Finding> findings;  // one per check, the worst over the container's processes
  FaultClass verdict = FaultClass::kUnknown;
  std::vector<std::string> causes;  // failing check ids, catalogue order
  // Shown in /status and the CLI: the allow-listed environment of the first process, the NCCL
  // library, the GPU devices held.
  std::map<std::string, std::string> environ;
  std::optional<NcclLibrary> nccl;
  std::vector<std::string> gpu_devices;
};

}  // namespace nccl_triage::workload
