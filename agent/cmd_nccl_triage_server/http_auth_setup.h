// server.auth for the HTTP endpoints of the agent and of the coordinator: with `kubernetes`, an
// in-cluster Kubernetes client of its own (short timeouts, so a stalled API server answers a
// scrape with 503 well within Prometheus' scrape timeout, and never behind the publisher's calls)
// and an HttpAuthorizer over it (exporter/http_auth.h). Kept out of the commands so they only
// wire it.
#pragma once

#include <memory>
#include <string>

#include "base/status.h"
#include "core/config.h"
#include "exporter/http_auth.h"
#include "kube/kube_api.h"

namespace nccl_triage {

struct HttpAuthSetup {
  std::unique_ptr<KubeClient> kube;            // must outlive `authorizer`
  std::shared_ptr<HttpAuthorizer> authorizer;  // null for server.auth: none
};

// The environment it reads, passed in: $KUBERNETES_SERVICE_HOST and _PORT, and
// $NCCL_TRIAGE_SERVICE_ACCOUNT_DIR (a directory laid out as the pod's service-account mount,
// for a process outside a pod; empty: the pod's own).
struct HttpAuthEnv {
  std::string kube_host;
  std::string kube_port;
  std::string service_account_dir;
};

// Errors: server.auth is kubernetes but there is no API server to ask, or its service account's
// files do not load. The endpoints are never opened up instead.
StatusOr<HttpAuthSetup> SetUpHttpAuth(const Config& config, const HttpAuthEnv& env);

// What the log says at start-up about who may read /metrics and /status.
std::string DescribeHttpAuth(const Config& config);

}  // namespace nccl_triage
