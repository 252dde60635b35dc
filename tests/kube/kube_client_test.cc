// The real Kubernetes client against a local HTTPS server that checks what a real API server
// would: the bearer token, the content type, the path and the body.
#include "kube/kube_client.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "exporter/annotations.h"
#include "exporter/kube_publisher.h"
#include "exporter/tls_test_cert.h"
#include "support/fake_clock.h"

namespace nccl_triage {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr const char* kToken = "s3cr3t-token-value";

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "nccl-triage-kube-XXXXXX").string();
    path_ = mkdtemp(tmpl.data());
  }
  ~TempDir() { fs::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

void WriteFile(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

// A fake API server: records requests, answers what the test scripts.
class ApiServer {
 public:
  explicit ApiServer(const testing::TestCert& cert)
      : server_(cert.cert_path.c_str(), cert.key_path.c_str()) {
    auto handler = [this](const httplib::Request& req, httplib::Response& res) {
      Seen seen{req.method,
                req.path,
                req.get_header_value("Authorization"),
                req.get_header_value("Content-Type"),
                req.body,
                req.has_param("fieldSelector") ? req.get_param_value("fieldSelector") : ""};
      {
        std::lock_guard lock(mu_);
        seen_.push_back(seen);
      }
      if (seen.auth != std::string("Bearer ") + token_) {
        res.status = 401;
        res.set_content(R"({"kind":"Status","reason":"Unauthorized","message":"Unauthorized"})",
                        "application/json");
        return;
      }
      int status = next_status_.exchange(200);
      if (stall_ms_ > 0) std::this_thread::sleep_for(std::chrono::milliseconds(stall_ms_));
      res.status = status;
      if (status == 429) res.set_header("Retry-After", "7");
      if (status == 403) {
        res.set_content(
            R"({"kind":"Status","reason":"Forbidden","message":"pods \"agent-x\" is forbidden: User \"system:serviceaccount:nccl-triage:agent\" cannot patch resource \"pods\""})",
            "application/json");
        return;
      }
      res.set_content(status == 200 ? body_ : R"({"kind":"Status","reason":"X","message":"x"})",
                      "application/json");
    };
    server_.Patch(".*", handler);
    server_.Post(".*", handler);
    server_.Get(".*", handler);
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(1ms);
  }
  ~ApiServer() {
    server_.stop();
    thread_.join();
  }
  struct Seen {
    std::string method, path, auth, content_type, body, field_selector;
  };
  int port() const { return port_; }
  void NextStatus(int s) { next_status_ = s; }
  void Stall(int ms) { stall_ms_ = ms; }
  void SetBody(std::string b) { body_ = std::move(b); }
  void SetToken(std::string t) { token_ = std::move(t); }
  Seen Last() {
    std::lock_guard lock(mu_);
    return seen_.back();
  }
  size_t Count() {
    std::lock_guard lock(mu_);
    return seen_.size();
  }

 private:
  httplib::SSLServer server_;
  std::thread thread_;
  int port_ = 0;
  std::mutex mu_;
  std::vector<Seen> seen_;
  std::atomic<int> next_status_{200};
  std::atomic<int> stall_ms_{0};
  std::string body_ = "{}";
  std::string token_ = kToken;
};

class KubeClientTest : public ::testing::Test {
 protected:
  KubeClientTest() : cert_(testing::MakeSelfSignedCert(dir_.path())), server_(cert_) {
    fs::create_directories(sa_dir());
    fs::copy_file(cert_.cert_path, sa_dir() + "/ca.crt");
    WriteFile(sa_dir() + "/token", std::string(kToken) + "\n");
  }
  std::string sa_dir() const { return dir_.path() + "/sa"; }
  std::unique_ptr<InClusterKubeClient> Client(std::chrono::milliseconds read_timeout = 2000ms) {
    InClusterOptions o;
    o.host = "127.0.0.1";
    o.port = server_.port();
    o.service_account_dir = sa_dir();
    o.read_timeout = read_timeout;
    auto c = InClusterKubeClient::Create(o);
    EXPECT_TRUE(c.ok()) << c.status().message();
    return std::move(c).value();
  }

  TempDir dir_;
  testing::TestCert cert_;
  ApiServer server_;
};

