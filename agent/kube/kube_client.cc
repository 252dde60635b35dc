#include "kube/kube_client.h"

#include <httplib.h>

#include <fstream>
#include <sstream>

#include "base/log.h"

namespace nccl_triage {

struct InClusterKubeClient::Impl {
  InClusterOptions options;
  std::mutex mu;
  std::unique_ptr<httplib::SSLClient> client;
};

namespace {

bool ReadFile(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream ss;
  ss << in.rdbuf();
  *out = ss.str();
  return true;
}

std::string TrimToken(std::string token) {
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r' || token.back() == ' ')) {
    token.pop_back();
  }
  return token;
}

std::string DescribeError(httplib::Error e) {
  switch (e) {
    case httplib::Error::Connection:
      return "connection failed";
    case httplib::Error::ConnectionTimeout:
      return "connect timeout";
    case httplib::Error::Read:
      return "timeout or connection reset while reading the response";
    case httplib::Error::Write:
      return "connection reset while sending the request";
    case httplib::Error::SSLConnection:
      return "TLS handshake failed";
    case httplib::Error::SSLLoadingCerts:
      return "TLS: cannot load the CA certificate";
    case httplib::Error::SSLServerVerification:
      return "TLS: the API server's certificate does not verify against the service account CA";
    default:
      return "request failed: " + httplib::to_string(e);
  }
}

std::string PodPath(const std::string& ns, const std::string& pod) {
  return "/api/v1/namespaces/" + UrlEncode(ns) + "/pods/" + UrlEncode(pod);
}

}  // namespace

StatusOr<std::unique_ptr<InClusterKubeClient>> InClusterKubeClient::Create(
    InClusterOptions options) {
  if (options.host.empty()) {
    return InvalidArgument("no Kubernetes API host (KUBERNETES_SERVICE_HOST is not set)");
  }
  std::string ca_path = options.service_account_dir + "/ca.crt";
  std::string token_path = options.service_account_dir + "/token";
  std::string unused;
  if (!ReadFile(ca_path, &unused)) return NotFound("cannot read " + ca_path);
  if (!ReadFile(token_path, &unused)) return NotFound("cannot read " + token_path);
  auto impl = std::make_unique<Impl>();
  impl->options = std::move(options);
  impl->client = std::make_unique<httplib::SSLClient>(impl->options.host, impl->options.port);
  auto& c = *impl->client;
  c.set_ca_cert_path(ca_path.c_str());
  c.enable_server_certificate_verification(true);
  auto split = [](std::chrono::milliseconds ms, auto setter) {
    setter(static_cast<time_t>(ms.count() / 1000), static_cast<time_t>((ms.count() % 1000) * 1000));
  };
  split(impl->options.connect_timeout,
        [&](time_t s, time_t us) { c.set_connection_timeout(s, us); });
  split(impl->options.read_timeout, [&](time_t s, time_t us) { c.set_read_timeout(s, us); });
  split(impl->options.write_timeout, [&](time_t s, time_t us) { c.set_write_timeout(s, us); });
  c.set_keep_alive(true);
  return std::unique_ptr<InClusterKubeClient>(new InClusterKubeClient(std::move(impl)));
}

InClusterKubeClient::InClusterKubeClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
InClusterKubeClient::~InClusterKubeClient() = default;

KubeResponse InClusterKubeClient::Send(const std::string& method, const std::string& path,
                                       const std::string& content_type, const std::string& body) {
  KubeResponse out;
  std::string token;
  if (!ReadFile(impl_->options.service_account_dir + "/token", &token)) {
    out.error = "cannot read the service account token";
    return out;
  }
  httplib::Headers headers = {{"Authorization", "Bearer " + TrimToken(std::move(token))},
                              {"Accept", "application/json"},
                              {"User-Agent", impl_->options.user_agent}};
  std::lock_guard lock(impl_->mu);
  httplib::Result res = method == "GET" ? impl_->client->Get(path, headers)
                        : method == "PATCH"
                            ? impl_->client->Patch(path, headers, body, content_type)
                            : impl_->client->Post(path, headers, body, content_type);
  if (!res) {
    out.error = DescribeError(res.error());
    return out;
  }
  out.status = res->status;
  out.body = res->body;
  if (res->has_header("Retry-After"))
    out.retry_after = ParseRetryAfter(res->get_header_value("Retry-After"));
  return out;
}

KubeResponse InClusterKubeClient::PatchPodAnnotations(const std::string& ns, const std::string& pod,
                                                      const AnnotationPatch& annotations) {
  return Send("PATCH", PodPath(ns, pod), "application/merge-patch+json",
              AnnotationPatchBody(annotations).dump());
}

KubeResponse InClusterKubeClient::PatchNodeCondition(const std::string& node,
                                                     const NodeCondition& c) {
  return Send("PATCH", "/api/v1/nodes/" + UrlEncode(node) + "/status",
              "application/strategic-merge-patch+json", NodeConditionPatchBody(c).dump());
}

KubeResponse InClusterKubeClient::CreateEvent(const KubeEvent& event) {
  return Send("POST", "/api/v1/namespaces/" + UrlEncode(event.ns) + "/events", "application/json",
              EventBody(event).dump());
}

KubeResponse InClusterKubeClient::GetPod(const std::string& ns, const std::string& name) {
  return Send("GET", PodPath(ns, name), "", "");
}

KubeResponse InClusterKubeClient::ListPods(const std::string& field_selector) {
  std::string path = "/api/v1/pods";
  if (!field_selector.empty()) path += "?fieldSelector=" + UrlEncode(field_selector);
  return Send("GET", path, "", "");
}

KubeResponse InClusterKubeClient::PatchPodAnnotationsIfUid(const std::string& ns,
                                                           const std::string& pod,
                                                           const std::string& uid,
                                                           const AnnotationPatch& annotations) {
  return Send("PATCH", PodPath(ns, pod), "application/merge-patch+json",
              AnnotationPatchBody(annotations, uid).dump());
}

KubeResponse InClusterKubeClient::GetNode(const std::string& name) {
  return Send("GET", "/api/v1/nodes/" + UrlEncode(name), "", "");
}

KubeResponse InClusterKubeClient::CreateTokenReview(const std::string& token,
                                                    const std::vector<std::string>& audiences) {
  return Send("POST", "/apis/authentication.k8s.io/v1/tokenreviews", "application/json",
              TokenReviewBody(token, audiences).dump());
}

}  // namespace nccl_triage
