#include "planner/cluster_verdicts.h"

#include <gtest/gtest.h>

#include "core/report.h"

namespace nccl_triage {
namespace {

Finding F(std::string check, FaultClass c, CheckStatus s) {
  return Finding{.check = std::move(check), .fault_class = c, .status = s};
}

// The node as the coordinator learns it from the agent's summary: failing and warning findings
// listed, passes counted.
NodeInfo AsSummarised(const std::string& node, const std::vector<Finding>& all) {
  NodeInfo info;
  info.name = node;
  info.checks_passed = 0;
  for (const auto& f : all) {
    if (f.status == CheckStatus::kPass) ++*info.checks_passed;
    if (f.status == CheckStatus::kFail || f.status == CheckStatus::kWarn)
      info.findings.push_back(f);
  }
  return info;
}

PairJudgement Judged(PairStatus status, FaultClass c = FaultClass::kHealthy,
                     std::vector<std::string> causes = {}) {
  PairJudgement j;
  j.status = status;
  j.verdict.fault_class = c;
  j.verdict.basis = Basis::kProbes;
  j.verdict.causes = std::move(causes);
  j.socket = ProbeOutcome::kPass;
  j.ib = status == PairStatus::kPass ? ProbeOutcome::kPass : ProbeOutcome::kFail;
  return j;
}

NodeOutcome Outcome(NodeState s, std::string reason = "passes with node-x") {
  NodeOutcome o;
  o.state = s;
  o.reason = std::move(reason);
  return o;
}

LocalisedFault NodeFault(const std::string& node, std::vector<std::string> causes) {
  return {FaultKind::kNode, {node}, FaultClass::kIbResource, std::move(causes), "fails with two"};
}

// What an agent was told before its coordinator restarted (the Verdicts it sends in its Hello).
AgentVerdicts ToldNodeFault(FaultClass c, std::vector<std::string> causes, bool confirmed = true) {
  AgentVerdicts told;
  AgentVerdicts::Node n;
  n.verdict.fault_class = c;
  n.verdict.basis = Basis::kProbes;
  n.verdict.causes = std::move(causes);
  n.verdict.reason = "fails with known-good partners";
  n.localisation = PairLocalisation::kNode;
  n.confirmed = confirmed;
  told.node = n;
  return told;
}

AgentVerdicts ToldLinkFault(const std::string& peer) {
  AgentVerdicts told;
  PairVerdict v;
  v.fault_class = FaultClass::kIbResource;
  v.basis = Basis::kProbes;
  v.causes = {"ib.fabric"};
  told.pairs.push_back(
      {peer, v, ProbeOutcome::kPass, ProbeOutcome::kFail, PairLocalisation::kLink, true});
  return told;
}

TEST(ClusterVerdictsResume, AConfirmedNodeFaultIsHeldAtOnceAfterARestart) {
  ClusterVerdicts cv(/*hold_down=*/2);
  auto changed = cv.Resume("gpu-1", ToldNodeFault(FaultClass::kIbResource, {"ib.port_state"}), 0);
  EXPECT_EQ(changed, std::vector<std::string>{"gpu-1"});
  ASSERT_EQ(cv.hold_down().Confirmed().size(), 1u);
  EXPECT_EQ(cv.hold_down().Confirmed()[0].fault.causes, std::vector<std::string>{"ib.port_state"});
  const PublishedNodeVerdict* v = cv.Find("gpu-1");
  ASSERT_NE(v, nullptr);
  EXPECT_TRUE(v->confirmed_fault);
  EXPECT_EQ(v->basis, Basis::kProbes);
  EXPECT_TRUE(cv.ForAgent("gpu-1").node->confirmed);
  // The agent reconnecting again changes nothing.
  EXPECT_TRUE(
      cv.Resume("gpu-1", ToldNodeFault(FaultClass::kIbResource, {"ib.port_state"}), 0).empty());
  EXPECT_EQ(cv.hold_down().Confirmed().size(), 1u);
}

TEST(ClusterVerdictsResume, ASuspectedOrHealthyVerdictResumesNothing) {
  ClusterVerdicts cv(2);
  EXPECT_TRUE(
      cv.Resume("gpu-1", ToldNodeFault(FaultClass::kIbResource, {"ib.port_state"}, false), 0)
          .empty());
  EXPECT_TRUE(cv.Resume("gpu-2", ToldNodeFault(FaultClass::kHealthy, {}), 0).empty());
  EXPECT_TRUE(cv.hold_down().All().empty());
  EXPECT_EQ(cv.Find("gpu-1"), nullptr);
}

TEST(ClusterVerdictsResume, ALinkFaultNeedsBothOfItsNodes) {
  ClusterVerdicts cv(2);
  EXPECT_TRUE(cv.Resume("gpu-1", ToldLinkFault("gpu-2"), 0).empty());
  EXPECT_TRUE(cv.Resume("gpu-1", ToldLinkFault("gpu-2"), 0).empty()) << "one node twice";
  EXPECT_TRUE(cv.hold_down().Confirmed().empty());
  auto changed = cv.Resume("gpu-2", ToldLinkFault("gpu-1"), 0);
  EXPECT_EQ(changed, (std::vector<std::string>{"gpu-1", "gpu-2"}));
  const TrackedFault* link = cv.hold_down().FindLink(NodePair("gpu-1", "gpu-2"));
  ASSERT_NE(link, nullptr);
  EXPECT_TRUE(link->confirmed);
  auto told = cv.ForAgent("gpu-1");
  ASSERT_EQ(told.pairs.size(), 1u);
  EXPECT_TRUE(told.pairs[0].confirmed);
  EXPECT_EQ(told.pairs[0].localisation, PairLocalisation::kLink);
}

TEST(ClusterVerdictsResume, AResumedFaultClearsOnlyAfterHoldDownSweepsWithoutIt) {
  ClusterVerdicts cv(2);
  cv.Resume("gpu-1", ToldNodeFault(FaultClass::kIbResource, {"ib.port_state"}), 0);
  NodeInfo info =
      AsSummarised("gpu-1", {F("ib.port_state", FaultClass::kIbResource, CheckStatus::kPass)});
  for (uint64_t n = 1; n <= 2; ++n) {
    SweepResult sweep;
    sweep.number = n;
    sweep.nodes["gpu-1"] = Outcome(NodeState::kGood);
    sweep.tested_nodes.insert("gpu-1");
    cv.Apply(sweep, {{"gpu-1", info}});
    EXPECT_EQ(cv.hold_down().Confirmed().empty(), n == 2) << "sweep " << n;
  }
}

TEST(ChecksVerdict, AgreesWithTheAgentsOwnReportOnEveryMixOfFindings) {
  const std::vector<std::vector<Finding>> cases = {
      {},
      {F("ib.hca_present", FaultClass::kIbResource, CheckStatus::kSkip)},
      {F("ib.hca_present", FaultClass::kIbResource, CheckStatus::kPass)},
      {F("ib.peermem", FaultClass::kIbResource, CheckStatus::kWarn),
       F("ib.hca_present", FaultClass::kIbResource, CheckStatus::kSkip)},
      {F("ib.port_state", FaultClass::kIbResource, CheckStatus::kFail),
       F("shm.size", FaultClass::kArchitecture, CheckStatus::kFail),
       F("limits.memlock", FaultClass::kArchitecture, CheckStatus::kFail),
       F("ib.driver", FaultClass::kIbResource, CheckStatus::kPass)},
      {F("ib.port_rate", FaultClass::kIbResource, CheckStatus::kFail)},
      {F("ib.fabric", FaultClass::kUnknown, CheckStatus::kFail),
       F("ib.driver", FaultClass::kIbResource, CheckStatus::kPass)},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    NodeReport agent = MakeReport("node-a", cases[i], 1);
    PublishedNodeVerdict coordinator = ChecksVerdict(AsSummarised("node-a", cases[i]), "r");
    EXPECT_EQ(ToString(coordinator.fault_class), ToString(agent.fault_class)) << "case " << i;
    EXPECT_EQ(coordinator.causes, agent.causes) << "case " << i;
    EXPECT_EQ(coordinator.basis, Basis::kChecks);
    EXPECT_EQ(coordinator.reason, "r");
  }
}

TEST(ChecksVerdict, ANodeWhereNothingPassedIsUnknownNotHealthy) {
  NodeInfo info =
      AsSummarised("node-a", {F("ib.hca_present", FaultClass::kIbResource, CheckStatus::kSkip)});
  EXPECT_EQ(ChecksVerdict(info, "").fault_class, FaultClass::kUnknown);
}

TEST(ChecksVerdict, AnAgentThatDoesNotCountItsPassesIsTakenToHavePassedSome) {
  NodeInfo info;  // an older agent: no checks_passed
  info.name = "node-a";
  EXPECT_EQ(ChecksVerdict(info, "").fault_class, FaultClass::kHealthy);
  info.findings.push_back(F("shm.size", FaultClass::kArchitecture, CheckStatus::kFail));
  EXPECT_EQ(ChecksVerdict(info, "").fault_class, FaultClass::kArchitecture);
}

// What an agent says when its probes cannot run (NodeSummary.probe).
NodeInfo Blind(NodeInfo info, const std::string& reason = "no_nccl") {
  info.probe = NodeProbeAvailability{false, reason, "libnccl.so.2: not found"};
  return info;
}

TEST(ChecksVerdict, ANodeWhoseProbesCannotRunIsNeverHealthyAndSaysWhy) {
  NodeInfo info =
      AsSummarised("node-a", {F("ib.driver", FaultClass::kIbResource, CheckStatus::kPass)});
  ASSERT_EQ(ChecksVerdict(info, "").fault_class, FaultClass::kHealthy);
  PublishedNodeVerdict v = ChecksVerdict(Blind(info), "not probed yet");
  EXPECT_EQ(v.fault_class, FaultClass::kUnknown);
  EXPECT_EQ(v.basis, Basis::kChecks);
  EXPECT_EQ(v.causes, std::vector<std::string>{"probe.no_nccl"});
  EXPECT_EQ(v.reason,
            "probes cannot run on this node (no_nccl: libnccl.so.2: not found): left out of the "
            "sweeps, no pair results; not probed yet");
  // A failing check keeps its class; the availability cause still comes first.
  info.findings.push_back(F("shm.size", FaultClass::kArchitecture, CheckStatus::kFail));
  v = ChecksVerdict(Blind(info, "no_gpu"), "");
  EXPECT_EQ(v.fault_class, FaultClass::kArchitecture);
  EXPECT_EQ(v.causes, (std::vector<std::string>{"probe.no_gpu", "shm.size"}));
  // A reason without a catalogue cause (error, a newer agent's word) adds none.
  info.findings.clear();
  v = ChecksVerdict(Blind(info, "error"), "");
  EXPECT_EQ(v.fault_class, FaultClass::kUnknown);
  EXPECT_TRUE(v.causes.empty());
  // Pending (not checked yet) and unknown (an agent that does not say) change nothing.
  info.probe = NodeProbeAvailability{false, "pending", ""};
  EXPECT_EQ(ChecksVerdict(info, "").fault_class, FaultClass::kHealthy);
  info.probe.reset();
  EXPECT_EQ(ChecksVerdict(info, "").fault_class, FaultClass::kHealthy);
}

struct Cluster {
  explicit Cluster(int hold_down = 2, size_t max_records = ClusterVerdicts::kDefaultMaxPairRecords)
      : verdicts(hold_down, max_records) {
    for (const char* n : {"node-a", "node-b", "node-c", "node-d"}) {
      known[n] = AsSummarised(n, {F("ib.driver", FaultClass::kIbResource, CheckStatus::kPass)});
    }
  }
  ClusterVerdicts verdicts;
  std::map<std::string, NodeInfo> known;
};

SweepResult OneGoodPair(uint64_t number, const NodePair& p) {
  SweepResult r;
  r.number = number;
  r.nodes[p.a] = Outcome(NodeState::kGood);
  r.nodes[p.b] = Outcome(NodeState::kGood);
  r.pairs.push_back({p, 1, Judged(PairStatus::kPass), PairLocalisation::kNone});
  r.tested_nodes = {p.a, p.b};
  r.tested_pairs = {p};
  return r;
}

TEST(ClusterVerdicts, NodesWhosePairsPassAreHealthyFromProbes) {
  Cluster c;
  c.verdicts.Apply(OneGoodPair(1, NodePair("node-a", "node-b")), c.known);
  const PublishedNodeVerdict* v = c.verdicts.Find("node-a");
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->fault_class, FaultClass::kHealthy);
  EXPECT_EQ(v->basis, Basis::kProbes);
  EXPECT_EQ(v->state, NodeState::kGood);
  EXPECT_EQ(c.verdicts.Find("node-c"), nullptr) << "not in the sweep: no verdict yet";
  AgentVerdicts pushed = c.verdicts.ForAgent("node-a");
  ASSERT_TRUE(pushed.node.has_value());
  EXPECT_TRUE(pushed.node->confirmed);
  EXPECT_EQ(pushed.node->localisation, PairLocalisation::kNone);
  ASSERT_EQ(pushed.pairs.size(), 1u);
  EXPECT_EQ(pushed.pairs[0].peer, "node-b");
  EXPECT_FALSE(c.verdicts.ForAgent("node-c").node.has_value());
}

TEST(ClusterVerdicts, ProbesThatPassDoNotHideAFailingNodeCheck) {
  Cluster c;
  c.known["node-a"] =
      AsSummarised("node-a", {F("shm.size", FaultClass::kArchitecture, CheckStatus::kFail),
                              F("ib.driver", FaultClass::kIbResource, CheckStatus::kPass)});
  c.verdicts.Apply(OneGoodPair(1, NodePair("node-a", "node-b")), c.known);
  const PublishedNodeVerdict* v = c.verdicts.Find("node-a");
  EXPECT_EQ(v->fault_class, FaultClass::kArchitecture);
  EXPECT_EQ(v->basis, Basis::kChecks);
  EXPECT_EQ(v->causes, std::vector<std::string>{"shm.size"});
  EXPECT_NE(v->reason.find("probes pass"), std::string::npos) << v->reason;
}

TEST(ClusterVerdicts, ProbesThatPassMakeANodeWhoseChecksAllSkippedHealthy) {
  Cluster c;
  c.known["node-a"] =
      AsSummarised("node-a", {F("ib.hca_present", FaultClass::kIbResource, CheckStatus::kSkip)});
  c.verdicts.Apply(OneGoodPair(1, NodePair("node-a", "node-b")), c.known);
  EXPECT_EQ(c.verdicts.Find("node-a")->fault_class, FaultClass::kHealthy);
  EXPECT_EQ(c.verdicts.Find("node-a")->basis, Basis::kProbes);
}

TEST(ClusterVerdicts, ANodeHealthyFromProbesLosesThatVerdictOnceItsProbesCannotRun) {
  Cluster c;
  c.verdicts.Apply(OneGoodPair(1, NodePair("node-a", "node-b")), c.known);
  ASSERT_EQ(c.verdicts.Find("node-a")->fault_class, FaultClass::kHealthy);
  EXPECT_FALSE(c.verdicts.UpdateProbeAvailability("node-a", c.known["node-a"]))
      << "probes that can run change nothing";
  c.known["node-a"] = Blind(c.known["node-a"], "no_gpu");
  EXPECT_TRUE(c.verdicts.UpdateProbeAvailability("node-a", c.known["node-a"]));
  const PublishedNodeVerdict* v = c.verdicts.Find("node-a");
  EXPECT_EQ(v->fault_class, FaultClass::kUnknown);
  EXPECT_EQ(v->basis, Basis::kChecks);
  EXPECT_EQ(v->state, NodeState::kUntested);
  EXPECT_EQ(v->causes, std::vector<std::string>{"probe.no_gpu"});
  EXPECT_FALSE(c.verdicts.UpdateProbeAvailability("node-a", c.known["node-a"])) << "no change";
  AgentVerdicts pushed = c.verdicts.ForAgent("node-a");
  ASSERT_TRUE(pushed.node.has_value());
  EXPECT_FALSE(pushed.node->confirmed);
  // Back: its checks' plain verdict until a sweep probes it again.
  c.known["node-a"].probe = NodeProbeAvailability{true, "ok", "NCCL 2.28.9"};
  EXPECT_TRUE(c.verdicts.UpdateProbeAvailability("node-a", c.known["node-a"]));
  EXPECT_EQ(c.verdicts.Find("node-a")->basis, Basis::kChecks);
  EXPECT_NE(c.verdicts.Find("node-a")->reason.find("probes can run again"), std::string::npos);
  EXPECT_FALSE(c.verdicts.UpdateProbeAvailability("node-a", c.known["node-a"]));
  c.verdicts.Apply(OneGoodPair(2, NodePair("node-a", "node-b")), c.known);
  EXPECT_EQ(c.verdicts.Find("node-a")->fault_class, FaultClass::kHealthy);
  EXPECT_EQ(c.verdicts.Find("node-a")->basis, Basis::kProbes);
}

SweepResult NodeFaultSweep(uint64_t number) {
  SweepResult r;
  r.number = number;
  r.nodes["node-a"] = Outcome(NodeState::kNodeFault, "fails with node-b and node-c");
  r.nodes["node-b"] = Outcome(NodeState::kGood);
  r.nodes["node-c"] = Outcome(NodeState::kGood);
  r.pairs.push_back({NodePair("node-a", "node-b"), 1,
                     Judged(PairStatus::kFail, FaultClass::kIbResource, {"ib.fabric"}),
                     PairLocalisation::kNode});
  r.faults.push_back(NodeFault("node-a", {"ib.fabric", "ib.port_state"}));
  r.tested_nodes = {"node-a", "node-b", "node-c"};
  return r;
}

TEST(ClusterVerdicts, ANodeFaultIsPublishedOnlyOnceConfirmedWithItsOwnFailingCheckFirst) {
  Cluster c(2);
  c.verdicts.Apply(OneGoodPair(1, NodePair("node-a", "node-d")), c.known);
  // Then its port goes down: its next summary says so.
  c.known["node-a"] =
      AsSummarised("node-a", {F("ib.port_state", FaultClass::kIbResource, CheckStatus::kFail)});
  c.verdicts.Apply(NodeFaultSweep(2), c.known);
  const PublishedNodeVerdict* v = c.verdicts.Find("node-a");
  EXPECT_EQ(v->fault_class, FaultClass::kHealthy) << "suspected: the published verdict stays";
  EXPECT_FALSE(v->confirmed_fault);
  EXPECT_NE(v->reason.find("suspected node fault (seen 1 of 2 sweeps)"), std::string::npos)
      << v->reason;
  EXPECT_EQ(c.verdicts.ForAgent("node-a").node->localisation, PairLocalisation::kNone);

  c.verdicts.Apply(NodeFaultSweep(3), c.known);
  v = c.verdicts.Find("node-a");
  EXPECT_TRUE(v->confirmed_fault);
  EXPECT_EQ(v->fault_class, FaultClass::kIbResource);
  EXPECT_EQ(v->basis, Basis::kProbes);
  EXPECT_EQ(v->causes, (std::vector<std::string>{"ib.port_state", "ib.fabric"}));
  AgentVerdicts pushed = c.verdicts.ForAgent("node-a");
  EXPECT_EQ(pushed.node->localisation, PairLocalisation::kNode);
  EXPECT_TRUE(pushed.node->confirmed);
  // Its probes then stop running: the confirmed fault stays held down, not replaced by checks.
  EXPECT_FALSE(c.verdicts.UpdateProbeAvailability("node-a", Blind(c.known["node-a"])));
  EXPECT_TRUE(c.verdicts.Find("node-a")->confirmed_fault);
}

// node-a's rail fails with node-b and node-c; it also failed with node-d, whose memlock is too
// low (node-d's own fault). The pair a-d names both nodes' failing checks.
SweepResult RailFaultNextToABadPeer(uint64_t number) {
  SweepResult r;
  r.number = number;
  r.nodes["node-a"] = Outcome(NodeState::kNodeFault, "rail 3 fails with node-b, node-c");
  for (const char* n : {"node-b", "node-c"}) r.nodes[n] = Outcome(NodeState::kGood);
  r.nodes["node-d"] = Outcome(NodeState::kNodeFault, "fails with node-b and node-c");
  r.pairs.push_back({NodePair("node-a", "node-d"), 1,
                     Judged(PairStatus::kFail, FaultClass::kIbResource,
                            {"limits.memlock", "ib.port_state"}),
                     PairLocalisation::kNode});
  r.faults.push_back(NodeFault("node-a", {"ib.port_state", "ib.fabric", "limits.memlock"}));
  r.faults.push_back(NodeFault("node-d", {"limits.memlock"}));
  r.tested_nodes = {"node-a", "node-b", "node-c", "node-d"};
  return r;
}

TEST(ClusterVerdicts, ANodeFaultListsOnlyItsOwnCausesNotAFailingPeersCheck) {
  Cluster c(1);
  c.known["node-a"] =
      AsSummarised("node-a", {F("ib.port_state", FaultClass::kIbResource, CheckStatus::kFail),
                              F("limits.memlock", FaultClass::kArchitecture, CheckStatus::kPass)});
  c.known["node-d"] =
      AsSummarised("node-d", {F("limits.memlock", FaultClass::kArchitecture, CheckStatus::kFail)});
  c.verdicts.Apply(RailFaultNextToABadPeer(1), c.known);
  const PublishedNodeVerdict* a = c.verdicts.Find("node-a");
  ASSERT_TRUE(a->confirmed_fault);
  // Its own failing check, and what the log said; node-d's memlock is node-d's.
  EXPECT_EQ(a->causes, (std::vector<std::string>{"ib.port_state", "ib.fabric"}));
  EXPECT_EQ(c.verdicts.Find("node-d")->causes, std::vector<std::string>{"limits.memlock"});
  for (const auto& t : c.verdicts.hold_down().Confirmed()) {
    if (t.fault.nodes[0] == "node-a") {
      EXPECT_EQ(t.fault.causes, a->causes) << "the fault list agrees with the node's verdict";
    }
  }
  // The pair record keeps both: that is where the peer's cause is named with the pair.
  const PairRecord& ad = c.verdicts.pairs().at(NodePair("node-a", "node-d"));
  EXPECT_EQ(ad.judgement.verdict.causes.front(), "limits.memlock");
}

TEST(ClusterVerdicts, ANodeNeverLocalisedShowsItsChecksAndAnInconclusiveOneSaysSo) {
  Cluster c;
  c.known["node-a"] =
      AsSummarised("node-a", {F("ib.hca_present", FaultClass::kIbResource, CheckStatus::kSkip)});
  SweepResult r;
  r.number = 1;
  r.nodes["node-a"] = Outcome(NodeState::kInconclusive, "probe lost");
  c.verdicts.Apply(r, c.known);
  const PublishedNodeVerdict* v = c.verdicts.Find("node-a");
  EXPECT_EQ(v->fault_class, FaultClass::kUnknown);
  EXPECT_EQ(v->basis, Basis::kChecks);
  EXPECT_EQ(v->reason, "not localised by probes yet; from node checks");
  AgentVerdicts pushed = c.verdicts.ForAgent("node-a");
  EXPECT_EQ(pushed.node->localisation, PairLocalisation::kInconclusive);
  EXPECT_FALSE(pushed.node->confirmed);
}

TEST(ClusterVerdicts, ALinkFaultNamesTheCrossNodeCheckBeforeTheSymptom) {
  Cluster c(1);
  SweepResult r;
  r.number = 1;
  const NodePair link("node-a", "node-b");
  r.nodes["node-a"] = Outcome(NodeState::kGood);
  r.nodes["node-b"] = Outcome(NodeState::kGood);
  r.pairs.push_back({link, 1, Judged(PairStatus::kFail, FaultClass::kIbResource, {"ib.fabric"}),
                     PairLocalisation::kLink});
  r.faults.push_back({FaultKind::kLink,
                      {"node-a", "node-b"},
                      FaultClass::kIbResource,
                      {"ib.fabric", "pair.pkey_partition"},
                      "only together"});
  r.tested_pairs = {link};
  c.verdicts.Apply(r, c.known);
  const TrackedFault* t = c.verdicts.hold_down().FindLink(link);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->fault.causes, (std::vector<std::string>{"pair.pkey_partition", "ib.fabric"}));
  AgentVerdicts pushed = c.verdicts.ForAgent("node-a");
  ASSERT_EQ(pushed.pairs.size(), 1u);
  EXPECT_TRUE(pushed.pairs[0].confirmed);
  EXPECT_EQ(pushed.pairs[0].localisation, PairLocalisation::kLink);
}

