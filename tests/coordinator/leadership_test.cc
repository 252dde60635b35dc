// The coordinator's part in the leader election on its own, against the fake API server's Lease:
// without an election the replica always leads and nothing is fenced; with one, it leads once
// the election thread said so and while the elector agrees, its writes go through the fence, and
// /status's block names the Lease and the label.
#include "coordinator/leadership.h"

#include <gtest/gtest.h>

#include <atomic>
#include <sstream>
#include <thread>

#include "base/clock.h"
#include "base/log.h"
#include "kube/kube_client.h"
#include "support/fake_api_harness.h"
#include "support/fake_api_server.h"

namespace nccl_triage {
namespace {

using namespace std::chrono_literals;

bool WaitFor(const std::function<bool()>& fact) {
  for (int i = 0; i < 600; ++i) {  // 60 s: a loaded machine
    if (fact()) return true;
    std::this_thread::sleep_for(100ms);
  }
  return false;
}

TEST(Leadership, WithoutAnElectionThisReplicaAlwaysLeadsAndNothingIsFenced) {
  Leadership leadership(nullptr, nullptr);
  EXPECT_FALSE(leadership.elects());
  EXPECT_TRUE(leadership.Leading());
  leadership.Set(false);
  EXPECT_TRUE(leadership.Leading());
  testing::FakeApiHarness api("leadership-none");
  std::shared_ptr<KubeClient> kube = api.Client();
  EXPECT_EQ(leadership.Fence(kube), kube);
  EXPECT_EQ(leadership.unfenced(), nullptr);
  EXPECT_EQ(leadership.LeaseRef(), "");
  EXPECT_FALSE(leadership.View().has_value());
  bool called = false;
  leadership.Start([&](bool) { called = true; });
  leadership.StopLabel();
  leadership.StopElection();
  EXPECT_FALSE(called);
}

TEST(Leadership, LeadsOnceToldAndWhileTheElectorAgrees) {
  testing::FakeApiHarness api("leadership-elected");
  std::unique_ptr<InClusterKubeClient> election_kube = api.Client();
  std::unique_ptr<InClusterKubeClient> label_kube = api.Client();
  std::shared_ptr<KubeClient> kube = api.Client();
  std::ostringstream out;
  Logger log(out);
  SystemClock clock;
  LeaderElectionOptions e{.lease_namespace = "kt",
                          .lease_name = "nccl-triage-coordinator",
                          .identity = "coord-me",
                          .lease_duration = 3600s,
                          .renew_deadline = 3000s,
                          .retry_period = 50ms};
  auto elector = std::make_shared<LeaderElector>(*election_kube, e, log, clock);
  auto label = std::make_shared<LeaderPodLabel>(
      *label_kube,
      LeaderLabelOptions{.pod_namespace = "kt",
                         .pod_name = "coord-me",
                         .pod_selector = "app.kubernetes.io/component=coordinator",
                         .retry = 50ms},
      [elector] { return elector->IsLeader(); }, log, clock);

  Leadership leadership(elector, label);
  EXPECT_TRUE(leadership.elects());
  std::shared_ptr<KubeClient> fenced = leadership.Fence(kube);
  EXPECT_NE(fenced, kube);
  EXPECT_EQ(leadership.unfenced(), kube.get());
  EXPECT_EQ(leadership.LeaseRef(), "kt/nccl-triage-coordinator");
  EXPECT_FALSE(leadership.Leading());

  std::atomic<int> changes{0};
  leadership.Start([&](bool leading) {
    leadership.Set(leading);
    ++changes;
  });
  ASSERT_TRUE(WaitFor([&] { return leadership.Leading(); }));
  std::optional<CoordinatorView::Leadership> view = leadership.View();
  ASSERT_TRUE(view.has_value());
  EXPECT_TRUE(view->leader);
  EXPECT_EQ(view->holder, "coord-me");
  EXPECT_EQ(view->lease, "kt/nccl-triage-coordinator");
  EXPECT_EQ(view->pod_label, std::string(kLeaderLabelKey) + "=" + kLeaderLabelValue);

  // The election ends and gives the Lease up; even told it leads, the replica does not lead
  // once the elector says otherwise.
  leadership.StopLabel();
  leadership.StopElection();
  EXPECT_GE(changes.load(), 1);
  EXPECT_FALSE(elector->IsLeader());
  leadership.Set(true);
  EXPECT_FALSE(leadership.Leading());
}

}  // namespace
}  // namespace nccl_triage
