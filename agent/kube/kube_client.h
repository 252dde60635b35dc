// InClusterKubeClient: the real KubeClient (kube/kube_api.h), HTTPS to the API server with the
// pod's service account, or with the credentials of a kubeconfig (`Connect`, for `nccl-triage
// triage` run from outside the cluster). Lives apart from the interface so that code which only
// needs the interface (the workload view, the publishers) does not link HTTP or TLS.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "base/status.h"
#include "kube/kube_api.h"

namespace nccl_triage {

struct InClusterOptions {
  std::string host;  // KUBERNETES_SERVICE_HOST, read by the app and passed in
  int port = 443;    // KUBERNETES_SERVICE_PORT
  // Holds `token` (re-read before every request: kubelet rotates bound tokens) and `ca.crt`.
  std::string service_account_dir = "/var/run/secrets/kubernetes.io/serviceaccount";
  std::chrono::milliseconds connect_timeout{3000};
  std::chrono::milliseconds read_timeout{10000};
  std::chrono::milliseconds write_timeout{10000};
  std::string user_agent = "nccl-triage";
};

struct KubeTimeouts {
  std::chrono::milliseconds connect{3000};
  std::chrono::milliseconds read{10000};  // per read: a log stream may last longer in total
  std::chrono::milliseconds write{10000};
  std::string user_agent = "nccl-triage";
};

// The service account's files as an ApiAccess (ca.crt, the token re-read per request, the
// namespace file when present). Fails when the host is empty or ca.crt / token cannot be read.
StatusOr<ApiAccess> InClusterAccess(const InClusterOptions& options);

// The real client: HTTPS to the API server, TLS verified against the given CA (never the system
// store), a bearer token or a client certificate. One connection, kept alive, requests
// serialised; a caller that wants parallel reads makes one client per thread.
class InClusterKubeClient final : public KubeClient {
 public:
  // Fails when the host is empty or ca.crt / token cannot be read.
  static StatusOr<std::unique_ptr<InClusterKubeClient>> Create(InClusterOptions options);
  // Fails when the host is empty, a named file cannot be read or the client certificate and key
  // do not load.
  static StatusOr<std::unique_ptr<InClusterKubeClient>> Connect(const ApiAccess& access,
                                                                const KubeTimeouts& timeouts);
  ~InClusterKubeClient() override;

  KubeResponse PatchPodAnnotations(const std::string& ns, const std::string& pod,
                                   const AnnotationPatch& annotations) override;
  KubeResponse PatchNodeCondition(const std::string& node, const NodeCondition& c) override;
  KubeResponse CreateEvent(const KubeEvent& event) override;
  KubeResponse GetPod(const std::string& ns, const std::string& name) override;
  KubeResponse ListPods(const std::string& field_selector) override;
  KubeResponse GetNode(const std::string& name) override;
  KubeResponse PatchPodAnnotationsIfUid(const std::string& ns, const std::string& pod,
                                        const std::string& uid,
                                        const AnnotationPatch& annotations) override;
  KubeResponse ListNamespacedPods(const std::string& ns, const PodListQuery& query) override;
  KubeResponse StreamPodLog(const std::string& ns, const std::string& pod, const PodLogQuery& query,
                            const LogChunkSink& sink) override;
  KubeResponse CreateTokenReview(const std::string& token,
                                 const std::vector<std::string>& audiences) override;
  KubeResponse CreateSubjectAccessReview(const AccessReviewRequest& request) override;
  KubeResponse ListNodes(const NodeListQuery& query) override;
  KubeResponse PatchNode(const std::string& node, const NodePatch& patch) override;
  KubeResponse ListAllPods(const PodListQuery& query) override;
  KubeResponse RemoveNodeCondition(const std::string& node, int index,
                                   const std::string& type) override;
  KubeResponse GetConfigMap(const std::string& ns, const std::string& name) override;
  KubeResponse PutConfigMap(const std::string& ns, const std::string& name,
                            const std::map<std::string, std::string>& data,
                            const std::string& resource_version) override;
  KubeResponse GetLease(const std::string& ns, const std::string& name) override;
  KubeResponse CreateLease(const std::string& ns, const nlohmann::json& lease) override;
  KubeResponse PatchPodLabels(const std::string& ns, const std::string& pod,
                              const LabelPatch& labels) override;
  KubeResponse UpdateLease(const std::string& ns, const std::string& name,
                           const nlohmann::json& lease) override;
  KubeResponse DeleteObject(const std::string& ns, const std::string& resource,
                            const std::string& name) override;
  KubeResponse WatchNodes(const NodeWatchQuery& query, const LineSink& sink,
                          std::stop_token stop) override;

 private:
  struct Impl;
  explicit InClusterKubeClient(std::unique_ptr<Impl> impl);
  KubeResponse Send(const std::string& method, const std::string& path,
                    const std::string& content_type, const std::string& body);
  std::unique_ptr<Impl> impl_;
};

}  // namespace nccl_triage
