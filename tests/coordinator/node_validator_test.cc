// The validation of nodes that join or reboot, with the real Kubernetes client against the fake
// API server over HTTPS and a fake clock: the taint nccl-triage.io/unvalidated placed on a new
// bootID and removed after passing probes or on the timeout, the breaker, nodes present when the
// feature is turned on and others' taints left alone, and the memory kept across a restart.
#include "coordinator/node_validator.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "base/log.h"
#include "coordinator/state_store.h"
#include "kube/kube_client.h"
#include "support/fake_api_harness.h"
#include "support/fake_api_server.h"
#include "support/fake_clock.h"
#include "support/stop_after_patch.h"

namespace nccl_triage {
namespace {

using nlohmann::json;

constexpr int64_t kMinute = 60'000;

json FakeNode(const std::string& name, const std::string& boot_id,
              json taints = json::array()) {
  json n = {{"metadata", {{"name", name}}},
            {"spec", json::object()},
            {"status", {{"nodeInfo", {{"bootID", boot_id}}}}}};
  if (!taints.empty()) n["spec"]["taints"] = std::move(taints);
  return n;
}

class NodeValidatorTest : public ::testing::Test {
 protected:
  NodeValidatorTest() {
    for (int i = 0; i < 20; ++i) server_->AddNode(FakeNode("n" + std::to_string(i), "boot-a"));
    kube_ = api_.Client();
  }

  NodeValidator Make(int max_nodes = 10, double max_percent = 10, bool dry_run = false) {
    NodeValidatorOptions o;
    o.policy = {.enabled = true, .timeout_ms = 30 * kMinute, .max_nodes = max_nodes,
                .max_percent = max_percent};
    o.dry_run = dry_run;
    o.list_page = 7;  // three pages
    return NodeValidator(*kube_, o, log_, clock_);
  }

  void Reboot(const std::string& node, const std::string& boot_id) {
    server_->ChangeNode(node, [&](json& n) { n["status"]["nodeInfo"]["bootID"] = boot_id; });
  }
  json Taints(const std::string& node) const {
    return server_->Node(node)["spec"].value("taints", json::array());
  }
  std::string OurTaint(const std::string& node) const {
    for (const json& t : Taints(node)) {
      if (t.value("key", "") == kUnvalidatedTaintKey) {
        EXPECT_EQ(t.value("effect", ""), "NoSchedule");
        return t.value("value", "");
      }
    }
    return "";
  }
  std::vector<std::string> EventReasons(const std::string& node) const {
    std::vector<std::string> out;
    for (const json& e : server_->Events()) {
      if (e["involvedObject"]["name"] == node) out.push_back(e["reason"]);
    }
    return out;
  }
  static std::map<std::string, NodeProbePasses> Passed(const std::string& node, bool socket,
                                                       bool ib) {
    return {{node, {.socket = socket, .ib = ib}}};
  }

