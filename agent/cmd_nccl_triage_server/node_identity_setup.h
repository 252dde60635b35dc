// The coordinator's node-identity check from its configuration: with
// coordinator.verify_node_identity, an in-cluster Kubernetes client and a TokenReviewIdentity over
// it (coordinator/node_identity.h). Kept out of cmd_coordinator.cc so the command only wires it.
#pragma once

#include <memory>
#include <string>

#include "base/status.h"
#include "coordinator/node_identity.h"
#include "core/config.h"
#include "kube/kube_api.h"

namespace nccl_triage {

struct NodeIdentitySetup {
  std::unique_ptr<KubeClient> kube;         // must outlive `identity`
  std::shared_ptr<NodeIdentity> identity;   // null when the check is off
};

// The environment it reads, passed in: the API server ($KUBERNETES_SERVICE_HOST and _PORT) and
// $NCCL_TRIAGE_AGENT_SERVICE_ACCOUNT, the agents' service account when the configuration leaves
// coordinator.agent_service_account empty (the chart knows its name, the config file does not),
// and $NCCL_TRIAGE_SERVICE_ACCOUNT_DIR, the coordinator's own credentials outside a pod (a
// directory laid out as the pod's service-account mount; empty: the pod's mount).
struct NodeIdentityEnv {
  std::string kube_host;
  std::string kube_port;
  std::string agent_service_account;
  std::string service_account_dir;
};

// Errors: coordinator.identity_only without the check; the check on but the service account not
// "namespace:name", or no API server to ask.
StatusOr<NodeIdentitySetup> SetUpNodeIdentity(const Config& config, const NodeIdentityEnv& env);

}  // namespace nccl_triage
