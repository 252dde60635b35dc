// The kubelet's pod-resources API (gRPC on a unix socket): which devices each container was
// assigned by the device plugins (GPUs, rdma/* resources).
//
// PodResourcesSource is the seam: the real client dials "unix:<socket>" per call with a deadline
// (the kubelet may restart and recreate the socket between passes); tests use a fake server on a
// temporary socket or a fake source. Conversion from the reply is a pure function. The real
// client is thread-safe.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "core/status.h"
#include "workload/pods.h"

namespace v1 {
class ListPodResourcesResponse;
}  // namespace v1

namespace nccl_triage::workload {

// The kubelet's socket, relative to the root.
inline constexpr const char* kPodResourcesSocket = "var/lib/kubelet/pod-resources/kubelet.sock";

class PodResourcesSource {
 public:
  virtual ~PodResourcesSource() = default;
  virtual StatusOr<std::vector<PodResourcesEntry>> List() = 0;
};

// Every container of every pod in the reply, with its non-empty device assignments.
std::vector<PodResourcesEntry> FromListResponse(const ::v1::ListPodResourcesResponse& response);

class GrpcPodResources final : public PodResourcesSource {
 public:
  // `socket_path` absolute (the root joined with kPodResourcesSocket).
  explicit GrpcPodResources(std::string socket_path,
                            std::chrono::milliseconds timeout = std::chrono::seconds(3));
  StatusOr<std::vector<PodResourcesEntry>> List() override;
  const std::string& socket_path() const { return socket_path_; }

 private:
  std::string socket_path_;
  std::chrono::milliseconds timeout_;
};

}  // namespace nccl_triage::workload
