#include "planner/hold_down.h"

#include <gtest/gtest.h>

namespace nccl_triage {
namespace {

SweepResult Sweep(uint64_t n, std::vector<LocalisedFault> faults, std::set<std::string> nodes,
                  std::set<NodePair> pairs) {
  SweepResult r;
  r.number = n;
  r.faults = std::move(faults);
  r.tested_nodes = std::move(nodes);
  r.tested_pairs = std::move(pairs);
  return r;
}

LocalisedFault NodeFault(const std::string& n) {
  return {FaultKind::kNode, {n}, FaultClass::kIbResource, {"ib.port_state"}, ""};
}
LocalisedFault LinkFault(const std::string& a, const std::string& b) {
  return {FaultKind::kLink, {a, b}, FaultClass::kIbResource, {"ib.fabric"}, ""};
}

TEST(HoldDown, ConfirmsAFaultOnlyAfterItRepeatsHoldDownSweeps) {
  HoldDown h(2);
  h.Apply(Sweep(1, {NodeFault("a")}, {"a", "b"}, {}));
  EXPECT_TRUE(h.Confirmed().empty());
  ASSERT_EQ(h.All().size(), 1u);
  h.Apply(Sweep(2, {NodeFault("a")}, {"a", "b"}, {}));
  ASSERT_EQ(h.Confirmed().size(), 1u);
  EXPECT_EQ(h.Confirmed()[0].first_seen_sweep, 1u);
  EXPECT_EQ(h.Confirmed()[0].last_seen_sweep, 2u);
}

TEST(HoldDown, OneTransientFailureIsForgottenWhenTheNextSweepSeesNothing) {
  HoldDown h(2);
  h.Apply(Sweep(1, {NodeFault("a")}, {"a"}, {}));
  h.Apply(Sweep(2, {}, {"a"}, {}));
  EXPECT_TRUE(h.All().empty());
  h.Apply(Sweep(3, {NodeFault("a")}, {"a"}, {}));
  EXPECT_TRUE(h.Confirmed().empty());  // the streak restarted
}

TEST(HoldDown, ASweepThatCouldNotLookChangesNothing) {
  HoldDown h(2);
  h.Apply(Sweep(1, {NodeFault("a")}, {"a"}, {}));
  h.Apply(Sweep(2, {}, {"b"}, {}));  // a was busy: not tested
  ASSERT_EQ(h.All().size(), 1u);
  h.Apply(Sweep(3, {NodeFault("a")}, {"a"}, {}));
  EXPECT_EQ(h.Confirmed().size(), 1u);
}

TEST(HoldDown, AConfirmedFaultClearsOnlyAfterHoldDownCleanSweeps) {
  HoldDown h(3);
  for (uint64_t s = 1; s <= 3; ++s)
    h.Apply(Sweep(s, {LinkFault("a", "b")}, {}, {NodePair("a", "b")}));
  ASSERT_EQ(h.Confirmed().size(), 1u);
  h.Apply(Sweep(4, {}, {}, {NodePair("a", "b")}));
  h.Apply(Sweep(5, {}, {}, {NodePair("a", "b")}));
  EXPECT_EQ(h.Confirmed().size(), 1u);
  h.Apply(Sweep(6, {}, {}, {NodePair("a", "b")}));
  EXPECT_TRUE(h.All().empty());
}

TEST(HoldDown, AFlapInsideTheClearWindowKeepsItConfirmed) {
  HoldDown h(2);
  h.Apply(Sweep(1, {LinkFault("a", "b")}, {}, {NodePair("a", "b")}));
  h.Apply(Sweep(2, {LinkFault("a", "b")}, {}, {NodePair("a", "b")}));
  h.Apply(Sweep(3, {}, {}, {NodePair("a", "b")}));
  h.Apply(Sweep(4, {LinkFault("a", "b")}, {}, {NodePair("a", "b")}));
  h.Apply(Sweep(5, {}, {}, {NodePair("a", "b")}));
  EXPECT_EQ(h.Confirmed().size(), 1u);
}

TEST(HoldDown, HoldDownOfOneConfirmsAtOnce) {
  HoldDown h(1);
  h.Apply(Sweep(1, {NodeFault("x")}, {"x"}, {}));
  EXPECT_EQ(h.Confirmed().size(), 1u);
}

TEST(HoldDown, EveryTrackedLinkIsRetestedAndNodesAreNot) {
  HoldDown h(2);
  h.Apply(Sweep(1, {NodeFault("a"), LinkFault("c", "d")}, {"a"}, {NodePair("c", "d")}));
  EXPECT_EQ(h.LinksToRetest(), std::vector<NodePair>{NodePair("c", "d")});
  ASSERT_NE(h.FindLink(NodePair("d", "c")), nullptr);
  ASSERT_NE(h.FindNode("a"), nullptr);
  EXPECT_EQ(h.FindNode("c"), nullptr);
  h.Forget("c");
  EXPECT_TRUE(h.LinksToRetest().empty());
}

}  // namespace
}  // namespace nccl_triage
