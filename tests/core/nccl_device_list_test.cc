#include "core/nccl_device_list.h"

#include <gtest/gtest.h>

namespace nccl_triage {
namespace {

TEST(NcclDeviceList, HcaEntriesArePrefixesUnlessExactAndMayNameAPort) {
  const NcclDeviceList f = ParseNcclDeviceList("mlx5_1,mlx5_2:1");
  EXPECT_TRUE(NcclDeviceListSelects(f, "mlx5_1", 1));
  EXPECT_TRUE(NcclDeviceListSelects(f, "mlx5_10", 1));  // prefix match, as NCCL does
  EXPECT_TRUE(NcclDeviceListSelects(f, "mlx5_2", 1));
  EXPECT_FALSE(NcclDeviceListSelects(f, "mlx5_2", 2));
  EXPECT_FALSE(NcclDeviceListSelects(f, "mlx5_0", 1));

  const NcclDeviceList exact = ParseNcclDeviceList("=mlx5_1");
  EXPECT_TRUE(exact.exact);
  EXPECT_FALSE(NcclDeviceListSelects(exact, "mlx5_10", 1));

  const NcclDeviceList excl = ParseNcclDeviceList("^mlx5_0");
  EXPECT_TRUE(excl.exclude);
  EXPECT_FALSE(NcclDeviceListSelects(excl, "mlx5_0", 1));
  EXPECT_TRUE(NcclDeviceListSelects(excl, "mlx5_1", 1));
}

TEST(NcclDeviceList, RailAndPlaneAfterThePortDoNotChangeWhichPortIsSelected) {
  const NcclDeviceList f = ParseNcclDeviceList("=mlx5_3:1:3:0");
  ASSERT_EQ(f.entries.size(), 1u);
  EXPECT_EQ(f.entries[0].port, 1);
  EXPECT_TRUE(NcclDeviceListSelects(f, "mlx5_3", 1));
  EXPECT_FALSE(NcclDeviceListSelects(f, "mlx5_3", 2));
}

TEST(NcclDeviceList, InterfacesIgnoreThePortAndExclusionsInvertTheMatch) {
  const NcclDeviceList f = ParseNcclDeviceList("eth0:5000,ib");
  EXPECT_TRUE(NcclDeviceListSelects(f, "eth0"));
  EXPECT_TRUE(NcclDeviceListSelects(f, "ib3"));
  EXPECT_FALSE(NcclDeviceListSelects(f, "docker0"));

  const NcclDeviceList excl = ParseNcclDeviceList("^=docker0,lo");
  EXPECT_TRUE(excl.exclude);
  EXPECT_TRUE(excl.exact);
  EXPECT_FALSE(NcclDeviceListSelects(excl, "lo"));
  EXPECT_TRUE(NcclDeviceListSelects(excl, "docker01"));  // exact: not a prefix
}

TEST(NcclDeviceList, AnEmptyListSelectsEverythingAndEmptyItemsAreDropped) {
  EXPECT_TRUE(ParseNcclDeviceList("").entries.empty());
  EXPECT_TRUE(NcclDeviceListSelects(ParseNcclDeviceList(""), "anything", 1));
  const NcclDeviceList f = ParseNcclDeviceList("  ,mlx5_0,,");
  ASSERT_EQ(f.entries.size(), 1u);
  EXPECT_EQ(f.entries[0].name, "mlx5_0");
  EXPECT_TRUE(ParseNcclDeviceList("^").entries.empty());
}

TEST(NcclDeviceList, IntegerParsingFollowsStrtoll) {
  EXPECT_EQ(ParseNcclInt("1"), 1);
  EXPECT_EQ(ParseNcclInt(" 3abc"), 3);
  EXPECT_EQ(ParseNcclInt("-1"), -1);
  EXPECT_FALSE(ParseNcclInt("yes"));
  EXPECT_FALSE(ParseNcclInt(""));
}

}  // namespace
}  // namespace nccl_triage
