// NodeIdentity: which node an agent really runs on, so that a node name in a Hello is a claim the
// coordinator checks rather than believes (with one shared token, any holder could say
// hello as node-b, evict the real agent and take its probes and verdicts).
//
// The agent presents, besides the shared token, its pod's bound service-account token, issued by
// the kubelet for the audience kIdentityAudience (a projected volume) and sent as gRPC metadata
// kIdentityMetadata. TokenReviewIdentity asks the API server about it (TokenReview): the token
// must be valid, issued for that audience, and belong to the agents' service account; its node is
// the one the API server bound it to (user.extra node-name, Kubernetes 1.30+), or else the node
// of the pod it was issued for (GET of that pod, whose UID must match). The kubelet rotates the
// token and a stolen one stops working when its pod goes; nothing to distribute or renew.
//
// Answers are cached per token for a few minutes (each agent reconnects with the same token), at
// most max_cached of them. Thread-safe.
#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

#include "base/status.h"
#include "kube/kube_api.h"

namespace nccl_triage {

inline constexpr std::string_view kIdentityAudience = "nccl-triage";
inline constexpr std::string_view kIdentityMetadata = "x-nccl-triage-identity";

class NodeIdentity {
 public:
  virtual ~NodeIdentity() = default;
  // The node the identity token binds its bearer to; an error says why it binds to none:
  // InvalidArgument when the token is refused, Unavailable when the API could not be asked (the
  // agent then retries).
  virtual StatusOr<std::string> NodeOf(const std::string& token) = 0;
};

struct TokenReviewIdentityOptions {
  std::string service_account;  // the agents' service account, "namespace:name"
  std::chrono::seconds cache_ttl{300};
  size_t max_cached = 16384;
};

class TokenReviewIdentity final : public NodeIdentity {
 public:
  // `kube` is not owned and must outlive this object.
  TokenReviewIdentity(KubeClient& kube, TokenReviewIdentityOptions options);

  StatusOr<std::string> NodeOf(const std::string& token) override;

 private:
  StatusOr<std::string> Review(const std::string& token);

  KubeClient& kube_;
  TokenReviewIdentityOptions options_;
  std::mutex mu_;
  struct Cached {
    std::string node;
    std::chrono::steady_clock::time_point until;
  };
  std::map<std::string, Cached> cache_;  // by the whole token: no hash an attacker could collide
};

}  // namespace nccl_triage
