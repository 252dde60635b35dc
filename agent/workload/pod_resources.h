// The kubelet's pod-resources API (gRPC on a unix socket): which devices each container was
// assigned by the device plugins (GPUs, rdma/* resources).
//
// PodResourcesSource is the seam. The real client (kubelet/pod_resources_client.h, gRPC) lives
// in the server; `check --workloads` in the small binary reads the same entries through the
// server binary (app/workload_lookup.h); tests use a fake source.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
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

}  // namespace nccl_triage::workload
