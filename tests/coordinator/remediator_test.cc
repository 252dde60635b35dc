// The remediator with the real Kubernetes client against the fake API server over HTTPS: the
// patches it sends (the full taint list, the marker, the cordon, the resourceVersion guard), the
// events, and the answers the real API server cannot be made to give on demand: 409 after a
// concurrent change, 403, 500 and 503, each logged once per node, counted and retried next step.
// The same remediator against the real API server with the chart's RBAC is in tests/k8s.
#include "coordinator/remediator.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/log.h"
#include "exporter/tls_test_cert.h"
#include "kube/kube_client.h"
#include "support/fake_api_server.h"
#include "support/text_file.h"

namespace nccl_triage {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr int64_t kHour = 3'600'000;

json FakeNode(const std::string& name, json taints = json::array(), bool unschedulable = false) {
  json n = {{"metadata", {{"name", name}, {"labels", {{"pool", "a"}}}}},
            {"spec", json::object()}};
  if (!taints.empty()) n["spec"]["taints"] = std::move(taints);
  if (unschedulable) n["spec"]["unschedulable"] = true;
  return n;
}

class RemediatorTest : public ::testing::Test {
 protected:
  RemediatorTest() {
    dir_ = fs::path(::testing::TempDir()) / ("remediator_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    cert_ = testing::MakeSelfSignedCert(dir_.string());
    server_ = std::make_unique<testing::FakeApiServer>(
        testing::FakeApiServer::Options{cert_.cert_path, cert_.key_path, "tok", "", 0});
    for (int i = 0; i < 10; ++i) server_->AddNode(FakeNode("n" + std::to_string(i)));
    ApiAccess a;
    a.host = "127.0.0.1";
    a.port = server_->port();
    a.ca_pem = testing::ReadTextFile(cert_.cert_path);
    a.token = "tok";
    auto c = InClusterKubeClient::Connect(a, KubeTimeouts{});
    EXPECT_TRUE(c.ok()) << c.status().message();
    kube_ = std::move(c).value();
  }
  ~RemediatorTest() override {
    kube_.reset();  // first: a kept-alive connection would hold the server's stop
    server_.reset();
    fs::remove_all(dir_);
  }

  Remediator Make(RemediationMode mode, int max_nodes = 3, double max_percent = 50) {
    RemediatorOptions o;
    o.policy = {.mode = mode, .max_nodes = max_nodes, .max_percent = max_percent,
                .healthy_ms = kHour};
    o.pool_label = "pool";
    o.list_page = 4;  // 10 nodes: three pages
    return Remediator(*kube_, o, log_);
  }

  static std::map<std::string, ConfirmedNodeFault> Faulty(std::vector<std::string> nodes) {
    std::map<std::string, ConfirmedNodeFault> out;
    for (auto& n : nodes) out[n] = {FaultClass::kIbResource, {"ib.port_state"}};
    return out;
  }

  json Taints(const std::string& node) const {
    return server_->Node(node)["spec"].value("taints", json::array());
  }
  bool HasOurTaint(const std::string& node) const {
    for (const json& t : Taints(node)) {
      if (t.value("key", "") == kFaultTaintKey) return true;
    }
    return false;
  }
  size_t LogLines(const std::string& part) const {
    std::istringstream in(out_.str());
    size_t n = 0;
    for (std::string line; std::getline(in, line);) n += line.find(part) != std::string::npos;
    return n;
  }

  fs::path dir_;
  testing::TestCert cert_;
  std::unique_ptr<testing::FakeApiServer> server_;
  std::unique_ptr<InClusterKubeClient> kube_;
  std::ostringstream out_;
  Logger log_{out_};
};

TEST_F(RemediatorTest, TaintsAndCordonsAConfirmedNodeWithTheMarkerAndAWarningEvent) {
  server_->AddNode(FakeNode("x", json::array({{{"key", "ops/maint"}, {"effect", "NoSchedule"}}})));
  Remediator r = Make(RemediationMode::kCordon);
  RemediationStatus s = r.Step(Faulty({"x"}), kHour);
  EXPECT_EQ(s.nodes_seen, 11);
  EXPECT_EQ(s.remediated, std::vector<std::string>{"x"});
  const json node = server_->Node("x");
  EXPECT_EQ(node["spec"]["unschedulable"], true);
  EXPECT_EQ(node["metadata"]["annotations"][std::string(kRemediatedAnnotation)],
            "taint=ib_resource,cordon");
  ASSERT_EQ(Taints("x").size(), 2U) << node.dump();
  EXPECT_EQ(Taints("x")[0]["key"], "ops/maint");  // the operator's taint kept
  EXPECT_EQ(Taints("x")[1], json({{"key", kFaultTaintKey},
                                  {"value", "ib_resource"},
                                  {"effect", "NoSchedule"}}));
  auto events = server_->Events();
  ASSERT_EQ(events.size(), 1U);
  EXPECT_EQ(events[0]["type"], "Warning");
  EXPECT_EQ(events[0]["reason"], "NcclTriageCordoned");
  EXPECT_EQ(events[0]["involvedObject"]["name"], "x");
  const std::string msg = events[0]["message"];
  EXPECT_NE(msg.find("ib.port_state"), std::string::npos) << msg;
  EXPECT_NE(msg.find("Fix: "), std::string::npos) << msg;
  EXPECT_NE(msg.find("kubectl uncordon x"), std::string::npos) << msg;
  EXPECT_EQ(server_->CountCalls("GET", "/api/v1/nodes"), 3U);  // pages of 4
}

TEST_F(RemediatorTest, ReleasesOnlyWhatItPlacedAfterRecoverAfter) {
  Remediator r = Make(RemediationMode::kCordon);
  r.Step(Faulty({"n1", "n2"}), kHour);
  ASSERT_TRUE(HasOurTaint("n1") && HasOurTaint("n2"));
  // An operator adds a taint of their own to n2 just before the release patch: the patch meets
  // 409, is retried on a fresh read, and their taint stays. n1 stays faulty.
  server_->ChangeNodeBeforeNextPatch("n2", [](json& n) {
    n["spec"]["taints"].push_back({{"key", "ops/hold"}, {"effect", "NoSchedule"}});
  });
  RemediationStatus s = r.Step(Faulty({"n1"}), 2 * kHour);  // n2 healthy since now
  EXPECT_TRUE(s.actions.empty());
  s = r.Step(Faulty({"n1"}), 3 * kHour - 1);
  EXPECT_TRUE(HasOurTaint("n2")) << "released before recover_after";
  s = r.Step(Faulty({"n1"}), 3 * kHour);
  ASSERT_EQ(s.actions.size(), 1U);
  EXPECT_EQ(s.actions[0].kind, RemediationActionKind::kRelease);
  EXPECT_FALSE(HasOurTaint("n2"));
  EXPECT_TRUE(HasOurTaint("n1"));
  const json n2 = server_->Node("n2");
  EXPECT_EQ(n2["spec"]["unschedulable"], false);
  EXPECT_FALSE(n2["metadata"].value("annotations", json::object()).contains(
      std::string(kRemediatedAnnotation)));
  ASSERT_EQ(Taints("n2").size(), 1U);
  EXPECT_EQ(Taints("n2")[0]["key"], "ops/hold");
  EXPECT_EQ(server_->Events().back()["reason"], "NcclTriageReleased");
}

TEST_F(RemediatorTest, ANodeWhoseAgentIsGoneIsNotReleased) {
  Remediator r = Make(RemediationMode::kTaint);
  const std::set<std::string> all = {"n0", "n1", "n2", "n3", "n4", "n5", "n6", "n7", "n8", "n9"};
  std::set<std::string> without_n1 = all;
  without_n1.erase("n1");
  r.Step(Faulty({"n1"}), kHour, &all);
  // Its agent goes away: the coordinator's hold-down forgets the fault, nobody probes the node.
  r.Step({}, 2 * kHour, &without_n1);
  r.Step({}, 4 * kHour, &without_n1);
  EXPECT_TRUE(HasOurTaint("n1")) << "released without being probed healthy";
  r.Step({}, 5 * kHour, &all);  // back: healthy from now on
  EXPECT_TRUE(HasOurTaint("n1"));
  RemediationStatus s = r.Step({}, 6 * kHour, &all);
  EXPECT_FALSE(HasOurTaint("n1"));
  ASSERT_EQ(s.actions.size(), 1U);
  EXPECT_EQ(s.actions[0].kind, RemediationActionKind::kRelease);
}

TEST_F(RemediatorTest, KeepsACordonAnOperatorPlaced) {
  server_->AddNode(FakeNode("c", json::array(), /*unschedulable=*/true));
  Remediator r = Make(RemediationMode::kCordon);
  r.Step(Faulty({"c"}), kHour);
  EXPECT_EQ(server_->Node("c")["metadata"]["annotations"][std::string(kRemediatedAnnotation)],
            "taint=ib_resource");  // not ours to undo
  r.Step({}, 2 * kHour);
  r.Step({}, 3 * kHour);
  EXPECT_FALSE(HasOurTaint("c"));
  EXPECT_EQ(server_->Node("c")["spec"]["unschedulable"], true);
}

TEST_F(RemediatorTest, AConflictIsRetriedOnAFreshReadAndTheConcurrentTaintKept) {
  server_->ChangeNodeBeforeNextPatch("n3", [](json& n) {
    n["spec"]["taints"] = json::array({{{"key", "other/x"}, {"effect", "NoExecute"}}});
  });
  Remediator r = Make(RemediationMode::kTaint);
  RemediationStatus s = r.Step(Faulty({"n3"}), kHour);
  EXPECT_TRUE(s.errors.empty()) << s.errors.begin()->second;
  ASSERT_EQ(Taints("n3").size(), 2U) << server_->Node("n3").dump();
  EXPECT_EQ(Taints("n3")[0]["key"], "other/x");
  EXPECT_TRUE(HasOurTaint("n3"));
  EXPECT_EQ(server_->CountCalls("PATCH", "/api/v1/nodes/n3"), 2U);
  EXPECT_EQ(server_->CountCalls("GET", "/api/v1/nodes/n3"), 1U);
}

TEST_F(RemediatorTest, ForbiddenAndServerErrorsAreLoggedOnceCountedAndRetriedNextStep) {
  Remediator r = Make(RemediationMode::kTaint);
  for (int status : {403, 500, 503}) {
    SCOPED_TRACE(status);
    server_->FailNodePatches(status, "refused " + std::to_string(status), 2);
    RemediationStatus s = r.Step(Faulty({"n4"}), kHour);
    ASSERT_EQ(s.errors.count("n4"), 1U);
    EXPECT_NE(s.errors["n4"].find("HTTP " + std::to_string(status)), std::string::npos);
    ASSERT_FALSE(s.outcomes.empty());
    EXPECT_EQ(s.outcomes[0].action, "taint");
    EXPECT_EQ(s.outcomes[0].result, "error");
    EXPECT_TRUE(s.remediated.empty());
    s = r.Step(Faulty({"n4"}), kHour + 1);
    EXPECT_EQ(s.errors.count("n4"), 1U);
    EXPECT_FALSE(HasOurTaint("n4"));
    s = r.Step(Faulty({"n4"}), kHour + 2);  // the API works again
    EXPECT_TRUE(s.errors.empty());
    EXPECT_TRUE(HasOurTaint("n4"));
    EXPECT_EQ(s.remediated, std::vector<std::string>{"n4"});
    r.Step({}, kHour + 3);
    r.Step({}, 3 * kHour);  // released for the next round
    ASSERT_FALSE(HasOurTaint("n4"));
  }
  // Each failure logged once per node (two failing steps each), and its recovery once.
  EXPECT_EQ(LogLines("node n4: taint: HTTP"), 3U) << out_.str();
  EXPECT_EQ(LogLines("node n4: API calls work again"), 3U) << out_.str();
}

TEST_F(RemediatorTest, AFailedNodeListPlansNothing) {
  ApiAccess a;  // a client of a port where no API server listens
  a.host = "127.0.0.1";
  a.port = 1;
  a.ca_pem = testing::ReadTextFile(cert_.cert_path);
  a.token = "tok";
  auto dead = InClusterKubeClient::Connect(a, KubeTimeouts{});
  ASSERT_TRUE(dead.ok());
  RemediatorOptions o;
  o.policy.mode = RemediationMode::kTaint;
  Remediator d(**dead, o, log_);
  RemediationStatus s = d.Step(Faulty({"n1"}), kHour);
  EXPECT_NE(s.list_error.find("list nodes"), std::string::npos) << s.list_error;
  EXPECT_TRUE(s.actions.empty());
  d.Step(Faulty({"n1"}), kHour + 1);
  EXPECT_EQ(LogLines("list nodes"), 1U) << out_.str();
}

TEST_F(RemediatorTest, TheBreakerHoldsBackBeyondMaxNodes) {
  Remediator r = Make(RemediationMode::kTaint, /*max_nodes=*/2, /*max_percent=*/100);
  RemediationStatus s = r.Step(Faulty({"n1", "n2", "n3", "n4", "n5"}), kHour);
  EXPECT_TRUE(s.breaker_open);
  EXPECT_EQ(s.remediated, (std::vector<std::string>{"n1", "n2"}));
  EXPECT_EQ(s.held_back, (std::vector<std::string>{"n3", "n4", "n5"}));
  EXPECT_FALSE(HasOurTaint("n3"));
}

TEST_F(RemediatorTest, DryRunPatchesNothingAndAnnouncesOncePerNodeAndClass) {
  Remediator r = Make(RemediationMode::kDryRun);
  RemediationStatus s = r.Step(Faulty({"n1", "n2"}), kHour);
  EXPECT_EQ(s.would_taint, (std::vector<std::string>{"n1", "n2"}));
  EXPECT_TRUE(s.remediated.empty());
  EXPECT_EQ(server_->CountCalls("PATCH", "/api/v1/nodes"), 0U);
  ASSERT_EQ(server_->Events().size(), 2U);
  EXPECT_EQ(server_->Events()[0]["type"], "Normal");
  EXPECT_EQ(server_->Events()[0]["reason"], "NcclTriageWouldTaint");
  EXPECT_NE(server_->Events()[0]["message"].get<std::string>().find("Would taint"),
            std::string::npos);
  r.Step(Faulty({"n1", "n2"}), kHour + 1);
  EXPECT_EQ(server_->Events().size(), 2U);  // not again
  const json j = ToJson(s);
  EXPECT_EQ(j["mode"], "dry-run");
  EXPECT_EQ(j["applied"], false);
  EXPECT_EQ(j["actions"].size(), 2U);
  EXPECT_EQ(j["actions"][0]["taint"], "nccl-triage.io/fault=ib_resource");
}

TEST_F(RemediatorTest, OffReadsNothing) {
  Remediator r = Make(RemediationMode::kOff);
  RemediationStatus s = r.Step(Faulty({"n1"}), kHour);
  EXPECT_TRUE(s.actions.empty());
  EXPECT_TRUE(server_->Calls().empty());
}

TEST(RemediationMarker, SaysWhatWasPlaced) {
  EXPECT_EQ(RemediationMarker("ib_resource", true), "taint=ib_resource,cordon");
  EXPECT_TRUE(MarkerSaysCordoned("taint=ib_resource,cordon"));
  EXPECT_FALSE(MarkerSaysCordoned("taint=ib_resource"));
  EXPECT_FALSE(MarkerSaysCordoned("taint=x,cordoned"));
}

}  // namespace
}  // namespace nccl_triage
