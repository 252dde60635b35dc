// The Kubernetes API for the triage children (`triage-fetch`, `triage-keep`): which credentials,
// read the way kubectl chooses them — --kubeconfig, else $KUBECONFIG, else ~/.kube/config,
// else the pod's service account — and the real HTTPS clients made from them.
#pragma once

#include <memory>
#include <string>

#include "base/status.h"
#include "kube/kube_api.h"
#include "kube/kube_client.h"

namespace nccl_triage {

// Reads the chosen kubeconfig files (or the service account) from the environment this child
// was given (KUBECONFIG, HOME, KUBERNETES_SERVICE_HOST/PORT). Errors are one line.
StatusOr<ApiAccess> TriageApiAccess(const std::string& kubeconfig_flag, const std::string& context);

// A client for one thread: log streams last long, so each reader thread has its own connection.
StatusOr<std::unique_ptr<InClusterKubeClient>> TriageClient(const ApiAccess& access);

}  // namespace nccl_triage
