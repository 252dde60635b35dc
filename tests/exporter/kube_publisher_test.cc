#include "exporter/kube_publisher.h"

#include <gtest/gtest.h>

#include <sstream>
#include <thread>

#include "support/fake_clock.h"
#include "support/fake_kube_client.h"
#include "test_state.h"

namespace nccl_triage {
namespace {

using namespace std::chrono_literals;
using testing::FillCycle;
using testing::TestFinding;
using testing::TestSnapshot;

KubeResponse Http(int status, std::optional<std::chrono::seconds> retry_after = std::nullopt) {
  return KubeResponse{status, "", R"({"kind":"Status","reason":"X","message":"m"})", retry_after};
}

class PublisherTest : public ::testing::Test {
 protected:
  PublisherTest() {
    options_.node = "gpu-node-1";
    options_.pod_namespace = "nccl-triage";
    options_.pod_name = "agent-abcde";
    options_.node_condition = true;
    options_.events = true;
    options_.jitter_seed = 42;
  }
  void Cycle(std::vector<Finding> findings) {
    t_ms_ += 60000;
    FillCycle(state_, TestSnapshot(1), std::move(findings), t_ms_);
  }
  std::vector<Finding> Bad() {
    return {TestFinding("ib.port_state", FaultClass::kIbResource, CheckStatus::kFail)};
  }
  std::vector<Finding> Good() {
    return {TestFinding("ib.port_state", FaultClass::kIbResource, CheckStatus::kPass)};
  }

