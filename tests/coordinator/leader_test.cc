// The coordinator with leader election (CoordinatorOptions::leader) against the fake API server's
// Lease: a standby is ready, refuses agents and says in /status who leads; a leader accepts them,
// and once another replica holds the Lease it closes their sessions and sends no sweep. With the
// leader label (CoordinatorOptions::leader_label) the leader labels its pod, clears a former
// leader's, and on Stop takes its own off before it releases the Lease. Waits are for facts
// (generous timeouts), never measured.
#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <filesystem>
#include <sstream>
#include <thread>

#include "base/clock.h"
#include "base/log.h"
#include "coordinator/server.h"
#include "exporter/tls_test_cert.h"
#include "kube/kube_client.h"
#include "kube/leader_election.h"
#include "kube/leader_label.h"
#include "raw_agent.h"
#include "support/fake_api_server.h"
#include "support/text_file.h"

namespace nccl_triage {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using Body = v1::CoordinatorMessage::BodyCase;
using testing_util::RawAgent;

constexpr const char* kLease = "nccl-triage-coordinator";

class CoordinatorLeader : public ::testing::Test {
 protected:
  CoordinatorLeader() : log_(log_text_, LogLevel::kDebug) {
    dir_ = fs::path(::testing::TempDir()) / ("coordinator_leader_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    cert_ = testing::MakeSelfSignedCert(dir_.string());
    api_ = std::make_unique<testing::FakeApiServer>(
        testing::FakeApiServer::Options{cert_.cert_path, cert_.key_path, "tok", "", 0});
    ApiAccess a;
    a.host = "127.0.0.1";
    a.port = api_->port();
    a.ca_pem = testing::ReadTextFile(cert_.cert_path);
    a.token = "tok";
    election_kube_ = std::move(InClusterKubeClient::Connect(a, KubeTimeouts{})).value();
    label_kube_ = std::move(InClusterKubeClient::Connect(a, KubeTimeouts{})).value();
    kube_ = std::shared_ptr<KubeClient>(std::move(InClusterKubeClient::Connect(a, {})).value());
  }
  ~CoordinatorLeader() override {
    if (server_) server_->Stop();
    server_.reset();
    label_.reset();
    elector_.reset();
    election_kube_.reset();
    label_kube_.reset();
    kube_.reset();
    api_.reset();
    fs::remove_all(dir_);
  }

  void Start(bool with_label = false) {
    LeaderElectionOptions e;
    e.lease_namespace = "kt";
    e.lease_name = kLease;
    e.identity = "coord-me";
    e.lease_duration = 3600s;  // a Lease held by another never expires during a test
    e.renew_deadline = 3000s;
    e.retry_period = 50ms;
    elector_ = std::make_shared<LeaderElector>(*election_kube_, e, log_, clock_);
    CoordinatorOptions o;
    o.config.coordinator.listen = "127.0.0.1:0";
    o.config.coordinator.http_listen = "127.0.0.1:0";
    o.config.coordinator.sweep_interval_seconds = 0;
    o.token = "right-token";
    o.kube = kube_;
    o.leader = elector_;
    if (with_label) {
      LeaderLabelOptions l{.pod_namespace = "kt",
                           .pod_name = "coord-me",
                           .pod_selector = "app.kubernetes.io/component=coordinator",
                           .retry = 50ms};
      label_ = std::make_shared<LeaderPodLabel>(
          *label_kube_, l, [e = elector_] { return e->IsLeader(); }, log_, clock_);
      o.leader_label = label_;
    }
    server_ = std::make_unique<CoordinatorServer>(o, log_);
    Status s = server_->Start();
    ASSERT_TRUE(s.ok()) << s.message();
    target_ = "127.0.0.1:" + std::to_string(server_->grpc_port());
  }
  nlohmann::json Election() {
    httplib::Client http("127.0.0.1", server_->http_port());
    auto r = http.Get("/status");
    if (!r || r->status != 200) return nullptr;
    return nlohmann::json::parse(r->body, nullptr, false).value("leader_election",
                                                                 nlohmann::json());
  }
  bool Labelled(const std::string& pod) {
    auto labels = api_->Labels("kt", pod);
    return labels.count(kLeaderLabelKey) > 0;
  }
  void AddPod(const std::string& name, bool labelled) {
    nlohmann::json labels = {{"app.kubernetes.io/component", "coordinator"}};
    if (labelled) labels[kLeaderLabelKey] = kLeaderLabelValue;
    api_->AddPod({{"metadata", {{"name", name}, {"namespace", "kt"}, {"labels", labels}}}});
  }
  httplib::Result Readyz() {
    httplib::Client http("127.0.0.1", server_->http_port());
    return http.Get("/readyz");
  }
  bool WaitFor(const std::function<bool()>& fact) {
    for (int i = 0; i < 600; ++i) {  // 60 s: a loaded machine
      if (fact()) return true;
      std::this_thread::sleep_for(100ms);
    }
    return false;
  }
  void HeldByAnother() {
    api_->PutLease("kt", kLease, {{"holderIdentity", "coord-other"},
                                  {"leaseDurationSeconds", 15},
                                  {"leaseTransitions", 7}});
  }

  fs::path dir_;
  testing::TestCert cert_;
  std::unique_ptr<testing::FakeApiServer> api_;
  std::ostringstream log_text_;
  Logger log_;
  SystemClock clock_;
  std::unique_ptr<InClusterKubeClient> election_kube_;
  std::unique_ptr<InClusterKubeClient> label_kube_;
  std::shared_ptr<LeaderPodLabel> label_;
  std::shared_ptr<KubeClient> kube_;
  std::shared_ptr<LeaderElector> elector_;
  std::unique_ptr<CoordinatorServer> server_;
  std::string target_;
};

TEST_F(CoordinatorLeader, AStandbyIsReadyRefusesAgentsAndSaysWhoLeads) {
  HeldByAnother();
  Start();
  ASSERT_TRUE(WaitFor([&] { return elector_->Snapshot().holder == "coord-other"; }));
  // Ready: a PodDisruptionBudget counts it; the Service finds the leader by its label.
  auto ready = Readyz();
  ASSERT_TRUE(ready);
  EXPECT_EQ(ready->status, 200) << ready->body;
  const nlohmann::json election = Election();
  EXPECT_EQ(election.value("role", ""), "standby") << election;
  EXPECT_EQ(election.value("leader", ""), "coord-other") << election;
  EXPECT_EQ(election.value("lease", ""), "kt/nccl-triage-coordinator") << election;
  EXPECT_EQ(election.value("lease_transitions", 0), 7) << election;
  EXPECT_FALSE(election.contains("pod_label")) << "no label without leader_label";
  httplib::Client http("127.0.0.1", server_->http_port());
  auto live = http.Get("/livez");
  ASSERT_TRUE(live);
  EXPECT_EQ(live->status, 200);

  RawAgent agent(target_, "right-token");
  agent.Send(RawAgent::Hello("gpu-1"));
  auto end = agent.WaitEnd(30s);
  ASSERT_TRUE(end.has_value());
  EXPECT_EQ(end->error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_NE(end->error_message().find("not the leader"), std::string::npos);
  EXPECT_EQ(server_->ConnectedAgents(), 0U);
  EXPECT_EQ(api_->Lease("kt", kLease)["spec"]["holderIdentity"], "coord-other");
  EXPECT_NE(server_->MetricsText().find("nccl_triage_coordinator_leader 0"), std::string::npos);
}

TEST_F(CoordinatorLeader, ALeaderThatLosesTheLeaseDropsItsAgentsAndSweepsNoMore) {
  Start();
  ASSERT_TRUE(WaitFor([&] {
    auto r = Readyz();
    return r && r->status == 200 && Election().value("role", "") == "leader";
  })) << log_text_.str();
  EXPECT_EQ(api_->Lease("kt", kLease)["spec"]["holderIdentity"], "coord-me");
  EXPECT_NE(server_->MetricsText().find("nccl_triage_coordinator_leader 1"), std::string::npos);
  RawAgent agent(target_, "right-token");
  ASSERT_TRUE(agent.Send(RawAgent::Hello("gpu-1")));
  ASSERT_TRUE(agent.Next(Body::kWelcome, 30s).has_value());
  ASSERT_TRUE(server_->WaitForAgents(1, 30s));
  ASSERT_TRUE(server_->WaitForSweep(server_->RequestSweep(), 30s)) << "the leader sweeps";

  HeldByAnother();  // another replica took it (as after a partition longer than the deadline)
  auto end = agent.WaitEnd(60s);
  ASSERT_TRUE(end.has_value()) << "the session was not closed";
  EXPECT_EQ(end->error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_FALSE(elector_->IsLeader());
  auto ready = Readyz();
  ASSERT_TRUE(ready);
  EXPECT_EQ(ready->status, 200);
  EXPECT_TRUE(WaitFor([&] { return Election().value("role", "") == "standby"; }));
  EXPECT_NE(server_->MetricsText().find("nccl_triage_coordinator_leader 0"), std::string::npos);
  // A standby starts no sweep (a leader with no agent finishes one at once).
  EXPECT_FALSE(server_->WaitForSweep(server_->RequestSweep(), 3s));
  EXPECT_NE(log_text_.str().find("not leading any more"), std::string::npos) << log_text_.str();
}

TEST_F(CoordinatorLeader, TheLeaderLabelsItsPodAndTakesTheLabelOffBeforeItReleasesTheLease) {
  AddPod("coord-me", true);  // a former container of this pod led: off at start
  AddPod("coord-other", true);
  HeldByAnother();
  Start(/*with_label=*/true);
  ASSERT_TRUE(WaitFor([&] { return !Labelled("coord-me"); })) << log_text_.str();
  EXPECT_TRUE(Labelled("coord-other")) << "a standby writes to no other pod";
  EXPECT_EQ(Election().value("pod_label", ""), "nccl-triage.io/coordinator-role=leader");
  EXPECT_EQ(Election().value("pod_labelled", true), false);

  // coord-other dies with SIGKILL and lets the Lease go: this replica leads and moves the label.
  api_->PutLease("kt", kLease, {{"holderIdentity", ""},
                                {"leaseDurationSeconds", 1},
                                {"leaseTransitions", 7}});
  ASSERT_TRUE(WaitFor([&] { return Labelled("coord-me") && !Labelled("coord-other"); }))
      << log_text_.str();
  EXPECT_TRUE(WaitFor([&] { return Election().value("pod_labelled", false); }));
  EXPECT_EQ(Election().value("role", ""), "leader");

  // Stop (SIGTERM): the label goes first, then the Lease.
  server_->Stop();
  EXPECT_FALSE(Labelled("coord-me"));
  EXPECT_EQ(api_->Lease("kt", kLease)["spec"]["holderIdentity"], "");
  // The last patch of its pod took the label off (the state above), the last write of the Lease
  // released it (every earlier one renewed it): the patch came first.
  size_t unlabelled = 0, released = 0, i = 0;
  for (const auto& call : api_->Calls()) {
    ++i;
    if (call.method == "PATCH" && call.path.ends_with("/pods/coord-me")) unlabelled = i;
    if (call.method == "PUT" && call.path.find("/leases/") != std::string::npos) released = i;
  }
  ASSERT_NE(unlabelled, 0U);
  ASSERT_NE(released, 0U);
  EXPECT_LT(unlabelled, released);
}

}  // namespace
}  // namespace nccl_triage
