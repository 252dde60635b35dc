#include "planner/pair_judge.h"

#include <gtest/gtest.h>

#include "planner/rail_localisation.h"

namespace nccl_triage {
namespace {

NodeInfo Node(std::string name) {
  NodeInfo n;
  n.name = std::move(name);
  n.arch = "x86_64";
  n.nccl_version = "2.28.9";
  return n;
}

ProbeResult Result(ProbeMode mode, int rank, ProbeOutcome outcome,
                   std::vector<std::string> causes = {}, FaultClass cls = FaultClass::kUnknown) {
  ProbeResult r;
  r.mode = mode;
  r.rank = rank;
  r.outcome = outcome;
  r.transport = mode == ProbeMode::kIb ? "NET/IB" : "NET/Socket";
  r.busbw_bytes_per_second = rank == 0 ? 20e9 : 18e9;
  if (!causes.empty()) {
    Classification c;
    c.fault_class = cls;
    for (auto& id : causes) {
      ClassifiedCause cc;
      cc.cause = id;
      cc.fault_class = cls;
      cc.confidence = 0.9;
      c.causes.push_back(cc);
    }
    r.classification = c;
  }
  return r;
}

ModeProbes Both(ProbeResult r0, ProbeResult r1) {
  ModeProbes m;
  m.attempted = true;
  m.rank0 = std::move(r0);
  m.rank1 = std::move(r1);
  return m;
}

PairProbes Probes(ModeProbes socket, ModeProbes ib) {
  PairProbes p;
  p.pair = NodePair("a", "b");
  p.socket = std::move(socket);
  p.ib = std::move(ib);
  return p;
}

TEST(MergeRanks, RootIsTheRankWhoseLogNamesASpecificCause) {
  // Rank 1 fails in ibv_reg_mr; rank 0 only sees its peer go away.
  ModeProbes m = Both(
      Result(ProbeMode::kIb, 0, ProbeOutcome::kFail, {"peer.exited"}),
      Result(ProbeMode::kIb, 1, ProbeOutcome::kFail, {"limits.memlock"}, FaultClass::kIbResource));
  ProbeResult r = MergeRanks(m, ProbeMode::kIb);
  EXPECT_EQ(r.rank, 1);
  ASSERT_TRUE(r.classification);
  EXPECT_EQ(r.classification->causes[0].cause, "limits.memlock");
  EXPECT_EQ(r.classification->causes.size(), 1u);  // peer.exited is a consequence, not added
}

TEST(MergeRanks, ARankThatHungIsTheRootOfItsPeersRemoteError) {
  ModeProbes m = Both(Result(ProbeMode::kSocket, 0, ProbeOutcome::kTimeout),
                      Result(ProbeMode::kSocket, 1, ProbeOutcome::kFail, {"peer.exited"}));
  ProbeResult r = MergeRanks(m, ProbeMode::kSocket);
  EXPECT_EQ(r.rank, 0);
  EXPECT_EQ(r.outcome, ProbeOutcome::kTimeout);
}

TEST(MergeRanks, PassingPairIsAsFastAsItsSlowerRank) {
  ProbeResult r = MergeRanks(Both(Result(ProbeMode::kIb, 0, ProbeOutcome::kPass),
                                  Result(ProbeMode::kIb, 1, ProbeOutcome::kPass)),
                             ProbeMode::kIb);
  EXPECT_EQ(r.outcome, ProbeOutcome::kPass);
  EXPECT_DOUBLE_EQ(r.busbw_bytes_per_second, 18e9);
}

// MergeRanks is core MergeRankResults once both ranks reported (tests/core/rank_merge_test.cc
// has the rule); these are the cases where the coordinator's merge used to differ from it.
TEST(MergeRanks, TheDetailNamesTheRankThatExplainsTheProbe) {
  ProbeResult r1 = Result(ProbeMode::kIb, 1, ProbeOutcome::kFail, {"limits.memlock"});
  r1.detail = "ibv_reg_mr failed";
  ProbeResult r = MergeRanks(Both(Result(ProbeMode::kIb, 0, ProbeOutcome::kPass), r1),
                             ProbeMode::kIb);
  EXPECT_EQ(r.detail, "rank 1: ibv_reg_mr failed");
}

TEST(MergeRanks, APeerThatCouldNotRunExplainsItsPeersTimeout) {
  ProbeResult r = MergeRanks(Both(Result(ProbeMode::kSocket, 0, ProbeOutcome::kTimeout),
                                  Result(ProbeMode::kSocket, 1, ProbeOutcome::kUnavailable)),
                             ProbeMode::kSocket);
  EXPECT_EQ(r.outcome, ProbeOutcome::kUnavailable);
  EXPECT_EQ(r.rank, 1);
}

TEST(MergeRanks, UnavailableExplainsThePairBeforeARankThatDidNotRun) {
  ProbeResult r = MergeRanks(Both(Result(ProbeMode::kSocket, 0, ProbeOutcome::kNotRun),
                                  Result(ProbeMode::kSocket, 1, ProbeOutcome::kUnavailable)),
                             ProbeMode::kSocket);
  EXPECT_EQ(r.outcome, ProbeOutcome::kUnavailable);
}

TEST(MergeRanks, ACrashedRankIsTheRootAndItsPeersCauseIsKept) {
  ModeProbes m = Both(
      Result(ProbeMode::kIb, 0, ProbeOutcome::kFail, {"ib.fabric"}, FaultClass::kIbResource),
      Result(ProbeMode::kIb, 1, ProbeOutcome::kCrashed));
  ProbeResult r = MergeRanks(m, ProbeMode::kIb);
  EXPECT_EQ(r.outcome, ProbeOutcome::kCrashed);
  EXPECT_EQ(r.rank, 1);
  ASSERT_TRUE(r.classification);
  EXPECT_EQ(r.classification->causes.at(0).cause, "ib.fabric");
  // And before a timeout of the other rank.
  r = MergeRanks(Both(Result(ProbeMode::kIb, 0, ProbeOutcome::kTimeout),
                      Result(ProbeMode::kIb, 1, ProbeOutcome::kCrashed)),
                 ProbeMode::kIb);
  EXPECT_EQ(r.outcome, ProbeOutcome::kCrashed);
}

TEST(MergeRanks, ARealErrorIsTheRootOfItsPeersTimeout) {
  ProbeResult r1 = Result(ProbeMode::kSocket, 1, ProbeOutcome::kFail);
  r1.nccl_result = 2;  // ncclSystemError, the log naming nothing
  ProbeResult r = MergeRanks(Both(Result(ProbeMode::kSocket, 0, ProbeOutcome::kTimeout), r1),
                             ProbeMode::kSocket);
  EXPECT_EQ(r.outcome, ProbeOutcome::kFail);
  EXPECT_EQ(r.rank, 1);
}

TEST(MergeRanks, APassingPairTookAsLongAsItsSlowerRank) {
  ProbeResult r0 = Result(ProbeMode::kIb, 0, ProbeOutcome::kPass);
  ProbeResult r1 = Result(ProbeMode::kIb, 1, ProbeOutcome::kPass);
  r0.duration_seconds = 3;
  r1.duration_seconds = 5;
  EXPECT_DOUBLE_EQ(MergeRanks(Both(r0, r1), ProbeMode::kIb).duration_seconds, 5);
}

TEST(MergeRanks, AMissingRankIsNotRun) {
  ModeProbes m;
  m.attempted = true;
  m.rank0 = Result(ProbeMode::kSocket, 0, ProbeOutcome::kPass);
  EXPECT_EQ(MergeRanks(m, ProbeMode::kSocket).outcome, ProbeOutcome::kNotRun);
}

TEST(JudgePair, BothProbesPassIsAPass) {
  auto j = JudgePair(Node("a"), Node("b"),
                     Probes(Both(Result(ProbeMode::kSocket, 0, ProbeOutcome::kPass),
                                 Result(ProbeMode::kSocket, 1, ProbeOutcome::kPass)),
                            Both(Result(ProbeMode::kIb, 0, ProbeOutcome::kPass),
                                 Result(ProbeMode::kIb, 1, ProbeOutcome::kPass))),
                     {});
  EXPECT_EQ(j.status, PairStatus::kPass);
  EXPECT_EQ(j.verdict.fault_class, FaultClass::kHealthy);
  EXPECT_EQ(j.verdict.basis, Basis::kProbes);
}

TEST(JudgePair, ANodeThatCannotRunTheProbeMakesNoFaultOfItsPeersTimeout) {
  ProbeResult no_gpu = Result(ProbeMode::kSocket, 1, ProbeOutcome::kUnavailable);
  no_gpu.unavailable_cause = "probe.no_gpu";
  ProbeResult ib_no_gpu = no_gpu;
  ib_no_gpu.mode = ProbeMode::kIb;
  auto j = JudgePair(Node("a"), Node("b"),
                     Probes(Both(Result(ProbeMode::kSocket, 0, ProbeOutcome::kTimeout), no_gpu),
                            Both(Result(ProbeMode::kIb, 0, ProbeOutcome::kTimeout), ib_no_gpu)),
                     {});
  EXPECT_EQ(j.status, PairStatus::kInconclusive) << j.verdict.reason;
  EXPECT_NE(j.verdict.fault_class, FaultClass::kArchitecture);
}

TEST(JudgePair, SocketPassIbFailIsIbResourceWithTheNodesFailingCheckAsCause) {
  NodeInfo b = Node("b");
  b.findings.push_back(
      {"ib.port_state", FaultClass::kIbResource, CheckStatus::kFail, "DOWN", {}, ""});
  auto j = JudgePair(Node("a"), b,
                     Probes(Both(Result(ProbeMode::kSocket, 0, ProbeOutcome::kPass),
                                 Result(ProbeMode::kSocket, 1, ProbeOutcome::kPass)),
                            Both(Result(ProbeMode::kIb, 0, ProbeOutcome::kFail, {"peer.exited"}),
                                 Result(ProbeMode::kIb, 1, ProbeOutcome::kFail))),
                     {});
  EXPECT_EQ(j.status, PairStatus::kFail);
  EXPECT_EQ(j.verdict.fault_class, FaultClass::kIbResource);
  EXPECT_NE(std::find(j.verdict.causes.begin(), j.verdict.causes.end(), "ib.port_state"),
            j.verdict.causes.end());
}

TEST(JudgePair, NoDeviceFoundIsNotAMissingHcaWhenBothNodesListTheirHcas) {
  // The only port NCCL may use is down: NCCL says "No device found", which the classifier names
  // ib.hca_present; both summaries list their HCAs, so that check passed on both nodes.
  NodeInfo a = Node("a");
  NodeInfo b = Node("b");
  for (NodeInfo* n : {&a, &b}) n->hcas.push_back({"mlx5_0", "MT4123", {{1, "InfiniBand", 200}}});
  b.findings.push_back(
      {"ib.port_state", FaultClass::kIbResource, CheckStatus::kFail, "DOWN", {}, ""});
  auto ib_fail = [] {
    return Both(Result(ProbeMode::kIb, 0, ProbeOutcome::kFail, {"ib.hca_present"},
                       FaultClass::kIbResource),
                Result(ProbeMode::kIb, 1, ProbeOutcome::kFail));
  };
  auto socket_pass = [] {
    return Both(Result(ProbeMode::kSocket, 0, ProbeOutcome::kPass),
                Result(ProbeMode::kSocket, 1, ProbeOutcome::kPass));
  };
  auto j = JudgePair(a, b, Probes(socket_pass(), ib_fail()), {});
  EXPECT_EQ(j.verdict.causes, std::vector<std::string>{"ib.port_state"});
  // Without the HCA list (an agent that sends none) the log's cause stands.
  b.hcas.clear();
  j = JudgePair(a, b, Probes(socket_pass(), ib_fail()), {});
  EXPECT_EQ(j.verdict.causes, (std::vector<std::string>{"ib.hca_present", "ib.port_state"}));
}

TEST(JudgePair, SocketFailureIsArchitectureWhateverIbDid) {
  auto j = JudgePair(Node("a"), Node("b"),
                     Probes(Both(Result(ProbeMode::kSocket, 0, ProbeOutcome::kFail, {"net.connect"},
                                        FaultClass::kArchitecture),
                                 Result(ProbeMode::kSocket, 1, ProbeOutcome::kTimeout)),
                            Both(Result(ProbeMode::kIb, 0, ProbeOutcome::kFail),
                                 Result(ProbeMode::kIb, 1, ProbeOutcome::kFail))),
                     {});
  EXPECT_EQ(j.status, PairStatus::kFail);
  EXPECT_EQ(j.verdict.fault_class, FaultClass::kArchitecture);
  ASSERT_FALSE(j.verdict.causes.empty());
  EXPECT_EQ(j.verdict.causes[0], "net.connect");
}

TEST(JudgePair, NcclVersionSkewNamesTheCrossNodeCause) {
  NodeInfo b = Node("b");
  b.nccl_version = "2.18.1";
  auto j = JudgePair(Node("a"), b,
                     Probes(Both(Result(ProbeMode::kSocket, 0, ProbeOutcome::kFail),
                                 Result(ProbeMode::kSocket, 1, ProbeOutcome::kFail)),
                            Both(Result(ProbeMode::kIb, 0, ProbeOutcome::kFail),
                                 Result(ProbeMode::kIb, 1, ProbeOutcome::kFail))),
                     {});
  EXPECT_EQ(j.verdict.fault_class, FaultClass::kArchitecture);
  EXPECT_NE(std::find(j.verdict.causes.begin(), j.verdict.causes.end(), "pair.version_skew"),
            j.verdict.causes.end());
}

TEST(JudgePair, AgentLostMidProbeIsInconclusive) {
  PairProbes p = Probes(Both(Result(ProbeMode::kSocket, 0, ProbeOutcome::kPass),
                             Result(ProbeMode::kSocket, 1, ProbeOutcome::kPass)),
                        ModeProbes{});
  p.ib.attempted = true;
  p.ib.rank0 = Result(ProbeMode::kIb, 0, ProbeOutcome::kFail, {"peer.exited"});
  p.ib.lost = "agent b disconnected during the probe";
  auto j = JudgePair(Node("a"), Node("b"), p, {});
  EXPECT_EQ(j.status, PairStatus::kInconclusive);
  EXPECT_NE(j.verdict.reason.find("disconnected"), std::string::npos);
}

TEST(JudgePair, SkippedProbesFallBackToChecksAndAreInconclusive) {
  ProbeResult skipped = Result(ProbeMode::kSocket, 1, ProbeOutcome::kNotRun);
  skipped.detail = "skipped: GPUs busy";
  auto j = JudgePair(
      Node("a"), Node("b"),
      Probes(Both(Result(ProbeMode::kSocket, 0, ProbeOutcome::kNotRun), skipped), ModeProbes{}),
      {});
  EXPECT_EQ(j.status, PairStatus::kInconclusive);
  EXPECT_EQ(j.verdict.basis, Basis::kChecks);
}

// Socket and IB pass on both ranks.
PairProbes BothModesPass() {
  return Probes(Both(Result(ProbeMode::kSocket, 0, ProbeOutcome::kPass),
                     Result(ProbeMode::kSocket, 1, ProbeOutcome::kPass)),
                Both(Result(ProbeMode::kIb, 0, ProbeOutcome::kPass),
                     Result(ProbeMode::kIb, 1, ProbeOutcome::kPass)));
}

TEST(JudgePair, SlowIbIsDegradedOnlyWhenBandwidthIsChecked) {
  NodeInfo a = Node("a");
  a.hcas.push_back({"mlx5_0", "MT4123", {{1, "InfiniBand", 200, "ACTIVE", "LinkUp", {}}}});
  NodeInfo b = a;
  b.name = "b";
  auto probes = BothModesPass();
  probes.ib.rank1->busbw_bytes_per_second = 5e9;  // 25 GB/s ports
  EXPECT_EQ(JudgePair(a, b, probes, {}).status, PairStatus::kPass);
  JudgeOptions o;
  o.check_bandwidth = true;
  auto j = JudgePair(a, b, probes, o);
  EXPECT_EQ(j.status, PairStatus::kFail);
  EXPECT_TRUE(j.verdict.degraded);
  EXPECT_EQ(j.verdict.causes[0], "ib.bandwidth");
}

TEST(ExpectedPairBandwidth, SumsThePortsEachRankUsedAndTakesTheSlowerNode) {
  NodeInfo a = Node("a");
  a.hcas.push_back({"mlx5_0", "MT4129", {{1, "InfiniBand", 400, "ACTIVE", "LinkUp", {}}}});
  a.hcas.push_back({"mlx5_1", "MT4129", {{1, "InfiniBand", 400, "ACTIVE", "LinkUp", {}}}});
  NodeInfo b = a;
  b.name = "b";
  b.hcas[1].ports[0].rate_gbps = 200;  // b's second rail came up at half rate
  auto two = ExpectedPairBandwidth(a, b, {"mlx5_0:1", "mlx5_1:1"}, {"mlx5_0:1", "mlx5_1:1"});
  ASSERT_TRUE(two);
  EXPECT_DOUBLE_EQ(two->bytes_per_second, 600e9 / 8);
  EXPECT_EQ(two->basis,
            "a: mlx5_0:1 400 Gb/s + mlx5_1:1 400 Gb/s; "
            "b: mlx5_0:1 400 Gb/s + mlx5_1:1 200 Gb/s");
  // Only the rail the probe used counts, not the node's best port.
  auto one = ExpectedPairBandwidth(a, b, {"mlx5_1:1"}, {"mlx5_1:1"});
  ASSERT_TRUE(one);
  EXPECT_DOUBLE_EQ(one->bytes_per_second, 200e9 / 8);
  // Ports the summary does not list (or none named): the best port, said so.
  auto unknown = ExpectedPairBandwidth(a, b, {"mlx5_9:1"}, {});
  ASSERT_TRUE(unknown);
  EXPECT_DOUBLE_EQ(unknown->bytes_per_second, 400e9 / 8);
  EXPECT_NE(unknown->basis.find("ports used not known"), std::string::npos);
  EXPECT_FALSE(ExpectedPairBandwidth(Node("x"), b, {}, {}));
}

TEST(JudgePair, BandwidthIsJudgedAgainstThePortsTheRanksUsed) {
  NodeInfo a = Node("a");
  a.hcas.push_back({"mlx5_0", "MT4129", {{1, "InfiniBand", 400, "ACTIVE", "LinkUp", {}}}});
  a.hcas.push_back({"mlx5_1", "MT4129", {{1, "InfiniBand", 100, "ACTIVE", "LinkUp", {}}}});
  NodeInfo b = a;
  b.name = "b";
  auto probes = BothModesPass();
  for (auto* r : {&*probes.ib.rank0, &*probes.ib.rank1}) {
    r->busbw_bytes_per_second = 11e9;  // fine for mlx5_1's 12.5 GB/s, slow for mlx5_0's 50
    r->ib_ports = {"mlx5_1:1"};
  }
  probes.ib.rank0->peer = "b";
  probes.ib.rank1->peer = "a";
  JudgeOptions o;
  o.check_bandwidth = true;
  EXPECT_EQ(JudgePair(a, b, probes, o).status, PairStatus::kPass);
  for (auto* r : {&*probes.ib.rank0, &*probes.ib.rank1}) r->ib_ports = {"mlx5_0:1"};
  auto j = JudgePair(a, b, probes, o);
  EXPECT_EQ(j.status, PairStatus::kFail);
  EXPECT_NE(j.verdict.reason.find("a: mlx5_0:1 400 Gb/s"), std::string::npos) << j.verdict.reason;
  // Both ranks' channels went through host memory: the reason says the rate assumed GDR.
  EXPECT_NE(j.verdict.reason.find("GPUDirect RDMA assumed, not used on a, b (no /GDRDMA channel)"),
            std::string::npos)
      << j.verdict.reason;
  probes.ib.rank0->gdrdma = true;  // rank 0 ran on a (its peer is b)
  j = JudgePair(a, b, probes, o);
  EXPECT_NE(j.verdict.reason.find("not used on b (no /GDRDMA channel)"), std::string::npos)
      << j.verdict.reason;
  probes.ib.rank1->gdrdma = true;
  j = JudgePair(a, b, probes, o);
  EXPECT_NE(j.verdict.reason.find("GPUDirect RDMA assumed and used"), std::string::npos)
      << j.verdict.reason;
}

TEST(PredictPair, CrossNodeFailureIsAChecksBasedVerdict) {
  NodeInfo b = Node("b");
  b.arch = "aarch64";
  PairVerdict v = PredictPair(Node("a"), b);
  EXPECT_EQ(v.basis, Basis::kChecks);
  EXPECT_EQ(v.fault_class, FaultClass::kArchitecture);
  EXPECT_EQ(v.causes, std::vector<std::string>{"pair.arch_mixed"});
  EXPECT_EQ(PredictPair(Node("a"), Node("b")).fault_class, FaultClass::kHealthy);
}

TEST(PredictPair, APairWithANodeWhoseProbesCannotRunIsUnknownNotHealthy) {
  NodeInfo b = Node("b");
  b.probe = NodeProbeAvailability{false, "no_nccl", "libnccl.so.2: not found"};
  PairVerdict v = PredictPair(Node("a"), b);
  EXPECT_EQ(v.basis, Basis::kChecks);
  EXPECT_EQ(v.fault_class, FaultClass::kUnknown);
  EXPECT_EQ(v.causes, std::vector<std::string>{"probe.no_nccl"});
  EXPECT_EQ(v.reason.rfind("b: probes cannot run on this node (no_nccl: ", 0), 0u) << v.reason;
  // A cross-node failure keeps its class; the node's cause comes first.
  b.arch = "aarch64";
  v = PredictPair(Node("a"), b);
  EXPECT_EQ(v.fault_class, FaultClass::kArchitecture);
  EXPECT_EQ(v.causes, (std::vector<std::string>{"probe.no_nccl", "pair.arch_mixed"}));
  // Pending or unknown availability predicts as before.
  b = Node("b");
  b.probe = NodeProbeAvailability{false, "pending", ""};
  EXPECT_EQ(PredictPair(Node("a"), b).fault_class, FaultClass::kHealthy);
}

TEST(JudgeRails, EachRailIsJudgedOnItsOwnAndALostRailIsLeftOut) {
  PairProbes p = Probes(Both(Result(ProbeMode::kSocket, 0, ProbeOutcome::kPass),
                             Result(ProbeMode::kSocket, 1, ProbeOutcome::kPass)),
                        Both(Result(ProbeMode::kIb, 0, ProbeOutcome::kPass),
                             Result(ProbeMode::kIb, 1, ProbeOutcome::kPass)));
  p.rails.push_back({0, "mlx5_0/1",
                     Both(Result(ProbeMode::kIb, 0, ProbeOutcome::kPass),
                          Result(ProbeMode::kIb, 1, ProbeOutcome::kPass))});
  p.rails.push_back({5, "mlx5_5/1",
                     Both(Result(ProbeMode::kIb, 0, ProbeOutcome::kFail, {"ib.mr_register"},
                                 FaultClass::kIbResource),
                          Result(ProbeMode::kIb, 1, ProbeOutcome::kNotRun))});
  ModeProbes lost = Both(Result(ProbeMode::kIb, 0, ProbeOutcome::kPass), {});
  lost.rank1.reset();
  lost.lost = "no report from b within the deadline";
  p.rails.push_back({6, "mlx5_6/1", lost});
  std::vector<RailPairOutcome> out = JudgeRails(Node("a"), Node("b"), p, {});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].rail, 0);
  EXPECT_TRUE(out[0].passed);
  EXPECT_EQ(out[1].rail, 5);
  EXPECT_EQ(out[1].device, "mlx5_5/1");
  EXPECT_EQ(out[1].pair, NodePair("a", "b"));
  EXPECT_FALSE(out[1].passed);
  EXPECT_EQ(out[1].fault_class, FaultClass::kIbResource);
  ASSERT_FALSE(out[1].causes.empty());
  EXPECT_EQ(out[1].causes.front(), "ib.mr_register");
}

