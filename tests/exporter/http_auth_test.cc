// The HTTP authorizer (exporter/http_auth.h) with the real Kubernetes client against the fake API
// server over HTTPS: 401 without or with a refused token, 403 without the grant, 200 with it,
// 503 (never 200) when the API server fails, refuses our own reviews or stalls; the cache by
// token and path with its two lifetimes and its bound; many scrapes at once; and the agent's
// endpoints behind it, /livez and /readyz open.
#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "exporter/agent_http.h"
#include "exporter/http_auth.h"
#include "exporter/tls_test_cert.h"
#include "kube/kube_client.h"
#include "support/fake_api_server.h"
#include "support/fake_clock.h"
#include "support/text_file.h"

namespace nccl_triage {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr const char* kScraper = "system:serviceaccount:monitoring:prometheus";
constexpr const char* kOther = "system:serviceaccount:jobs:default";

class HttpAuth : public ::testing::Test {
 protected:
  HttpAuth() {
    dir_ = fs::path(::testing::TempDir()) / ("http_auth_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    cert_ = testing::MakeSelfSignedCert(dir_.string());
    api_ = std::make_unique<testing::FakeApiServer>(
        testing::FakeApiServer::Options{cert_.cert_path, cert_.key_path, "own-token", "", 0});
    api_->AddTokenUser("scraper-token", kScraper, {"system:serviceaccounts"});
    api_->AddTokenUser("other-token", kOther);
    api_->AllowNonResource(kScraper, "/metrics");
    kube_ = Client(KubeTimeouts{});
  }
  ~HttpAuth() override {
    kube_.reset();  // its kept-alive connection first: the server would wait for it to idle out
    api_.reset();
    fs::remove_all(dir_);
  }

  std::unique_ptr<InClusterKubeClient> Client(const KubeTimeouts& timeouts) {
    ApiAccess a;
    a.host = "127.0.0.1";
    a.port = api_->port();
    a.ca_pem = testing::ReadTextFile(cert_.cert_path);
    a.token = "own-token";
    auto c = InClusterKubeClient::Connect(a, timeouts);
    EXPECT_TRUE(c.ok()) << c.status().message();
    return std::move(c).value();
  }

  static HttpRequest Get(const std::string& path, const std::string& authorization = "") {
    HttpRequest r;
    r.method = "GET";
    r.path = path;
    if (!authorization.empty()) r.headers.emplace_back("authorization", authorization);
    return r;
  }
  size_t Reviews() const {
    return api_->CountCalls("POST", "/tokenreviews") +
           api_->CountCalls("POST", "/subjectaccessreviews");
  }

  fs::path dir_;
  testing::TestCert cert_;
  std::unique_ptr<testing::FakeApiServer> api_;
  std::unique_ptr<InClusterKubeClient> kube_;
  FakeClock clock_;
};

TEST_F(HttpAuth, NoTokenIs401AndAsksTheApiServerNothing) {
  HttpAuthorizer auth(*kube_, {}, &clock_);
  for (const char* header : {"", "Basic dXNlcjpwdw==", "Bearer ", "Bearer    "}) {
    auto reply = auth.Check(Get("/metrics", header));
    ASSERT_TRUE(reply) << header;
    EXPECT_EQ(reply->status, 401) << header;
    EXPECT_NE(reply->body.find("needs Authorization: Bearer"), std::string::npos) << reply->body;
    ASSERT_EQ(reply->headers.size(), 1u);
    EXPECT_EQ(reply->headers[0].first, "WWW-Authenticate");
  }
  EXPECT_EQ(Reviews(), 0u);
}

TEST_F(HttpAuth, ATokenTheApiServerRefusesIs401) {
  HttpAuthorizer auth(*kube_, {}, &clock_);
  auto reply = auth.Check(Get("/metrics", "Bearer stolen-or-expired"));
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, 401);
  EXPECT_NE(reply->body.find("invalid bearer token"), std::string::npos) << reply->body;
  EXPECT_EQ(api_->CountCalls("POST", "/subjectaccessreviews"), 0u);  // nobody to ask about
}

TEST_F(HttpAuth, AValidTokenWithoutTheGrantIs403NamingUserVerbAndPath) {
  HttpAuthorizer auth(*kube_, {}, &clock_);
  auto reply = auth.Check(Get("/metrics", "Bearer other-token"));
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, 403);
  EXPECT_EQ(reply->body, "Forbidden: user \"" + std::string(kOther) + "\" may not get /metrics\n");
  // Granted /metrics is not granted /status: decisions are per path.
  reply = auth.Check(Get("/status", "Bearer scraper-token"));
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, 403);
}