TEST_F(KubeClientTest, PatchesPodAnnotationsAsAMergePatchWithTheBearerToken) {
  auto client = Client();
  KubeResponse r = client->PatchPodAnnotations(
      "nccl-triage", "agent-x",
      {{"nccl-triage.io/verdict", "healthy"}, {"nccl-triage.io/old", std::nullopt}});
  EXPECT_TRUE(r.ok()) << r.Describe();
  auto seen = server_.Last();
  EXPECT_EQ(seen.method, "PATCH");
  EXPECT_EQ(seen.path, "/api/v1/namespaces/nccl-triage/pods/agent-x");
  EXPECT_EQ(seen.auth, std::string("Bearer ") + kToken);
  EXPECT_EQ(seen.content_type, "application/merge-patch+json");
  auto body = nlohmann::json::parse(seen.body);
  EXPECT_EQ(body["metadata"]["annotations"]["nccl-triage.io/verdict"], "healthy");
  EXPECT_TRUE(body["metadata"]["annotations"]["nccl-triage.io/old"].is_null());
}

TEST_F(KubeClientTest, PatchesTheNodeStatusConditionAndCreatesEvents) {
  auto client = Client();
  NodeCondition c{"NcclFabricReady", "False",       "IbResource",
                  "ib.port_state",   1700000000000, 1690000000000};
  EXPECT_TRUE(client->PatchNodeCondition("gpu-node-1", c).ok());
  auto seen = server_.Last();
  EXPECT_EQ(seen.path, "/api/v1/nodes/gpu-node-1/status");
  EXPECT_EQ(seen.content_type, "application/strategic-merge-patch+json");
  auto cond = nlohmann::json::parse(seen.body)["status"]["conditions"][0];
  EXPECT_EQ(cond["type"], "NcclFabricReady");
  EXPECT_EQ(cond["status"], "False");
  EXPECT_EQ(cond["reason"], "IbResource");
  EXPECT_EQ(cond["message"], "ib.port_state");
  EXPECT_EQ(cond["lastHeartbeatTime"], "2023-11-14T22:13:20Z");
  EXPECT_EQ(cond["lastTransitionTime"], FormatRfc3339(1690000000000));

  KubeEvent e;
  e.involved_name = "gpu-node-1";
  e.involved_uid = "gpu-node-1";
  e.reason = "NcclFabricIbResource";
  e.type = "Warning";
  e.message = "verdict ib_resource";
  e.host = "gpu-node-1";
  e.at_unix_ms = 1700000000000;
  EXPECT_TRUE(client->CreateEvent(e).ok());
  seen = server_.Last();
  EXPECT_EQ(seen.method, "POST");
  EXPECT_EQ(seen.path, "/api/v1/namespaces/default/events");
  EXPECT_EQ(seen.content_type, "application/json");
  auto ev = nlohmann::json::parse(seen.body);
  EXPECT_EQ(ev["involvedObject"]["kind"], "Node");
  EXPECT_EQ(ev["involvedObject"]["name"], "gpu-node-1");
  EXPECT_EQ(ev["type"], "Warning");
  EXPECT_EQ(ev["metadata"]["namespace"], "default");
  EXPECT_EQ(ev["source"]["component"], "nccl-triage-agent");
}

TEST_F(KubeClientTest, ListsPodsOfThisNodeWithAnEncodedFieldSelector) {
  server_.SetBody(R"({"kind":"PodList","items":[{"metadata":{"name":"p"}}]})");
  auto client = Client();
  KubeResponse r = client->ListPods("spec.nodeName=gpu-node-1");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(server_.Last().path, "/api/v1/pods");
  EXPECT_EQ(server_.Last().field_selector, "spec.nodeName=gpu-node-1");
  EXPECT_EQ(nlohmann::json::parse(r.body)["items"][0]["metadata"]["name"], "p");
  EXPECT_TRUE(client->GetPod("ns", "p").ok());
  EXPECT_EQ(server_.Last().path, "/api/v1/namespaces/ns/pods/p");
}

