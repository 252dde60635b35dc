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
#include "support/fake_api_harness.h"
#include "support/fake_api_server.h"
#include "support/fake_clock.h"
#include "support/stop_after_patch.h"
#include "support/text_file.h"

namespace nccl_triage {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::StopAfterFirstPatch;

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
    for (int i = 0; i < 10; ++i) server_->AddNode(FakeNode("n" + std::to_string(i)));
    kube_ = api_.Client();
  }

  Remediator Make(RemediationMode mode, int max_nodes = 3, double max_percent = 50) {
    RemediatorOptions o;
    o.policy = {.mode = mode, .max_nodes = max_nodes, .max_percent = max_percent,
                .healthy_ms = kHour};
    o.pool_label = "pool";
    o.list_page = 4;  // 10 nodes: three pages
    return Remediator(*kube_, o, log_, clock_);
  }

  // One step at `at_ms` of the monotonic clock (which never goes back in these tests).
  RemediationStatus StepAt(Remediator& r, const std::map<std::string, ConfirmedNodeFault>& faults,
                           int64_t at_ms, const std::set<std::string>* watched = nullptr,
                           std::stop_token stop = {}) {
    const auto want = std::chrono::milliseconds(at_ms);
    const auto now = clock_.Now().time_since_epoch();
    if (want > now) clock_.Advance(want - now);
    return r.Step(faults, watched, std::move(stop));
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

  testing::FakeApiHarness api_{"remediator"};
  testing::FakeApiServer* server_ = &api_.server();
  std::unique_ptr<InClusterKubeClient> kube_;
  FakeClock clock_;
  std::ostringstream out_;
  Logger log_{out_};
};

TEST_F(RemediatorTest, TaintsAndCordonsAConfirmedNodeWithTheMarkerAndAWarningEvent) {
  server_->AddNode(FakeNode("x", json::array({{{"key", "ops/maint"}, {"effect", "NoSchedule"}}})));
  Remediator r = Make(RemediationMode::kCordon);
  RemediationStatus s = StepAt(r, Faulty({"x"}), kHour);
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
  StepAt(r, Faulty({"n1", "n2"}), kHour);
  ASSERT_TRUE(HasOurTaint("n1") && HasOurTaint("n2"));
  // An operator adds a taint of their own to n2 just before the release patch: the patch meets
  // 409, is retried on a fresh read, and their taint stays. n1 stays faulty.
  server_->ChangeNodeBeforeNextPatch("n2", [](json& n) {
    n["spec"]["taints"].push_back({{"key", "ops/hold"}, {"effect", "NoSchedule"}});
  });
  RemediationStatus s = StepAt(r, Faulty({"n1"}), 2 * kHour);  // n2 healthy since now
  EXPECT_TRUE(s.actions.empty());
  s = StepAt(r, Faulty({"n1"}), 3 * kHour - 1);
  EXPECT_TRUE(HasOurTaint("n2")) << "released before recover_after";
  s = StepAt(r, Faulty({"n1"}), 3 * kHour);
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
  StepAt(r, Faulty({"n1"}), kHour, &all);
  // Its agent goes away: the coordinator's hold-down forgets the fault, nobody probes the node.
  StepAt(r, {}, 2 * kHour, &without_n1);
  StepAt(r, {}, 4 * kHour, &without_n1);
  EXPECT_TRUE(HasOurTaint("n1")) << "released without being probed healthy";
  StepAt(r, {}, 5 * kHour, &all);  // back: healthy from now on
  EXPECT_TRUE(HasOurTaint("n1"));
  RemediationStatus s = StepAt(r, {}, 6 * kHour, &all);
  EXPECT_FALSE(HasOurTaint("n1"));
  ASSERT_EQ(s.actions.size(), 1U);
  EXPECT_EQ(s.actions[0].kind, RemediationActionKind::kRelease);
}

