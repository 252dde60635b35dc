#include "planner/schedule.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

namespace nccl_triage {
namespace {

std::vector<std::pair<std::string, std::string>> Nodes(int n, int groups = 0) {
  std::vector<std::pair<std::string, std::string>> out;
  for (int i = 0; i < n; ++i) {
    out.emplace_back("node-" + std::to_string(100 + i),
                     groups > 0 ? "sw" + std::to_string(i % groups) : "");
  }
  return out;
}

bool All(const std::string&) { return true; }

TEST(CircleRound, CoversEveryPairExactlyOnceInNMinusOneRoundsForEvenN) {
  for (int n : {2, 4, 8, 16, 30, 64}) {
    std::map<std::pair<int, int>, int> seen;
    ASSERT_EQ(CircleRounds(n), n - 1);
    for (int r = 0; r < CircleRounds(n); ++r) {
      std::set<int> used;
      auto pairs = CircleRound(n, r);
      EXPECT_EQ(pairs.size(), static_cast<size_t>(n / 2));
      for (auto [a, b] : pairs) {
        EXPECT_TRUE(used.insert(a).second) << "round " << r << " not disjoint";
        EXPECT_TRUE(used.insert(b).second) << "round " << r << " not disjoint";
        ++seen[{std::min(a, b), std::max(a, b)}];
      }
    }
    EXPECT_EQ(seen.size(), static_cast<size_t>(n * (n - 1) / 2)) << "n=" << n;
    for (const auto& [p, count] : seen) EXPECT_EQ(count, 1);
  }
}

TEST(CircleRound, OddNGivesEachNodeOneByeAndCoversEveryPairInNRounds) {
  for (int n : {3, 5, 9, 31}) {
    std::set<std::pair<int, int>> seen;
    std::map<int, int> sat_out;
    ASSERT_EQ(CircleRounds(n), n);
    for (int r = 0; r < n; ++r) {
      std::set<int> used;
      for (auto [a, b] : CircleRound(n, r)) {
        EXPECT_LT(a, n);
        EXPECT_LT(b, n);
        used.insert(a);
        used.insert(b);
        EXPECT_TRUE(seen.insert({std::min(a, b), std::max(a, b)}).second);
      }
      EXPECT_EQ(used.size(), static_cast<size_t>(n - 1));
      for (int i = 0; i < n; ++i) {
        if (!used.count(i)) ++sat_out[i];
      }
    }
    EXPECT_EQ(seen.size(), static_cast<size_t>(n * (n - 1) / 2));
    for (int i = 0; i < n; ++i) EXPECT_EQ(sat_out[i], 1);
  }
}

TEST(CoverageSchedule, CoversEveryPairOfTheClusterInNMinusOneRounds) {
  CoverageSchedule s(7);
  s.SetNodes(Nodes(16));
  std::set<NodePair> seen;
  for (int r = 0; r < 15; ++r) {
    auto round = s.NextRound(All);
    EXPECT_EQ(round.size(), 8u);
    std::set<std::string> used;
    for (const auto& p : round) {
      EXPECT_TRUE(used.insert(p.a).second);
      EXPECT_TRUE(used.insert(p.b).second);
      EXPECT_TRUE(seen.insert(p).second) << "pair repeated before coverage: " << ToString(p);
      s.MarkTested(p);
    }
    if (r < 14) {
      EXPECT_EQ(s.pairs_tested(), static_cast<uint64_t>((r + 1) * 8));
    }
  }
  EXPECT_EQ(seen.size(), 120u);
  // Coverage complete: counted, and shown complete until the next cycle's first round.
  EXPECT_EQ(s.cycles_completed(), 1u);
  EXPECT_EQ(s.pairs_tested(), 120u);
  EXPECT_EQ(s.pairs_total(), 120u);
  auto next = s.NextRound(All);
  EXPECT_EQ(next.size(), 8u);
  EXPECT_EQ(s.pairs_tested(), 0u);
  for (const auto& p : next) EXPECT_FALSE(s.IsTested(p));
}

TEST(CoverageSchedule, FirstRoundsCrossTopologyGroups) {
  CoverageSchedule s(3);
  s.SetNodes(Nodes(16, 2));  // two switches of eight
  std::map<std::string, std::string> topo;
  for (const auto& [n, t] : Nodes(16, 2)) topo[n] = t;
  // 64 of the 120 pairs cross the switches. The circle method's rounds hold 8, 8, 6, 6, 6, 6, 4,
  // 4, ... cross pairs whatever the seating; the schedule runs them in that order: the first two
  // rounds cross entirely and the first eight carry the most cross pairs possible (48).
  int cross_in_first_rounds = 0;
  int pairs_in_first_rounds = 0;
  for (int r = 0; r < 8; ++r) {
    int cross = 0;
    for (const auto& p : s.NextRound(All)) {
      ++pairs_in_first_rounds;
      if (topo[p.a] != topo[p.b]) ++cross;
      s.MarkTested(p);
    }
    if (r < 2) {
      EXPECT_EQ(cross, 8) << "round " << r;
    }
    cross_in_first_rounds += cross;
  }
  EXPECT_EQ(pairs_in_first_rounds, 64);
  EXPECT_EQ(cross_in_first_rounds, 48);
  auto first = CoverageSchedule(3);
  first.SetNodes(Nodes(16, 2));
  for (const auto& p : first.NextRound(All)) EXPECT_NE(topo[p.a], topo[p.b]) << ToString(p);
}

TEST(CoverageSchedule, PairsLeftoverNodesWhenSomeAreUnavailable) {
  CoverageSchedule s(11);
  s.SetNodes(Nodes(8));
  auto round = s.NextRound([](const std::string& n) { return n != "node-100" && n != "node-101"; });
  std::set<std::string> used;
  for (const auto& p : round) {
    EXPECT_FALSE(p.Has("node-100"));
    EXPECT_FALSE(p.Has("node-101"));
    used.insert(p.a);
    used.insert(p.b);
  }
  EXPECT_EQ(used.size(), 6u);  // every available node has a partner
}

TEST(CoverageSchedule, KeepsTestedPairsAcrossANodeSetChangeAndRunsUntestedFirst) {
  CoverageSchedule s(5);
  s.SetNodes(Nodes(8));
  std::set<NodePair> tested;
  for (int r = 0; r < 3; ++r) {
    for (const auto& p : s.NextRound(All)) {
      s.MarkTested(p);
      tested.insert(p);
    }
  }
  EXPECT_EQ(s.pairs_tested(), 12u);
  auto nodes = Nodes(10);  // two nodes join
  s.SetNodes(nodes);
  EXPECT_EQ(s.pairs_total(), 45u);
  EXPECT_EQ(s.pairs_tested(), 12u);
  // The remaining 33 untested pairs are covered before anything already tested repeats: every
  // round is chosen for its untested pairs, so coverage completes within the 9 rounds of 10 nodes
  // plus a few partial rounds.
  int rounds = 0;
  while (s.cycles_completed() == 0 && rounds < 30) {
    for (const auto& p : s.NextRound(All)) s.MarkTested(p);
    ++rounds;
  }
  EXPECT_EQ(s.cycles_completed(), 1u);
  EXPECT_LE(rounds, 12);
}

TEST(CoverageSchedule, UnchangedNodeSetKeepsTheSeating) {
  CoverageSchedule a(9);
  a.SetNodes(Nodes(6));
  auto r1 = a.NextRound(All);
  for (const auto& p : r1) a.MarkTested(p);
  a.SetNodes(Nodes(6));  // same set: nothing rebuilt
  EXPECT_EQ(a.pairs_tested(), 3u);
  for (const auto& p : a.NextRound(All)) EXPECT_FALSE(a.IsTested(p));
}

TEST(CoverageSchedule, FewerThanTwoNodesHaveNoRounds) {
  CoverageSchedule s;
  s.SetNodes(Nodes(1));
  EXPECT_TRUE(s.NextRound(All).empty());
  EXPECT_EQ(s.pairs_total(), 0u);
}

}  // namespace
}  // namespace nccl_triage