// A node whose rails 0 and 3 are 400 Gb/s ports (mlx5_0:1, mlx5_3:1), in its rail table and HCAs.
NodeInfo RailNode(std::string name, double rail3_gbps = 400) {
  NodeInfo n = Node(std::move(name));
  for (int k : {0, 3}) {
    const double rate = k == 3 ? rail3_gbps : 400;
    const std::string dev = "mlx5_" + std::to_string(k);
    n.hcas.push_back({dev, "MT4129", {{1, "InfiniBand", rate, "ACTIVE", "LinkUp", {}}}});
    Rail r;
    r.index = k;
    r.device = dev;
    r.port = 1;
    r.rate_gbps = rate;
    r.active = true;
    n.rails.push_back(r);
  }
  return n;
}

// Socket and IB pass, then rails 0 and 3 pass NCCL with the given busbw on both ranks. The ranks
// name both HCAs as used (what a summed expectation would add up).
PairProbes RailsWithBusbw(double rail0, double rail3) {
  PairProbes p = BothModesPass();
  for (auto [rail, busbw] : {std::pair{0, rail0}, std::pair{3, rail3}}) {
    ModeProbes m = Both(Result(ProbeMode::kIb, 0, ProbeOutcome::kPass),
                        Result(ProbeMode::kIb, 1, ProbeOutcome::kPass));
    for (auto* r : {&*m.rank0, &*m.rank1}) {
      r->busbw_bytes_per_second = busbw;
      r->ib_ports = {"mlx5_0:1", "mlx5_3:1"};
    }
    m.rank0->peer = "b";
    m.rank1->peer = "a";
    p.rails.push_back({rail, "mlx5_" + std::to_string(rail) + "/1", std::move(m)});
  }
  return p;
}