TEST_F(HttpAuth, AGrantedTokenPassesAndTheReviewAsksAboutItsUserPathAndVerb) {
  HttpAuthorizer auth(*kube_, {}, &clock_);
  EXPECT_FALSE(auth.Check(Get("/metrics", "bearer scraper-token")));  // any case of "Bearer"
  auto calls = api_->Calls();
  const auto sar = std::find_if(calls.begin(), calls.end(), [](const auto& c) {
    return c.path.find("subjectaccessreviews") != std::string::npos;
  });
  ASSERT_NE(sar, calls.end());
  auto body = nlohmann::json::parse(sar->body);
  EXPECT_EQ(body["spec"]["user"], kScraper);
  EXPECT_EQ(body["spec"]["uid"], std::string("uid-") + kScraper);
  EXPECT_EQ(body["spec"]["groups"], nlohmann::json::array({"system:serviceaccounts"}));
  EXPECT_EQ(body["spec"]["nonResourceAttributes"],
            nlohmann::json({{"path", "/metrics"}, {"verb", "get"}}));
  // The token the API server reviewed is the bearer's, never the server's own.
  const auto tr = std::find_if(calls.begin(), calls.end(), [](const auto& c) {
    return c.path.find("tokenreviews") != std::string::npos;
  });
  ASSERT_NE(tr, calls.end());
  EXPECT_EQ(nlohmann::json::parse(tr->body)["spec"]["token"], "scraper-token");
}

TEST_F(HttpAuth, ScrapesEvery15sCostTwoApiCallsAMinuteAndAGrantIsReaskedAfter60s) {
  HttpAuthorizer auth(*kube_, {}, &clock_);
  for (int i = 0; i < 4; ++i) {  // 0 s, 15 s, 30 s, 45 s
    EXPECT_FALSE(auth.Check(Get("/metrics", "Bearer scraper-token")));
    clock_.Advance(15s);
  }
  EXPECT_EQ(Reviews(), 2u);
  EXPECT_EQ(auth.counters().cache_hits, 3u);
  EXPECT_FALSE(auth.Check(Get("/metrics", "Bearer scraper-token")));  // 60 s: asked again
  EXPECT_EQ(Reviews(), 4u);
}

TEST_F(HttpAuth, ARefusalIsCachedFor10sOnlySoANewGrantTakesEffectSoon) {
  HttpAuthorizer auth(*kube_, {}, &clock_);
  EXPECT_EQ(auth.Check(Get("/metrics", "Bearer other-token"))->status, 403);
  api_->AllowNonResource(kOther, "/metrics");
  clock_.Advance(9s);
  EXPECT_EQ(auth.Check(Get("/metrics", "Bearer other-token"))->status, 403);  // cached
  EXPECT_EQ(Reviews(), 2u);
  clock_.Advance(2s);
  EXPECT_FALSE(auth.Check(Get("/metrics", "Bearer other-token")));
  // An invalid token's 401 is cached the same way.
  EXPECT_EQ(auth.Check(Get("/metrics", "Bearer nobody"))->status, 401);
  EXPECT_EQ(auth.Check(Get("/metrics", "Bearer nobody"))->status, 401);
  EXPECT_EQ(api_->CountCalls("POST", "/tokenreviews"), 3u);
}

TEST_F(HttpAuth, AnApiServerFailureIs503WithOneLineAndIsNotCached) {
  HttpAuthorizer auth(*kube_, {}, &clock_);
  api_->FailReviews(500, "etcdserver: request timed out\nsecond line");
  auto reply = auth.Check(Get("/metrics", "Bearer scraper-token"));
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, 503);
  EXPECT_NE(reply->body.find("cannot authorize the request: TokenReview: HTTP 500"),
            std::string::npos)
      << reply->body;
  EXPECT_EQ(reply->body.find('\n'), reply->body.size() - 1) << reply->body;  // one line
  // Our own service account may not review tokens: still 503 (our fault), not the caller's 403.
  api_->FailReviews(403, "tokenreviews.authentication.k8s.io is forbidden");
  reply = auth.Check(Get("/metrics", "Bearer scraper-token"));
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, 503);
  EXPECT_NE(reply->body.find("forbidden"), std::string::npos) << reply->body;
  api_->FailReviews(0, "");
  EXPECT_FALSE(auth.Check(Get("/metrics", "Bearer scraper-token")));  // nothing cached
  EXPECT_EQ(auth.counters().unavailable, 2u);
}