  testing::FakeApiHarness api_{"validator"};
  testing::FakeApiServer* server_ = &api_.server();
  std::unique_ptr<InClusterKubeClient> kube_;
  FakeClock clock_;
  std::ostringstream out_;
  Logger log_{out_};
};

// With the node cache (as the coordinator runs it): a node that joins after the start is seen
// through the watch, and no step lists the nodes.
TEST_F(NodeValidatorTest, WithTheNodeCacheANewNodeIsSeenThroughTheWatch) {
  server_->EndWatchesWhenIdle(true);
  NodeCache cache(*kube_, NodeCacheOptions{}, log_, clock_);
  cache.RunOnce({});
  NodeValidatorOptions o;
  o.policy = {.enabled = true, .timeout_ms = 30 * kMinute, .max_nodes = 10, .max_percent = 10};
  NodeValidator v(*kube_, o, log_, clock_, &cache);
  v.Step({});  // remembers the bootIDs of the nodes there
  server_->AddNode(FakeNode("late", "boot-z"));
  Reboot("n4", "boot-b");
  cache.RunOnce({});  // the watch brings both
  const size_t lists = server_->CountCalls("GET", "/api/v1/nodes");
  ValidationStatus s = v.Step({});
  EXPECT_EQ(s.tainted, (std::vector<std::string>{"late", "n4"}));
  EXPECT_EQ(OurTaint("late"), "new-node");
  EXPECT_EQ(OurTaint("n4"), "rebooted");
  EXPECT_EQ(server_->CountCalls("GET", "/api/v1/nodes"), lists);
}

// validation.node_selector (the chart: the agent's nodeSelector): a node without the labels is
// never tainted and not counted by the breaker; one that gets them later (GPU feature discovery
// labels a node after it joins) is a new node; one that loses them under our taint still goes
// through to its timeout, from the cache as from a list.
TEST_F(NodeValidatorTest, OnlyNodesOfTheSelectorAreValidated) {
  auto gpu = [](json n) {
    n["metadata"]["labels"] = {{"nvidia.com/gpu.present", "true"}};
    return n;
  };
  for (int i = 0; i < 10; ++i) {
    server_->ChangeNode("n" + std::to_string(i), [](json& n) {
      n["metadata"]["labels"] = {{"nvidia.com/gpu.present", "true"}, {"zone", "a"}};
    });
  }
  for (const bool cached : {false, true}) {
    SCOPED_TRACE(cached ? "from the node cache" : "from lists");
    server_->EndWatchesWhenIdle(true);
    NodeCacheOptions fields;
    fields.labels = {"nvidia.com/gpu.present"};
    NodeCache cache(*kube_, fields, log_, clock_);
    NodeValidatorOptions o;
    o.policy = {.enabled = true, .timeout_ms = 30 * kMinute, .max_nodes = 10, .max_percent = 10};
    o.node_selector = {{"nvidia.com/gpu.present", "true"}};
    o.list_page = 7;
    NodeValidator v(*kube_, o, log_, clock_, cached ? &cache : nullptr);
    const std::string sfx = cached ? "-c" : "-l";
    auto step = [&](const std::map<std::string, NodeProbePasses>& probed = {}) {
      if (cached) cache.RunOnce({});
      return v.Step(probed);
    };
    ValidationStatus s = step();
    const int gpu_nodes = cached ? 11 : 10;  // the second round: the first's CPU node labelled
    EXPECT_EQ(s.nodes_seen, gpu_nodes);
    EXPECT_EQ(v.Memory().boot_ids.size(), static_cast<size_t>(gpu_nodes));

    // A CPU node joins and another reboots: neither is ours to validate.
    server_->AddNode(FakeNode("cpu" + sfx, "boot-x"));
    Reboot("n15", cached ? "boot-c" : "boot-l");
    // A GPU node joins: the only one tainted (10 % of the GPU nodes: one at a time).
    server_->AddNode(gpu(FakeNode("gpu" + sfx, "boot-y")));
    s = step();
    EXPECT_EQ(s.tainted, std::vector<std::string>{"gpu" + sfx}) << out_.str();
    EXPECT_TRUE(s.refused.empty());
    EXPECT_EQ(OurTaint("cpu" + sfx), "");
    EXPECT_EQ(OurTaint("n15"), "");
    EXPECT_TRUE(EventReasons("cpu" + sfx).empty());

    // The CPU node is labelled later: it joins the validated nodes as a new node. The GPU node
    // loses its label while tainted: it is still released, by its timeout.
    server_->ChangeNode("gpu" + sfx, [](json& n) { n["metadata"]["labels"] = json::object(); });
    server_->ChangeNode("cpu" + sfx, [](json& n) {
      n["metadata"]["labels"] = {{"nvidia.com/gpu.present", "true"}};
    });
    s = step();
    EXPECT_TRUE(s.tainted.empty()) << "the breaker: one at a time";
    EXPECT_EQ(s.refused, std::vector<std::string>{"cpu" + sfx});
    EXPECT_EQ(s.unvalidated, std::vector<std::string>{"gpu" + sfx});
    clock_.Advance(std::chrono::milliseconds(30 * kMinute));
    s = step();
    EXPECT_EQ(s.timed_out, std::vector<std::string>{"gpu" + sfx}) << out_.str();
    EXPECT_EQ(OurTaint("gpu" + sfx), "");
    s = step();
    EXPECT_TRUE(s.unvalidated.empty());
    EXPECT_EQ(v.Memory().boot_ids.count("gpu" + sfx), 0U) << "outside the selector: forgotten";
    EXPECT_EQ(v.Memory().boot_ids.count("cpu" + sfx), 1U);
    EXPECT_EQ(v.Memory().boot_ids.count("n15"), 0U);
  }
}

TEST_F(NodeValidatorTest, NodesPresentWhenTurnedOnAreNotTainted) {
  NodeValidator v = Make();
  ValidationStatus s = v.Step({});
  EXPECT_EQ(s.nodes_seen, 20);
  EXPECT_TRUE(s.tainted.empty());
  s = v.Step({});
  EXPECT_TRUE(s.tainted.empty());
  for (int i = 0; i < 20; ++i) EXPECT_EQ(OurTaint("n" + std::to_string(i)), "");
  EXPECT_TRUE(server_->Events().empty());
  EXPECT_EQ(server_->CountCalls("PATCH", "/api/v1/nodes"), 0U);
  EXPECT_EQ(v.Memory().boot_ids.size(), 20U);
}

TEST_F(NodeValidatorTest, NewNodeIsTaintedUntilItsSocketAndIbProbesPass) {
  NodeValidator v = Make();
  v.Step({});
  server_->AddNode(FakeNode("new", "boot-x"));
  ValidationStatus s = v.Step({});
  EXPECT_EQ(s.tainted, std::vector<std::string>{"new"});
  EXPECT_EQ(OurTaint("new"), "new-node");
  EXPECT_EQ(EventReasons("new"), std::vector<std::string>{"NcclTriageUnvalidated"});
  // The probes of the sweep that found it ran before the taint: they do not count.
  s = v.Step(Passed("new", true, false));  // socket only: still unvalidated
  EXPECT_EQ(OurTaint("new"), "new-node");
  EXPECT_EQ(s.unvalidated, std::vector<std::string>{"new"});
  s = v.Step(Passed("new", false, true));  // IB in a later sweep: both passed now
  EXPECT_EQ(s.validated, std::vector<std::string>{"new"});
  EXPECT_EQ(OurTaint("new"), "");
  EXPECT_TRUE(s.unvalidated.empty());
  EXPECT_EQ(EventReasons("new"),
            (std::vector<std::string>{"NcclTriageUnvalidated", "NcclTriageValidated"}));
  s = v.Step(Passed("new", true, true));
  EXPECT_TRUE(s.tainted.empty() && s.validated.empty());
}

TEST_F(NodeValidatorTest, RebootedNodeIsTaintedAndFailedProbesKeepTheTaint) {
  NodeValidator v = Make();
  v.Step({});
  Reboot("n3", "boot-b");
  ValidationStatus s = v.Step({});
  EXPECT_EQ(s.tainted, std::vector<std::string>{"n3"});
  EXPECT_EQ(OurTaint("n3"), "rebooted");
  s = v.Step({{"n3", {.socket = false, .ib = false}}});
  EXPECT_EQ(OurTaint("n3"), "rebooted");
  EXPECT_TRUE(s.validated.empty());
}

TEST_F(NodeValidatorTest, TimeoutRemovesTheTaintWithAWarning) {
  NodeValidator v = Make();
  v.Step({});
  Reboot("n1", "boot-b");
  v.Step({});
  ASSERT_EQ(OurTaint("n1"), "rebooted");
  clock_.Advance(std::chrono::milliseconds(29 * kMinute));
  v.Step({});
  ASSERT_EQ(OurTaint("n1"), "rebooted");
  clock_.Advance(std::chrono::milliseconds(1 * kMinute));
  ValidationStatus s = v.Step({});
  EXPECT_EQ(s.timed_out, std::vector<std::string>{"n1"});
  EXPECT_EQ(OurTaint("n1"), "");
  bool warned = false;
  for (const json& e : server_->Events()) {
    if (e["reason"] == "NcclTriageValidationTimedOut") {
      warned = true;
      EXPECT_EQ(e["type"], "Warning");
      EXPECT_NE(e["message"].get<std::string>().find("timed out"), std::string::npos);
    }
  }
  EXPECT_TRUE(warned);
}

TEST_F(NodeValidatorTest, BreakerRefusesTaintsBeyondItsLimit) {
  NodeValidator v = Make(/*max_nodes=*/10, /*max_percent=*/10);  // 10 % of 20: 2 nodes
  v.Step({});
  for (const char* n : {"n1", "n2", "n3", "n4"}) Reboot(n, "boot-b");
  ValidationStatus s = v.Step({});
  EXPECT_EQ(s.tainted, (std::vector<std::string>{"n1", "n2"}));
  EXPECT_EQ(s.refused, (std::vector<std::string>{"n3", "n4"}));
  EXPECT_TRUE(s.breaker_open);
  EXPECT_EQ(OurTaint("n3"), "");
  EXPECT_EQ(EventReasons("n4"), std::vector<std::string>{"NcclTriageValidationSkipped"});
  // Refused once, not tainted later either: the bootID is remembered.
  s = v.Step({});
  EXPECT_TRUE(s.tainted.empty());
  EXPECT_FALSE(s.breaker_open);
}

TEST_F(NodeValidatorTest, OthersTaintsStayAndAConcurrentTaintIsKept) {
  const json ops = {{"key", "ops/maint"}, {"value", "x"}, {"effect", "NoSchedule"}};
  NodeValidator v = Make();
  v.Step({});
  server_->AddNode(FakeNode("new", "boot-x", json::array({ops})));
  // Another writer adds a taint between our read and our patch: 409, re-read, both kept.
  const json other = {{"key", "other/thing"}, {"effect", "NoExecute"}};
  server_->ChangeNodeBeforeNextPatch("new", [&](json& n) { n["spec"]["taints"].push_back(other); });
  v.Step({});
  EXPECT_EQ(OurTaint("new"), "new-node");
  ASSERT_EQ(Taints("new").size(), 3U) << server_->Node("new").dump();
  EXPECT_EQ(Taints("new")[0], ops);
  EXPECT_EQ(Taints("new")[1], other);
  v.Step(Passed("new", true, true));
  EXPECT_EQ(Taints("new"), json::array({ops, other}));
}

TEST_F(NodeValidatorTest, OperatorRemovalIsRespected) {
  NodeValidator v = Make();
  v.Step({});
  Reboot("n5", "boot-b");
  v.Step({});
  ASSERT_EQ(OurTaint("n5"), "rebooted");
  server_->ChangeNode("n5", [](json& n) { n["spec"]["taints"] = json::array(); });
  ValidationStatus s = v.Step({});
  EXPECT_TRUE(s.tainted.empty());
  EXPECT_EQ(OurTaint("n5"), "");
  EXPECT_TRUE(v.Memory().pending.empty());
}

TEST_F(NodeValidatorTest, DryRunOnlyTellsWhatItWouldDo) {
  NodeValidator v = Make(10, 10, /*dry_run=*/true);
  v.Step({});
  Reboot("n2", "boot-b");
  v.Step({});
  EXPECT_EQ(OurTaint("n2"), "");
  EXPECT_EQ(EventReasons("n2"), std::vector<std::string>{"NcclTriageWouldMarkUnvalidated"});
  EXPECT_EQ(server_->CountCalls("PATCH", "/api/v1/nodes"), 0U);
}

TEST_F(NodeValidatorTest, ARestartKeepsTheBootIdsAndThePendingValidation) {
  ValidatorMemory kept;
  {
    NodeValidator v = Make();
    v.Step({});
    Reboot("n7", "boot-b");
    v.Step({});
    ASSERT_EQ(OurTaint("n7"), "rebooted");
    kept = v.Memory();
  }
  // Through the ConfigMap, as the coordinator keeps it.
  CoordinatorState state;
  state.validation = kept;
  const CoordinatorState back = DecodeCoordinatorState(EncodeCoordinatorState(state));
  EXPECT_EQ(back.validation, kept);

  clock_.Advance(std::chrono::milliseconds(20 * kMinute));
  NodeValidator v = Make();
  v.Restore(back.validation);
  ValidationStatus s = v.Step({});
  EXPECT_TRUE(s.tainted.empty());  // nothing is new to the restarted coordinator
  EXPECT_EQ(s.unvalidated, std::vector<std::string>{"n7"});
  // The timeout goes on from before the restart: 20 + 10 minutes.
  clock_.Advance(std::chrono::milliseconds(10 * kMinute));
  s = v.Step({});
  EXPECT_EQ(s.timed_out, std::vector<std::string>{"n7"});
}

TEST_F(NodeValidatorTest, OurTaintWithoutMemoryIsAdoptedAndTimesOut) {
  server_->AddNode(FakeNode("stale", "boot-x",
                            json::array({{{"key", kUnvalidatedTaintKey},
                                          {"value", "rebooted"},
                                          {"effect", "NoSchedule"}}})));
  NodeValidator v = Make();
  ValidationStatus s = v.Step({});
  EXPECT_EQ(s.unvalidated, std::vector<std::string>{"stale"});
  clock_.Advance(std::chrono::milliseconds(30 * kMinute));
  s = v.Step({});
  EXPECT_EQ(s.timed_out, std::vector<std::string>{"stale"});
  EXPECT_EQ(OurTaint("stale"), "");
}

// The coordinator dies between the patch that taints a node and the event that says so: the
// patch left the event in the node's annotation, and the next validator (restored from the kept
// memory, which is kept at the end of a sweep and so knows nothing of that step) posts it once
// and removes the annotation; the same for the release.
TEST_F(NodeValidatorTest, AnEventLostToAKillAfterThePatchIsPostedByTheNextValidator) {
  const std::string key(kPendingValidationEventAnnotation);
  auto pending = [&](const std::string& node) {
    return server_->Node(node)["metadata"].value("annotations", json::object()).contains(key);
  };
  ValidatorMemory kept;
  {
    NodeValidator v = Make();
    v.Step({});
    Reboot("n6", "boot-b");
    kept = v.Memory();
  }
  {
    // The process dies right after the patch: no event, no clean-up.
    testing::StopAfterFirstPatch api(*kube_);
    NodeValidatorOptions o;
    o.policy = {.enabled = true, .timeout_ms = 30 * kMinute, .max_nodes = 10, .max_percent = 10};
    NodeValidator v(api, o, log_, clock_);
    v.Restore(kept);
    v.Step({}, api.stop.get_token());
    EXPECT_EQ(api.patches, 1);
    EXPECT_EQ(api.events, 0);
  }  // killed: what it learnt in this step was never kept
  ASSERT_EQ(OurTaint("n6"), "rebooted");
  ASSERT_TRUE(EventReasons("n6").empty());
  ASSERT_TRUE(pending("n6")) << server_->Node("n6").dump();
  NodeValidator next = Make();
  next.Restore(kept);
  ValidationStatus s = next.Step({});
  EXPECT_TRUE(s.tainted.empty());  // tainted once, by the patch before the kill
  EXPECT_EQ(s.unvalidated, std::vector<std::string>{"n6"});
  EXPECT_EQ(EventReasons("n6"), std::vector<std::string>{"NcclTriageUnvalidated"});
  EXPECT_FALSE(pending("n6"));
  next.Step({});
  EXPECT_EQ(EventReasons("n6"), std::vector<std::string>{"NcclTriageUnvalidated"});  // once

  // The release: killed after the patch that removed the taint.
  kept = next.Memory();
  {
    testing::StopAfterFirstPatch api(*kube_);
    NodeValidatorOptions o;
    o.policy = {.enabled = true, .timeout_ms = 30 * kMinute, .max_nodes = 10, .max_percent = 10};
    NodeValidator v(api, o, log_, clock_);
    v.Restore(kept);
    v.Step(Passed("n6", true, true), api.stop.get_token());
  }
  ASSERT_EQ(OurTaint("n6"), "");
  ASSERT_TRUE(pending("n6"));
  NodeValidator last = Make();
  last.Restore(kept);
  last.Step({});
  EXPECT_EQ(EventReasons("n6"),
            (std::vector<std::string>{"NcclTriageUnvalidated", "NcclTriageValidated"}));
  EXPECT_FALSE(pending("n6"));
}

}  // namespace
}  // namespace nccl_triage
