// ib.subnet_manager, ib.pkey, ib.gid.
#include <gtest/gtest.h>

#include "checks/builtin.h"
#include "checks/snapshot_builder.h"

namespace nccl_triage {
namespace {

using namespace testing;  // NOLINT: test helpers
using checks::IbPkey;
using checks::IbSubnetManager;

IbPort& Port(NodeSnapshot& s, int hca) {
  return s.ib_devices.at(static_cast<size_t>(hca)).ports.at(0);
}

TEST(SubnetManagerCheck, PassesWhenEveryLinkedPortHasLids) {
  Finding f = RunOne(&IbSubnetManager, HealthyIbNode(2));
  EXPECT_EQ(f.status, CheckStatus::kPass);
  EXPECT_TRUE(HasEvidenceFrom(f, "ports/1/sm_lid"));
}

TEST(SubnetManagerCheck, FailsWhenSmLidIsZero) {
  NodeSnapshot s = HealthyIbNode(2);
  for (int i = 0; i < 2; ++i) {
    Port(s, i).state = Have<std::string>("2: INIT");
    Port(s, i).lid = Have<uint32_t>(0);
    Port(s, i).sm_lid = Have<uint32_t>(0);
  }
  Finding f = RunOne(&IbSubnetManager, s);
  EXPECT_EQ(f.status, CheckStatus::kFail);
  EXPECT_NE(f.message.find("mlx5_0/1 (lid 0x0, sm_lid 0x0)"), std::string::npos);
}

TEST(SubnetManagerCheck, SkipsOnRoce) {
  Finding f = RunOne(&IbSubnetManager, HealthyRoceNode());
  EXPECT_EQ(f.status, CheckStatus::kSkip);
  EXPECT_NE(f.message.find("RoCE"), std::string::npos);
}

TEST(SubnetManagerCheck, DoesNotBlameTheSmForAPortWithoutLink) {
  NodeSnapshot s = HealthyIbNode(2);
  Port(s, 1).phys_state = Have<std::string>("2: Polling");
  Port(s, 1).lid = Have<uint32_t>(0);
  EXPECT_EQ(RunOne(&IbSubnetManager, s).status, CheckStatus::kPass);
}

TEST(SubnetManagerCheck, SkipsWhenLidsAreUnreadable) {
  NodeSnapshot s = HealthyIbNode(2);
  for (int i = 0; i < 2; ++i) {
    Port(s, i).lid = Unreadable<uint32_t>();
    Port(s, i).sm_lid = Unreadable<uint32_t>();
  }
  EXPECT_EQ(RunOne(&IbSubnetManager, s).status, CheckStatus::kSkip);
}

TEST(PkeyCheck, PassesWithTheDefaultFullKeyWhenNothingIsConfigured) {
  EXPECT_EQ(RunOne(&IbPkey, HealthyIbNode()).status, CheckStatus::kPass);
}

TEST(PkeyCheck, PassesWhenTheConfiguredKeyIsAFullMember) {
  NodeSnapshot s = HealthyIbNode(2);
  for (int i = 0; i < 2; ++i) {
    Port(s, i).pkeys = {0xffff, 0x8001};
    Port(s, i).pkey_indices = {0, 1};
  }
  Config c;
  c.expect.pkey = 0x0001;
  Finding f = RunOne(&IbPkey, s, c);
  EXPECT_EQ(f.status, CheckStatus::kPass);
  EXPECT_NE(f.message.find("NCCL_IB_PKEY=1"), std::string::npos);
}

TEST(PkeyCheck, FailsWhenTheConfiguredKeyIsAbsent) {
  Config c;
  c.expect.pkey = 0x0002;
  Finding f = RunOne(&IbPkey, HealthyIbNode(2), c);
  EXPECT_EQ(f.status, CheckStatus::kFail);
  EXPECT_NE(f.message.find("PKey 0x8002 absent on mlx5_0/1, mlx5_1/1"), std::string::npos);
  EXPECT_TRUE(HasEvidenceFrom(f, "sys/class/infiniband/mlx5_0/ports/1/pkeys"));
}

TEST(PkeyCheck, FailsWhenTheConfiguredKeyHasOnlyLimitedMembership) {
  NodeSnapshot s = HealthyIbNode(2);
  Port(s, 1).pkeys = {0xffff, 0x0001};
  Port(s, 1).pkey_indices = {0, 1};
  Port(s, 0).pkeys = {0xffff, 0x8001};
  Port(s, 0).pkey_indices = {0, 1};
  Config c;
  c.expect.pkey = 0x8001;  // the membership bit in the configured value is ignored
  Finding f = RunOne(&IbPkey, s, c);
  EXPECT_EQ(f.status, CheckStatus::kFail);
  EXPECT_NE(f.message.find("limited membership (0x0001) on mlx5_1/1"), std::string::npos);
}

TEST(PkeyCheck, WarnsWhenTheKeySitsAtDifferentIndices) {
  NodeSnapshot s = HealthyIbNode(2);
  Port(s, 0).pkeys = {0xffff, 0x8001};
  Port(s, 0).pkey_indices = {0, 1};
  Port(s, 1).pkeys = {0xffff, 0x8001};
  Port(s, 1).pkey_indices = {0, 2};
  Config c;
  c.expect.pkey = 1;
  EXPECT_EQ(RunOne(&IbPkey, s, c).status, CheckStatus::kWarn);
}

TEST(PkeyCheck, WarnsWhenIndexZeroIsALimitedMember) {
  NodeSnapshot s = HealthyIbNode(1);
  Port(s, 0).pkeys = {0x7fff};
  EXPECT_EQ(RunOne(&IbPkey, s).status, CheckStatus::kWarn);
}

TEST(PkeyCheck, SkipsWhenNoTableIsReadable) {
  NodeSnapshot s = HealthyIbNode(1);
  Port(s, 0).pkeys.clear();
  Port(s, 0).pkeys_error = "unreadable: EACCES";
  Config c;
  c.expect.pkey = 1;
  EXPECT_EQ(RunOne(&IbPkey, s, c).status, CheckStatus::kSkip);
}

Finding Gid(const NodeSnapshot& s, const Config& c = {}) { return checks::IbGid(s, c, {}); }

TEST(GidCheck, PassesWithARoutableRoceV2Gid) {
  Finding f = Gid(HealthyRoceNode());
  EXPECT_EQ(f.status, CheckStatus::kPass);
}

TEST(GidCheck, SkipsOnInfiniBand) { EXPECT_EQ(Gid(HealthyIbNode()).status, CheckStatus::kSkip); }

TEST(GidCheck, FailsWithoutAnyRoceV2Gid) {
  NodeSnapshot s = HealthyRoceNode(1);
  auto& gids = Port(s, 0).gids;
  std::erase_if(gids, [](const nccl_triage::IbGid& g) { return g.type == "RoCE v2"; });
  Finding f = Gid(s);
  EXPECT_EQ(f.status, CheckStatus::kFail);
  EXPECT_NE(f.message.find("no RoCE v2 GID"), std::string::npos);
}

TEST(GidCheck, WarnsWhenOnlyLinkLocalV2GidsExist) {
  NodeSnapshot s = HealthyRoceNode(1);
  auto& gids = Port(s, 0).gids;
  gids.resize(2);  // fe80 v1 and v2: the netdev has no address
  EXPECT_EQ(Gid(s).status, CheckStatus::kWarn);
}

TEST(GidCheck, FailsWhenTheConfiguredIndexIsRoceV1) {
  Config c;
  c.expect.ib_gid_index = 2;
  Finding f = Gid(HealthyRoceNode(1), c);
  EXPECT_EQ(f.status, CheckStatus::kFail);
  EXPECT_NE(f.message.find("GID index 2 is IB/RoCE v1"), std::string::npos);
  EXPECT_TRUE(HasEvidenceFrom(f, "gid_attrs/types/2"));
}

TEST(GidCheck, FailsWhenTheConfiguredIndexIsEmpty) {
  Config c;
  c.expect.ib_gid_index = 7;
  EXPECT_EQ(Gid(HealthyRoceNode(1), c).status, CheckStatus::kFail);
}

TEST(GidCheck, PassesWhenTheConfiguredIndexIsRoceV2) {
  Config c;
  c.expect.ib_gid_index = 3;
  EXPECT_EQ(Gid(HealthyRoceNode(2), c).status, CheckStatus::kPass);
}

TEST(GidCheck, SkipsWhenGidTypesAreUnreadable) {
  NodeSnapshot s = HealthyRoceNode(1);
  for (auto& g : Port(s, 0).gids) g.type.clear();
  EXPECT_EQ(Gid(s).status, CheckStatus::kSkip);
}

}  // namespace
}  // namespace nccl_triage
