// The real Kubernetes client's reads for the triage against the fake API over HTTPS: pages of a
// namespaced pod list, a log streamed in chunks (and stopped early), credentials from an
// ApiAccess (inline CA, token file, client certificate), and its failures as one line.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "exporter/tls_test_cert.h"
#include "kube/kube_client.h"
#include "support/fake_api_server.h"
#include "support/text_file.h"

namespace nccl_triage {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;


class TriageKubeClient : public ::testing::Test {
 protected:
  TriageKubeClient() {
    dir_ = fs::path(::testing::TempDir()) / ("triage_kube_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    cert_ = testing::MakeSelfSignedCert(dir_.string());
    testing::FakeApiServer::Options o{cert_.cert_path, cert_.key_path, "tok", "", 0};
    server_ = std::make_unique<testing::FakeApiServer>(o);
    for (int i = 0; i < 5; ++i) {
      server_->AddPod({{"metadata",
                        {{"name", "p" + std::to_string(i)},
                         {"namespace", "ml"},
                         {"labels", {{"app", i < 4 ? "train" : "other"}}}}},
                       {"spec", {{"nodeName", "n"}, {"containers", {{{"name", "c"}}}}}}});
    }
  }
  ~TriageKubeClient() override {
    server_.reset();
    fs::remove_all(dir_);
  }
  ApiAccess Access() const {
    ApiAccess a;
    a.host = "127.0.0.1";
    a.port = server_->port();
    a.ca_pem = testing::ReadTextFile(cert_.cert_path);
    a.token = "tok";
    return a;
  }
  std::unique_ptr<InClusterKubeClient> Client(const ApiAccess& a) {
    auto c = InClusterKubeClient::Connect(a, KubeTimeouts{});
    EXPECT_TRUE(c.ok()) << c.status().message();
    return std::move(c).value();
  }

  fs::path dir_;
  testing::TestCert cert_;
  std::unique_ptr<testing::FakeApiServer> server_;
};

TEST_F(TriageKubeClient, ListsANamespaceByLabelInPages) {
  auto c = Client(Access());
  PodListQuery q;
  q.label_selector = "app=train";
  q.limit = 3;
  KubeResponse r = c->ListNamespacedPods("ml", q);
  ASSERT_TRUE(r.ok()) << r.Describe();
  json page = json::parse(r.body);
  EXPECT_EQ(page["items"].size(), 3U);
  q.continue_token = page["metadata"]["continue"];
  page = json::parse(c->ListNamespacedPods("ml", q).body);
  EXPECT_EQ(page["items"].size(), 1U);
  EXPECT_FALSE(page["metadata"].contains("continue"));
}

TEST_F(TriageKubeClient, StreamsALogInChunksAndStopsWhenTheSinkSaysSo) {
  testing::FakeLog log;
  log.lines = 100000;
  log.line = [](size_t i) { return "line " + std::to_string(i); };
  server_->SetLog("ml", "p0", "c", false, log);
  auto c = Client(Access());
  PodLogQuery q;
  q.container = "c";
  q.tail_lines = 10;
  std::string got;
  KubeResponse r = c->StreamPodLog("ml", "p0", q, [&](std::string_view chunk) {
    got.append(chunk);
    return true;
  });
  ASSERT_TRUE(r.ok()) << r.Describe();
  EXPECT_EQ(got.substr(0, 11), "line 99990\n");
  EXPECT_TRUE(r.body.empty());

  size_t chunks = 0;
  q.tail_lines = -1;
  r = c->StreamPodLog("ml", "p0", q, [&](std::string_view) { return ++chunks < 2; });
  EXPECT_TRUE(r.ok()) << r.Describe();  // stopped by the reader, not an error
  EXPECT_EQ(chunks, 2U);
  // The connection is still usable afterwards.
  EXPECT_TRUE(c->ListNamespacedPods("ml", {}).ok());
}

TEST_F(TriageKubeClient, ALogReadEndsAtLimitBytesWhenTheServerIgnoresIt) {
  testing::FakeLog log;
  log.lines = 200000;  // about 2.3 MB
  log.line = [](size_t i) { return "line " + std::to_string(i); };
  server_->SetLog("ml", "p0", "c", false, log);
  server_->IgnoreLimitBytes();
  auto c = Client(Access());
  PodLogQuery q;
  q.container = "c";
  q.limit_bytes = 100'000;
  size_t got = 0;
  KubeResponse r = c->StreamPodLog("ml", "p0", q, [&](std::string_view chunk) {
    got += chunk.size();
    return true;
  });
  EXPECT_TRUE(r.ok()) << r.Describe();
  EXPECT_EQ(got, 100'000U);
  EXPECT_LT(server_->log_bytes_served(), 1'000'000U);  // the read was ended, not drained
  EXPECT_TRUE(c->ListNamespacedPods("ml", {}).ok());
}

TEST_F(TriageKubeClient, ALogErrorIsTheApisAnswer) {
  auto c = Client(Access());
  PodLogQuery q;
  q.container = "c";
  q.previous = true;
  KubeResponse r = c->StreamPodLog("ml", "p1", q, [](std::string_view) { return true; });
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.Describe(),
            "HTTP 400 BadRequest: previous terminated container \"c\" in pod \"p1\" not found");
}

TEST_F(TriageKubeClient, ATokenFileIsReadAndItsAbsenceIsALine) {
  ApiAccess a = Access();
  a.token.clear();
  a.token_file = (dir_ / "token").string();
  EXPECT_EQ(InClusterKubeClient::Connect(a, {}).status().message(),
            "cannot open the token file '" + a.token_file + "': No such file or directory");
  std::ofstream(a.token_file) << "tok\n";
  EXPECT_TRUE(Client(a)->ListNamespacedPods("ml", {}).ok());
}

TEST_F(TriageKubeClient, AnotherCaFailsTheHandshakeWithALine) {
  fs::create_directories(dir_ / "other");
  auto other = testing::MakeSelfSignedCert((dir_ / "other").string(), "other");
  ApiAccess a = Access();
  a.ca_pem = testing::ReadTextFile(other.cert_path);
  KubeResponse r = Client(a)->ListNamespacedPods("ml", {});
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.Describe().find("TLS"), std::string::npos) << r.Describe();
}

TEST_F(TriageKubeClient, ACertificateWithoutItsKeyIsRefused) {
  ApiAccess a = Access();
  a.client_cert_pem = testing::ReadTextFile(cert_.cert_path);
  EXPECT_EQ(InClusterKubeClient::Connect(a, {}).status().message(),
            "a client certificate needs its key, and a key its certificate");
  a.client_key_pem = "not a key";
  EXPECT_NE(InClusterKubeClient::Connect(a, {}).status().message().find("do not load"),
            std::string::npos);
}

TEST_F(TriageKubeClient, ABasePathPrefixesEveryRequest) {
  ApiAccess a = Access();
  a.base_path = "/k8s/clusters/c-1";
  Client(a)->ListNamespacedPods("ml", {});
  EXPECT_EQ(server_->Calls().back().path, "/k8s/clusters/c-1/api/v1/namespaces/ml/pods");
}

}  // namespace
}  // namespace nccl_triage