TEST_F(RemediatorTest, KeepsACordonAnOperatorPlaced) {
  server_->AddNode(FakeNode("c", json::array(), /*unschedulable=*/true));
  Remediator r = Make(RemediationMode::kCordon);
  StepAt(r, Faulty({"c"}), kHour);
  EXPECT_EQ(server_->Node("c")["metadata"]["annotations"][std::string(kRemediatedAnnotation)],
            "taint=ib_resource");  // not ours to undo
  StepAt(r, {}, 2 * kHour);
  StepAt(r, {}, 3 * kHour);
  EXPECT_FALSE(HasOurTaint("c"));
  EXPECT_EQ(server_->Node("c")["spec"]["unschedulable"], true);
}

TEST_F(RemediatorTest, AConflictIsRetriedOnAFreshReadAndTheConcurrentTaintKept) {
  server_->ChangeNodeBeforeNextPatch("n3", [](json& n) {
    n["spec"]["taints"] = json::array({{{"key", "other/x"}, {"effect", "NoExecute"}}});
  });
  Remediator r = Make(RemediationMode::kTaint);
  RemediationStatus s = StepAt(r, Faulty({"n3"}), kHour);
  EXPECT_TRUE(s.errors.empty()) << s.errors.begin()->second;
  ASSERT_EQ(Taints("n3").size(), 2U) << server_->Node("n3").dump();
  EXPECT_EQ(Taints("n3")[0]["key"], "other/x");
  EXPECT_TRUE(HasOurTaint("n3"));
  // The 409, the retry, and the removal of the pending event once it is posted.
  EXPECT_EQ(server_->CountCalls("PATCH", "/api/v1/nodes/n3"), 3U);
  EXPECT_EQ(server_->CountCalls("GET", "/api/v1/nodes/n3"), 1U);
}

// With the node cache (kept by a watch, as the coordinator runs it): a step lists nothing, and a
// cache that is behind (an operator's taint not seen yet) costs a 409 and a fresh read, never
// the operator's taint; our own patch is in the cache before its watch event.
TEST_F(RemediatorTest, WithTheNodeCacheAStepListsNothingAndAStaleCacheMeetsA409) {
  server_->EndWatchesWhenIdle(true);
  NodeCache cache(*kube_, RemediationNodeFields("pool"), log_, clock_);
  cache.RunOnce({});
  RemediatorOptions o;
  o.policy = {.mode = RemediationMode::kTaint, .max_nodes = 3, .max_percent = 50,
              .healthy_ms = kHour};
  o.pool_label = "pool";
  Remediator r(*kube_, o, log_, clock_, &cache);
  const size_t gets = server_->CountCalls("GET", "/api/v1/nodes");
  // Changed after the cache read it, and the cache is not told (no watch runs meanwhile).
  server_->ChangeNode("n3", [](json& n) {
    n["spec"]["taints"] = json::array({{{"key", "other/x"}, {"effect", "NoExecute"}}});
  });
  RemediationStatus s = StepAt(r, Faulty({"n3"}), kHour);
  EXPECT_EQ(s.nodes_seen, 10);
  EXPECT_TRUE(s.errors.empty()) << s.errors.begin()->second;
  ASSERT_EQ(Taints("n3").size(), 2U) << server_->Node("n3").dump();
  EXPECT_EQ(Taints("n3")[0]["key"], "other/x");
  EXPECT_TRUE(HasOurTaint("n3"));
  // No list: one GET of n3 after the 409, and nothing else read.
  EXPECT_EQ(server_->CountCalls("GET", "/api/v1/nodes") - gets, 1U);
  EXPECT_EQ(server_->CountCalls("GET", "/api/v1/nodes/n3"), 1U);
  // The answer of our patch is in the cache already: the next step sees n3 tainted and marked.
  s = StepAt(r, Faulty({"n3"}), kHour + 1);
  EXPECT_TRUE(s.actions.empty());
  EXPECT_EQ(s.remediated, std::vector<std::string>{"n3"});
  EXPECT_TRUE(s.released_by_operator.empty());
  EXPECT_EQ(server_->CountCalls("PATCH", "/api/v1/nodes/n3"), 3U);  // 409, retry, clear event
}

