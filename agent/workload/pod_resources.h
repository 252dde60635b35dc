// The kubelet's pod-resources API (gRPC on a unix socket): which devices each container was
// assigned by the device plugins (GPUs, rdma/* resources).
//
// PodResourcesSource is the seam. The real client (kubelet/pod_resources_client.h, gRPC) lives
// in the server; `check --workloads` in the small binary reads the same entries through the
// server binary (workload/lookup.h); tests use a fake source.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "core/snapshot.h"
#include "workload/pods.h"

namespace nccl_triage::workload {

// The kubelet's socket, relative to the root.
inline constexpr const char* kPodResourcesSocket = "var/lib/kubelet/pod-resources/kubelet.sock";

// The socket under `root` when it exists (absolute), "" otherwise.
std::string PodResourcesSocketUnder(const std::string& root);

class PodResourcesSource {
 public:
  virtual ~PodResourcesSource() = default;
  virtual StatusOr<std::vector<PodResourcesEntry>> List() = 0;
};

// The devices of the nvidia.com/* resources among `entries` (GPUs, time-sliced replicas, MIG
// slices), one per device id, as NodeSnapshot::gpu_allocations.
std::vector<GpuAllocation> GpuAllocationsOf(const std::vector<PodResourcesEntry>& entries);

// Reads the kubelet's assignments into `snapshot`: gpu_allocations, or gpu_allocations_error
// (and no allocations) when the socket cannot be read; the busy-GPU gate then rests on the
// processes alone, and says so.
void ReadGpuAllocations(PodResourcesSource& source, NodeSnapshot& snapshot);

}  // namespace nccl_triage::workload
