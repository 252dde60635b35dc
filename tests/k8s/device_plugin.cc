// The device plugin of the one-node cluster's tests (tests/k8s/node_agent.sh): it speaks the
// kubelet's device-plugin API v1beta1 (deviceplugin/v1beta1/api.proto) so that pods requesting
// nvidia.com/gpu or an rdma/* resource are admitted by the real kubelet, and the pod-resources API
// the agent reads reports the kubelet's own assignments. There are no GPUs or HCAs behind it.
//
//   kt_device_plugin --dir /var/lib/kubelet/device-plugins --resource NAME=COUNT[:HOST_NODE]...
// (the kubelet's registration socket is there whatever its --root-dir)
//
// Per resource: a gRPC server on DIR/kt-<n>.sock (ListAndWatch: COUNT healthy devices <n>-0 ...;
// Allocate: the ids in NVIDIA_VISIBLE_DEVICES (for nvidia.com/*) or KT_DEVICES, and with HOST_NODE
// each device as the device node /dev/nvidia<i> (nvidia.com/gpu) or /dev/kt<n>-<i> of the
// container, made from HOST_NODE: a stand-in the agent's scanner recognises as a GPU held open),
// then Register on DIR/kubelet.sock. Runs until SIGTERM or SIGINT. Prints "registered NAME" per
// resource on stdout once the kubelet accepted it.
#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "deviceplugin/v1beta1/api.grpc.pb.h"

namespace {

struct Resource {
  std::string name;       // nvidia.com/gpu, rdma/hca
  int count = 0;
  std::string host_node;  // a character device of the host behind each device; empty: none
  std::string socket;     // file name in the device-plugins directory
};

// Set by the signal thread; ListAndWatch streams end when it is.
std::mutex g_mu;
std::condition_variable g_cv;
bool g_stop = false;

class Plugin final : public v1beta1::DevicePlugin::Service {
 public:
  explicit Plugin(Resource r) : r_(std::move(r)) {}

  grpc::Status GetDevicePluginOptions(grpc::ServerContext*, const v1beta1::Empty*,
                                      v1beta1::DevicePluginOptions* out) override {
    out->Clear();
    return grpc::Status::OK;
  }

  grpc::Status ListAndWatch(grpc::ServerContext* ctx, const v1beta1::Empty*,
                            grpc::ServerWriter<v1beta1::ListAndWatchResponse>* writer) override {
    v1beta1::ListAndWatchResponse resp;
    for (int i = 0; i < r_.count; ++i) {
      auto* d = resp.add_devices();
      d->set_id(DeviceId(i));
      d->set_health("Healthy");
    }
    if (!writer->Write(resp)) return grpc::Status::OK;
    // The list never changes: hold the stream open until the kubelet or this process ends it.
    std::unique_lock<std::mutex> lock(g_mu);
    while (!g_stop && !ctx->IsCancelled()) g_cv.wait_for(lock, std::chrono::seconds(1));
    return grpc::Status::OK;
  }

  grpc::Status GetPreferredAllocation(grpc::ServerContext*,
                                      const v1beta1::PreferredAllocationRequest*,
                                      v1beta1::PreferredAllocationResponse*) override {
    return grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "no preferred allocation");
  }

  grpc::Status Allocate(grpc::ServerContext*, const v1beta1::AllocateRequest* req,
                        v1beta1::AllocateResponse* out) override {
    const bool nvidia = r_.name.rfind("nvidia.com/", 0) == 0;
    for (const auto& c : req->container_requests()) {
      auto* resp = out->add_container_responses();
      std::string ids;
      for (const std::string& id : c.devices_ids()) {
        ids += (ids.empty() ? "" : ",") + id;
        if (r_.host_node.empty()) continue;
        auto* dev = resp->add_devices();
        const std::string index = id.substr(id.rfind('-') + 1);
        dev->set_container_path(nvidia ? "/dev/nvidia" + index : "/dev/kt" + Short() + "-" + index);
        dev->set_host_path(r_.host_node);
        dev->set_permissions("rw");
      }
      (*resp->mutable_envs())[nvidia ? "NVIDIA_VISIBLE_DEVICES" : "KT_DEVICES"] = ids;
      std::cerr << "kt_device_plugin: " << r_.name << ": allocated " << ids << "\n";
    }
    return grpc::Status::OK;
  }