TEST_F(RemediatorTest, WithTheNodeCacheAFailingWatchIsAListErrorNotAStaleAct) {
  auto dead = api_.Client(1);
  NodeCache cache(*dead, RemediationNodeFields("pool"), log_, clock_);
  cache.RunOnce({});
  RemediatorOptions o;
  o.policy = {.mode = RemediationMode::kTaint, .max_nodes = 3, .max_percent = 50,
              .healthy_ms = kHour};
  Remediator r(*kube_, o, log_, clock_, &cache);
  RemediationStatus s = StepAt(r, Faulty({"n3"}), kHour);
  EXPECT_EQ(s.list_error, "list nodes: connection failed");
  EXPECT_TRUE(s.actions.empty());
  EXPECT_FALSE(HasOurTaint("n3"));
}

TEST_F(RemediatorTest, ForbiddenAndServerErrorsAreLoggedOnceCountedAndRetriedNextStep) {
  Remediator r = Make(RemediationMode::kTaint);
  int64_t t = 0;  // each round starts where the last one ended
  for (int status : {403, 500, 503}) {
    SCOPED_TRACE(status);
    server_->FailNodePatches(status, "refused " + std::to_string(status), 2);
    RemediationStatus s = StepAt(r, Faulty({"n4"}), t + kHour);
    ASSERT_EQ(s.errors.count("n4"), 1U);
    EXPECT_NE(s.errors["n4"].find("HTTP " + std::to_string(status)), std::string::npos);
    ASSERT_FALSE(s.outcomes.empty());
    EXPECT_EQ(s.outcomes[0].action, "taint");
    EXPECT_EQ(s.outcomes[0].result, "error");
    EXPECT_TRUE(s.remediated.empty());
    s = StepAt(r, Faulty({"n4"}), t + kHour + 1);
    EXPECT_EQ(s.errors.count("n4"), 1U);
    EXPECT_FALSE(HasOurTaint("n4"));
    s = StepAt(r, Faulty({"n4"}), t + kHour + 2);  // the API works again
    EXPECT_TRUE(s.errors.empty());
    EXPECT_TRUE(HasOurTaint("n4"));
    EXPECT_EQ(s.remediated, std::vector<std::string>{"n4"});
    StepAt(r, {}, t + kHour + 3);
    StepAt(r, {}, t + 3 * kHour);  // released for the next round
    ASSERT_FALSE(HasOurTaint("n4"));
    t += 3 * kHour;
  }
  // Each failure logged once per node (two failing steps each), and its recovery once.
  EXPECT_EQ(LogLines("node n4: taint: HTTP"), 3U) << out_.str();
  EXPECT_EQ(LogLines("node n4: API calls work again"), 3U) << out_.str();
}

TEST_F(RemediatorTest, AFailedNodeListPlansNothing) {
  auto dead = api_.Client(1);  // a client of a port where no API server listens
  ASSERT_TRUE(dead);
  RemediatorOptions o;
  o.policy.mode = RemediationMode::kTaint;
  Remediator d(*dead, o, log_, clock_);
  RemediationStatus s = StepAt(d, Faulty({"n1"}), kHour);
  EXPECT_NE(s.list_error.find("list nodes"), std::string::npos) << s.list_error;
  EXPECT_TRUE(s.actions.empty());
  StepAt(d, Faulty({"n1"}), kHour + 1);
  EXPECT_EQ(LogLines("list nodes"), 1U) << out_.str();
}

TEST_F(RemediatorTest, TheBreakerHoldsBackBeyondMaxNodes) {
  Remediator r = Make(RemediationMode::kTaint, /*max_nodes=*/2, /*max_percent=*/100);
  RemediationStatus s = StepAt(r, Faulty({"n1", "n2", "n3", "n4", "n5"}), kHour);
  EXPECT_TRUE(s.breaker_open);
  EXPECT_EQ(s.remediated, (std::vector<std::string>{"n1", "n2"}));
  EXPECT_EQ(s.held_back, (std::vector<std::string>{"n3", "n4", "n5"}));
  EXPECT_FALSE(HasOurTaint("n3"));
}

