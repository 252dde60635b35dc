#include "planner/sweep.h"

#include <gtest/gtest.h>

#include <random>
#include <set>

#include "planner/schedule.h"

namespace nccl_triage {
namespace {

std::string Name(int i) { return "n" + std::to_string(100 + i); }

// A simulated cluster: which nodes and links are broken, and how a pair's probes come out.
struct World {
  std::map<std::string, std::string> bad_nodes;  // node -> cause
  std::set<NodePair> bad_links;
  std::set<std::string> lost;  // agents that disconnect when probed
  int probes = 0;
  // Rails: each pair is also probed on rails 0..rails-1 (HCA mlx5_k port 1). A bad rail of a node
  // or between two nodes fails only that rail's probe: the pair's IB probe (on other HCAs) passes.
  int rails = 0;
  std::map<std::pair<std::string, int>, std::string> bad_rails;  // (node, rail) -> cause
  std::set<std::pair<NodePair, int>> bad_rail_links;

  std::vector<RailPairOutcome> JudgeRails(const NodePair& p) {
    std::vector<RailPairOutcome> out;
    if (lost.count(p.a) || lost.count(p.b)) return out;
    for (int k = 0; k < rails; ++k) {
      RailPairOutcome o;
      o.pair = p;
      o.rail = k;
      o.device = "mlx5_" + std::to_string(k) + "/1";
      for (const auto* n : {&p.a, &p.b}) {
        if (auto it = bad_nodes.find(*n); it != bad_nodes.end()) o.causes.push_back(it->second);
        if (auto it = bad_rails.find({*n, k}); it != bad_rails.end()) {
          o.causes.push_back(it->second);
        }
      }
      if (bad_rail_links.count({p, k})) o.causes.push_back("ib.fabric");
      o.passed = o.causes.empty();
      o.fault_class = o.passed ? FaultClass::kUnknown : FaultClass::kIbResource;
      out.push_back(std::move(o));
    }
    return out;
  }

