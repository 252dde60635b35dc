// The kubelet's pod-resources API (gRPC on a unix socket): the real PodResourcesSource. It dials
// "unix:<socket>" per call with a deadline (the kubelet may restart and recreate the socket
// between passes). Conversion from the reply is a pure function. Thread-safe.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "base/status.h"
#include "workload/pod_resources.h"

namespace v1 {
class ListPodResourcesResponse;
}  // namespace v1

namespace nccl_triage::workload {

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
