#include "exporter/http_auth.h"

#include <openssl/evp.h>

#include <algorithm>
#include <cctype>
#include <utility>

namespace nccl_triage {
namespace {

constexpr std::string_view kBearer = "bearer ";
constexpr size_t kMaxMessage = 200;  // of what the API server says, in a reply

std::array<unsigned char, 32> Sha256(const std::string& text) {
  std::array<unsigned char, 32> out{};
  unsigned int n = 0;
  EVP_Digest(text.data(), text.size(), out.data(), &n, EVP_sha256(), nullptr);
  return out;
}

// The token of an `Authorization: Bearer <token>` header ("bearer" in any case, as the API
// server accepts it); empty when there is none.
std::string BearerToken(std::string_view header) {
  if (header.size() <= kBearer.size()) return "";
  for (size_t i = 0; i < kBearer.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(header[i])) != kBearer[i]) return "";
  }
  header.remove_prefix(kBearer.size());
  while (!header.empty() && header.front() == ' ') header.remove_prefix(1);
  while (!header.empty() && (header.back() == ' ' || header.back() == '\t')) {
    header.remove_suffix(1);
  }
  return std::string(header);
}

// One line of at most kMaxMessage characters.
std::string OneLine(std::string text) {
  std::replace_if(text.begin(), text.end(), [](char c) { return c == '\n' || c == '\r'; }, ' ');
  if (text.size() > kMaxMessage) text = text.substr(0, kMaxMessage) + "...";
  return text;
}

HttpReply Refusal(int status, const std::string& message) {
  HttpReply r{status, "text/plain; charset=utf-8", message + "\n", {}};
  if (status == 401) r.headers.emplace_back("WWW-Authenticate", "Bearer realm=\"nccl-triage\"");
  return r;
}

}  // namespace

std::string AccessVerb(std::string_view method) {
  if (method == "GET" || method == "HEAD") return "get";
  if (method == "POST") return "create";
  if (method == "PUT") return "update";
  if (method == "PATCH") return "patch";
  if (method == "DELETE") return "delete";
  std::string verb(method);
  for (char& c : verb) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return verb;
}

HttpAuthorizer::HttpAuthorizer(KubeClient& kube, HttpAuthOptions options, Clock* clock)
    : kube_(kube), clock_(clock ? *clock : system_clock_), options_(std::move(options)) {}

std::optional<HttpReply> HttpAuthorizer::Check(const HttpRequest& request) {
  const std::string token = BearerToken(request.Header("authorization"));
  if (token.empty()) {
    std::lock_guard lock(mu_);
    ++counters_.unauthenticated;
    return Refusal(401, "Unauthorized: " + request.path +
                            " needs Authorization: Bearer <a Kubernetes token>");
  }
  auto key = std::make_pair(Sha256(token), request.path);
  if (auto cached = Cached(key)) return *cached;
  // One review at a time, asked without mu_ (a stalled API server holds the requests waiting for
  // a review, never the cache). A request that waited for its turn looks again: the review ahead
  // of it may have been for the same token.
  std::unique_lock turn(review_mu_, std::defer_lock);
  if (!turn.try_lock_for(options_.max_queue_wait)) {
    std::lock_guard lock(mu_);
    ++counters_.unavailable;
    ++counters_.queue_full;
    return Refusal(503, "Service Unavailable: cannot authorize the request: the API server has "
                        "not answered the reviews ahead of it within " +
                            std::to_string(options_.max_queue_wait.count()) + " ms");
  }
  if (auto cached = Cached(key)) return *cached;
  Decision d = Review(token, request.path, AccessVerb(request.method));
  // Cached before the turn passes on (the lock guard goes first), so a waiter for the same token
  // finds it.
  std::lock_guard lock(mu_);
  switch (d.status) {
    case 200:
      ++counters_.allowed;
      break;
    case 401:
      ++counters_.unauthenticated;
      break;
    case 403:
      ++counters_.forbidden;
      break;
    default:
      ++counters_.unavailable;
      return Refusal(d.status, d.message);
  }
  const int status = d.status;
  HttpReply refusal = Refusal(d.status, d.message);
  Remember(key, std::move(d));
  if (status == 200) return std::nullopt;
  return refusal;
}

