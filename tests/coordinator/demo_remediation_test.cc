// Remediation wired into the coordinator's sweeps: the demo cluster (real gRPC, probe children
// with the fake NCCL) finds and confirms a node fault, and the sweep that confirms it taints that
// node through the real Kubernetes client on the fake API server; /status and /metrics say so.
// Dry-run patches nothing and shows the plan.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "cluster_test_util.h"
#include "exporter/tls_test_cert.h"
#include "kube/kube_client.h"
#include "support/fake_api_server.h"
#include "support/text_file.h"

namespace nccl_triage {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing_util::TestCluster;
using testing_util::TestOptions;

class DemoRemediation : public ::testing::Test {
 protected:
  DemoRemediation() {
    dir_ = fs::path(::testing::TempDir()) / ("demo_remediation_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    cert_ = testing::MakeSelfSignedCert(dir_.string());
    api_ = std::make_unique<testing::FakeApiServer>(
        testing::FakeApiServer::Options{cert_.cert_path, cert_.key_path, "tok", "", 0});
    for (int i = 0; i < 4; ++i) {
      api_->AddNode(
          {{"metadata", {{"name", "node-" + std::to_string(i)}}}, {"spec", json::object()}});
    }
    ApiAccess a;
    a.host = "127.0.0.1";
    a.port = api_->port();
    a.ca_pem = testing::ReadTextFile(cert_.cert_path);
    a.token = "tok";
    auto c = InClusterKubeClient::Connect(a, KubeTimeouts{});
    EXPECT_TRUE(c.ok()) << c.status().message();
    kube_ = std::shared_ptr<KubeClient>(std::move(c).value());
  }
  ~DemoRemediation() override {
    kube_.reset();
    api_.reset();
    fs::remove_all(dir_);
  }

  DemoOptions Options(RemediationMode mode) {
    DemoOptions o = TestOptions(4, "remediation");
    auto f = ParseDemoFault("node:2:port_down", 4);
    EXPECT_TRUE(f.ok());
    o.faults.push_back(*f);
    o.remediation = {
        .mode = mode, .max_nodes = 2, .max_percent = 50, .recover_after_seconds = 3600};
    o.kube = kube_;
    return o;
  }

  bool Tainted(const std::string& node) const {
    for (const json& t : api_->Node(node)["spec"].value("taints", json::array())) {
      if (t.value("key", "") == kFaultTaintKey) return true;
    }
    return false;
  }

  fs::path dir_;
  testing::TestCert cert_;
  std::unique_ptr<testing::FakeApiServer> api_;
  std::shared_ptr<KubeClient> kube_;
};

TEST_F(DemoRemediation, TheSweepThatConfirmsANodeFaultTaintsThatNodeOnly) {
  TestCluster t(Options(RemediationMode::kTaint));
  ASSERT_TRUE(t.cluster.Start().ok()) << t.log_text.str();
  auto report = t.cluster.Run();
  ASSERT_TRUE(report.ok()) << report.status().message() << "\n" << t.log_text.str();
  EXPECT_TRUE(Tainted("node-2")) << api_->Node("node-2").dump() << "\n" << t.log_text.str();
  for (const char* healthy : {"node-0", "node-1", "node-3"}) EXPECT_FALSE(Tainted(healthy));
  const CoordinatorView view = t.cluster.coordinator().View(false);
  ASSERT_TRUE(view.remediation.has_value());
  EXPECT_EQ(view.remediation->remediated, std::vector<std::string>{"node-2"});
  const json status = ToJson(view);
  EXPECT_EQ(status["remediation"]["mode"], "taint");
  EXPECT_EQ(status["remediation"]["remediated"], json::array({"node-2"}));
  const std::string metrics = t.cluster.coordinator().MetricsText();
  EXPECT_NE(metrics.find("nccl_triage_remediation_nodes{state=\"tainted\"} 1"), std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("nccl_triage_remediation_actions_total{action=\"taint\",mode=\"taint\","
                         "result=\"ok\"} 1"),
            std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("nccl_triage_remediation_breaker_open 0"), std::string::npos);
  ASSERT_FALSE(api_->Events().empty());
  EXPECT_EQ(api_->Events().back()["reason"], "NcclTriageTainted");
}

// validation.new_nodes with remediation off: the first coordinator only remembers the bootIDs
// (kept in the ConfigMap); after a restart, a node that rebooted meanwhile is tainted
// nccl-triage.io/unvalidated by the first sweep and released by the next, whose probes pass.
TEST_F(DemoRemediation, ARebootedNodeIsTaintedUntilTheNextSweepsProbesPass) {
  for (int i = 0; i < 4; ++i) {
    api_->ChangeNode("node-" + std::to_string(i),
                     [](json& n) { n["status"]["nodeInfo"]["bootID"] = "boot-a"; });
  }
  auto options = [&] {
    DemoOptions o = Options(RemediationMode::kOff);
    o.faults.clear();
    o.validation = {.new_nodes = true, .timeout_seconds = 3600, .max_nodes = 2,
                    .max_percent = 50};
    o.state_configmap = "nccl-triage-state";
    return o;
  };
  {
    TestCluster t(options());
    ASSERT_TRUE(t.cluster.Start().ok()) << t.log_text.str();
    ASSERT_TRUE(t.cluster.Run().ok()) << t.log_text.str();
  }
  EXPECT_TRUE(api_->Events().empty());
  api_->ChangeNode("node-1", [](json& n) { n["status"]["nodeInfo"]["bootID"] = "boot-b"; });
  DemoOptions o = options();
  o.rounds = 2;
  TestCluster t(std::move(o));
  ASSERT_TRUE(t.cluster.Start().ok()) << t.log_text.str();
  ASSERT_TRUE(t.cluster.Run().ok()) << t.log_text.str();
  std::vector<std::string> reasons;
  for (const json& e : api_->Events()) {
    EXPECT_EQ(e["involvedObject"]["name"], "node-1");
    reasons.push_back(e["reason"]);
  }
  EXPECT_EQ(reasons, (std::vector<std::string>{"NcclTriageUnvalidated", "NcclTriageValidated"}))
      << t.log_text.str();
  EXPECT_EQ(api_->Node("node-1")["spec"].value("taints", json::array()), json::array());
  const std::string metrics = t.cluster.coordinator().MetricsText();
  EXPECT_NE(metrics.find("nccl_triage_validation_unvalidated_nodes 0"), std::string::npos);
  // /status shows the last sweep's validation: node-1 validated, none left unvalidated.
  const json status = ToJson(t.cluster.coordinator().View(false));
  ASSERT_TRUE(status.contains("validation")) << status.dump(2);
  EXPECT_EQ(status["validation"]["validated"], json::array({"node-1"})) << status.dump(2);
  EXPECT_EQ(status["validation"]["unvalidated"], json::array()) << status.dump(2);
}

// The coordinator and every agent restart together (the agents remember nothing): the fault
// confirmed before comes back from the ConfigMap before the first sweep, so a sweep in which the
// node looks healthy only counts towards clearing it (hold-down 2), and its taint stays.
TEST_F(DemoRemediation, ARestartOfTheCoordinatorAndItsAgentsKeepsTheFaultAndItsTaint) {
  {
    DemoOptions o = Options(RemediationMode::kTaint);
    o.state_configmap = "nccl-triage-state";
    TestCluster t(std::move(o));
    ASSERT_TRUE(t.cluster.Start().ok()) << t.log_text.str();
    auto report = t.cluster.Run();
    ASSERT_TRUE(report.ok()) << report.status().message();
    ASSERT_TRUE(Tainted("node-2")) << t.log_text.str();
  }
  const json kept = api_->ConfigMap("default", "nccl-triage-state");
  ASSERT_TRUE(kept.is_object()) << "no state was written";
  DemoOptions o = Options(RemediationMode::kTaint);
  o.faults.clear();  // the node looks healthy now
  o.hold_down = 2;
  o.rounds = 1;
  o.state_configmap = "nccl-triage-state";
  TestCluster t(std::move(o));
  ASSERT_TRUE(t.cluster.Start().ok()) << t.log_text.str();
  auto report = t.cluster.Run();
  ASSERT_TRUE(report.ok()) << report.status().message();
  const CoordinatorView view = t.cluster.coordinator().View(false);
  bool confirmed = false;
  for (const TrackedFault& f : view.faults) {
    confirmed |= f.confirmed && f.fault.nodes == std::vector<std::string>{"node-2"};
  }
  EXPECT_TRUE(confirmed) << "the confirmed fault was forgotten\n" << t.log_text.str();
  EXPECT_NE(t.log_text.str().find("resumed from configmap nccl-triage-state: 1 fault(s)"),
            std::string::npos)
      << t.log_text.str();
  EXPECT_TRUE(Tainted("node-2"));
  size_t tainted_events = 0;
  for (const json& e : api_->Events()) {
    tainted_events += e.value("reason", "") == "NcclTriageTainted";
  }
  EXPECT_EQ(tainted_events, 1U) << "tainted again";
}

TEST_F(DemoRemediation, DryRunShowsThePlanAndPatchesNothing) {
  TestCluster t(Options(RemediationMode::kDryRun));
  ASSERT_TRUE(t.cluster.Start().ok()) << t.log_text.str();
  auto report = t.cluster.Run();
  ASSERT_TRUE(report.ok()) << report.status().message();
  EXPECT_EQ(api_->CountCalls("PATCH", "/api/v1/nodes"), 0U);
  const json status = ToJson(t.cluster.coordinator().View(false));
  EXPECT_EQ(status["remediation"]["would_taint"], json::array({"node-2"})) << status.dump(2);
  EXPECT_EQ(status["remediation"]["applied"], false);
  const std::string metrics = t.cluster.coordinator().MetricsText();
  EXPECT_NE(metrics.find("nccl_triage_remediation_nodes{state=\"would_taint\"} 1"),
            std::string::npos)
      << metrics;
  ASSERT_EQ(api_->Events().size(), 1U);  // once, however many sweeps ran
  EXPECT_EQ(api_->Events()[0]["reason"], "NcclTriageWouldTaint");
}

}  // namespace
}  // namespace nccl_triage
