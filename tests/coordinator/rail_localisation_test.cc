// Localisation to (node, rail): a rail failing with every peer is that node's HCA, every rail
// failing is the node, a rail failing with one peer only is the link.
#include "planner/rail_localisation.h"

#include <gtest/gtest.h>

#include <functional>

namespace nccl_triage {
namespace {

RailPairOutcome Probe(const std::string& a, const std::string& b, int rail, bool passed) {
  RailPairOutcome o;
  o.pair = NodePair(a, b);
  o.rail = rail;
  o.device = "mlx5_" + std::to_string(rail);
  o.passed = passed;
  if (!passed) {
    o.fault_class = FaultClass::kIbResource;
    o.causes = {"ib.mr_register"};
  }
  return o;
}

// n1..n4 on rails 0..2; every pair passes unless `fails` says otherwise.
std::vector<RailPairOutcome> Sweep(
    const std::function<bool(const std::string&, const std::string&, int)>& fails) {
  const std::vector<std::string> nodes = {"n1", "n2", "n3", "n4"};
  std::vector<RailPairOutcome> out;
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (size_t j = i + 1; j < nodes.size(); ++j) {
      for (int rail = 0; rail < 3; ++rail) {
        out.push_back(Probe(nodes[i], nodes[j], rail, !fails(nodes[i], nodes[j], rail)));
      }
    }
  }
  return out;
}

TEST(LocaliseRails, ARailFailingWithEveryPeerIsThatNodesRail) {
  auto loc = LocaliseRails(
      Sweep([](auto& a, auto& b, int rail) { return rail == 2 && (a == "n3" || b == "n3"); }));
  ASSERT_EQ(loc.faults.size(), 1u);
  const RailFault& f = loc.faults[0];
  EXPECT_EQ(f.kind, RailFaultKind::kNodeRail);
  EXPECT_EQ(f.nodes, std::vector<std::string>{"n3"});
  EXPECT_EQ(f.rail, 2);
  EXPECT_EQ(f.device, "mlx5_2");
  EXPECT_EQ(f.fault_class, FaultClass::kIbResource);
  EXPECT_EQ(f.causes, std::vector<std::string>{"ib.mr_register"});
  EXPECT_EQ(
      f.reason,
      "rail 2 (mlx5_2) passes with no peer and fails with n1, n2, n4, each of which passes on "
      "rail 2 with another node");
  EXPECT_TRUE(loc.inconclusive.empty());
}

TEST(LocaliseRails, TwoBadNodesOnOneRailAreEachNamedByTheirGoodPeers) {
  auto loc = LocaliseRails(Sweep([](auto& a, auto& b, int rail) {
    return rail == 0 && (a == "n1" || b == "n1" || a == "n3" || b == "n3");
  }));
  ASSERT_EQ(loc.faults.size(), 2u);
  EXPECT_EQ(loc.faults[0].nodes, std::vector<std::string>{"n1"});
  EXPECT_EQ(loc.faults[1].nodes, std::vector<std::string>{"n3"});
  EXPECT_EQ(loc.faults[1].kind, RailFaultKind::kNodeRail);
  EXPECT_TRUE(loc.inconclusive.empty());  // n1-n3 is explained by both
}

TEST(LocaliseRails, EveryRailFailingIsTheNodeNotAnHca) {
  auto loc = LocaliseRails(Sweep([](auto& a, auto& b, int) { return a == "n1" || b == "n1"; }));
  ASSERT_EQ(loc.faults.size(), 1u);
  EXPECT_EQ(loc.faults[0].kind, RailFaultKind::kNode);
  EXPECT_EQ(loc.faults[0].nodes, std::vector<std::string>{"n1"});
  EXPECT_EQ(loc.faults[0].rail, -1);
}

TEST(LocaliseRails, ARailFailingWithOnePeerOnlyIsTheLinkOnThatRail) {
  auto loc = LocaliseRails(
      Sweep([](auto& a, auto& b, int rail) { return rail == 1 && a == "n2" && b == "n4"; }));
  ASSERT_EQ(loc.faults.size(), 1u);
  EXPECT_EQ(loc.faults[0].kind, RailFaultKind::kLinkRail);
  EXPECT_EQ(loc.faults[0].nodes, (std::vector<std::string>{"n2", "n4"}));
  EXPECT_EQ(loc.faults[0].rail, 1);
}

TEST(LocaliseRails, OnePeerIsNotEnoughToBlameANode) {
  // n1-n2 fail on rail 0 and neither was probed with anyone else on it.
  auto loc = LocaliseRails({Probe("n1", "n2", 0, false), Probe("n1", "n2", 1, true)});
  EXPECT_TRUE(loc.faults.empty());
  ASSERT_EQ(loc.inconclusive.size(), 1u);
  EXPECT_EQ(loc.inconclusive[0].rail, 0);
}

TEST(LocaliseRails, AHealthySweepHasNoFault) {
  auto loc = LocaliseRails(Sweep([](auto&, auto&, int) { return false; }));
  EXPECT_TRUE(loc.faults.empty());
  EXPECT_TRUE(loc.inconclusive.empty());
}

}  // namespace
}  // namespace nccl_triage