  PairJudgement Judge(const NodePair& p) {
    ++probes;
    PairJudgement j;
    if (lost.count(p.a) || lost.count(p.b)) {
      j.status = PairStatus::kInconclusive;
      j.verdict.fault_class = FaultClass::kUnknown;
      return j;
    }
    std::vector<std::string> causes;
    for (const auto* n : {&p.a, &p.b}) {
      auto it = bad_nodes.find(*n);
      if (it != bad_nodes.end()) causes.push_back(it->second);
    }
    if (bad_links.count(p)) causes.push_back("ib.fabric");
    if (causes.empty()) {
      j.status = PairStatus::kPass;
      j.verdict.fault_class = FaultClass::kHealthy;
      j.verdict.basis = Basis::kProbes;
      j.socket = j.ib = ProbeOutcome::kPass;
      return j;
    }
    j.status = PairStatus::kFail;
    j.verdict.basis = Basis::kProbes;
    j.verdict.fault_class = FaultClass::kIbResource;
    j.verdict.causes = causes;
    j.socket = ProbeOutcome::kPass;
    j.ib = ProbeOutcome::kFail;
    return j;
  }
};

struct SweepRun {
  SweepResult result;
  int rounds = 0;
};

SweepRun RunSweep(World& w, SweepSetup setup) {
  Sweep s(std::move(setup));
  SweepRun run;
  for (;;) {
    auto pairs = s.NextRound();
    if (pairs.empty()) break;
    ++run.rounds;
    std::set<std::string> used;
    for (const auto& p : pairs) {
      EXPECT_TRUE(used.insert(p.a).second) << "round " << s.round() << " not disjoint";
      EXPECT_TRUE(used.insert(p.b).second) << "round " << s.round() << " not disjoint";
      s.Record(p, w.Judge(p), w.JudgeRails(p));
    }
  }
  run.result = s.Result();
  return run;
}

SweepSetup MakeSetup(int n, const std::vector<NodePair>& round1) {
  SweepSetup s;
  s.number = 1;
  for (int i = 0; i < n; ++i) s.nodes.push_back(Name(i));
  s.round1 = round1;
  return s;
}

// Round 1 pairs n0-n1, n2-n3, ...
std::vector<NodePair> Adjacent(int n) {
  std::vector<NodePair> out;
  for (int i = 0; i + 1 < n; i += 2) out.emplace_back(Name(i), Name(i + 1));
  return out;
}

std::set<std::string> NodeFaults(const SweepResult& r) {
  std::set<std::string> out;
  for (const auto& f : r.faults) {
    if (f.kind == FaultKind::kNode) out.insert(f.nodes[0]);
  }
  return out;
}

std::set<NodePair> LinkFaults(const SweepResult& r) {
  std::set<NodePair> out;
  for (const auto& f : r.faults) {
    if (f.kind == FaultKind::kLink) out.emplace(f.nodes[0], f.nodes[1]);
  }
  return out;
}

TEST(Sweep, HealthyClusterTakesOneRoundAndReportsNothing) {
  World w;
  SweepRun run = RunSweep(w, MakeSetup(8, Adjacent(8)));
  EXPECT_EQ(run.rounds, 1);
  EXPECT_TRUE(run.result.faults.empty());
  for (const auto& [n, o] : run.result.nodes) {
    EXPECT_EQ(o.state, NodeState::kGood) << n;
    EXPECT_EQ(o.fault_class, FaultClass::kHealthy);
  }
  EXPECT_EQ(run.result.tested_pairs.size(), 4u);
}

TEST(Sweep, NodeThatFailsWithTwoGoodPartnersIsANodeFault) {
  World w;
  w.bad_nodes[Name(2)] = "ib.port_state";
  SweepRun run = RunSweep(w, MakeSetup(8, Adjacent(8)));
  EXPECT_EQ(run.rounds, 2);
  ASSERT_EQ(run.result.faults.size(), 1u);
  const auto& f = run.result.faults[0];
  EXPECT_EQ(f.kind, FaultKind::kNode);
  EXPECT_EQ(f.nodes, std::vector<std::string>{Name(2)});
  EXPECT_EQ(f.fault_class, FaultClass::kIbResource);
  EXPECT_EQ(f.causes, std::vector<std::string>{"ib.port_state"});
  EXPECT_EQ(run.result.nodes.at(Name(3)).state, NodeState::kGood);  // its round-1 partner
  // Every failed pair with n2 is explained by the node, none is called a link.
  for (const auto& p : run.result.pairs) {
    if (p.pair.Has(Name(2))) {
      EXPECT_EQ(p.localisation, PairLocalisation::kNode);
    }
  }
}

TEST(Sweep, PairThatFailsOnlyTogetherIsALinkFault) {
  World w;
  w.bad_links.insert(NodePair(Name(4), Name(5)));
  SweepRun run = RunSweep(w, MakeSetup(8, Adjacent(8)));
  EXPECT_EQ(run.rounds, 2);
  EXPECT_TRUE(NodeFaults(run.result).empty());
  EXPECT_EQ(LinkFaults(run.result), (std::set<NodePair>{NodePair(Name(4), Name(5))}));
  EXPECT_EQ(run.result.nodes.at(Name(4)).state, NodeState::kGood);
  EXPECT_EQ(run.result.nodes.at(Name(5)).state, NodeState::kGood);
}

TEST(Sweep, TwoBadNodesPairedTogetherNeedAThirdRound) {
  World w;
  w.bad_nodes[Name(0)] = "ib.port_state";
  w.bad_nodes[Name(1)] = "limits.memlock";
  SweepRun run = RunSweep(w, MakeSetup(10, Adjacent(10)));
  EXPECT_EQ(run.rounds, 3);
  EXPECT_EQ(NodeFaults(run.result), (std::set<std::string>{Name(0), Name(1)}));
  EXPECT_TRUE(LinkFaults(run.result).empty());
  // Each node's cause is its own, not its fellow's (causes common to its failures).
  for (const auto& f : run.result.faults) {
    EXPECT_EQ(f.causes.size(), 1u);
    EXPECT_EQ(f.causes[0], w.bad_nodes[f.nodes[0]]);
  }
}

TEST(Sweep, NodeFaultAndLinkFaultInOneSweep) {
  World w;
  w.bad_nodes[Name(6)] = "ib.subnet_manager";
  w.bad_links.insert(NodePair(Name(0), Name(1)));
  SweepRun run = RunSweep(w, MakeSetup(8, Adjacent(8)));
  EXPECT_EQ(NodeFaults(run.result), std::set<std::string>{Name(6)});
  EXPECT_EQ(LinkFaults(run.result), (std::set<NodePair>{NodePair(Name(0), Name(1))}));
  EXPECT_LE(run.rounds, 2);
}

TEST(Sweep, TwoNodesAloneCannotBeLocalised) {
  World w;
  w.bad_nodes[Name(0)] = "ib.port_state";
  SweepRun run = RunSweep(w, MakeSetup(2, Adjacent(2)));
  EXPECT_TRUE(run.result.faults.empty());
  EXPECT_EQ(run.result.nodes.at(Name(0)).state, NodeState::kInconclusive);
  EXPECT_EQ(run.result.nodes.at(Name(1)).state, NodeState::kInconclusive);
  ASSERT_EQ(run.result.pairs.size(), 1u);
  EXPECT_EQ(run.result.pairs[0].localisation, PairLocalisation::kInconclusive);
  EXPECT_TRUE(run.result.tested_nodes.empty());
}

TEST(Sweep, OddNodeOutUsedAsReferenceWhenNoneHasPassedYet) {
  World w;
  w.bad_nodes[Name(0)] = "ib.port_state";
  SweepRun run = RunSweep(w, MakeSetup(3, {NodePair(Name(0), Name(1))}));
  // n2 sat out round 1; it is the only possible partner. n0 fails with it, n1 passes with it...
  // but one round has room for one of them; the third round completes the picture.
  EXPECT_EQ(NodeFaults(run.result), std::set<std::string>{Name(0)});
  EXPECT_EQ(run.rounds, 3);
}

TEST(Sweep, AgentLostMidProbeMakesThePairInconclusiveAndRetestsTheSurvivor) {
  World w;
  w.lost.insert(Name(3));
  SweepSetup setup = MakeSetup(8, Adjacent(8));
  Sweep s(setup);
  auto r1 = s.NextRound();
  for (const auto& p : r1) s.Record(p, w.Judge(p));
  s.RemoveNode(Name(3));
  auto r2 = s.NextRound();
  ASSERT_EQ(r2.size(), 1u);
  EXPECT_TRUE(r2[0].Has(Name(2)));  // the survivor gets a reference
  EXPECT_FALSE(r2[0].Has(Name(3)));
  for (const auto& p : r2) s.Record(p, w.Judge(p));
  EXPECT_TRUE(s.NextRound().empty());
  SweepResult r = s.Result();
  EXPECT_TRUE(r.faults.empty());
  EXPECT_EQ(r.nodes.at(Name(2)).state, NodeState::kGood);
  EXPECT_EQ(r.nodes.at(Name(3)).state, NodeState::kInconclusive);
  EXPECT_FALSE(r.tested_nodes.count(Name(3)));
}

TEST(Sweep, RetestsSuspectedLinksInRoundTwo) {
  World w;
  w.bad_links.insert(NodePair(Name(0), Name(5)));
  SweepSetup setup = MakeSetup(8, Adjacent(8));
  setup.retest = {NodePair(Name(0), Name(5))};
  SweepRun run = RunSweep(w, setup);
  EXPECT_EQ(run.rounds, 2);
  EXPECT_EQ(LinkFaults(run.result), (std::set<NodePair>{NodePair(Name(0), Name(5))}));
}

TEST(Sweep, PrefersReferencesNotPredictedIncompatible) {
  World w;
  w.bad_nodes[Name(0)] = "ib.port_state";
  SweepSetup setup = MakeSetup(8, Adjacent(8));
  setup.incompatible = [](const std::string& a, const std::string& b) {
    return (a == Name(0) && b != Name(1) && b != Name(7)) ||
           (b == Name(0) && a != Name(1) && a != Name(7));
  };
  Sweep s(setup);
  for (auto pairs = s.NextRound(); !pairs.empty(); pairs = s.NextRound()) {
    for (const auto& p : pairs) {
      if (s.round() > 1 && p.Has(Name(0))) {
        EXPECT_EQ(p.Other(Name(0)), Name(7));
      }
      s.Record(p, w.Judge(p), w.JudgeRails(p));
    }
  }
  EXPECT_EQ(NodeFaults(s.Result()), std::set<std::string>{Name(0)});
}

TEST(Sweep, NodeIncompatibleWithEveryoneIsStillLocalised) {
  // Its NCCL version differs from all the others: the prediction says every pair with it fails,
  // and only probing it with two good partners confirms that the node is the fault.
  World w;
  w.bad_nodes[Name(3)] = "versions.mismatch";
  SweepSetup setup = MakeSetup(8, Adjacent(8));
  setup.incompatible = [](const std::string& a, const std::string& b) {
    return a == Name(3) || b == Name(3);
  };
  SweepRun run = RunSweep(w, setup);
  EXPECT_EQ(NodeFaults(run.result), std::set<std::string>{Name(3)});
  EXPECT_EQ(run.rounds, 2);
}

TEST(Sweep, IgnoresJudgementsForPairsItDidNotPlan) {
  World w;
  Sweep s(MakeSetup(4, Adjacent(4)));
  auto r1 = s.NextRound();
  s.Record(NodePair(Name(0), Name(2)), w.Judge(NodePair(Name(0), Name(2))));
  for (const auto& p : r1) s.Record(p, w.Judge(p));
  EXPECT_EQ(s.Result().pairs.size(), 2u);
}

// Many random clusters: every fault reported is real; node faults are all found in at most three
// rounds whenever references are plentiful; a healthy node is never blamed.
TEST(Sweep, RandomClustersLocaliseExactlyWithinThreeRounds) {
  std::mt19937_64 rng(2024);
  for (int trial = 0; trial < 200; ++trial) {
    const int n = 16 + static_cast<int>(rng() % 113);
    World w;
    const int node_faults = static_cast<int>(rng() % 4);
    while (static_cast<int>(w.bad_nodes.size()) < node_faults) {
      w.bad_nodes[Name(static_cast<int>(rng() % n))] = "ib.port_state";
    }
    const int link_faults = static_cast<int>(rng() % 3);
    CoverageSchedule sched(trial);
    std::vector<std::pair<std::string, std::string>> nodes;
    for (int i = 0; i < n; ++i) nodes.emplace_back(Name(i), "");
    sched.SetNodes(nodes);
    auto round1 = sched.NextRound([](const std::string&) { return true; });
    // Put the link faults on round-1 pairs of healthy nodes so that this sweep can see them.
    for (const auto& p : round1) {
      if (static_cast<int>(w.bad_links.size()) >= link_faults) break;
      if (!w.bad_nodes.count(p.a) && !w.bad_nodes.count(p.b)) w.bad_links.insert(p);
    }
    SweepSetup setup = MakeSetup(n, round1);
    setup.seed = trial;
    SweepRun run = RunSweep(w, setup);
    EXPECT_LE(run.rounds, 3);
    std::set<std::string> want_nodes;
    for (const auto& [node, cause] : w.bad_nodes) want_nodes.insert(node);
    EXPECT_EQ(NodeFaults(run.result), want_nodes) << "trial " << trial << " n=" << n;
    EXPECT_EQ(LinkFaults(run.result), w.bad_links) << "trial " << trial;
  }
}

TEST(Sweep, HealthyClusterWithRailsTakesOneRoundAndReportsNothing) {
  World w;
  w.rails = 8;
  SweepRun run = RunSweep(w, MakeSetup(8, Adjacent(8)));
  EXPECT_EQ(run.rounds, 1);
  EXPECT_TRUE(run.result.faults.empty());
  EXPECT_TRUE(run.result.rails.faults.empty());
  EXPECT_TRUE(run.result.rails.inconclusive.empty());
}

TEST(Sweep, BadRailOfOneNodeIsANodeFaultNamingTheRailInTwoRounds) {
  World w;
  w.rails = 8;
  w.bad_rails[{Name(2), 5}] = "ib.mr_register";
  SweepRun run = RunSweep(w, MakeSetup(8, Adjacent(8)));
  EXPECT_EQ(run.rounds, 2) << "the rail is re-paired in the round a failed pair would be";
  EXPECT_EQ(NodeFaults(run.result), std::set<std::string>{Name(2)});
  EXPECT_TRUE(LinkFaults(run.result).empty());
  ASSERT_EQ(run.result.rails.faults.size(), 1u);
  const RailFault& rf = run.result.rails.faults[0];
  EXPECT_EQ(rf.kind, RailFaultKind::kNodeRail);
  EXPECT_EQ(rf.rail, 5);
  EXPECT_EQ(rf.device, "mlx5_5/1");
  const NodeOutcome& o = run.result.nodes.at(Name(2));
  EXPECT_EQ(o.state, NodeState::kNodeFault);
  EXPECT_EQ(o.fault_class, FaultClass::kIbResource);
  EXPECT_EQ(o.causes, std::vector<std::string>{"ib.mr_register"});
  EXPECT_NE(o.reason.find("rail 5 (mlx5_5/1)"), std::string::npos) << o.reason;
  EXPECT_EQ(run.result.nodes.at(Name(3)).state, NodeState::kGood) << "its round-1 partner";
  EXPECT_TRUE(run.result.tested_nodes.count(Name(2)));
}

TEST(Sweep, EveryRailOfANodeFailingIsTheNodeAndItsPairsAreExplainedByIt) {
  World w;
  w.rails = 4;
  w.bad_nodes[Name(4)] = "ib.mr_register";
  SweepRun run = RunSweep(w, MakeSetup(8, Adjacent(8)));
  EXPECT_EQ(run.rounds, 2);
  EXPECT_EQ(NodeFaults(run.result), std::set<std::string>{Name(4)});
  ASSERT_EQ(run.result.rails.faults.size(), 1u);
  EXPECT_EQ(run.result.rails.faults[0].kind, RailFaultKind::kNode);
  for (const auto& p : run.result.pairs) {
    if (p.pair.Has(Name(4))) {
      EXPECT_EQ(p.localisation, PairLocalisation::kNode);
    }
  }
}

TEST(Sweep, RailThatFailsOnlyBetweenTwoNodesIsALinkFaultOnThatRail) {
  World w;
  w.rails = 8;
  w.bad_rail_links.insert({NodePair(Name(0), Name(1)), 3});
  SweepRun run = RunSweep(w, MakeSetup(8, Adjacent(8)));
  EXPECT_EQ(run.rounds, 2);
  EXPECT_TRUE(NodeFaults(run.result).empty());
  EXPECT_EQ(LinkFaults(run.result), std::set<NodePair>{NodePair(Name(0), Name(1))});
  ASSERT_EQ(run.result.faults.size(), 1u);
  EXPECT_NE(run.result.faults[0].reason.find("rail 3 (mlx5_3/1)"), std::string::npos);
  for (const auto& p : run.result.pairs) {
    if (p.pair == NodePair(Name(0), Name(1))) {
      EXPECT_EQ(p.localisation, PairLocalisation::kLink);
    }
  }
}

// With rails, the same bound as without: node faults and bad rails (several on one rail, some
// nodes meeting a faulty node in round 1) are all found in at most three rounds, and nothing else.
TEST(Sweep, RandomClustersWithRailsLocaliseExactlyWithinThreeRounds) {
  std::mt19937_64 rng(4096);
  for (int trial = 0; trial < 200; ++trial) {
    const int n = 16 + static_cast<int>(rng() % 113);
    World w;
    w.rails = 8;
    const int node_faults = static_cast<int>(rng() % 3);
    while (static_cast<int>(w.bad_nodes.size()) < node_faults) {
      w.bad_nodes[Name(static_cast<int>(rng() % n))] = "ib.port_state";
    }
    // Up to one node in eight with a bad HCA.
    const int rail_faults = 1 + static_cast<int>(rng() % (n / 8));
    std::set<std::string> want_nodes;
    for (const auto& [node, cause] : w.bad_nodes) want_nodes.insert(node);
    while (static_cast<int>(want_nodes.size()) < node_faults + rail_faults) {
      const std::string node = Name(static_cast<int>(rng() % n));
      if (want_nodes.count(node)) continue;
      want_nodes.insert(node);
      w.bad_rails[{node, static_cast<int>(rng() % 8)}] = "ib.mr_register";
    }
    CoverageSchedule sched(trial);
    std::vector<std::pair<std::string, std::string>> nodes;
    for (int i = 0; i < n; ++i) nodes.emplace_back(Name(i), "");
    sched.SetNodes(nodes);
    SweepSetup setup = MakeSetup(n, sched.NextRound([](const std::string&) { return true; }));
    setup.seed = trial;
    SweepRun run = RunSweep(w, setup);
    EXPECT_LE(run.rounds, 3) << "trial " << trial << " n=" << n;
    EXPECT_EQ(NodeFaults(run.result), want_nodes) << "trial " << trial << " n=" << n;
    EXPECT_TRUE(LinkFaults(run.result).empty()) << "trial " << trial;
  }
}

TEST(Sweep, BadRailWithTooFewReferencesStaysInconclusiveNotAFault) {
  World w;
  w.rails = 2;
  w.bad_rails[{Name(0), 1}] = "ib.mr_register";
  SweepRun run = RunSweep(w, MakeSetup(2, Adjacent(2)));
  EXPECT_TRUE(run.result.faults.empty());
  EXPECT_TRUE(run.result.rails.faults.empty());
  EXPECT_EQ(run.result.rails.inconclusive.size(), 1u);
}

}  // namespace
}  // namespace nccl_triage
