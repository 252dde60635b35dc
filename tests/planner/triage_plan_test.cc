// The probes of one incident, planned: the job's nodes paired with each other, known-good
// references beside them, absent and busy nodes left out with the reason, and the answer
// summarised for exactly the nodes asked about.
#include "planner/triage_plan.h"

#include <gtest/gtest.h>

namespace nccl_triage {
namespace {

std::map<std::string, TriageAgent> Agents(int n) {
  std::map<std::string, TriageAgent> out;
  for (int i = 0; i < n; ++i) out["n" + std::to_string(i)] = TriageAgent{true, false, false};
  return out;
}

TEST(TriagePlan, PairsTheJobsNodesAndProbesTwoReferencesTogether) {
  TriagePlan p = PlanTriage({"n0", "n1", "n2", "n3"}, Agents(8));
  EXPECT_EQ(p.probed, (std::vector<std::string>{"n0", "n1", "n2", "n3"}));
  EXPECT_EQ(p.references, (std::vector<std::string>{"n4", "n5"}));
  EXPECT_EQ(p.round1, (std::vector<NodePair>{{"n0", "n1"}, {"n2", "n3"}, {"n4", "n5"}}));
  EXPECT_TRUE(p.skipped.empty());
}

TEST(TriagePlan, TheOddNodeMeetsAReference) {
  TriagePlan p = PlanTriage({"n0", "n1", "n2"}, Agents(5));
  EXPECT_EQ(p.round1, (std::vector<NodePair>{{"n0", "n1"}, {"n2", "n3"}}));
}

TEST(TriagePlan, BusyAndAbsentNodesAreNotProbedAndSaySo) {
  auto agents = Agents(6);
  agents["n1"].gpus_busy = true;
  TriagePlan p = PlanTriage({"n0", "n1", "gone", "n2", "n0"}, agents);
  EXPECT_EQ(p.probed, (std::vector<std::string>{"n0", "n2"}));
  EXPECT_EQ(p.skipped.at("n1"), "busy");
  EXPECT_NE(p.reasons.at("n1").find("another job may have started"), std::string::npos);
  EXPECT_EQ(p.skipped.at("gone"), "absent");
}

TEST(TriagePlan, NoBusyOrConfirmedFaultyNodeIsAReference) {
  auto agents = Agents(6);
  agents["n2"].gpus_busy = true;
  agents["n3"].confirmed_fault = true;
  agents["n4"].connected = false;
  TriagePlan p = PlanTriage({"n0", "n1"}, agents);
  EXPECT_EQ(p.references, std::vector<std::string>{"n5"});
}

TEST(TriagePlan, ANodeWhoseProbesCannotRunIsNotProbedNorAReferenceAndSaysWhy) {
  auto agents = Agents(6);
  agents["n1"].probes_unavailable = "probes cannot run on this node (no_nccl: not found)";
  agents["n4"].probes_unavailable = "probes cannot run on this node (no_gpu)";
  TriagePlan p = PlanTriage({"n0", "n1", "n2"}, agents);
  EXPECT_EQ(p.probed, (std::vector<std::string>{"n0", "n2"}));
  EXPECT_EQ(p.skipped.at("n1"), "unavailable");
  EXPECT_EQ(p.reasons.at("n1"), "probes cannot run on this node (no_nccl: not found): not probed");
  EXPECT_EQ(p.references, (std::vector<std::string>{"n3", "n5"}));
  TriageOutcome out = SummariseTriage({"n0", "n1", "n2"}, p, SweepResult{});
  ASSERT_EQ(out.nodes.size(), 3U);
  EXPECT_EQ(out.nodes[1].state, "unavailable");
  EXPECT_NE(out.nodes[1].reason.find("no_nccl"), std::string::npos);
}

TEST(TriagePlan, TheAnswerCoversTheAskedNodesAndTheirFaultsOnly) {
  auto agents = Agents(6);
  agents["n1"].gpus_busy = true;
  TriagePlan plan = PlanTriage({"n0", "n1", "n2"}, agents);
  SweepResult r;
  r.rounds = 2;
  r.nodes["n0"] = {NodeState::kGood, FaultClass::kHealthy, {}, "passes"};
  r.nodes["n2"] = {NodeState::kNodeFault, FaultClass::kIbResource, {"limits.memlock"}, "IB fails"};
  r.faults.push_back({FaultKind::kNode, {"n2"}, FaultClass::kIbResource, {"limits.memlock"}, ""});
  r.faults.push_back({FaultKind::kNode, {"n4"}, FaultClass::kArchitecture, {"shm.size"}, ""});
  r.pairs.resize(3);
  TriageOutcome out = SummariseTriage({"n0", "n1", "n2"}, plan, r);
  ASSERT_EQ(out.nodes.size(), 3U);
  EXPECT_EQ(out.nodes[0].state, "good");
  EXPECT_EQ(out.nodes[1].state, "busy");
  EXPECT_EQ(out.nodes[2].state, "fault");
  EXPECT_EQ(out.nodes[2].causes, std::vector<std::string>{"limits.memlock"});
  ASSERT_EQ(out.faults.size(), 1U);  // n4's fault is not the job's
  EXPECT_EQ(out.pairs_probed, 3);
  EXPECT_EQ(out.rounds, 2);
}

RailFault NodeRailFault(const std::string& node, int rail, bool slow) {
  RailFault f;
  f.kind = RailFaultKind::kNodeRail;
  f.nodes = {node};
  f.rail = rail;
  f.device = "mlx5_" + std::to_string(rail) + "/1";
  f.fault_class = FaultClass::kIbResource;
  f.causes = {slow ? "ib.bandwidth" : "ib.mr_register"};
  f.degraded = slow;
  f.reason = "rail " + std::to_string(rail);
  return f;
}

NodeInfo FourRails(const std::string& name) {
  NodeInfo n;
  n.name = name;
  for (int k = 0; k < 4; ++k) {
    Rail r;
    r.index = k;
    r.device = "mlx5_" + std::to_string(k);
    r.port = 1;
    n.rails.push_back(r);
  }
  return n;
}

TEST(TriageRails, EachRailCarriesTheFaultNamingItTheTriagesBeforeTheSweeps) {
  const std::vector<RailFault> triage = {NodeRailFault("n2", 1, false)};
  std::vector<RailFault> sweep = {NodeRailFault("n2", 1, true), NodeRailFault("n2", 3, true),
                                  NodeRailFault("n5", 0, false)};
  RailFault link = NodeRailFault("", 2, false);
  link.kind = RailFaultKind::kLinkRail;
  link.nodes = {"n2", "n7"};
  sweep.push_back(link);
  std::vector<TriageRail> rails = TriageRails(FourRails("n2"), triage, sweep);
  ASSERT_EQ(rails.size(), 4u);
  EXPECT_FALSE(rails[0].fault);  // n5's rail 0 is not n2's
  EXPECT_EQ(rails[0].seen_by, "");
  ASSERT_TRUE(rails[1].fault);
  EXPECT_EQ(rails[1].seen_by, "triage");  // what the job's nodes do now wins
  EXPECT_FALSE(rails[1].fault->degraded);
  ASSERT_TRUE(rails[2].fault);
  EXPECT_EQ(rails[2].fault->kind, RailFaultKind::kLinkRail);
  ASSERT_TRUE(rails[3].fault);
  EXPECT_EQ(rails[3].seen_by, "sweep");
  EXPECT_TRUE(rails[3].fault->degraded);
  EXPECT_EQ(rails[3].rail.device, "mlx5_3");

  // A whole-node rail fault names every rail; a node without a rail table has no rows.
  RailFault node = NodeRailFault("n2", -1, false);
  node.kind = RailFaultKind::kNode;
  for (const auto& r : TriageRails(FourRails("n2"), {node}, {})) {
    ASSERT_TRUE(r.fault);
    EXPECT_EQ(r.fault->kind, RailFaultKind::kNode);
  }
  NodeInfo bare;
  bare.name = "n2";
  EXPECT_TRUE(TriageRails(bare, triage, sweep).empty());
}

}  // namespace
}  // namespace nccl_triage
