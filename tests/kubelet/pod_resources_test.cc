// The kubelet's pod-resources API over a real gRPC unix socket, served by a fake kubelet.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <memory>

#include "kubelet/pod_resources_client.h"
#include "podresources/v1/api.grpc.pb.h"
#include "workload/workload_test_util.h"

namespace nccl_triage::workload {
namespace {

// Answers List with a fixed reply (or an error), like the kubelet on a GPU node.
class FakeKubelet final : public ::v1::PodResourcesLister::Service {
 public:
  grpc::Status List(grpc::ServerContext*, const ::v1::ListPodResourcesRequest*,
                    ::v1::ListPodResourcesResponse* response) override {
    ++calls;
    if (fail) return {grpc::StatusCode::PERMISSION_DENIED, "denied by the fake kubelet"};
    auto* pod = response->add_pod_resources();
    pod->set_name("train-0");
    pod->set_namespace_("team-a");
    auto* c = pod->add_containers();
    c->set_name("trainer");
    auto* gpu = c->add_devices();
    gpu->set_resource_name("nvidia.com/gpu");
    gpu->add_device_ids("GPU-0b1c");
    gpu->add_device_ids("GPU-77aa");
    auto* rdma = c->add_devices();
    rdma->set_resource_name("rdma/rdma_shared_device_a");
    rdma->add_device_ids("mlx5_0");
    auto* sidecar = pod->add_containers();
    sidecar->set_name("sidecar");
    return grpc::Status::OK;
  }
  int calls = 0;
  bool fail = false;
};

class PodResourcesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    socket_ = dir_.path() + "/kubelet.sock";
    grpc::ServerBuilder builder;
    builder.AddListeningPort("unix:" + socket_, grpc::InsecureServerCredentials());
    builder.RegisterService(&kubelet_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
  }
  void TearDown() override {
    if (server_) server_->Shutdown();
  }

  testing::TempDir dir_;
  std::string socket_;
  FakeKubelet kubelet_;
  std::unique_ptr<grpc::Server> server_;
};

TEST_F(PodResourcesTest, ListsDevicesPerContainer) {
  GrpcPodResources client(socket_);
  auto entries = client.List();
  ASSERT_TRUE(entries.ok()) << entries.status().message();
  ASSERT_EQ(entries->size(), 2u);
  const PodResourcesEntry& e = (*entries)[0];
  EXPECT_EQ(e.namespace_name, "team-a");
  EXPECT_EQ(e.pod, "train-0");
  EXPECT_EQ(e.container, "trainer");
  ASSERT_EQ(e.devices.size(), 2u);
  EXPECT_EQ(e.devices[0].resource, "nvidia.com/gpu");
  EXPECT_EQ(e.devices[0].ids, (std::vector<std::string>{"GPU-0b1c", "GPU-77aa"}));
  EXPECT_EQ(e.devices[1].resource, "rdma/rdma_shared_device_a");
  EXPECT_TRUE((*entries)[1].devices.empty());
  EXPECT_EQ(kubelet_.calls, 1);
}

TEST_F(PodResourcesTest, ServerErrorIsAStatusNotACrash) {
  kubelet_.fail = true;
  GrpcPodResources client(socket_);
  auto entries = client.List();
  ASSERT_FALSE(entries.ok());
  EXPECT_NE(entries.status().message().find("denied"), std::string::npos);
}

// The agent reads the same List into its snapshot for the busy-GPU gate: only nvidia.com/*
// devices, each with the container that owns it; a kubelet that refuses leaves them unknown.
TEST_F(PodResourcesTest, GpuAssignmentsJoinTheSnapshotAndARefusalIsSaid) {
  GrpcPodResources client(socket_);
  NodeSnapshot snapshot;
  ReadGpuAllocations(client, snapshot);
  ASSERT_TRUE(snapshot.gpu_allocations.has_value()) << snapshot.gpu_allocations_error;
  EXPECT_EQ(*snapshot.gpu_allocations,
            (std::vector<GpuAllocation>{{"team-a/train-0/trainer", "nvidia.com/gpu", "GPU-0b1c"},
                                        {"team-a/train-0/trainer", "nvidia.com/gpu", "GPU-77aa"}}));
  EXPECT_TRUE(snapshot.gpu_allocations_error.empty());

  kubelet_.fail = true;
  ReadGpuAllocations(client, snapshot);
  EXPECT_FALSE(snapshot.gpu_allocations.has_value());
  EXPECT_NE(snapshot.gpu_allocations_error.find("denied"), std::string::npos)
      << snapshot.gpu_allocations_error;
}

TEST(PodResourcesAbsent, MissingSocketFailsWithinTheDeadline) {
  testing::TempDir dir;
  GrpcPodResources client(dir.path() + "/nothing.sock", std::chrono::milliseconds(300));
  auto start = std::chrono::steady_clock::now();
  auto entries = client.List();
  EXPECT_FALSE(entries.ok());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

}  // namespace
}  // namespace nccl_triage::workload
