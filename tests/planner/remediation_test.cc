#include "planner/remediation.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace nccl_triage {
namespace {

constexpr int64_t kNow = 1'000'000'000;

// 64 nodes in one pool; the first `faulty` have a confirmed ib_resource fault.
std::vector<RemediationNode> Pool(int size, int faulty) {
  std::vector<RemediationNode> nodes;
  for (int i = 0; i < size; ++i) {
    RemediationNode n;
    char name[16];
    std::snprintf(name, sizeof name, "gpu-%02d", i);
    n.node = name;
    n.confirmed_fault = i < faulty;
    n.fault_class = FaultClass::kIbResource;
    if (n.confirmed_fault) n.causes = {"ib.port_state"};
    if (!n.confirmed_fault) n.healthy_since_ms = 0;
    nodes.push_back(n);
  }
  return nodes;
}

RemediationPolicy Policy(RemediationMode mode, int max_nodes = 4, double max_percent = 10) {
  RemediationPolicy p;
  p.mode = mode;
  p.max_nodes = max_nodes;
  p.max_percent = max_percent;
  p.healthy_ms = 600'000;
  return p;
}

int Count(const RemediationPlan& plan, RemediationActionKind kind) {
  return static_cast<int>(std::count_if(plan.actions.begin(), plan.actions.end(),
                                        [&](const auto& a) { return a.kind == kind; }));
}

// Applies a plan to the nodes the way the coordinator's executor does.
void Apply(const RemediationPlan& plan, std::vector<RemediationNode>* nodes) {
  for (const auto& a : plan.actions) {
    for (auto& n : *nodes) {
      if (n.node != a.node) continue;
      const bool apply = a.kind == RemediationActionKind::kApply;
      n.remediated = apply;
      n.cordoned_by_us = apply && a.cordon;
      n.unschedulable = apply && a.cordon;
    }
  }
}

TEST(RemediationPlanner, TaintsTheThreeFaultyNodesOfSixtyFour) {
  auto plan = PlanRemediation(Pool(64, 3), Policy(RemediationMode::kTaint), kNow);
  EXPECT_EQ(Count(plan, RemediationActionKind::kApply), 3);
  EXPECT_FALSE(plan.breaker_open);
  EXPECT_TRUE(plan.held_back.empty());
  EXPECT_EQ(plan.remediated_after, 3);
  EXPECT_EQ(plan.actions[0].taint_value, "ib_resource");
  EXPECT_FALSE(plan.actions[0].cordon);
  EXPECT_NE(plan.actions[0].reason.find("ib.port_state"), std::string::npos);
}

TEST(RemediationPlanner, TripsTheBreakerOnAFabricWideFaultAndStaysWithinTheLimit) {
  auto plan = PlanRemediation(Pool(64, 40), Policy(RemediationMode::kTaint), kNow);
  EXPECT_TRUE(plan.breaker_open);
  EXPECT_EQ(Count(plan, RemediationActionKind::kApply), 4);  // max_nodes 4 < 10 % of 64 = 6
  EXPECT_EQ(plan.held_back.size(), 36u);
  EXPECT_EQ(plan.remediated_after, 4);
}

TEST(RemediationPlanner, ThePoolPercentageLimitsBeforeMaxNodes) {
  auto plan = PlanRemediation(Pool(64, 40), Policy(RemediationMode::kTaint, 100, 5), kNow);
  EXPECT_EQ(Count(plan, RemediationActionKind::kApply), 3);  // floor(5 % of 64)
  EXPECT_TRUE(plan.breaker_open);
}

TEST(RemediationPlanner, CountsNodesAlreadyRemediatedAgainstTheLimit) {
  auto nodes = Pool(64, 40);
  auto first = PlanRemediation(nodes, Policy(RemediationMode::kTaint), kNow);
  Apply(first, &nodes);
  auto second = PlanRemediation(nodes, Policy(RemediationMode::kTaint), kNow + 60'000);
  EXPECT_EQ(Count(second, RemediationActionKind::kApply), 0);
  EXPECT_TRUE(second.breaker_open);
  EXPECT_EQ(second.remediated_after, 4);
}

TEST(RemediationPlanner, ReleasesOnlyItsOwnNodesAfterTheHealthyTime) {
  auto nodes = Pool(64, 3);
  Apply(PlanRemediation(nodes, Policy(RemediationMode::kCordon), kNow), &nodes);
  for (auto& n : nodes) {
    n.confirmed_fault = false;
    n.healthy_since_ms = kNow + 1000;
  }
  // Not healthy long enough yet: nothing is released.
  auto early = PlanRemediation(nodes, Policy(RemediationMode::kCordon), kNow + 2000);
  EXPECT_EQ(Count(early, RemediationActionKind::kRelease), 0);
  EXPECT_EQ(early.remediated_after, 3);
  auto late = PlanRemediation(nodes, Policy(RemediationMode::kCordon), kNow + 1000 + 600'000);
  ASSERT_EQ(Count(late, RemediationActionKind::kRelease), 3);
  EXPECT_TRUE(late.actions[0].cordon);  // we cordoned it, so we uncordon it
  EXPECT_EQ(late.remediated_after, 0);
  // Nodes nccl-triage never marked are never released, whatever their state.
  for (const auto& a : late.actions) EXPECT_LT(a.node, "gpu-03");
}

TEST(RemediationPlanner, CordonModeLeavesANodeSomeoneElseCordonedAlone) {
  auto nodes = Pool(64, 1);
  nodes[0].unschedulable = true;  // an operator cordoned it before
  auto plan = PlanRemediation(nodes, Policy(RemediationMode::kCordon), kNow);
  ASSERT_EQ(plan.actions.size(), 1u);
  EXPECT_FALSE(plan.actions[0].cordon);  // tainted, but the cordon is not ours to own
}

TEST(RemediationPlanner, DryRunPlansTheSameButDoesNotApply) {
  auto taint = PlanRemediation(Pool(64, 3), Policy(RemediationMode::kTaint), kNow);
  auto dry = PlanRemediation(Pool(64, 3), Policy(RemediationMode::kDryRun), kNow);
  EXPECT_EQ(dry.actions.size(), taint.actions.size());
  EXPECT_FALSE(dry.applies());
  EXPECT_TRUE(taint.applies());
}

TEST(RemediationPlanner, OffPlansNothing) {
  auto plan = PlanRemediation(Pool(64, 40), Policy(RemediationMode::kOff), kNow);
  EXPECT_TRUE(plan.actions.empty());
  EXPECT_FALSE(plan.breaker_open);
}

TEST(RemediationPlanner, PoolsAreLimitedSeparately) {
  auto nodes = Pool(40, 0);
  for (int i = 0; i < 40; ++i) nodes[i].pool = i < 20 ? "a" : "b";
  for (int i : {0, 1, 2, 20}) {
    nodes[i].confirmed_fault = true;
    nodes[i].healthy_since_ms.reset();
  }
  auto plan = PlanRemediation(nodes, Policy(RemediationMode::kTaint, 10, 10), kNow);
  EXPECT_EQ(Count(plan, RemediationActionKind::kApply), 3);  // 2 of pool a (10 % of 20), 1 of b
  EXPECT_EQ(plan.held_back, std::vector<std::string>{"gpu-02"});
}

TEST(RemediationPlanner, ANodeAnOperatorReleasedIsNeitherTaintedNorCounted) {
  auto nodes = Pool(64, 3);
  nodes[0].released_by_operator = true;  // gpu-00: confirmed, its taint removed by hand
  auto plan = PlanRemediation(nodes, Policy(RemediationMode::kTaint, /*max_nodes=*/2), kNow);
  ASSERT_EQ(Count(plan, RemediationActionKind::kApply), 2);
  EXPECT_EQ(plan.actions[0].node, "gpu-01");
  EXPECT_EQ(plan.actions[1].node, "gpu-02");
  EXPECT_FALSE(plan.breaker_open);
  EXPECT_EQ(plan.remediated_after, 2);
}

}  // namespace
}  // namespace nccl_triage
