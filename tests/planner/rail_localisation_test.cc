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

TEST(LocaliseRails, ANodeRailFaultTakesNoCauseFromAPeerThatIsBadItself) {
  // n1 fails on every rail (its own fault, memlock); n3's rail 2 is down. n1-n3 on rail 2 fails
  // with both faults' causes, but n1 is no good peer of n3: n3's causes come from n2 and n4.
  auto fails = [](auto& a, auto& b, int rail) {
    return a == "n1" || b == "n1" || (rail == 2 && (a == "n3" || b == "n3"));
  };
  std::vector<RailPairOutcome> outcomes = Sweep(fails);
  for (auto& o : outcomes) {
    if (o.passed) continue;
    o.causes.clear();
    if (o.pair.Has("n1")) o.causes.push_back("limits.memlock");
    if (o.pair.Has("n3") && o.rail == 2) o.causes.push_back("ib.port_state");
  }
  auto loc = LocaliseRails(outcomes);
  const RailFault* n3 = nullptr;
  for (const auto& f : loc.faults) {
    if (f.nodes == std::vector<std::string>{"n3"}) n3 = &f;
  }
  ASSERT_NE(n3, nullptr);
  EXPECT_EQ(n3->kind, RailFaultKind::kNodeRail);
  EXPECT_EQ(n3->causes, std::vector<std::string>{"ib.port_state"});
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

// What JudgeRails makes of a rail that passes NCCL below its port rate.
void MakeSlow(RailPairOutcome& o, double busbw, double expected) {
  o.passed = false;
  o.degraded = true;
  o.fault_class = FaultClass::kIbResource;
  o.causes = {"ib.bandwidth"};
  o.busbw_bytes_per_second = busbw;
  o.expected_bytes_per_second = expected;
}

TEST(LocaliseRails, ARailSlowWithEveryPeerIsThatNodesRailRateDegraded) {
  auto outcomes = Sweep([](auto&, auto&, int) { return false; });
  for (auto& o : outcomes) {
    o.expected_bytes_per_second = 25e9;
    o.busbw_bytes_per_second = 23e9;
    if (o.rail == 1 && o.pair.Has("n2")) MakeSlow(o, o.pair.Has("n4") ? 6.5e9 : 6e9, 25e9);
  }
  auto loc = LocaliseRails(outcomes);
  ASSERT_EQ(loc.faults.size(), 1u);
  const RailFault& f = loc.faults[0];
  EXPECT_EQ(f.kind, RailFaultKind::kNodeRail);
  EXPECT_EQ(f.nodes, std::vector<std::string>{"n2"});
  EXPECT_EQ(f.rail, 1);
  EXPECT_TRUE(f.degraded);
  EXPECT_EQ(f.causes, std::vector<std::string>{"ib.bandwidth"});
  EXPECT_EQ(f.reason,
            "rail 1 (mlx5_1) is rate-degraded: NCCL passes on it but carries at most 6.50 GB/s "
            "busbw with n1, n3, n4, below probe.busbw_min_fraction of 25.00 GB/s, the rail's "
            "port rate; each of them carries rail 1 at its rate with another node");
  EXPECT_TRUE(loc.inconclusive.empty());
}

TEST(LocaliseRails, AFailedRailIsNotRateDegradedEvenIfSomePeersSawItSlow) {
  auto outcomes =
      Sweep([](auto& a, auto& b, int rail) { return rail == 2 && (a == "n3" || b == "n3"); });
  for (auto& o : outcomes) {
    if (o.rail == 2 && o.pair.Has("n3") && o.pair.Has("n1")) MakeSlow(o, 1e9, 25e9);
  }
  auto loc = LocaliseRails(outcomes);
  ASSERT_EQ(loc.faults.size(), 1u);
  EXPECT_FALSE(loc.faults[0].degraded);
  EXPECT_EQ(loc.faults[0].causes, (std::vector<std::string>{"ib.bandwidth", "ib.mr_register"}));
  EXPECT_EQ(loc.faults[0].reason.find("rate-degraded"), std::string::npos);
}

TEST(LocaliseRails, EveryRailSlowIsTheNodeRateDegraded) {
  auto outcomes = Sweep([](auto&, auto&, int) { return false; });
  for (auto& o : outcomes) {
    if (o.pair.Has("n4")) MakeSlow(o, 3e9, 25e9);
  }
  auto loc = LocaliseRails(outcomes);
  ASSERT_EQ(loc.faults.size(), 1u);
  EXPECT_EQ(loc.faults[0].kind, RailFaultKind::kNode);
  EXPECT_TRUE(loc.faults[0].degraded);
  EXPECT_NE(loc.faults[0].reason.find("every rail probed (3) is rate-degraded"), std::string::npos)
      << loc.faults[0].reason;
}

TEST(LocaliseRails, ARailSlowBetweenTwoGoodNodesOnlyIsTheLink) {
  auto outcomes = Sweep([](auto&, auto&, int) { return false; });
  for (auto& o : outcomes) {
    if (o.rail == 0 && o.pair == NodePair("n1", "n3")) MakeSlow(o, 5e9, 25e9);
  }
  auto loc = LocaliseRails(outcomes);
  ASSERT_EQ(loc.faults.size(), 1u);
  EXPECT_EQ(loc.faults[0].kind, RailFaultKind::kLinkRail);
  EXPECT_TRUE(loc.faults[0].degraded);
  EXPECT_EQ(loc.faults[0].reason,
            "rail 0 (mlx5_0) is rate-degraded (5.00 GB/s busbw, port rate 25.00 GB/s) only "
            "between n1 and n3; both pass on it with other nodes");
}

}  // namespace
}  // namespace nccl_triage
