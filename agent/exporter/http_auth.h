// HttpAuthorizer: who may read an HTTP endpoint, decided as kube-rbac-proxy decides it, inside
// the process (the agent runs in the host network, where a NetworkPolicy cannot reach it).
//
// A request must carry `Authorization: Bearer <token>`. The API server says whose token it is
// (TokenReview) and whether that user may `get` the request's path (SubjectAccessReview with
// nonResourceAttributes, the permission a ClusterRole grants with nonResourceURLs). The answer:
//   401  no token, or the API server does not accept it;
//   403  a valid token whose user may not get the path;
//   503  the API server could not be asked or gave no usable answer (one line says why): the
//        request is refused, never let through.
// Decisions are cached by the SHA-256 of the token and the path (the token itself is not kept):
// an allowed one for allowed_ttl, a refused one for denied_ttl, at most max_cached entries (the
// soonest to expire go first); a 503 is not cached. A scrape every 15 s with one token then costs
// two API calls a minute. Reviews are asked one at a time; requests that miss the cache for the
// same token and path while one is asked wait for its answer instead of asking again. Check()
// blocks while it asks the API server, so it runs on the server's worker threads, never on its
// I/O thread. Thread-safe; the client (and a clock given)
// are not owned and must outlive the authorizer.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "exporter/http_server.h"
#include "kube/kube_api.h"

namespace nccl_triage {

struct HttpAuthOptions {
  std::chrono::seconds allowed_ttl{60};
  std::chrono::seconds denied_ttl{10};
  size_t max_cached = 1024;
  // Reviews are asked one at a time (the client has one connection). A request that would wait
  // longer than this for its turn is answered 503 at once: a stalled API server then costs each
  // waiting scrape this long, not the sum of the timeouts of those ahead of it.
  std::chrono::milliseconds max_queue_wait{2000};
  // The audiences a token must be issued for; empty: the API server's own (a service account's
  // ordinary token, as Prometheus sends it).
  std::vector<std::string> audiences;
};

// What the authorizer did since it was made (for tests and logs).
struct HttpAuthCounters {
  uint64_t cache_hits = 0;
  uint64_t token_reviews = 0;
  uint64_t access_reviews = 0;
  uint64_t allowed = 0;
  uint64_t unauthenticated = 0;  // 401
  uint64_t forbidden = 0;        // 403
  uint64_t unavailable = 0;      // 503
  uint64_t queue_full = 0;       // of those, waited longer than max_queue_wait for their turn
};

class HttpAuthorizer {
 public:
  // `clock` null: the system's (tests pass a fake one to age the cache).
  HttpAuthorizer(KubeClient& kube, HttpAuthOptions options = {}, Clock* clock = nullptr);

  // Nothing when the request may go on; otherwise the reply to send instead (401, 403 or 503).
  std::optional<HttpReply> Check(const HttpRequest& request);
  HttpAuthCounters counters() const;

 private:
  using TokenHash = std::array<unsigned char, 32>;
  using CacheKey = std::pair<TokenHash, std::string>;  // (token hash, path)
  struct Decision {
    int status = 0;       // 200, 401, 403 or 503 (which is never cached)
    std::string message;  // the body of a refusal, one line
    Clock::TimePoint until;
  };
  Decision Review(const std::string& token, const std::string& path, const std::string& verb);
  // The cached answer: an empty optional when not cached (or expired), else the reply to give
  // (itself empty when allowed). Takes mu_.
  std::optional<std::optional<HttpReply>> Cached(const CacheKey& key);
  void Remember(const CacheKey& key, Decision decision);  // mu_ held

  KubeClient& kube_;
  SystemClock system_clock_;
  Clock& clock_;
  HttpAuthOptions options_;
  std::timed_mutex review_mu_;  // one review at a time; held while asking, without mu_
  mutable std::mutex mu_;
  std::map<CacheKey, Decision> cache_;
  HttpAuthCounters counters_;
};

// `handler` behind `authorizer`; null: `handler` itself (server.auth: none).
HttpHandler Authorized(std::shared_ptr<HttpAuthorizer> authorizer, HttpHandler handler);

// The subject-access verb of an HTTP method, as kube-rbac-proxy maps it: GET and HEAD "get",
// POST "create", PUT "update", PATCH "patch", DELETE "delete".
std::string AccessVerb(std::string_view method);

}  // namespace nccl_triage