TEST_F(KubeClientTest, ReviewsATokenForItsAudience) {
  server_.SetBody(
      R"({"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","status":{)"
      R"("authenticated":true,"audiences":["nccl-triage"],"user":{)"
      R"("username":"system:serviceaccount:nccl-triage:nccl-triage-agent","uid":"u1",)"
      R"("groups":["system:serviceaccounts"],"extra":{)"
      R"("authentication.kubernetes.io/credential-id":["JTI=1"],)"
      R"("authentication.kubernetes.io/node-name":["gpu-17"],)"
      R"("authentication.kubernetes.io/node-uid":["n-1"],)"
      R"("authentication.kubernetes.io/pod-name":["nccl-triage-agent-x7k2p"],)"
      R"("authentication.kubernetes.io/pod-uid":["p-1"]}}}})");
  auto client = Client();
  KubeResponse r = client->CreateTokenReview("eyJhbGciOi.agent.token", {"nccl-triage"});
  ASSERT_TRUE(r.ok()) << r.Describe();
  auto seen = server_.Last();
  EXPECT_EQ(seen.method, "POST");
  EXPECT_EQ(seen.path, "/apis/authentication.k8s.io/v1/tokenreviews");
  EXPECT_EQ(seen.auth, std::string("Bearer ") + kToken);  // the client's own token, not the one
  auto body = nlohmann::json::parse(seen.body);
  EXPECT_EQ(body["kind"], "TokenReview");
  EXPECT_EQ(body["spec"]["token"], "eyJhbGciOi.agent.token");
  EXPECT_EQ(body["spec"]["audiences"], nlohmann::json::array({"nccl-triage"}));
  auto id = TokenIdentityFromReview(r.body);
  ASSERT_TRUE(id.ok()) << id.status().message();
  EXPECT_TRUE(id->authenticated);
  EXPECT_EQ(id->username, "system:serviceaccount:nccl-triage:nccl-triage-agent");
  EXPECT_EQ(id->node_name, "gpu-17");
  EXPECT_EQ(id->pod_name, "nccl-triage-agent-x7k2p");
  EXPECT_EQ(id->pod_uid, "p-1");
  // All of user.*, for a SubjectAccessReview about this user.
  EXPECT_EQ(id->uid, "u1");
  EXPECT_EQ(id->groups, std::vector<std::string>{"system:serviceaccounts"});
  EXPECT_EQ(id->extra.size(), 5u);
  EXPECT_EQ(id->extra.at("authentication.kubernetes.io/credential-id"),
            std::vector<std::string>{"JTI=1"});
}

TEST_F(KubeClientTest, AsksWhetherAUserMayGetANonResourceUrl) {
  server_.SetBody(
      R"({"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","status":{)"
      R"("allowed":true,"reason":"RBAC: allowed by ClusterRoleBinding \"reader\""}})");
  auto client = Client();
  AccessReviewRequest ask;
  ask.username = "system:serviceaccount:monitoring:prometheus";
  ask.uid = "u2";
  ask.groups = {"system:serviceaccounts", "system:authenticated"};
  ask.extra = {{"authentication.kubernetes.io/pod-name", {"prometheus-0"}}};
  ask.path = "/metrics";
  KubeResponse r = client->CreateSubjectAccessReview(ask);
  ASSERT_TRUE(r.ok()) << r.Describe();
  auto seen = server_.Last();
  EXPECT_EQ(seen.method, "POST");
  EXPECT_EQ(seen.path, "/apis/authorization.k8s.io/v1/subjectaccessreviews");
  auto body = nlohmann::json::parse(seen.body);
  EXPECT_EQ(body["kind"], "SubjectAccessReview");
  EXPECT_EQ(body["spec"]["user"], ask.username);
  EXPECT_EQ(body["spec"]["uid"], "u2");
  EXPECT_EQ(body["spec"]["groups"][1], "system:authenticated");
  EXPECT_EQ(body["spec"]["extra"]["authentication.kubernetes.io/pod-name"][0], "prometheus-0");
  EXPECT_EQ(body["spec"]["nonResourceAttributes"],
            nlohmann::json({{"path", "/metrics"}, {"verb", "get"}}));
  EXPECT_FALSE(body["spec"].contains("resourceAttributes"));
  auto d = AccessDecisionFromReview(r.body);
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_TRUE(d->allowed);
  EXPECT_EQ(d->reason, "RBAC: allowed by ClusterRoleBinding \"reader\"");
}

