// The coordinator's state across a restart against a real kube-apiserver (tests/k8s/cluster.sh),
// with the coordinator ServiceAccount's token and the RBAC the chart gives it (kube_prepare.sh,
// values-kube.yaml: remediation in cordon mode, so the Role on the ConfigMap kt-nccl-triage-state
// of the release namespace). The nodes are the remediation test's pool (it holds the same lock).
//
// A coordinator confirms a fault on one node and taints it, taints another whose fault then
// clears, and is destroyed without any cleanup, together with everything it and the agents had
// in memory. A new coordinator, on a monotonic clock of its own, reads the ConfigMap alone: the
// fault is still confirmed, its taint stays (no second taint, no second event), the other node's
// release clock goes on from where it was (released 40 minutes later, not an hour), and in
// dry-run no announcement is told twice. Only that one ConfigMap name may be read or written.
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "base/log.h"
#include "coordinator/remediator.h"
#include "coordinator/state_store.h"
#include "kube/kube_client.h"
#include "planner/cluster_verdicts.h"
#include "real_api.h"
#include "remediation_pool.h"
#include "support/fake_clock.h"

namespace nccl_triage {
namespace {

using nlohmann::json;
using real_api::Admin;
using real_api::ApiPort;
using real_api::As;
using real_api::Work;

constexpr int kNodes = testing::kPoolNodes;
constexpr int64_t kHour = 3'600'000;
constexpr int64_t kMinute = 60'000;
constexpr int64_t kStartUnixMs = 1'700'000'000'000;
using testing::kPoolLabel;
constexpr const char* kNs = "kt";
constexpr const char* kName = "kt-nccl-triage-state";

std::string NodeName(int i) { return testing::PoolNodeName(i); }

TrackedFault Confirmed(const std::string& node) {
  TrackedFault t;
  t.fault = {FaultKind::kNode, {node}, FaultClass::kIbResource, {"ib.port_state"}, "port down"};
  t.seen = 2;
  t.confirmed = true;
  return t;
}

// What the coordinator composes from its parts (remediation_stage.h, state_sync.cc), no gRPC.
struct Coordinator {
  Coordinator(KubeClient& kube, RemediationMode mode, Logger& log, int64_t start_unix_ms)
      : clock(start_unix_ms), store(kube, kNs, kName, log), verdicts(2) {
    RemediatorOptions o;
    o.policy = {.mode = mode, .max_nodes = 10, .max_percent = 10, .healthy_ms = kHour};
    o.pool_label = kPoolLabel;
    o.list_page = 25;
    remediator = std::make_unique<Remediator>(kube, o, log, clock);
  }
  // Reads the kept state before the first sweep (SyncStateLocked).
  bool Resume() {
    CoordinatorState kept;
    if (!store.Load(&kept)) return false;
    remediator->Restore(kept.remediation);
    verdicts.Restore(kept.faults);
    return true;
  }
  // One sweep's end at `at_ms` of its own monotonic clock: remediation, then the state written.
  RemediationStatus SweepAt(int64_t at_ms, std::vector<TrackedFault> seen = {}) {
    const auto want = std::chrono::milliseconds(at_ms);
    const auto now = clock.Now().time_since_epoch();
    if (want > now) clock.Advance(want - now);
    verdicts.Restore(seen);
    std::map<std::string, ConfirmedNodeFault> confirmed;
    for (const TrackedFault& t : verdicts.hold_down().Confirmed()) {
      confirmed[t.fault.nodes[0]] = {t.fault.fault_class, t.fault.causes};
    }
    RemediationStatus s = remediator->Step(confirmed);
    CoordinatorState state;
    state.faults = verdicts.hold_down().All();
    state.remediation = remediator->Memory();
    EXPECT_TRUE(store.Save(state));
    return s;
  }
  FakeClock clock;
  StateStore store;
  ClusterVerdicts verdicts;
  std::unique_ptr<Remediator> remediator;
};

class StateRealApi : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_GT(ApiPort(), 0) << "no cluster in " << Work() << " (ctest fixture k8s_cluster)";
    coordinator_ = As("coordinator");
    agent_ = As("agent-1");
    admin_ = Admin();
    ASSERT_TRUE(coordinator_ && agent_ && admin_);
    ASSERT_TRUE(testing::ResetPool(*admin_));
    // What an earlier run kept is emptied, as the coordinator's account may (no delete).
    StateStore store(*coordinator_, kNs, kName, log_);
    CoordinatorState none;
    ASSERT_TRUE(store.Load(&none)) << out_.str();
    ASSERT_TRUE(store.Save(CoordinatorState{})) << out_.str();
  }

  bool Tainted(int i) {
    KubeResponse r = admin_->GetNode(NodeName(i));
    EXPECT_TRUE(r.ok()) << r.Describe();
    const json node = json::parse(r.body, nullptr, false);
    for (const json& t : node["spec"].value("taints", json::array())) {
      if (t.value("key", "") == kFaultTaintKey) return true;
    }
    return false;
  }
  // Events a step posted (each is an API call of its own, counted in its outcomes).
  static size_t EventsPosted(const RemediationStatus& s) {
    size_t n = 0;
    for (const RemediationOutcome& o : s.outcomes) n += o.action == "event";
    return n;
  }
  static size_t Actions(const RemediationStatus& s, const std::string& action) {
    size_t n = 0;
    for (const RemediationOutcome& o : s.outcomes) n += o.action == action;
    return n;
  }

