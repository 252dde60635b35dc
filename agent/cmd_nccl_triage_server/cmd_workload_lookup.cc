// `nccl-triage-server workload-lookup --node NODE [--api] [--pod-resources SOCKET]`: the reads
// that `nccl-triage check --workloads` cannot make itself (HTTPS to the API server, gRPC to the
// kubelet), printed as one JSON document (workload/lookup.h). Not for people: hidden from usage.
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <ostream>

#include "base/flags.h"
#include "cmd_nccl_triage_server/server_cli.h"
#include "core/json_text.h"
#include "kube/kube_client.h"
#include "kubelet/pod_resources_client.h"
#include "workload/lookup.h"

namespace nccl_triage {

int RunWorkloadLookupCommand(CliContext& ctx) {
  std::string node;
  std::string socket;
  bool api = false;
  Status parsed = FlagParser()
                      .String({"--node"}, &node)
                      .String({"--pod-resources"}, &socket)
                      .Switch({"--api"}, &api)
                      .Parse(ctx.args);
  if (!parsed.ok()) {
    ctx.err << "nccl-triage-server workload-lookup: " << parsed.message() << "\n";
    return 2;
  }
  if (node.empty()) {
    ctx.err << "nccl-triage-server workload-lookup: --node is required\n";
    return 2;
  }

  workload::WorkloadLookup lookup;
  if (api) {
    InClusterOptions o;
    const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
    const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
    o.host = host ? host : "";
    if (port != nullptr && *port != '\0') o.port = std::atoi(port);
    auto client = InClusterKubeClient::Create(o);
    if (client.ok()) {
      lookup.pods = (*client)->ListPods("spec.nodeName=" + node);
      lookup.node = (*client)->GetNode(node);
    } else {
      KubeResponse no_api;
      no_api.error = "no Kubernetes API: " + client.status().message();
      lookup.pods = no_api;
      lookup.node = no_api;
    }
  }
  if (!socket.empty()) {
    workload::GrpcPodResources kubelet(socket);
    lookup.pod_resources = kubelet.List();
  }
  ctx.out << DumpJson(workload::ToJson(lookup)) << "\n";
  return 0;
}

}  // namespace nccl_triage