TEST(ClusterVerdicts, AnAgentIsPushedEveryUnhealthyPairFirstAndOnlyTheMostRecentHealthyOnes) {
  Cluster c;
  std::map<std::string, NodeInfo> known = c.known;
  // node-0 meets 100 peers over 100 sweeps; every tenth pair fails.
  for (uint64_t s = 1; s <= 100; ++s) {
    const std::string peer = "peer-" + std::to_string(s);
    known[peer].name = peer;
    SweepResult r;
    r.number = s;
    const bool bad = s % 10 == 0;
    r.pairs.push_back({NodePair("node-0", peer), 1,
                       bad ? Judged(PairStatus::kFail, FaultClass::kIbResource, {"ib.fabric"})
                           : Judged(PairStatus::kPass),
                       bad ? PairLocalisation::kInconclusive : PairLocalisation::kNone});
    c.verdicts.Apply(r, known);
  }
  AgentVerdicts pushed = c.verdicts.ForAgent("node-0");
  ASSERT_EQ(pushed.pairs.size(), 10u + ClusterVerdicts::kMaxHealthyPairsPerAgent);
  EXPECT_EQ(pushed.pairs[0].peer, "peer-100");
  EXPECT_EQ(pushed.pairs[9].peer, "peer-10");
  EXPECT_EQ(pushed.pairs[10].peer, "peer-99") << "then the most recent healthy ones";
  EXPECT_EQ(pushed.pairs.back().peer, "peer-92");
  EXPECT_EQ(c.verdicts.pairs().size(), 100u);
}

