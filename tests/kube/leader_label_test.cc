// The leader's pod label (kube/leader_label.h) with the real client against the fake API server,
// on a fake clock, with the fence a plain flag: a starting replica takes the label off its pod, a
// leader puts it on its own and clears a former leader's (never another release's), nothing but
// its own removal is sent when the fence says no, a loss takes it off, stale labels are found
// again at the resync, and a failed call is tried again at the next sync.
#include "kube/leader_label.h"

#include <gtest/gtest.h>

#include <atomic>
#include <sstream>

#include "base/log.h"
#include "support/fake_api_harness.h"
#include "support/fake_clock.h"

namespace nccl_triage {
namespace {

using nlohmann::json;
using std::chrono::seconds;

constexpr const char* kRelease =
    "app.kubernetes.io/instance=kt,app.kubernetes.io/component=coordinator";

json Pod(const std::string& name, const std::string& instance, bool labelled) {
  json labels = {{"app.kubernetes.io/instance", instance},
                 {"app.kubernetes.io/component", "coordinator"},
                 {"pod-template-hash", "5d8f"}};
  if (labelled) labels[kLeaderLabelKey] = kLeaderLabelValue;
  return {{"metadata", {{"name", name}, {"namespace", "kt"}, {"labels", labels}}},
          {"spec", {{"nodeName", "cpu-1"}}}};
}

class LeaderLabel : public ::testing::Test {
 protected:
  LeaderLabel() : log_(log_text_, LogLevel::kDebug) {
    client_ = api_.Client();
    LeaderLabelOptions o;
    o.pod_namespace = "kt";
    o.pod_name = "coord-a";
    o.pod_selector = kRelease;
    o.resync = seconds(30);
    label_ = std::make_unique<LeaderPodLabel>(
        *client_, o, [this] { return leading_.load(); }, log_, clock_);
  }
  ~LeaderLabel() override {
    label_.reset();
    client_.reset();  // closes the kept-alive connection: the server stops at once
  }
  bool Labelled(const std::string& pod) const {
    const auto labels = server_->Labels("kt", pod);
    auto it = labels.find(kLeaderLabelKey);
    return it != labels.end() && it->second == kLeaderLabelValue;
  }
  size_t Patches() const { return server_->CountCalls("PATCH", "/pods/"); }
  size_t Lists() const { return server_->CountCalls("GET", "/namespaces/kt/pods"); }

