#include "cmd_nccl_triage_server/node_identity_setup.h"

#include <cstdlib>

#include "kube/kube_client.h"

namespace nccl_triage {

StatusOr<NodeIdentitySetup> SetUpNodeIdentity(const Config& config, const NodeIdentityEnv& env) {
  NodeIdentitySetup setup;
  const CoordinatorConfig& c = config.coordinator;
  if (c.identity_only && !c.verify_node_identity) {
    return InvalidArgument(
        "coordinator.identity_only needs coordinator.verify_node_identity: true (without it no "
        "agent would be authenticated)");
  }
  if (!c.verify_node_identity) return setup;
  const std::string account =
      c.agent_service_account.empty() ? env.agent_service_account : c.agent_service_account;
  const size_t colon = account.find(':');
  if (colon == 0 || colon == std::string::npos || colon + 1 == account.size()) {
    return InvalidArgument(
        "coordinator.verify_node_identity needs coordinator.agent_service_account (or "
        "$NCCL_TRIAGE_AGENT_SERVICE_ACCOUNT) as namespace:name");
  }
  if (env.kube_host.empty()) {
    return InvalidArgument(
        "coordinator.verify_node_identity needs the Kubernetes API (no KUBERNETES_SERVICE_HOST)");
  }
  InClusterOptions options;
  options.host = env.kube_host;
  options.port = env.kube_port.empty() ? 443 : std::atoi(env.kube_port.c_str());
  if (!env.service_account_dir.empty()) options.service_account_dir = env.service_account_dir;
  auto client = InClusterKubeClient::Create(options);
  if (!client.ok()) return client.status();
  setup.kube = std::move(client).value();
  setup.identity = std::make_shared<TokenReviewIdentity>(
      *setup.kube, TokenReviewIdentityOptions{.service_account = account});
  return setup;
}

}  // namespace nccl_triage