std::optional<std::optional<HttpReply>> HttpAuthorizer::Cached(const CacheKey& key) {
  std::lock_guard lock(mu_);
  auto it = cache_.find(key);
  if (it == cache_.end() || it->second.until <= clock_.Now()) return std::nullopt;
  ++counters_.cache_hits;
  const Decision& d = it->second;
  if (d.status == 200) {
    ++counters_.allowed;
    return std::optional<HttpReply>();
  }
  ++(d.status == 401 ? counters_.unauthenticated : counters_.forbidden);
  return std::optional<HttpReply>(Refusal(d.status, d.message));
}

HttpAuthorizer::Decision HttpAuthorizer::Review(const std::string& token, const std::string& path,
                                                const std::string& verb) {
  const auto now = clock_.Now();
  auto unavailable = [](const std::string& why) {
    return Decision{503, OneLine("Service Unavailable: cannot authorize the request: " + why), {}};
  };
  {
    std::lock_guard lock(mu_);
    ++counters_.token_reviews;
  }
  KubeResponse review = kube_.CreateTokenReview(token, options_.audiences);
  if (!review.ok()) return unavailable("TokenReview: " + review.Describe());
  auto id = TokenIdentityFromReview(review.body);
  if (!id.ok()) return unavailable("TokenReview: " + id.status().message());
  if (!id->authenticated) {
    return Decision{401,
                    OneLine("Unauthorized: the token is not valid" +
                            (id->error.empty() ? std::string() : " (" + id->error + ")")),
                    now + options_.denied_ttl};
  }
  {
    std::lock_guard lock(mu_);
    ++counters_.access_reviews;
  }
  AccessReviewRequest ask{id->username, id->uid, id->groups, id->extra, path, verb};
  KubeResponse access = kube_.CreateSubjectAccessReview(ask);
  if (!access.ok()) return unavailable("SubjectAccessReview: " + access.Describe());
  auto decision = AccessDecisionFromReview(access.body);
  if (!decision.ok()) return unavailable("SubjectAccessReview: " + decision.status().message());
  if (decision->allowed) return Decision{200, "", now + options_.allowed_ttl};
  std::string why = !decision->reason.empty() ? decision->reason : decision->evaluation_error;
  return Decision{403,
                  OneLine("Forbidden: user \"" + id->username + "\" may not " + verb + " " +
                          path + (why.empty() ? std::string() : " (" + why + ")")),
                  now + options_.denied_ttl};
}

void HttpAuthorizer::Remember(const CacheKey& key, Decision decision) {
  if (options_.max_cached == 0) return;
  if (cache_.size() >= options_.max_cached && !cache_.contains(key)) {
    const auto now = clock_.Now();
    std::erase_if(cache_, [&](const auto& entry) { return entry.second.until <= now; });
    while (cache_.size() >= options_.max_cached) {
      auto soonest =
          std::min_element(cache_.begin(), cache_.end(), [](const auto& a, const auto& b) {
            return a.second.until < b.second.until;
          });
      cache_.erase(soonest);
    }
  }
  cache_[key] = std::move(decision);
}

HttpAuthCounters HttpAuthorizer::counters() const {
  std::lock_guard lock(mu_);
  return counters_;
}

HttpHandler Authorized(std::shared_ptr<HttpAuthorizer> authorizer, HttpHandler handler) {
  if (!authorizer) return handler;
  return [authorizer = std::move(authorizer), handler = std::move(handler)](const HttpRequest& r) {
    if (auto refusal = authorizer->Check(r)) return *refusal;
    return handler(r);
  };
}

}  // namespace nccl_triage