  int64_t t_ms_ = 0;
  FakeClock clock_;
  std::ostringstream log_text_;
  Logger log_{log_text_};
  FakeKubeClient kube_;
  AgentState state_{"gpu-node-1", "v", 0};
  KubePublisherOptions options_;
};

TEST_F(PublisherTest, PatchesAnnotationsConditionAndEventOnceAndOnlyOnChange) {
  KubePublisher pub(kube_, options_, clock_, log_);
  pub.OnState(state_.View());  // not ready: nothing to publish
  EXPECT_FALSE(pub.RunDue());
  Cycle(Bad());
  pub.OnState(state_.View());
  pub.RunDue();
  auto ann = kube_.Annotations("nccl-triage", "agent-abcde");
  EXPECT_EQ(ann["nccl-triage.io/verdict"], "ib_resource");
  EXPECT_EQ(ann["nccl-triage.io/causes"], "ib.port_state");
  EXPECT_EQ(ann["nccl-triage.io/basis"], "checks");
  EXPECT_EQ(ann["nccl-triage.io/updated"], FormatRfc3339(clock_.NowUnixMs()));
  EXPECT_FALSE(ann["nccl-triage.io/report"].empty());
  EXPECT_EQ(kube_.Conditions().at("gpu-node-1").status, "False");
  ASSERT_EQ(kube_.Events().size(), 1u);
  EXPECT_EQ(kube_.Events()[0].type, "Warning");
  EXPECT_EQ(kube_.Events()[0].reason, "NcclFabricIbResource");

  // Same verdict next cycle (time moved): no call at all.
  clock_.Advance(60s);
  Cycle(Bad());
  pub.OnState(state_.View());
  pub.RunDue();
  EXPECT_EQ(kube_.CallCount("PatchPodAnnotations"), 1u);
  EXPECT_EQ(kube_.CallCount("PatchNodeCondition"), 1u);
  EXPECT_EQ(kube_.CallCount("CreateEvent"), 1u);

  // Healthy again: one patch each, a Normal event, and the condition's transition time moves.
  clock_.Advance(60s);
  Cycle(Good());
  pub.OnState(state_.View());
  pub.RunDue();
  EXPECT_EQ(kube_.Annotations("nccl-triage", "agent-abcde")["nccl-triage.io/verdict"], "healthy");
  EXPECT_EQ(kube_.Annotations("nccl-triage", "agent-abcde")["nccl-triage.io/causes"], "");
  NodeCondition c = kube_.Conditions().at("gpu-node-1");
  EXPECT_EQ(c.status, "True");
  EXPECT_EQ(c.reason, "Healthy");
  EXPECT_EQ(c.last_transition_unix_ms, clock_.NowUnixMs());
  ASSERT_EQ(kube_.Events().size(), 2u);
  EXPECT_EQ(kube_.Events()[1].type, "Normal");
  EXPECT_NE(kube_.Events()[1].message.find("was ib_resource"), std::string::npos);
}

TEST_F(PublisherTest, AHealthyStartSendsNoEvent) {
  KubePublisher pub(kube_, options_, clock_, log_);
  Cycle(Good());
  pub.OnState(state_.View());
  pub.RunDue();
  EXPECT_EQ(kube_.CallCount("CreateEvent"), 0u);
}

TEST_F(PublisherTest, ConditionHeartbeatIsResentWithoutAChange) {
  options_.heartbeat = 5min;
  KubePublisher pub(kube_, options_, clock_, log_);
  Cycle(Good());
  pub.OnState(state_.View());
  auto next = pub.RunDue();
  ASSERT_TRUE(next);
  EXPECT_EQ(*next - clock_.Now(), Clock::Duration(5min));
  clock_.Advance(5min);
  pub.RunDue();
  ASSERT_EQ(kube_.CallCount("PatchNodeCondition"), 2u);
  NodeCondition c = kube_.Conditions().at("gpu-node-1");
  EXPECT_EQ(c.last_heartbeat_unix_ms, clock_.NowUnixMs());
  EXPECT_LT(c.last_transition_unix_ms, c.last_heartbeat_unix_ms);
  EXPECT_EQ(kube_.CallCount("PatchPodAnnotations"), 1u);
}

TEST_F(PublisherTest, RetriesServerErrorsWithGrowingJitteredBackoff) {
  options_.node_condition = false;
  options_.events = false;
  for (int i = 0; i < 4; ++i) kube_.PushResponse(Http(500));
  KubePublisher pub(kube_, options_, clock_, log_);
  Cycle(Bad());
  pub.OnState(state_.View());
  std::vector<Clock::Duration> waits;
  for (int i = 0; i < 10; ++i) {
    auto next = pub.RunDue();
    if (!next) break;
    waits.push_back(*next - clock_.Now());
    clock_.Advance(*next - clock_.Now());
  }
  EXPECT_EQ(kube_.CallCount("PatchPodAnnotations"), 5u);
  ASSERT_EQ(waits.size(), 4u);
  for (size_t i = 0; i < waits.size(); ++i) {
    double base = 500.0 * (1 << i);  // ms
    double ms = std::chrono::duration<double, std::milli>(waits[i]).count();
    EXPECT_GE(ms, base * 0.5 - 1) << i;
    EXPECT_LE(ms, base + 1) << i;
  }
  EXPECT_EQ(kube_.Annotations("nccl-triage", "agent-abcde")["nccl-triage.io/verdict"],
            "ib_resource");
  // One warning for the streak, one line when it recovered.
  std::string text = log_text_.str();
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 2) << text;
  EXPECT_NE(text.find("HTTP 500"), std::string::npos);
  EXPECT_NE(text.find("succeeded again"), std::string::npos);
}

TEST_F(PublisherTest, TooManyRequestsWaitsAtLeastRetryAfter) {
  options_.node_condition = false;
  options_.events = false;
  kube_.PushResponse(Http(429, 30s));
  KubePublisher pub(kube_, options_, clock_, log_);
  Cycle(Bad());
  pub.OnState(state_.View());
  auto next = pub.RunDue();
  ASSERT_TRUE(next);
  EXPECT_EQ(*next - clock_.Now(), Clock::Duration(30s));
  clock_.Advance(29s);
  pub.RunDue();
  EXPECT_EQ(kube_.CallCount("PatchPodAnnotations"), 1u);
  clock_.Advance(1s);
  pub.RunDue();
  EXPECT_EQ(kube_.CallCount("PatchPodAnnotations"), 2u);
}

TEST_F(PublisherTest, ForbiddenGivesUpWithOneLogLineAndTriesAgainLater) {
  options_.node_condition = false;
  options_.events = false;
  kube_.SetDefaultResponse(Http(403));
  KubePublisher pub(kube_, options_, clock_, log_);
  Cycle(Bad());
  pub.OnState(state_.View());
  auto next = pub.RunDue();
  EXPECT_EQ(kube_.CallCount("PatchPodAnnotations"), 1u);  // no fast retries
  ASSERT_TRUE(next);
  EXPECT_EQ(*next - clock_.Now(), Clock::Duration(options_.max_backoff));
  for (int i = 0; i < 3; ++i) {
    clock_.Advance(options_.max_backoff);
    Cycle(Bad());
    pub.OnState(state_.View());
    pub.RunDue();
  }
  EXPECT_EQ(kube_.CallCount("PatchPodAnnotations"), 4u);
  std::string text = log_text_.str();
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1) << text;
  EXPECT_NE(text.find("RBAC"), std::string::npos);
  // Once RBAC is fixed, the next attempt lands.
  kube_.SetDefaultResponse(Http(200));
  clock_.Advance(options_.max_backoff);
  pub.RunDue();
  EXPECT_EQ(kube_.Annotations("nccl-triage", "agent-abcde")["nccl-triage.io/verdict"],
            "ib_resource");
}