TEST_F(RemediatorTest, DryRunPatchesNothingAndAnnouncesOncePerNodeAndClass) {
  Remediator r = Make(RemediationMode::kDryRun);
  RemediationStatus s = StepAt(r, Faulty({"n1", "n2"}), kHour);
  EXPECT_EQ(s.would_taint, (std::vector<std::string>{"n1", "n2"}));
  EXPECT_TRUE(s.remediated.empty());
  EXPECT_EQ(server_->CountCalls("PATCH", "/api/v1/nodes"), 0U);
  ASSERT_EQ(server_->Events().size(), 2U);
  EXPECT_EQ(server_->Events()[0]["type"], "Normal");
  EXPECT_EQ(server_->Events()[0]["reason"], "NcclTriageWouldTaint");
  EXPECT_NE(server_->Events()[0]["message"].get<std::string>().find("Would taint"),
            std::string::npos);
  StepAt(r, Faulty({"n1", "n2"}), kHour + 1);
  EXPECT_EQ(server_->Events().size(), 2U);  // not again
  const json j = ToJson(s);
  EXPECT_EQ(j["mode"], "dry-run");
  EXPECT_EQ(j["applied"], false);
  EXPECT_EQ(j["actions"].size(), 2U);
  EXPECT_EQ(j["actions"][0]["taint"], "nccl-triage.io/fault=ib_resource");
}

TEST_F(RemediatorTest, OffReadsNothing) {
  Remediator r = Make(RemediationMode::kOff);
  RemediationStatus s = StepAt(r, Faulty({"n1"}), kHour);
  EXPECT_TRUE(s.actions.empty());
  EXPECT_TRUE(server_->Calls().empty());
}

TEST_F(RemediatorTest, ATaintAnOperatorRemovedIsNeitherPutBackNorCounted) {
  Remediator r = Make(RemediationMode::kTaint, /*max_nodes=*/1, /*max_percent=*/100);
  StepAt(r, Faulty({"n2"}), kHour);
  ASSERT_TRUE(HasOurTaint("n2"));
  // `kubectl taint node n2 nccl-triage.io/fault-` while the fault stays confirmed.
  NodePatch by_hand;
  by_hand.taints = json::array();
  ASSERT_TRUE(kube_->PatchNode("n2", by_hand).ok());
  RemediationStatus s = StepAt(r, Faulty({"n2", "n5"}), kHour + 1);
  s = StepAt(r, Faulty({"n2", "n5"}), kHour + 2);
  EXPECT_FALSE(HasOurTaint("n2")) << "put back against the operator";
  EXPECT_EQ(s.released_by_operator, std::vector<std::string>{"n2"});
  EXPECT_FALSE(server_->Node("n2")["metadata"].value("annotations", json::object()).contains(
      std::string(kRemediatedAnnotation)));
  // Its breaker slot is free again: n5 is tainted, and only n5 is counted.
  EXPECT_EQ(s.remediated, std::vector<std::string>{"n5"});
  EXPECT_TRUE(HasOurTaint("n5"));
  EXPECT_EQ(ToJson(s)["released_by_operator"], json::array({"n2"}));
  size_t told = 0;
  for (const json& e : server_->Events()) told += e["reason"] == "NcclTriageReleasedByOperator";
  EXPECT_EQ(told, 1U);
  // The fault clears and comes back: a new fault is remediated again (the budget allowing).
  StepAt(r, Faulty({"n5"}), kHour + 3);
  StepAt(r, {}, kHour + 4);
  StepAt(r, {}, 3 * kHour);  // n5 healthy for recover_after: released
  ASSERT_FALSE(HasOurTaint("n5"));
  s = StepAt(r, Faulty({"n2"}), 3 * kHour + 1);
  EXPECT_TRUE(HasOurTaint("n2"));
  EXPECT_TRUE(s.released_by_operator.empty());
}

