// The coordinator's step after a sweep on its own, with the real Kubernetes client against the
// fake API server and the node watch running: remediation of the faults it is given, validation
// fed by the sweep's probe passes, no API call once stop is requested, and what it shows and
// exports (nothing of a part that is off).
#include "coordinator/remediation_stage.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "base/log.h"
#include "kube/kube_client.h"
#include "support/fake_api_harness.h"
#include "support/fake_api_server.h"
#include "support/fake_clock.h"

namespace nccl_triage {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

json FakeNode(const std::string& name, const std::string& boot_id) {
  return {{"metadata", {{"name", name}, {"labels", {{"pool", "a"}}}}},
          {"spec", json::object()},
          {"status", {{"nodeInfo", {{"bootID", boot_id}}}}}};
}

PairOutcome SocketPassed(const std::string& a, const std::string& b) {
  PairOutcome p;
  p.pair = NodePair(a, b);
  p.judgement.socket = ProbeOutcome::kPass;
  p.judgement.ib = ProbeOutcome::kNotRun;  // a cluster probed over sockets only
  return p;
}

class RemediationStageTest : public ::testing::Test {
 protected:
  RemediationStageTest() {
    for (int i = 0; i < 10; ++i) server_->AddNode(FakeNode("n" + std::to_string(i), "boot-a"));
    kube_ = api_.Client();
  }

  RemediationStageOptions Options(RemediationMode mode, bool validate) const {
    RemediationStageOptions o;
    o.remediation.policy = {.mode = mode, .max_nodes = 3, .max_percent = 50,
                            .healthy_ms = 3'600'000};
    o.remediation.pool_label = "pool";
    o.validation.policy = {.enabled = validate, .timeout_ms = 3'600'000, .max_nodes = 3,
                           .max_percent = 50};
    return o;
  }

  bool HasTaint(const std::string& node, std::string_view key) const {
    for (const json& t : server_->Node(node)["spec"].value("taints", json::array())) {
      if (t.value("key", "") == key) return true;
    }
    return false;
  }

  // Steps until `done` holds (the watch brings the nodes' changes in its own time).
  template <typename Done>
  bool StepUntil(RemediationStage& stage,
                 const std::map<std::string, ConfirmedNodeFault>& confirmed, Done done) {
    for (int i = 0; i < 200; ++i) {
      stage.Step(confirmed, {}, {});
      if (done()) return true;
      std::this_thread::sleep_for(25ms);
    }
    return false;
  }

  testing::FakeApiHarness api_{"remediation-stage"};
  testing::FakeApiServer* server_ = &api_.server();
  std::unique_ptr<InClusterKubeClient> kube_;
  FakeClock clock_;
  std::ostringstream out_;
  Logger log_{out_};
  CoordinatorMetrics metrics_;
};

TEST_F(RemediationStageTest, WithoutAClientNothingRunsAndNothingIsShown) {
  RemediationStage stage(Options(RemediationMode::kCordon, true), nullptr, nullptr, log_, clock_,
                         metrics_);
  EXPECT_FALSE(stage.active());
  stage.Start();
  stage.Step({{"n1", {FaultClass::kIbResource, {"ib.port_state"}}}}, {"n1"}, {});
  stage.Stop();
  EXPECT_FALSE(stage.last_remediation().has_value());
  EXPECT_FALSE(stage.last_validation().has_value());
  EXPECT_FALSE(HasTaint("n1", kFaultTaintKey));
}

TEST_F(RemediationStageTest, RemediatesTheConfirmedFaultsAndShowsAndExportsTheOutcome) {
  RemediationStage stage(Options(RemediationMode::kCordon, false), kube_.get(), nullptr, log_,
                         clock_, metrics_);
  ASSERT_TRUE(stage.remediates());
  EXPECT_FALSE(stage.validates());
  stage.Start();
  const std::map<std::string, ConfirmedNodeFault> confirmed = {
      {"n1", {FaultClass::kIbResource, {"ib.port_state"}}}};
  ASSERT_TRUE(StepUntil(stage, confirmed, [&] { return HasTaint("n1", kFaultTaintKey); }));
  stage.Stop();
  ASSERT_TRUE(stage.last_remediation().has_value());
  EXPECT_EQ(stage.last_remediation()->remediated, std::vector<std::string>{"n1"});
  EXPECT_FALSE(stage.last_validation().has_value());
  EXPECT_NE(metrics_.Text().find("nccl_triage_remediation_nodes{state=\"tainted\"} 1"),
            std::string::npos);
  stage.ClearMetrics();  // a replica that stops leading
  EXPECT_NE(metrics_.Text().find("nccl_triage_remediation_nodes{state=\"tainted\"} 0"),
            std::string::npos);
}

TEST_F(RemediationStageTest, NoApiCallStartsOnceStopIsRequested) {
  RemediationStage stage(Options(RemediationMode::kCordon, true), kube_.get(), nullptr, log_,
                         clock_, metrics_);
  stage.Start();
  std::stop_source stop;
  stop.request_stop();
  stage.Step({{"n1", {FaultClass::kIbResource, {"ib.port_state"}}}}, {"n1"}, stop.get_token());
  stage.Stop();
  EXPECT_EQ(server_->CountCalls("PATCH", "/api/v1/nodes"), 0u);
  EXPECT_FALSE(HasTaint("n1", kFaultTaintKey));
}

TEST_F(RemediationStageTest, ValidationReleasesARebootedNodeOnTheSweepsSocketPasses) {
  RemediationStage stage(Options(RemediationMode::kOff, true), kube_.get(), nullptr, log_, clock_,
                         metrics_);
  ASSERT_TRUE(stage.validates());
  EXPECT_FALSE(stage.remediates());
  stage.Start();
  // The first step takes the bootIDs of the nodes there; a reboot afterwards is validated.
  ASSERT_TRUE(StepUntil(stage, {}, [&] {
    return stage.last_validation() && stage.last_validation()->nodes_seen == 10;
  }));
  server_->ChangeNode("n4", [](json& n) { n["status"]["nodeInfo"]["bootID"] = "boot-b"; });
  ASSERT_TRUE(StepUntil(stage, {}, [&] { return HasTaint("n4", kUnvalidatedTaintKey); }));
  // IB not run counts as passed where the socket probe passed.
  stage.RecordProbes({SocketPassed("n4", "n5")});
  stage.Step({}, {}, {});
  stage.Stop();
  EXPECT_EQ(stage.last_validation()->validated, std::vector<std::string>{"n4"});
  EXPECT_FALSE(HasTaint("n4", kUnvalidatedTaintKey));
  EXPECT_FALSE(stage.last_remediation().has_value());
}

}  // namespace
}  // namespace nccl_triage