TEST(ClusterVerdicts, PairRecordsAreBoundedByForgettingTheOldestHealthyPairs) {
  Cluster c(2, 10);
  for (uint64_t s = 1; s <= 11; ++s) {
    SweepResult r;
    r.number = s;
    const bool bad = s == 1;
    r.pairs.push_back(
        {NodePair("node-0", "peer-" + std::to_string(s)), 1,
         bad ? Judged(PairStatus::kFail, FaultClass::kIbResource) : Judged(PairStatus::kPass),
         PairLocalisation::kNone});
    c.verdicts.Apply(r, c.known);
  }
  const auto& pairs = c.verdicts.pairs();
  EXPECT_EQ(pairs.size(), 9u) << "down to nine tenths of the bound";
  EXPECT_TRUE(pairs.count(NodePair("node-0", "peer-1"))) << "an unhealthy pair is kept";
  EXPECT_FALSE(pairs.count(NodePair("node-0", "peer-2")));
  EXPECT_FALSE(pairs.count(NodePair("node-0", "peer-3")));
  EXPECT_TRUE(pairs.count(NodePair("node-0", "peer-4")));
  for (const auto& p : c.verdicts.ForAgent("node-0").pairs) EXPECT_NE(p.peer, "peer-2");
}

}  // namespace
}  // namespace nccl_triage