TEST_F(HttpAuth, AnUnreachableApiServerIs503) {
  KubeTimeouts t;
  t.connect = 1000ms;
  auto kube = Client(t);
  api_.reset();  // gone: connection refused
  HttpAuthorizer auth(*kube, {}, &clock_);
  auto reply = auth.Check(Get("/metrics", "Bearer scraper-token"));
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, 503);
  EXPECT_NE(reply->body.find("TokenReview:"), std::string::npos) << reply->body;
  api_ = std::make_unique<testing::FakeApiServer>(
      testing::FakeApiServer::Options{cert_.cert_path, cert_.key_path, "own-token", "", 0});
}

TEST_F(HttpAuth, AStalledApiServerIs503AfterTheClientTimeoutWhileLivezAnswers) {
  KubeTimeouts t;
  t.read = 500ms;
  auto kube = Client(t);
  auto auth = std::make_shared<HttpAuthorizer>(*kube);
  AgentState state("gpu-node-1", "0.1.0", 0);
  AgentMetrics metrics(state, "0.1.0");
  HttpServer server;
  InstallAgentEndpoints(server, state, metrics, auth);
  auto port = server.Start("127.0.0.1", 0);
  ASSERT_TRUE(port.ok()) << port.status().message();
  api_->DelayReviews(30s);
  std::atomic<int> status{0};
  std::string body;
  const auto start = std::chrono::steady_clock::now();
  std::thread scrape([&] {
    httplib::Client c("127.0.0.1", *port);
    c.set_read_timeout(60, 0);
    auto r = c.Get("/metrics", {{"Authorization", "Bearer scraper-token"}});
    if (r) body = r->body;
    status = r ? r->status : -1;
  });
  // While the scrape waits for the API server, the kubelet's probe is answered.
  for (int i = 0; i < 1000 && api_->CountCalls("POST", "/tokenreviews") == 0; ++i) {
    std::this_thread::sleep_for(10ms);
  }
  httplib::Client probe("127.0.0.1", *port);
  auto livez = probe.Get("/livez");
  ASSERT_TRUE(livez);
  EXPECT_EQ(livez->status, 200);
  scrape.join();
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(status, 503) << body;
  EXPECT_NE(body.find("timeout"), std::string::npos) << body;
  EXPECT_LT(took, 20s);  // the client's timeout, not the API server's stall
  api_->DelayReviews(0ms);
  server.Stop();
}

TEST_F(HttpAuth, DuringAStallAWaitingRequestIsAnswered503AfterMaxQueueWait) {
  KubeTimeouts t;
  t.read = 3000ms;
  auto kube = Client(t);
  HttpAuthOptions o;
  o.max_queue_wait = 100ms;
  HttpAuthorizer auth(*kube, o);
  api_->DelayReviews(30s);
  std::optional<HttpReply> first;
  std::thread ahead([&] { first = auth.Check(Get("/metrics", "Bearer scraper-token")); });
  for (int i = 0; i < 1000 && api_->CountCalls("POST", "/tokenreviews") == 0; ++i) {
    std::this_thread::sleep_for(10ms);
  }
  const auto start = std::chrono::steady_clock::now();
  auto second = auth.Check(Get("/metrics", "Bearer other-token"));
  const auto waited = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(second);
  EXPECT_EQ(second->status, 503);
  EXPECT_NE(second->body.find("has not answered the reviews ahead of it within 100 ms"),
            std::string::npos)
      << second->body;
  EXPECT_LT(waited, 2500ms);  // its own short wait, not the stalled review's 3 s timeout
  ahead.join();
  ASSERT_TRUE(first);
  EXPECT_EQ(first->status, 503);
  EXPECT_EQ(auth.counters().queue_full, 1u);
  api_->DelayReviews(0ms);
}

TEST_F(HttpAuth, TheCacheHoldsAtMostMaxCachedDecisions) {
  HttpAuthOptions o;
  o.max_cached = 2;
  HttpAuthorizer auth(*kube_, o, &clock_);
  for (int i = 0; i < 5; ++i) {
    const std::string token = "t" + std::to_string(i);
    api_->AddTokenUser(token, "user-" + std::to_string(i));
    api_->AllowNonResource("user-" + std::to_string(i), "/metrics");
    clock_.Advance(1s);
    EXPECT_FALSE(auth.Check(Get("/metrics", "Bearer " + token)));
  }
  const size_t asked = Reviews();
  EXPECT_EQ(asked, 10u);
  // The two most recent are still cached; the first was evicted and is asked again.
  EXPECT_FALSE(auth.Check(Get("/metrics", "Bearer t4")));
  EXPECT_FALSE(auth.Check(Get("/metrics", "Bearer t3")));
  EXPECT_EQ(Reviews(), asked);
  EXPECT_FALSE(auth.Check(Get("/metrics", "Bearer t0")));
  EXPECT_EQ(Reviews(), asked + 2);
}