TEST_F(RemediatorTest, AnOperatorsCordonDuringOurPatchIsNotTakenForOurs) {
  // The operator cordons n3 between our read and our patch: the patch meets 409, and what is
  // patched then is decided on the node as it is now.
  server_->ChangeNodeBeforeNextPatch("n3", [](json& n) { n["spec"]["unschedulable"] = true; });
  Remediator r = Make(RemediationMode::kCordon);
  RemediationStatus s = StepAt(r, Faulty({"n3"}), kHour);
  EXPECT_TRUE(s.errors.empty()) << s.errors.begin()->second;
  EXPECT_EQ(server_->Node("n3")["metadata"]["annotations"][std::string(kRemediatedAnnotation)],
            "taint=ib_resource");
  EXPECT_EQ(server_->Events().back()["reason"], "NcclTriageTainted");
  StepAt(r, {}, 2 * kHour);
  StepAt(r, {}, 3 * kHour);  // released: the operator's cordon stays
  EXPECT_FALSE(HasOurTaint("n3"));
  EXPECT_EQ(server_->Node("n3")["spec"]["unschedulable"], true);
}

TEST_F(RemediatorTest, AWallClockStepDoesNotShortenRecoverAfter) {
  Remediator r = Make(RemediationMode::kTaint);
  StepAt(r, Faulty({"n1"}), kHour);
  StepAt(r, {}, kHour + 1000);  // healthy from now on
  clock_.JumpWall(std::chrono::hours(2));
  RemediationStatus s = StepAt(r, {}, kHour + 2000);
  EXPECT_TRUE(s.actions.empty());
  EXPECT_TRUE(HasOurTaint("n1")) << "released 2 s after it was healthy";
  s = StepAt(r, {}, 2 * kHour + 1000);
  EXPECT_FALSE(HasOurTaint("n1"));
  // The wall clock is what events show.
  EXPECT_EQ(s.at_unix_ms, clock_.NowUnixMs());
}

TEST_F(RemediatorTest, NoApiCallStartsOnceAStopIsRequested) {
  StopAfterFirstPatch api(*kube_);
  RemediatorOptions o;
  o.policy = {.mode = RemediationMode::kCordon, .max_nodes = 3, .max_percent = 50,
              .healthy_ms = kHour};
  Remediator r(api, o, log_, clock_);
  RemediationStatus s = r.Step(Faulty({"n1", "n2", "n3"}), nullptr, api.stop.get_token());
  EXPECT_EQ(s.cut_short, "stop requested");
  EXPECT_TRUE(HasOurTaint("n1"));  // the call in flight
  EXPECT_FALSE(HasOurTaint("n2"));
  EXPECT_FALSE(HasOurTaint("n3"));
  EXPECT_TRUE(server_->Events().empty());
  EXPECT_EQ(server_->CountCalls("PATCH", "/api/v1/nodes"), 1U);
  EXPECT_EQ(s.remediated, std::vector<std::string>{"n1"});
  // What the stop left undone is done by the next step, and n1's event is not lost.
  Remediator next = Make(RemediationMode::kCordon);
  s = StepAt(next, Faulty({"n1", "n2", "n3"}), kHour);
  EXPECT_TRUE(s.cut_short.empty());
  EXPECT_TRUE(HasOurTaint("n2") && HasOurTaint("n3"));
  EXPECT_EQ(server_->Events().size(), 3U);
}

TEST_F(RemediatorTest, AnEventLostToAKillAfterThePatchIsPostedByTheNextCoordinator) {
  {
    // The process dies right after the patch: no event, no clean-up.
    StopAfterFirstPatch api(*kube_);
    RemediatorOptions o;
    o.policy.mode = RemediationMode::kTaint;
    Remediator r(api, o, log_, clock_);
    r.Step(Faulty({"n6"}), nullptr, api.stop.get_token());
  }
  ASSERT_TRUE(HasOurTaint("n6"));
  ASSERT_TRUE(server_->Events().empty());
  ASSERT_TRUE(server_->Node("n6")["metadata"]["annotations"].contains(
      std::string(kPendingEventAnnotation)));
  Remediator restarted = Make(RemediationMode::kTaint);  // knows nothing of n6's fault yet
  RemediationStatus s = StepAt(restarted, {}, kHour + 1);
  ASSERT_EQ(server_->Events().size(), 1U);
  EXPECT_EQ(server_->Events()[0]["reason"], "NcclTriageTainted");
  EXPECT_EQ(server_->Events()[0]["involvedObject"]["name"], "n6");
  EXPECT_NE(server_->Events()[0]["message"].get<std::string>().find("Fix: "), std::string::npos);
  EXPECT_FALSE(server_->Node("n6")["metadata"]["annotations"].contains(
      std::string(kPendingEventAnnotation)));
  StepAt(restarted, {}, kHour + 2);
  EXPECT_EQ(server_->Events().size(), 1U);  // once
  EXPECT_EQ(s.remediated, std::vector<std::string>{"n6"});
}