TEST(JudgeRails, ARailBelowItsOwnPortRateIsRateDegraded) {
  // 400 Gb/s = 50 GB/s per rail: rail 0 carries 45, rail 3 a quarter (12.5).
  const PairProbes p = RailsWithBusbw(45e9, 12.5e9);
  JudgeOptions o;
  o.check_bandwidth = true;
  std::vector<RailPairOutcome> out = JudgeRails(RailNode("a"), RailNode("b"), p, o);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_TRUE(out[0].passed);
  EXPECT_FALSE(out[0].degraded);
  EXPECT_DOUBLE_EQ(out[0].expected_bytes_per_second, 50e9);  // the rail's port, not 800 Gb/s
  EXPECT_EQ(out[1].rail, 3);
  EXPECT_FALSE(out[1].passed);
  EXPECT_TRUE(out[1].degraded);
  EXPECT_EQ(out[1].fault_class, FaultClass::kIbResource);
  ASSERT_FALSE(out[1].causes.empty());
  EXPECT_EQ(out[1].causes.front(), "ib.bandwidth");
  EXPECT_DOUBLE_EQ(out[1].busbw_bytes_per_second, 12.5e9);
  EXPECT_DOUBLE_EQ(out[1].expected_bytes_per_second, 50e9);

  // Below kBandwidthBoundBytes the coordinator does not check bandwidth: both rails pass.
  for (const auto& r : JudgeRails(RailNode("a"), RailNode("b"), p, {})) {
    EXPECT_TRUE(r.passed) << r.rail;
    EXPECT_FALSE(r.degraded) << r.rail;
    EXPECT_EQ(r.expected_bytes_per_second, 0) << r.rail;
  }
}