TEST_F(HttpAuth, ManyScrapesAtOnceThroughTheServerAreEachJudgedRight) {
  HttpAuthOptions o;
  o.max_queue_wait = 60s;  // a loaded machine: waiting for the review ahead is what is tested
  auto auth = std::make_shared<HttpAuthorizer>(*kube_, o);
  AgentState state("gpu-node-1", "0.1.0", 0);
  AgentMetrics metrics(state, "0.1.0");
  // Six clients of one address: room for them all and their reconnections (the per-address cap
  // of 8 is the server's own test's business, not this one's).
  HttpServerOptions options;
  options.max_connections_per_peer = 64;
  HttpServer server(nullptr, options);
  InstallAgentEndpoints(server, state, metrics, auth);
  auto port = server.Start("127.0.0.1", 0);
  ASSERT_TRUE(port.ok()) << port.status().message();
  std::atomic<int> wrong{0};
  std::mutex mu;
  std::vector<std::string> seen;  // the wrong answers
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&, t] {
      httplib::Client c("127.0.0.1", *port);
      c.set_read_timeout(60, 0);
      for (int i = 0; i < 10; ++i) {
        const bool granted = (t + i) % 2 == 0;
        const char* token = granted ? "Bearer scraper-token" : "Bearer other-token";
        auto r = c.Get("/metrics", {{"Authorization", token}});
        if (!r || r->status != (granted ? 200 : 403)) {
          ++wrong;
          std::lock_guard lock(mu);
          seen.push_back(r ? std::to_string(r->status) + " " + r->body : "no answer");
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(wrong, 0) << (seen.empty() ? "" : seen.front());
  // One review per token (two calls each): the first requests that missed the cache together
  // waited for the one asked ahead of them instead of asking again.
  EXPECT_EQ(Reviews(), 4u);
  EXPECT_EQ(auth->counters().cache_hits, 58u);
  server.Stop();
}

TEST_F(HttpAuth, TheAgentsHealthEndpointsStayOpenAndStatusIsProtected) {
  auto auth = std::make_shared<HttpAuthorizer>(*kube_);
  api_->AllowNonResource(kScraper, "/status");
  AgentState state("gpu-node-1", "0.1.0", 0);
  AgentMetrics metrics(state, "0.1.0");
  HttpServer server;
  InstallAgentEndpoints(server, state, metrics, auth);
  auto port = server.Start("127.0.0.1", 0);
  ASSERT_TRUE(port.ok()) << port.status().message();
  httplib::Client c("127.0.0.1", *port);
  EXPECT_EQ(c.Get("/livez")->status, 200);
  EXPECT_EQ(c.Get("/readyz")->status, 503);  // open, and honest: no cycle yet
  EXPECT_EQ(c.Get("/metrics")->status, 401);
  EXPECT_EQ(c.Get("/status")->status, 401);
  EXPECT_EQ(c.Get("/status", {{"Authorization", "Bearer other-token"}})->status, 403);
  auto s = c.Get("/status", {{"Authorization", "Bearer scraper-token"}});
  ASSERT_TRUE(s);
  EXPECT_EQ(s->status, 200);
  EXPECT_EQ(nlohmann::json::parse(s->body)["node"], "gpu-node-1");
  server.Stop();
}

TEST(HttpAuthVerb, MapsMethodsAsKubeRbacProxy) {
  EXPECT_EQ(AccessVerb("GET"), "get");
  EXPECT_EQ(AccessVerb("HEAD"), "get");
  EXPECT_EQ(AccessVerb("POST"), "create");
  EXPECT_EQ(AccessVerb("PUT"), "update");
  EXPECT_EQ(AccessVerb("PATCH"), "patch");
  EXPECT_EQ(AccessVerb("DELETE"), "delete");
}

TEST(HttpAuthorized, NoAuthorizerLeavesTheHandlerAsItIs) {
  int calls = 0;
  HttpHandler h = Authorized(nullptr, [&calls](const HttpRequest&) {
    ++calls;
    return HttpReply{};
  });
  EXPECT_EQ(h(HttpRequest{}).status, 200);
  EXPECT_EQ(calls, 1);
}

}  // namespace
}  // namespace nccl_triage
