#include "kubelet/pod_resources_client.h"

#include <grpcpp/grpcpp.h>

#include "podresources/v1/api.grpc.pb.h"

namespace nccl_triage::workload {

std::vector<PodResourcesEntry> FromListResponse(const ::v1::ListPodResourcesResponse& response) {
  std::vector<PodResourcesEntry> out;
  for (const auto& pod : response.pod_resources()) {
    for (const auto& c : pod.containers()) {
      PodResourcesEntry e;
      e.namespace_name = pod.namespace_();
      e.pod = pod.name();
      e.container = c.name();
      for (const auto& d : c.devices()) {
        if (d.resource_name().empty()) continue;
        DeviceAssignment a;
        a.resource = d.resource_name();
        a.ids.assign(d.device_ids().begin(), d.device_ids().end());
        e.devices.push_back(std::move(a));
      }
      out.push_back(std::move(e));
    }
  }
  return out;
}

GrpcPodResources::GrpcPodResources(std::string socket_path, std::chrono::milliseconds timeout)
    : socket_path_(std::move(socket_path)), timeout_(timeout) {}

StatusOr<std::vector<PodResourcesEntry>> GrpcPodResources::List() {
  grpc::ChannelArguments args;
  // The kubelet's replies on a big node exceed gRPC's 4 MiB default only in pathological cases;
  // 16 MiB bounds memory while leaving room.
  args.SetMaxReceiveMessageSize(16 << 20);
  auto channel =
      grpc::CreateCustomChannel("unix:" + socket_path_, grpc::InsecureChannelCredentials(), args);
  auto stub = ::v1::PodResourcesLister::NewStub(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + timeout_);
  ::v1::ListPodResourcesRequest request;
  ::v1::ListPodResourcesResponse response;
  grpc::Status s = stub->List(&context, request, &response);
  if (!s.ok()) {
    return Unavailable("pod-resources List: " +
                       std::string(s.error_message().empty()
                                       ? "code " + std::to_string(s.error_code())
                                       : s.error_message()));
  }
  return FromListResponse(response);
}

}  // namespace nccl_triage::workload
