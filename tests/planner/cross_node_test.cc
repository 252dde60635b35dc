#include "planner/cross_node.h"

#include <gtest/gtest.h>

namespace nccl_triage {
namespace {

NodeInfo Node(std::string name, std::string link_layer = "InfiniBand",
              std::vector<PKeyInfo> pkeys = {{0x7fff, true, 0}}) {
  NodeInfo n;
  n.name = std::move(name);
  n.arch = "x86_64";
  n.nccl_version = "2.28.9";
  n.cuda_driver_version = 13000;
  HcaInfo h;
  h.name = "mlx5_0";
  PortInfo p;
  p.num = 1;
  p.link_layer = std::move(link_layer);
  p.rate_gbps = 200;
  p.state = "ACTIVE";
  p.pkeys = std::move(pkeys);
  h.ports.push_back(p);
  n.hcas.push_back(h);
  return n;
}

Finding Get(const std::vector<Finding>& fs, const std::string& id) {
  for (const auto& f : fs) {
    if (f.check == id) return f;
  }
  ADD_FAILURE() << "no finding " << id;
  return {};
}

TEST(CrossNodeChecks, IdenticalNodesPassEveryCheck) {
  auto fs = CrossNodeChecks(Node("a"), Node("b"));
  ASSERT_EQ(fs.size(), 4u);
  for (const auto& f : fs) EXPECT_EQ(f.status, CheckStatus::kPass) << f.check << ": " << f.message;
  EXPECT_FALSE(PredictedIncompatible(Node("a"), Node("b")));
}

TEST(CrossNodeChecks, NcclVersionSkewFailsAsArchitecture) {
  NodeInfo b = Node("b");
  b.nccl_version = "2.18.1";
  Finding f = Get(CrossNodeChecks(Node("a"), b), "pair.version_skew");
  EXPECT_EQ(f.status, CheckStatus::kFail);
  EXPECT_EQ(f.fault_class, FaultClass::kArchitecture);
  EXPECT_NE(f.message.find("2.18.1"), std::string::npos);
  EXPECT_FALSE(f.remedy.empty());
  EXPECT_TRUE(PredictedIncompatible(Node("a"), b));
}

TEST(CrossNodeChecks, CudaDriverSkewOnlyWarns) {
  NodeInfo b = Node("b");
  b.cuda_driver_version = 12040;
  Finding f = Get(CrossNodeChecks(Node("a"), b), "pair.version_skew");
  EXPECT_EQ(f.status, CheckStatus::kWarn);
  EXPECT_NE(f.message.find("12.4"), std::string::npos);
  EXPECT_FALSE(PredictedIncompatible(Node("a"), b));
}

TEST(CrossNodeChecks, UnknownVersionsSkipNeverFail) {
  NodeInfo a = Node("a");
  NodeInfo b = Node("b");
  a.nccl_version.clear();
  a.cuda_driver_version = 0;
  EXPECT_EQ(Get(CrossNodeChecks(a, b), "pair.version_skew").status, CheckStatus::kSkip);
  b.arch.clear();
  EXPECT_EQ(Get(CrossNodeChecks(a, b), "pair.arch_mixed").status, CheckStatus::kSkip);
}

TEST(CrossNodeChecks, MixedArchitecturesFail) {
  NodeInfo b = Node("b");
  b.arch = "aarch64";
  Finding f = Get(CrossNodeChecks(Node("a"), b), "pair.arch_mixed");
  EXPECT_EQ(f.status, CheckStatus::kFail);
  EXPECT_EQ(f.evidence.size(), 2u);
}

TEST(CrossNodeChecks, PKeysWithNoCommonFullMemberFail) {
  // Both limited members of 0x0001: limited-limited ports cannot talk.
  NodeInfo a = Node("a", "InfiniBand", {{0x0001, false, 0}, {0x0002, true, 1}});
  NodeInfo b = Node("b", "InfiniBand", {{0x0001, false, 0}, {0x0003, true, 1}});
  Finding f = Get(CrossNodeChecks(a, b), "pair.pkey_partition");
  EXPECT_EQ(f.status, CheckStatus::kFail);
  EXPECT_EQ(f.fault_class, FaultClass::kIbResource);
  EXPECT_NE(f.message.find("0x8002"), std::string::npos) << f.message;
  EXPECT_TRUE(PredictedIncompatible(a, b));
}

TEST(CrossNodeChecks, OneFullMemberIsEnoughForAPartition) {
  NodeInfo a = Node("a", "InfiniBand", {{0x0001, true, 0}});
  NodeInfo b = Node("b", "InfiniBand", {{0x0001, false, 0}});
  EXPECT_EQ(Get(CrossNodeChecks(a, b), "pair.pkey_partition").status, CheckStatus::kPass);
}

TEST(CrossNodeChecks, RoCEPortsHaveNoPartitionToCompare) {
  NodeInfo a = Node("a", "Ethernet", {});
  NodeInfo b = Node("b", "Ethernet", {});
  EXPECT_EQ(Get(CrossNodeChecks(a, b), "pair.pkey_partition").status, CheckStatus::kSkip);
  EXPECT_EQ(Get(CrossNodeChecks(a, b), "pair.link_layer").status, CheckStatus::kPass);
}

TEST(CrossNodeChecks, InfiniBandAgainstRoCEFails) {
  Finding f = Get(CrossNodeChecks(Node("a"), Node("b", "Ethernet", {})), "pair.link_layer");
  EXPECT_EQ(f.status, CheckStatus::kFail);
  EXPECT_NE(f.message.find("Ethernet"), std::string::npos);
  EXPECT_TRUE(PredictedIncompatible(Node("a"), Node("b", "Ethernet", {})));
}

TEST(CrossNodeChecks, NodesWithoutHcasSkipTheFabricChecks) {
  NodeInfo a = Node("a");
  a.hcas.clear();
  auto fs = CrossNodeChecks(a, Node("b"));
  EXPECT_EQ(Get(fs, "pair.link_layer").status, CheckStatus::kSkip);
  EXPECT_EQ(Get(fs, "pair.pkey_partition").status, CheckStatus::kSkip);
}

}  // namespace
}  // namespace nccl_triage