TEST(JudgeRails, TheLowerOfTheTwoPortRatesOfTheRailIsExpected) {
  // b's rail 3 port trained at 100 Gb/s (12.5 GB/s): sysfs shows it (ib.port_rate is the node
  // check for that) and the rail's probe is judged against it, so 12.5 GB/s is a pass.
  JudgeOptions o;
  o.check_bandwidth = true;
  std::vector<RailPairOutcome> out =
      JudgeRails(RailNode("a"), RailNode("b", 100), RailsWithBusbw(45e9, 12.5e9), o);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_TRUE(out[1].passed);
  EXPECT_DOUBLE_EQ(out[1].expected_bytes_per_second, 12.5e9);
  // Half of that is not.
  out = JudgeRails(RailNode("a"), RailNode("b", 100), RailsWithBusbw(45e9, 5e9), o);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_TRUE(out[1].degraded);

  auto e = ExpectedRailBandwidth(RailNode("a"), RailNode("b", 100), 3, "mlx5_3/1");
  ASSERT_TRUE(e);
  EXPECT_DOUBLE_EQ(e->bytes_per_second, 12.5e9);
  EXPECT_EQ(e->basis, "rail 3: a: mlx5_3:1 400 Gb/s; b: mlx5_3:1 100 Gb/s");
  // A node without the rail table still has the port in its HCA list.
  NodeInfo bare = RailNode("b");
  bare.rails.clear();
  e = ExpectedRailBandwidth(RailNode("a"), bare, 3, "mlx5_3/1");
  ASSERT_TRUE(e);
  EXPECT_DOUBLE_EQ(e->bytes_per_second, 50e9);
  // A port neither lists: no expectation, so no bandwidth verdict (the rail passes).
  EXPECT_FALSE(ExpectedRailBandwidth(RailNode("a"), RailNode("b"), 5, "mlx5_5/1"));
  EXPECT_FALSE(ExpectedRailBandwidth(RailNode("a"), Node("b"), 3, "mlx5_3/1"));
  PairProbes p = RailsWithBusbw(45e9, 1e9);
  p.rails[1].device = "mlx5_5/1";
  out = JudgeRails(RailNode("a"), RailNode("b"), p, o);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_TRUE(out[1].passed);
}

}  // namespace
}  // namespace nccl_triage