  grpc::Status PreStartContainer(grpc::ServerContext*, const v1beta1::PreStartContainerRequest*,
                                 v1beta1::PreStartContainerResponse*) override {
    return grpc::Status::OK;
  }

 private:
  std::string Short() const { return r_.name.substr(r_.name.rfind('/') + 1); }
  std::string DeviceId(int i) const { return Short() + "-" + std::to_string(i); }
  Resource r_;
};

bool ParseResource(const std::string& arg, size_t index, Resource& out) {
  const size_t eq = arg.find('=');
  if (eq == std::string::npos || eq == 0) return false;
  out.name = arg.substr(0, eq);
  std::string rest = arg.substr(eq + 1);
  if (const size_t colon = rest.find(':'); colon != std::string::npos) {
    out.host_node = rest.substr(colon + 1);
    rest = rest.substr(0, colon);
  }
  char* end = nullptr;
  const long n = std::strtol(rest.c_str(), &end, 10);
  if (rest.empty() || *end != '\0' || n < 1 || n > 64) return false;
  out.count = static_cast<int>(n);
  out.socket = "kt-" + std::to_string(index) + ".sock";
  return true;
}

int Usage() {
  std::cerr << "usage: kt_device_plugin --dir DEVICE_PLUGINS_DIR --resource NAME=COUNT[:HOST_NODE]"
               "...\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir;
  std::vector<Resource> resources;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--dir" && i + 1 < argc) {
      dir = argv[++i];
    } else if (a == "--resource" && i + 1 < argc) {
      Resource r;
      if (!ParseResource(argv[++i], resources.size(), r)) return Usage();
      resources.push_back(r);
    } else {
      return Usage();
    }
  }
  if (dir.empty() || resources.empty()) return Usage();

  // Signals go to one thread, which ends the streams and the servers.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);

  std::vector<std::unique_ptr<Plugin>> plugins;
  std::vector<std::unique_ptr<grpc::Server>> servers;
  for (const Resource& r : resources) {
    const std::string path = dir + "/" + r.socket;
    unlink(path.c_str());
    plugins.push_back(std::make_unique<Plugin>(r));
    grpc::ServerBuilder builder;
    builder.AddListeningPort("unix:" + path, grpc::InsecureServerCredentials());
    builder.RegisterService(plugins.back().get());
    servers.push_back(builder.BuildAndStart());
    if (!servers.back()) {
      std::cerr << "kt_device_plugin: cannot serve on " << path << "\n";
      return 1;
    }
  }
  auto kubelet = v1beta1::Registration::NewStub(
      grpc::CreateChannel("unix:" + dir + "/kubelet.sock", grpc::InsecureChannelCredentials()));
  for (const Resource& r : resources) {
    v1beta1::RegisterRequest req;
    req.set_version("v1beta1");
    req.set_endpoint(r.socket);
    req.set_resource_name(r.name);
    v1beta1::Empty empty;
    grpc::Status st;
    // The kubelet's registration socket may appear a little after the kubelet starts.
    for (int attempt = 0; attempt < 60; ++attempt) {
      grpc::ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
      st = kubelet->Register(&ctx, req, &empty);
      if (st.ok()) break;
      std::this_thread::sleep_for(std::chrono::seconds(1));
    }
    if (!st.ok()) {
      std::cerr << "kt_device_plugin: Register " << r.name << ": " << st.error_message() << "\n";
      return 1;
    }
    std::cout << "registered " << r.name << " (" << r.count << " devices)" << std::endl;
  }

  int sig = 0;
  sigwait(&set, &sig);
  {
    std::lock_guard<std::mutex> lock(g_mu);
    g_stop = true;
  }
  g_cv.notify_all();
  for (auto& s : servers) s->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(3));
  for (const Resource& r : resources) unlink((dir + "/" + r.socket).c_str());
  return 0;
}