TEST(AccessDecisionFromReview, ANoOrAnythingOddIsNotAllowed) {
  auto no =
      AccessDecisionFromReview(R"({"kind":"SubjectAccessReview","status":{"allowed":false}})");
  ASSERT_TRUE(no.ok());
  EXPECT_FALSE(no->allowed);
  auto err = AccessDecisionFromReview(
      R"({"kind":"SubjectAccessReview","status":{"allowed":false,)"
      R"("evaluationError":"webhook down"}})");
  ASSERT_TRUE(err.ok());
  EXPECT_EQ(err->evaluation_error, "webhook down");
  auto odd =
      AccessDecisionFromReview(R"({"kind":"SubjectAccessReview","status":{"allowed":"true"}})");
  ASSERT_TRUE(odd.ok());
  EXPECT_FALSE(odd->allowed);  // a string is not a yes
  for (const char* bad : {"", "[]", "{}", R"({"kind":"TokenReview","status":{"allowed":true}})",
                          R"({"kind":"SubjectAccessReview","status":true})", "{not json"}) {
    EXPECT_FALSE(AccessDecisionFromReview(bad).ok()) << bad;
  }
}

TEST(TokenIdentityFromReview, ReadsRefusalsAndRejectsWhatIsNotAReview) {
  auto refused = TokenIdentityFromReview(
      R"({"kind":"TokenReview","status":{"authenticated":false,"error":"token expired"}})");
  ASSERT_TRUE(refused.ok());
  EXPECT_FALSE(refused->authenticated);
  EXPECT_EQ(refused->error, "token expired");
  auto old = TokenIdentityFromReview(
      R"({"kind":"TokenReview","status":{"authenticated":true,"user":{"username":"u",)"
      R"("extra":{"authentication.kubernetes.io/pod-name":["p"],"other":[1]}}}})");
  ASSERT_TRUE(old.ok());
  EXPECT_EQ(old->pod_name, "p");
  EXPECT_EQ(old->node_name, "");  // before Kubernetes 1.30
  for (const char* bad : {"", "[]", "{}", R"({"kind":"Status","status":{}})",
                          R"({"kind":"TokenReview","status":"yes"})", "{not json"}) {
    EXPECT_FALSE(TokenIdentityFromReview(bad).ok()) << bad;
  }
  // A malformed user or extra reads as nothing, never as someone.
  auto odd = TokenIdentityFromReview(
      R"({"kind":"TokenReview","status":{"authenticated":"true","user":{"username":7,)"
      R"("extra":{"authentication.kubernetes.io/node-name":"gpu-1"}}}})");
  ASSERT_TRUE(odd.ok());
  EXPECT_FALSE(odd->authenticated);
  EXPECT_EQ(odd->username, "");
  EXPECT_EQ(odd->node_name, "");
}

TEST_F(KubeClientTest, MapsErrorStatusesAndRetryAfter) {
  auto client = Client();
  struct Case {
    int status;
    bool retryable, permanent;
  };
  for (Case c : {Case{403, false, true}, Case{404, false, true}, Case{409, false, false},
                 Case{429, true, false}, Case{500, true, false}}) {
    server_.NextStatus(c.status);
    KubeResponse r = client->PatchPodAnnotations("ns", "p", {{"k", "v"}});
    EXPECT_EQ(r.status, c.status);
    EXPECT_EQ(r.Retryable(), c.retryable) << c.status;
    EXPECT_EQ(r.Permanent(), c.permanent) << c.status;
    if (c.status == 429) {
      EXPECT_EQ(r.retry_after, std::chrono::seconds(7));
    }
    if (c.status == 403) {
      EXPECT_NE(r.Describe().find("cannot patch resource"), std::string::npos);
    }
  }
}

TEST(KubeResponse, UidMismatchIsA422OnMetadataUidOnly) {
  // kube-apiserver's answer to a patch whose metadata.uid is not the pod's (tests/k8s checks it
  // against the real one).
  KubeResponse r;
  r.status = 422;
  r.body = R"({"kind":"Status","reason":"Invalid","details":{"name":"p","kind":"Pod","causes":)"
           R"([{"reason":"FieldValueInvalid","field":"metadata.uid"}]},"code":422})";
  EXPECT_TRUE(r.UidMismatch());
  r.body = R"({"kind":"Status","reason":"Invalid","details":{"causes":[{"field":"metadata.annotations"}]}})";
  EXPECT_FALSE(r.UidMismatch());
  r.body = "not json";
  EXPECT_FALSE(r.UidMismatch());
  r.status = 409;
  r.body = R"({"details":{"causes":[{"field":"metadata.uid"}]}})";
  EXPECT_FALSE(r.UidMismatch());
}