  std::unique_ptr<InClusterKubeClient> coordinator_, agent_, admin_;
  std::ostringstream out_;
  Logger log_{out_};
};

TEST_F(StateRealApi, ARestartKeepsTheFaultItsTaintAndTheReleaseClock) {
  {
    Coordinator first(*coordinator_, RemediationMode::kCordon, log_, kStartUnixMs);
    ASSERT_TRUE(first.Resume()) << out_.str();
    // Hold-down confirmed faults on nodes 3 and 4: both tainted and cordoned.
    RemediationStatus s = first.SweepAt(kHour, {Confirmed(NodeName(3)), Confirmed(NodeName(4))});
    ASSERT_EQ(s.remediated, (std::vector<std::string>{NodeName(3), NodeName(4)})) << out_.str();
    // Node 4's fault clears (two sweeps that tested it and did not see it): healthy from 2 h.
    SweepResult clean;
    clean.tested_nodes = {NodeName(4)};
    first.verdicts.Apply(clean, {});
    first.verdicts.Apply(clean, {});
    ASSERT_EQ(first.verdicts.hold_down().Confirmed().size(), 1U);
    first.SweepAt(2 * kHour);
    first.SweepAt(2 * kHour + 20 * kMinute);
  }  // killed: nothing undone, every memory gone (the agents' too: nothing is resumed from them)
  ASSERT_TRUE(Tainted(3) && Tainted(4));

  // A new coordinator 10 minutes later, on a monotonic clock that starts at 0.
  Coordinator second(*coordinator_, RemediationMode::kCordon, log_,
                     kStartUnixMs + 2 * kHour + 30 * kMinute);
  ASSERT_TRUE(second.Resume()) << out_.str();
  const std::vector<TrackedFault> confirmed = second.verdicts.hold_down().Confirmed();
  ASSERT_EQ(confirmed.size(), 1U) << "the confirmed fault was forgotten";
  EXPECT_EQ(confirmed[0].fault.nodes, std::vector<std::string>{NodeName(3)});
  const PublishedNodeVerdict* verdict = second.verdicts.Find(NodeName(3));
  ASSERT_NE(verdict, nullptr);
  EXPECT_TRUE(verdict->confirmed_fault);
  // Node 4 was healthy for 30 minutes: 30 are left of recover_after (1 h), not 60.
  RemediationStatus s = second.SweepAt(29 * kMinute);
  EXPECT_TRUE(Tainted(3));
  EXPECT_TRUE(Tainted(4)) << "released early";
  EXPECT_EQ(Actions(s, "taint") + Actions(s, "cordon"), 0U) << "tainted twice";
  EXPECT_EQ(EventsPosted(s), 0U);
  s = second.SweepAt(31 * kMinute);
  EXPECT_FALSE(Tainted(4)) << "the release clock started again\n" << out_.str();
  EXPECT_TRUE(Tainted(3)) << "the confirmed fault's taint went";
  EXPECT_EQ(Actions(s, "release"), 1U);
  // The state written is bounded and small: one fault and no clock left.
  KubeResponse r = coordinator_->GetConfigMap(kNs, kName);
  ASSERT_TRUE(r.ok()) << r.Describe();
  EXPECT_LT(r.body.size(), 4'096U) << r.body;
}

TEST_F(StateRealApi, ARestartTellsNoDryRunAnnouncementTwice) {
  {
    Coordinator first(*coordinator_, RemediationMode::kDryRun, log_, kStartUnixMs);
    ASSERT_TRUE(first.Resume());
    RemediationStatus s = first.SweepAt(kHour, {Confirmed(NodeName(5))});
    ASSERT_EQ(EventsPosted(s), 1U) << out_.str();
  }
  Coordinator second(*coordinator_, RemediationMode::kDryRun, log_, kStartUnixMs + 2 * kHour);
  ASSERT_TRUE(second.Resume());
  RemediationStatus s = second.SweepAt(kHour);
  EXPECT_EQ(s.would_taint, std::vector<std::string>{NodeName(5)});
  EXPECT_EQ(EventsPosted(s), 0U) << "announced again after a restart";
  EXPECT_FALSE(Tainted(5));
}

TEST_F(StateRealApi, OnlyTheCoordinatorMayReadOrWriteOnlyItsStateConfigMap) {
  EXPECT_EQ(agent_->GetConfigMap(kNs, kName).status, 403);
  EXPECT_EQ(agent_->PutConfigMap(kNs, kName, {{"format", "1"}}, "").status, 403);
  EXPECT_TRUE(coordinator_->GetConfigMap(kNs, kName).ok());
  // Another name: neither read nor update (create cannot be limited to a name; see rbac.yaml).
  EXPECT_EQ(coordinator_->GetConfigMap(kNs, "kt-nccl-triage-config").status, 403);
  EXPECT_EQ(coordinator_->PutConfigMap(kNs, "kt-nccl-triage-config", {}, "1").status, 403);
  EXPECT_EQ(coordinator_->GetConfigMap("default", kName).status, 403);
}

}  // namespace
}  // namespace nccl_triage