// A Kubernetes API that answers every node list with a page and a new continue token, and whose
// every call takes `call_cost` of the fake clock.
class EndlessNodeList final : public KubeClient {
 public:
  EndlessNodeList(FakeClock& clock, Clock::Duration call_cost)
      : clock_(clock), call_cost_(call_cost) {}
  KubeResponse ListNodes(const NodeListQuery&) override {
    clock_.Advance(call_cost_);
    ++pages;
    json page = {{"items", json::array({FakeNode("p" + std::to_string(pages))})},
                 {"metadata", {{"continue", "c" + std::to_string(pages)}}}};
    return {200, "", page.dump(), std::nullopt};
  }
  KubeResponse PatchPodAnnotations(const std::string&, const std::string&,
                                   const AnnotationPatch&) override { return {}; }
  KubeResponse PatchNodeCondition(const std::string&, const NodeCondition&) override {
    return {};
  }
  KubeResponse CreateEvent(const KubeEvent&) override { return {}; }
  KubeResponse GetPod(const std::string&, const std::string&) override { return {}; }
  KubeResponse ListPods(const std::string&) override { return {}; }
  KubeResponse GetNode(const std::string&) override { return {}; }
  KubeResponse PatchPodAnnotationsIfUid(const std::string&, const std::string&,
                                        const std::string&, const AnnotationPatch&) override {
    return {};
  }
  int pages = 0;

 private:
  FakeClock& clock_;
  Clock::Duration call_cost_;
};

TEST_F(RemediatorTest, AnEndlessContinueTokenEndsAtThePageBound) {
  EndlessNodeList api(clock_, Clock::Duration::zero());
  RemediatorOptions o;
  o.policy.mode = RemediationMode::kTaint;
  o.list_page = 500;  // 50,000 nodes at most: 101 pages
  Remediator r(api, o, log_, clock_);
  RemediationStatus s = r.Step({});
  EXPECT_EQ(api.pages, 101);
  EXPECT_NE(s.list_error.find("more than 101 pages"), std::string::npos) << s.list_error;
  EXPECT_TRUE(s.actions.empty());
}

TEST_F(RemediatorTest, TheStepDeadlineEndsASlowNodeList) {
  EndlessNodeList api(clock_, std::chrono::seconds(8));  // every call takes 8 s
  RemediatorOptions o;
  o.policy.mode = RemediationMode::kTaint;
  o.step_deadline = std::chrono::seconds(30);
  Remediator r(api, o, log_, clock_);
  RemediationStatus s = r.Step({});
  EXPECT_EQ(api.pages, 4);  // started at 0, 8, 16 and 24 s; none at 32 s
  EXPECT_NE(s.list_error.find("deadline"), std::string::npos) << s.list_error;
}

TEST(RemediationMarker, SaysWhatWasPlaced) {
  EXPECT_EQ(RemediationMarker("ib_resource", true), "taint=ib_resource,cordon");
  EXPECT_TRUE(MarkerSaysCordoned("taint=ib_resource,cordon"));
  EXPECT_FALSE(MarkerSaysCordoned("taint=ib_resource"));
  EXPECT_FALSE(MarkerSaysCordoned("taint=x,cordoned"));
}

}  // namespace
}  // namespace nccl_triage