TEST_F(KubeClientTest, AWrongTokenIs401AndARotatedTokenIsPickedUp) {
  auto client = Client();
  server_.SetToken("rotated");
  KubeResponse r = client->GetPod("ns", "p");
  EXPECT_EQ(r.status, 401);
  EXPECT_TRUE(r.Permanent());
  WriteFile(sa_dir() + "/token", "rotated");
  EXPECT_TRUE(client->GetPod("ns", "p").ok());
}

TEST_F(KubeClientTest, AStalledServerIsATimeoutNotAHang) {
  auto client = Client(200ms);
  server_.Stall(1500);
  auto start = std::chrono::steady_clock::now();
  KubeResponse r = client->PatchPodAnnotations("ns", "p", {{"k", "v"}});
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1200ms);
  EXPECT_EQ(r.status, 0);
  EXPECT_TRUE(r.Retryable());
  EXPECT_FALSE(r.error.empty());
  server_.Stall(0);
  // The client recovers on the next call (a new connection).
  std::this_thread::sleep_for(1500ms);
  EXPECT_TRUE(client->PatchPodAnnotations("ns", "p", {{"k", "v"}}).ok());
}

TEST_F(KubeClientTest, TlsIsVerifiedAgainstTheServiceAccountCa) {
  TempDir other;
  testing::TestCert wrong = testing::MakeSelfSignedCert(other.path());
  fs::copy_file(wrong.cert_path, sa_dir() + "/ca.crt", fs::copy_options::overwrite_existing);
  auto client = Client();
  KubeResponse r = client->GetPod("ns", "p");
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.error.find("TLS"), std::string::npos) << r.error;
  EXPECT_EQ(server_.Count(), 0u);  // the request (and its token) never left
}

TEST_F(KubeClientTest, CreateFailsWithoutHostOrServiceAccountFiles) {
  InClusterOptions o;
  o.service_account_dir = sa_dir();
  EXPECT_FALSE(InClusterKubeClient::Create(o).ok());
  o.host = "127.0.0.1";
  o.service_account_dir = dir_.path() + "/missing";
  EXPECT_FALSE(InClusterKubeClient::Create(o).ok());
}

TEST_F(KubeClientTest, ThePublisherOverTheRealClientNeverLogsTheToken) {
  auto client = Client();
  server_.NextStatus(403);
  std::ostringstream log_text;
  Logger log(log_text, LogLevel::kDebug);
  FakeClock clock;
  KubePublisherOptions o;
  o.node = "gpu-node-1";
  o.pod_namespace = "ns";
  o.pod_name = "agent-x";
  KubePublisher pub(*client, o, clock, log);
  AgentState state("gpu-node-1", "v", 0);
  state.SetCycle(std::make_shared<NodeReport>(), nullptr, nullptr, 1, 2, "");
  pub.OnState(state.View());
  pub.RunDue();
  std::string text = log_text.str();
  EXPECT_NE(text.find("HTTP 403"), std::string::npos) << text;
  EXPECT_EQ(text.find(kToken), std::string::npos);
}

TEST(ParseRetryAfter, AcceptsSecondsOnly) {
  EXPECT_EQ(ParseRetryAfter("120"), std::chrono::seconds(120));
  EXPECT_EQ(ParseRetryAfter(" 3 "), std::chrono::seconds(3));
  EXPECT_FALSE(ParseRetryAfter("Wed, 21 Oct 2015 07:28:00 GMT"));
  EXPECT_FALSE(ParseRetryAfter("-1"));
  EXPECT_EQ(ParseRetryAfter("999999"), std::chrono::seconds(3600));
}

TEST(UrlEncode, EncodesReservedCharacters) {
  EXPECT_EQ(UrlEncode("spec.nodeName=a b"), "spec.nodeName%3Da%20b");
}

}  // namespace
}  // namespace nccl_triage