  testing::FakeApiHarness api_{"leader_label"};
  testing::FakeApiServer* server_ = &api_.server();
  std::ostringstream log_text_;
  Logger log_;
  FakeClock clock_;
  std::atomic<bool> leading_{false};
  std::unique_ptr<InClusterKubeClient> client_;
  std::unique_ptr<LeaderPodLabel> label_;
};

TEST_F(LeaderLabel, AStartingReplicaTakesTheLabelOffItsPod) {
  server_->AddPod(Pod("coord-a", "kt", true));  // its former container led
  label_->Sync();
  EXPECT_FALSE(Labelled("coord-a"));
  EXPECT_FALSE(label_->Snapshot().labelled);
  // The other labels stay: only the leader label is the replica's to remove.
  EXPECT_EQ(server_->Labels("kt", "coord-a").at("pod-template-hash"), "5d8f");
  const size_t patches = Patches();
  label_->Sync();  // known clear: nothing more to send
  EXPECT_EQ(Patches(), patches);
}

TEST_F(LeaderLabel, ALeaderLabelsItsPodThenClearsTheFormerLeadersButNotAnotherReleases) {
  server_->AddPod(Pod("coord-a", "kt", false));
  server_->AddPod(Pod("coord-b", "kt", true));       // killed with SIGKILL while it led
  server_->AddPod(Pod("coord-x", "other", true));    // the leader of another release
  leading_ = true;
  label_->Sync();
  EXPECT_TRUE(Labelled("coord-a"));
  EXPECT_FALSE(Labelled("coord-b"));
  EXPECT_TRUE(Labelled("coord-x"));
  EXPECT_TRUE(label_->Snapshot().labelled);
  EXPECT_EQ(label_->Snapshot().last_error, "");
  // Its own label first: the Service never goes without the leader while the old one is cleared.
  std::vector<std::string> patched;
  for (const auto& call : server_->Calls()) {
    if (call.method == "PATCH") patched.push_back(call.path.substr(call.path.rfind('/') + 1));
  }
  EXPECT_EQ(patched, (std::vector<std::string>{"coord-a", "coord-b"}));
  // The list asked only for the release's labelled coordinators.
  bool listed = false;
  for (const auto& call : server_->Calls()) {
    if (call.method == "GET" && call.path == "/api/v1/namespaces/kt/pods") {
      listed = true;
      EXPECT_NE(call.query.find("coordinator-role"), std::string::npos) << call.query;
      EXPECT_NE(call.query.find("instance"), std::string::npos) << call.query;
    }
  }
  EXPECT_TRUE(listed);
  EXPECT_NE(log_text_.str().find("removed the leader label from coord-b"), std::string::npos)
      << log_text_.str();
}

TEST_F(LeaderLabel, WithoutTheLeaseNothingButItsOwnRemovalIsSent) {
  server_->AddPod(Pod("coord-a", "kt", false));
  server_->AddPod(Pod("coord-b", "kt", true));  // the leader
  label_->Sync();
  label_->Sync();
  EXPECT_FALSE(Labelled("coord-a"));
  EXPECT_TRUE(Labelled("coord-b"));
  EXPECT_EQ(Patches(), 1U);  // the removal from its own pod, at start
  EXPECT_EQ(Lists(), 0U);
}

TEST_F(LeaderLabel, TheFenceIsAskedBeforeEachWriteToAnotherPod) {
  server_->AddPod(Pod("coord-a", "kt", false));
  server_->AddPod(Pod("coord-b", "kt", true));
  server_->AddPod(Pod("coord-c", "kt", true));
  // The Lease is lost after the own label and the list: no other pod is touched, and the next
  // sync takes the label off this pod again.
  int asked = 0;
  LeaderLabelOptions o = label_->options();
  LeaderPodLabel label(*client_, o, [&] { return ++asked <= 2; }, log_, clock_);
  label.Sync();
  EXPECT_TRUE(Labelled("coord-a"));
  EXPECT_TRUE(Labelled("coord-b"));
  EXPECT_TRUE(Labelled("coord-c"));
  label.Sync();
  EXPECT_FALSE(Labelled("coord-a"));
  EXPECT_TRUE(Labelled("coord-b"));
}

TEST_F(LeaderLabel, ALeaderThatLosesTheLeaseTakesItsLabelOff) {
  server_->AddPod(Pod("coord-a", "kt", false));
  leading_ = true;
  label_->Sync();
  ASSERT_TRUE(Labelled("coord-a"));
  leading_ = false;
  label_->Sync();
  EXPECT_FALSE(Labelled("coord-a"));
  EXPECT_FALSE(label_->Snapshot().labelled);
  // ClearOwn (shutdown) again is harmless, and so is a pod that is gone.
  EXPECT_TRUE(label_->ClearOwn());
  LeaderLabelOptions o = label_->options();
  o.pod_name = "coord-gone";
  LeaderPodLabel gone(*client_, o, [] { return false; }, log_, clock_);
  EXPECT_TRUE(gone.ClearOwn());
}

TEST_F(LeaderLabel, StaleLabelsAreFoundAgainAtTheResync) {
  server_->AddPod(Pod("coord-a", "kt", false));
  server_->AddPod(Pod("coord-b", "kt", false));
  leading_ = true;
  label_->Sync();
  ASSERT_EQ(Lists(), 1U);
  // coord-b's late patch (sent while it still led) lands after our clearing.
  server_->AddPod(Pod("coord-c", "kt", true));
  label_->Sync();
  EXPECT_EQ(Lists(), 1U) << "a steady leader lists only every resync";
  EXPECT_TRUE(Labelled("coord-c"));
  clock_.Advance(seconds(31));
  label_->Sync();
  EXPECT_EQ(Lists(), 2U);
  EXPECT_FALSE(Labelled("coord-c"));
  EXPECT_TRUE(Labelled("coord-a"));
}

TEST_F(LeaderLabel, ALabelTakenOffTheLeadersPodIsPutBackAtTheResync) {
  server_->AddPod(Pod("coord-a", "kt", false));
  leading_ = true;
  label_->Sync();
  ASSERT_TRUE(Labelled("coord-a"));
  {
    // Someone (kubectl label pod coord-a nccl-triage.io/coordinator-role-) removes it.
    LeaderLabelOptions o = label_->options();
    LeaderPodLabel other(*client_, o, [] { return false; }, log_, clock_);
    other.ClearOwn();
  }
  ASSERT_FALSE(Labelled("coord-a"));
  clock_.Advance(seconds(31));
  label_->Sync();
  EXPECT_TRUE(Labelled("coord-a"));
}

TEST_F(LeaderLabel, AFailedCallIsLoggedOnceAndTriedAgainAtTheNextSync) {
  server_->AddPod(Pod("coord-a", "kt", false));
  server_->AddPod(Pod("coord-b", "kt", true));
  leading_ = true;
  server_->FailPodPatches(403, "pods \"coord-a\" is forbidden", 2);
  label_->Sync();
  EXPECT_FALSE(Labelled("coord-a"));
  EXPECT_NE(label_->Snapshot().last_error.find("cannot label this pod kt/coord-a: HTTP 403"),
            std::string::npos)
      << label_->Snapshot().last_error;
  EXPECT_EQ(Lists(), 0U) << "the others wait until its own label is on";
  label_->Sync();
  label_->Sync();
  EXPECT_TRUE(Labelled("coord-a"));
  EXPECT_FALSE(Labelled("coord-b"));
  EXPECT_EQ(label_->Snapshot().last_error, "");
  const std::string log = log_text_.str();
  size_t warned = 0;
  for (size_t at = log.find("cannot label this pod"); at != std::string::npos;
       at = log.find("cannot label this pod", at + 1)) {
    ++warned;
  }
  EXPECT_EQ(warned, 1U) << log;
}

TEST(LeaderLabelOptionsCheck, NeedsANamespaceAPodAndASelector) {
  LeaderLabelOptions o{.pod_namespace = "kt", .pod_name = "coord-a", .pod_selector = kRelease};
  EXPECT_TRUE(ValidateLeaderLabel(o).ok());
  for (std::string LeaderLabelOptions::*field :
       {&LeaderLabelOptions::pod_namespace, &LeaderLabelOptions::pod_name,
        &LeaderLabelOptions::pod_selector}) {
    LeaderLabelOptions missing = o;
    missing.*field = "";
    EXPECT_FALSE(ValidateLeaderLabel(missing).ok());
  }
}

}  // namespace
}  // namespace nccl_triage
