#include "cmd_nccl_triage_server/http_auth_setup.h"

#include <cstdlib>

#include "kube/kube_client.h"

namespace nccl_triage {

StatusOr<HttpAuthSetup> SetUpHttpAuth(const Config& config, const HttpAuthEnv& env) {
  HttpAuthSetup setup;
  if (config.server.auth != kHttpAuthKubernetes) return setup;
  if (env.kube_host.empty()) {
    return InvalidArgument(
        "server.auth: kubernetes needs the Kubernetes API (no KUBERNETES_SERVICE_HOST); outside "
        "a cluster set server.auth: none");
  }
  InClusterOptions options;
  options.host = env.kube_host;
  options.port = env.kube_port.empty() ? 443 : std::atoi(env.kube_port.c_str());
  if (!env.service_account_dir.empty()) options.service_account_dir = env.service_account_dir;
  options.connect_timeout = std::chrono::milliseconds(2000);
  options.read_timeout = std::chrono::milliseconds(5000);
  options.write_timeout = std::chrono::milliseconds(5000);
  auto client = InClusterKubeClient::Create(options);
  if (!client.ok()) return InvalidArgument("server.auth: kubernetes: " + client.status().message());
  setup.kube = std::move(client).value();
  setup.authorizer = std::make_shared<HttpAuthorizer>(*setup.kube);
  return setup;
}

std::string DescribeHttpAuth(const Config& config) {
  if (config.server.auth == kHttpAuthKubernetes) {
    return "/metrics and /status need a bearer token allowed by the API server (server.auth: "
           "kubernetes)";
  }
  return "/metrics and /status are open to anyone who reaches the port (server.auth: none)";
}

}  // namespace nccl_triage
