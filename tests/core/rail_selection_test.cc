// probe.rails: parsing and which rails a sweep probes.
#include "core/rail_selection.h"

#include <gtest/gtest.h>

namespace nccl_triage {
namespace {

std::vector<Rail> EightRails() {
  std::vector<Rail> rails;
  for (int i = 0; i < 8; ++i) {
    Rail r;
    r.index = i;
    r.device = "mlx5_" + std::to_string(i);
    r.port = 1;
    r.rate_gbps = 200;
    rails.push_back(r);
  }
  return rails;
}

TEST(ParseRailSelection, ReadsAllACountAndAList) {
  EXPECT_TRUE(ParseRailSelection("all")->all);
  EXPECT_EQ(ParseRailSelection(" 2 ")->count, 2);
  EXPECT_EQ(ParseRailSelection("0,3")->items, (std::vector<std::string>{"0", "3"}));
  EXPECT_EQ(ParseRailSelection("mlx5_3, mlx5_5:1")->items,
            (std::vector<std::string>{"mlx5_3", "mlx5_5:1"}));
}

TEST(ParseRailSelection, RejectsWhatIsNeither) {
  for (const char* bad : {"", "0", "65", "-1", "all,0", "mlx5_0,,", "mlx 5", "3;4"}) {
    auto s = ParseRailSelection(bad);
    EXPECT_FALSE(s.ok()) << bad;
  }
  EXPECT_NE(ParseRailSelection("0").status().message().find("expected all"), std::string::npos);
}

TEST(SelectRails, AllTakesEveryRail) {
  EXPECT_EQ(SelectRails(EightRails(), *ParseRailSelection("all"), 7),
            (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
}

TEST(SelectRails, ACountTakesTurnsSoEveryRailIsCoveredInCeilRailsOverNSweeps) {
  const auto sel = *ParseRailSelection("3");
  EXPECT_EQ(SelectRails(EightRails(), sel, 0), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(SelectRails(EightRails(), sel, 1), (std::vector<int>{3, 4, 5}));
  EXPECT_EQ(SelectRails(EightRails(), sel, 2), (std::vector<int>{0, 6, 7}));
  EXPECT_EQ(SelectRails(EightRails(), sel, 3), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(SelectRails(EightRails(), *ParseRailSelection("20"), 5).size(), 8u);
}

TEST(SelectRails, AListNamesRailsByNumberOrHcaAndReportsMisses) {
  const auto sel = *ParseRailSelection("mlx5_5,2,mlx5_7:1,mlx5_9,mlx5_1:2");
  EXPECT_EQ(SelectRails(EightRails(), sel, 0), (std::vector<int>{2, 5, 7}));
  EXPECT_EQ(RailSelectionMisses(EightRails(), sel),
            (std::vector<std::string>{"mlx5_9", "mlx5_1:2"}));
  EXPECT_TRUE(SelectRails({}, sel, 0).empty());
}

TEST(RailsToProbe, AnHcaTheNodeLacksIsStillProbedAndAMissingRailNumberIsAnError) {
  auto rails = RailsToProbe(EightRails(), *ParseRailSelection("mlx5_9:2,mlx5_3"), 0);
  ASSERT_TRUE(rails.ok()) << rails.status().message();
  ASSERT_EQ(rails->size(), 2u);
  EXPECT_EQ((*rails)[0].index, 3);
  EXPECT_EQ((*rails)[1].index, -1);
  EXPECT_EQ((*rails)[1].device, "mlx5_9");
  EXPECT_EQ((*rails)[1].port, 2);
  EXPECT_EQ((*rails)[1].state, "absent");
  EXPECT_EQ(RailsToProbe({}, *ParseRailSelection("mlx5_0"), 0)->front().device, "mlx5_0");

  auto missing = RailsToProbe(EightRails(), *ParseRailSelection("1,9"), 0);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message(), "this node has no rail 9 (it has 8)");
  EXPECT_FALSE(RailsToProbe(EightRails(), *ParseRailSelection("mlx5_1:x"), 0).ok());
  auto none = RailsToProbe({}, *ParseRailSelection("all"), 0);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("no rails"), std::string::npos);
  EXPECT_EQ(RailsToProbe(EightRails(), *ParseRailSelection("2"), 1)->size(), 2u);
}

TEST(RailIbHca, SelectsExactlyOnePortWithNcclSyntax) {
  EXPECT_EQ(RailIbHca(EightRails()[3]), "=mlx5_3:1");
  EXPECT_DOUBLE_EQ(RailExpectedBytesPerSecond(EightRails()[3]), 25e9);
  EXPECT_EQ(RailExpectedBytesPerSecond(Rail{}), 0.0);
}

}  // namespace
}  // namespace nccl_triage

namespace nccl_triage {
namespace {

TEST(RailPortName, NamesTheHcaPortAndSplitsBack) {
  Rail r;
  r.device = "mlx5_10";
  r.port = 2;
  EXPECT_EQ(RailPortName(r), "mlx5_10/2");
  EXPECT_EQ(SplitRailPortName("mlx5_10/2"), (std::pair<std::string, int>{"mlx5_10", 2}));
  EXPECT_EQ(SplitRailPortName("mlx5_3"), (std::pair<std::string, int>{"mlx5_3", 0}));
  for (const std::string bad : {"mlx5_3/x", "mlx5_3/1x", "mlx5_3/", "mlx5_3/-1"}) {
    EXPECT_EQ(SplitRailPortName(bad), (std::pair<std::string, int>{bad, 0}))
        << bad << ": a port that is not a number leaves the name whole";
  }
  EXPECT_EQ(SplitRailPortName(""), (std::pair<std::string, int>{"", 0}));
}

}  // namespace
}  // namespace nccl_triage