TEST_F(PublisherTest, TheNewestStateReplacesOneWaitingForRetry) {
  options_.node_condition = false;
  options_.events = false;
  kube_.PushResponse(Http(503));
  KubePublisher pub(kube_, options_, clock_, log_);
  Cycle(Bad());
  pub.OnState(state_.View());
  auto next = pub.RunDue();
  Cycle(Good());
  pub.OnState(state_.View());
  clock_.Advance(*next - clock_.Now());
  pub.RunDue();
  EXPECT_EQ(kube_.CallCount("PatchPodAnnotations"), 2u);
  EXPECT_EQ(kube_.Annotations("nccl-triage", "agent-abcde")["nccl-triage.io/verdict"], "healthy");
}

TEST_F(PublisherTest, OnStateNeverWaitsForASlowApiServer) {
  options_.node_condition = false;
  options_.events = false;
  kube_.SetLatency(300ms);
  SystemClock real;
  KubePublisher pub(kube_, options_, real, log_);
  pub.Start();
  Cycle(Bad());
  pub.OnState(state_.View());
  std::this_thread::sleep_for(20ms);  // the worker is now inside the slow call
  auto start = std::chrono::steady_clock::now();
  Cycle(Good());
  pub.OnState(state_.View());
  EXPECT_LT(std::chrono::steady_clock::now() - start, 50ms);
  for (int i = 0;
       i < 300 &&
       kube_.Annotations("nccl-triage", "agent-abcde")["nccl-triage.io/verdict"] != "healthy";
       ++i) {
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(kube_.Annotations("nccl-triage", "agent-abcde")["nccl-triage.io/verdict"], "healthy");
  pub.Stop();
}

TEST_F(PublisherTest, EventQueueIsBoundedAndAConflictCountsAsDelivered) {
  options_.annotate_pod = false;
  options_.node_condition = false;
  options_.max_queued_events = 2;
  KubePublisher pub(kube_, options_, clock_, log_);
  for (int i = 0; i < 5; ++i) {
    Cycle(i % 2 ? Good() : Bad());
    pub.OnState(state_.View());
  }
  kube_.PushResponse(Http(409));
  pub.RunDue();
  EXPECT_EQ(kube_.CallCount("CreateEvent"), 2u);
  EXPECT_EQ(pub.stats().events_dropped, 3u);
  EXPECT_EQ(kube_.Events().size(), 1u);  // the 409 one was not stored by the fake
}

TEST_F(PublisherTest, WithoutPodIdentityNoAnnotationIsAttempted) {
  options_.pod_name.clear();
  options_.node_condition = false;
  options_.events = false;
  KubePublisher pub(kube_, options_, clock_, log_);
  Cycle(Bad());
  pub.OnState(state_.View());
  EXPECT_FALSE(pub.RunDue());
  EXPECT_EQ(kube_.Calls().size(), 0u);
}

}  // namespace
}  // namespace nccl_triage
