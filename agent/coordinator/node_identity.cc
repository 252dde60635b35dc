#include "coordinator/node_identity.h"

#include <nlohmann/json.hpp>

namespace nccl_triage {

TokenReviewIdentity::TokenReviewIdentity(KubeClient& kube, TokenReviewIdentityOptions options)
    : kube_(kube), options_(std::move(options)) {}

StatusOr<std::string> TokenReviewIdentity::NodeOf(const std::string& token) {
  if (token.empty()) return InvalidArgument("no identity token");
  const auto now = std::chrono::steady_clock::now();
  {
    std::lock_guard lock(mu_);
    auto it = cache_.find(token);
    if (it != cache_.end() && it->second.until > now) return it->second.node;
  }
  auto node = Review(token);
  if (!node.ok()) return node;
  std::lock_guard lock(mu_);
  if (cache_.size() >= options_.max_cached) {
    std::erase_if(cache_, [&](const auto& entry) { return entry.second.until <= now; });
    if (cache_.size() >= options_.max_cached) cache_.clear();
  }
  cache_[token] = {*node, now + options_.cache_ttl};
  return node;
}

StatusOr<std::string> TokenReviewIdentity::Review(const std::string& token) {
  KubeResponse review = kube_.CreateTokenReview(token, {std::string(kIdentityAudience)});
  if (!review.ok()) return Unavailable("TokenReview: " + review.Describe());
  auto id = TokenIdentityFromReview(review.body);
  if (!id.ok()) return Unavailable("TokenReview: " + id.status().message());
  if (!id->authenticated) {
    return InvalidArgument("identity token not accepted" +
                           (id->error.empty() ? std::string() : ": " + id->error.substr(0, 200)));
  }
  const size_t colon = options_.service_account.find(':');
  const std::string ns = options_.service_account.substr(0, colon);
  const std::string expected =
      "system:serviceaccount:" + ns + ":" +
      (colon == std::string::npos ? "" : options_.service_account.substr(colon + 1));
  if (id->username != expected) {
    return InvalidArgument("identity token of " + id->username.substr(0, 200) + ", not of " +
                           expected);
  }
  if (!id->node_name.empty()) return id->node_name;
  // Before Kubernetes 1.30 the token names its pod only: the pod says where it runs.
  if (id->pod_name.empty() || id->pod_uid.empty()) {
    return InvalidArgument("identity token not bound to a pod (use a projected token)");
  }
  KubeResponse pod = kube_.GetPod(ns, id->pod_name);
  if (!pod.ok()) return Unavailable("GET pod " + id->pod_name + ": " + pod.Describe());
  auto j = nlohmann::json::parse(pod.body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return Unavailable("GET pod: not JSON");
  // metadata.uid and spec.nodeName, each only if it is a string (json::value() would throw).
  auto field = [&j](const char* object, const char* key) {
    auto o = j.find(object);
    if (o == j.end() || !o->is_object()) return std::string();
    auto v = o->find(key);
    return v != o->end() && v->is_string() ? v->get<std::string>() : std::string();
  };
  if (field("metadata", "uid") != id->pod_uid) {
    return InvalidArgument("the pod of the identity token is gone");
  }
  std::string node = field("spec", "nodeName");
  if (node.empty()) return InvalidArgument("the pod of the identity token has no node");
  return node;
}

}  // namespace nccl_triage
