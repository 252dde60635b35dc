// PairRun on a timeline of its own: every deadline is a time value, so a 120 s probe deadline and
// a 5 s peer grace are crossed without waiting.
#include "planner/pair_run.h"

#include <gtest/gtest.h>

#include <set>

namespace nccl_triage {
namespace {

using namespace std::chrono_literals;
using Kind = PairRunAction::Kind;

const SteadyTime T0 = SteadyTime{} + 1000h;

struct TwoNodes {
  explicit TwoNodes(std::vector<PairRunSetup::Rail> rails = {}, int parallel_rails = 1) {
    PairRunSetup s;
    s.rails = std::move(rails);
    s.parallel_rails = parallel_rails;
    s.pair = NodePair("node-a", "node-b");
    s.rank0 = "node-b";
    s.rank1 = "node-a";
    s.id_prefix = "s1-p7";
    s.phase_timeout = 130s;
    s.peer_failed_grace = 5s;
    s.connected = [this](const std::string& n) { return connected.count(n) > 0; };
    run = std::make_unique<PairRun>(std::move(s));
  }
  std::set<std::string> connected{"node-a", "node-b"};
  std::unique_ptr<PairRun> run;
};

ProbeResult Result(ProbeOutcome o, std::vector<std::string> causes = {}) {
  ProbeResult r;
  r.outcome = o;
  if (!causes.empty()) {
    Classification c;
    for (auto& id : causes) {
      ClassifiedCause cause;
      cause.cause = std::move(id);
      c.causes.push_back(std::move(cause));
    }
    r.classification = std::move(c);
  }
  return r;
}

std::vector<Kind> Kinds(const PairRunActions& actions) {
  std::vector<Kind> out;
  for (const auto& a : actions) out.push_back(a.kind);
  return out;
}

const PairRunAction* Find(const PairRunActions& actions, Kind kind, const std::string& node = "") {
  for (const auto& a : actions) {
    if (a.kind == kind && (node.empty() || a.node == node)) return &a;
  }
  return nullptr;
}

// The probe id `rank` holds in the first running phase ("" when none).
std::string Id(const PairRun& run, int rank) {
  std::vector<std::string> ids = run.probe_ids(rank);
  return ids.empty() ? std::string() : ids.front();
}

// Rank 0's unique id for the first running phase.
PairRunActions Relay(PairRun& run, const std::string& id = std::string(128, 'x')) {
  return run.OnUniqueId(Id(run, 0), id);
}

// The report of `rank` in the first running phase.
PairRunActions Report(PairRun& run, int rank, ProbeResult r, SteadyTime now) {
  return run.OnReport(Id(run, rank), std::move(r), now);
}

// Both ranks of the first running phase report a pass (rank 0 first, after relaying its id).
PairRunActions PassPhase(PairRun& run, SteadyTime now) {
  Relay(run);
  Report(run, 0, Result(ProbeOutcome::kPass), now);
  return Report(run, 1, Result(ProbeOutcome::kPass), now);
}

TEST(PairRun, StartAssignsTheSocketPhaseToBothRanksWithTheirOwnIds) {
  TwoNodes t;
  PairRunActions a = t.run->Start(T0);
  ASSERT_EQ(Kinds(a), (std::vector<Kind>{Kind::kAssign, Kind::kAssign}));
  EXPECT_EQ(a[0].node, "node-b");
  EXPECT_EQ(a[0].rank, 0);
  EXPECT_EQ(a[0].peer, "node-a");
  EXPECT_EQ(a[0].probe_id, "s1-p7-socket-r0");
  EXPECT_EQ(a[1].node, "node-a");
  EXPECT_EQ(a[1].rank, 1);
  EXPECT_EQ(a[1].probe_id, "s1-p7-socket-r1");
  EXPECT_EQ(a[0].mode, ProbeMode::kSocket);
  EXPECT_EQ(t.run->NextDeadline(), T0 + 130s);
  EXPECT_FALSE(t.run->done());
  EXPECT_TRUE(t.run->Start(T0).empty()) << "a second start does nothing";
}

TEST(PairRun, RelaysRankZerosUniqueIdToRankOneOnce) {
  TwoNodes t;
  t.run->Start(T0);
  const std::string id(128, '\x5a');
  PairRunActions a = Relay(*t.run, id);
  ASSERT_EQ(Kinds(a), std::vector<Kind>{Kind::kRelayUniqueId});
  EXPECT_EQ(a[0].node, "node-a");
  EXPECT_EQ(a[0].probe_id, "s1-p7-socket-r1");
  EXPECT_EQ(a[0].text, id);
  EXPECT_TRUE(Relay(*t.run, id).empty());
}

TEST(PairRun, ASocketPhaseThatEndsIsFollowedByTheIbPhaseThenTheRunIsDone) {
  TwoNodes t;
  t.run->Start(T0);
  PairRunActions a = PassPhase(*t.run, T0 + 1s);
  ASSERT_EQ(Kinds(a), (std::vector<Kind>{Kind::kPhaseOver, Kind::kAssign, Kind::kAssign}));
  EXPECT_EQ(a[0].mode, ProbeMode::kSocket);
  EXPECT_EQ(a[0].text, "pass");
  EXPECT_EQ(a[1].probe_id, "s1-p7-ib-r0");
  EXPECT_EQ(a[1].mode, ProbeMode::kIb);
  EXPECT_EQ(t.run->Holding(Id(*t.run, 0))->mode, ProbeMode::kIb);
  EXPECT_EQ(t.run->NextDeadline(), T0 + 1s + 130s) << "the IB phase has a deadline of its own";
  a = PassPhase(*t.run, T0 + 2s);
  ASSERT_EQ(Kinds(a), std::vector<Kind>{Kind::kPhaseOver});
  EXPECT_EQ(a[0].mode, ProbeMode::kIb);
  EXPECT_TRUE(t.run->done());
  EXPECT_EQ(t.run->NextDeadline(), std::nullopt);
  const PairProbes& p = t.run->probes();
  EXPECT_TRUE(p.socket.attempted && p.ib.attempted);
  ASSERT_TRUE(p.ib.rank0 && p.ib.rank1);
  EXPECT_EQ(p.ib.rank1->outcome, ProbeOutcome::kPass);
  EXPECT_TRUE(p.socket.lost.empty());
}

TEST(PairRun, ProbesThatNeverReportAreLostAtTheDeadlineAndBothRanksCancelled) {
  TwoNodes t;
  t.run->Start(T0);
  EXPECT_TRUE(t.run->Tick(T0 + 129s).empty());
  PairRunActions a = t.run->Tick(T0 + 130s);
  ASSERT_EQ(Kinds(a), (std::vector<Kind>{Kind::kCancel, Kind::kCancel, Kind::kPhaseOver}));
  EXPECT_EQ(a[0].probe_id, "s1-p7-socket-r0");
  EXPECT_EQ(a[1].probe_id, "s1-p7-socket-r1");
  EXPECT_EQ(a[0].text, "no report from node-b and node-a within the deadline");
  EXPECT_EQ(a[2].text, "lost");
  EXPECT_TRUE(t.run->done()) << "a lost socket phase is not followed by the IB phase";
  EXPECT_FALSE(t.run->probes().ib.attempted);
  EXPECT_EQ(t.run->probes().socket.lost, a[0].text);
  EXPECT_TRUE(t.run->Tick(T0 + 200s).empty());
}

TEST(PairRun, ARankThatRefusesHasItsPeerCancelledAtOnce) {
  TwoNodes t;
  t.run->Start(T0);
  PairRunActions a = Report(*t.run, 1, Result(ProbeOutcome::kNotRun), T0 + 1s);
  const PairRunAction* cancel = Find(a, Kind::kCancel);
  ASSERT_NE(cancel, nullptr);
  EXPECT_EQ(cancel->node, "node-b");
  EXPECT_EQ(cancel->text, "peer node-a ended before the rendezvous: not_run");
  // The socket phase ended (not lost: both ranks said something), so the IB phase starts.
  EXPECT_NE(Find(a, Kind::kAssign), nullptr);
  const ModeProbes& socket = t.run->probes().socket;
  ASSERT_TRUE(socket.rank0.has_value());
  EXPECT_EQ(socket.rank0->outcome, ProbeOutcome::kNotRun);
  EXPECT_EQ(socket.rank0->detail, "cancelled: " + cancel->text);
}

TEST(PairRun, RankZeroEndingBeforeItHandedOutTheIdHasItsPeerCancelledAtOnce) {
  TwoNodes t;
  t.run->Start(T0);
  PairRunActions a = Report(*t.run, 0, Result(ProbeOutcome::kCrashed), T0 + 1s);
  const PairRunAction* cancel = Find(a, Kind::kCancel, "node-a");
  ASSERT_NE(cancel, nullptr);
  EXPECT_EQ(cancel->text, "peer node-b ended before the rendezvous: crashed");
}

TEST(PairRun, AFailureThatNamesItsCauseHasThePeerCancelledAtOnce) {
  TwoNodes t;
  t.run->Start(T0);
  Relay(*t.run);
  PairRunActions a = Report(*t.run, 0, Result(ProbeOutcome::kFail, {"limits.memlock"}), T0 + 1s);
  const PairRunAction* cancel = Find(a, Kind::kCancel, "node-a");
  ASSERT_NE(cancel, nullptr);
  EXPECT_EQ(cancel->text, "peer node-b failed: fail");
  EXPECT_EQ(t.run->probes().socket.rank1->outcome, ProbeOutcome::kNotRun);
}

TEST(PairRun, AFailureThatNamesNoCauseGivesThePeerItsGraceToReport) {
  TwoNodes t;
  t.run->Start(T0);
  Relay(*t.run);
  EXPECT_TRUE(Report(*t.run, 0, Result(ProbeOutcome::kFail, {"peer.exited"}), T0 + 1s).empty());
  EXPECT_EQ(t.run->NextDeadline(), T0 + 6s);
  EXPECT_TRUE(t.run->Tick(T0 + 6s - 1ms).empty());
  PairRunActions a = t.run->Tick(T0 + 6s);
  const PairRunAction* cancel = Find(a, Kind::kCancel, "node-a");
  ASSERT_NE(cancel, nullptr);
  EXPECT_EQ(cancel->text, "the peer failed and this rank did not report within 5000 ms");
  EXPECT_EQ(t.run->Holding(Id(*t.run, 0))->mode, ProbeMode::kIb)
      << "the phase ended with both ranks accounted for";
}

TEST(PairRun, APeerThatReportsWithinItsGraceEndsThePhaseNormally) {
  TwoNodes t;
  t.run->Start(T0);
  Relay(*t.run);
  Report(*t.run, 0, Result(ProbeOutcome::kTimeout), T0 + 1s);
  PairRunActions a = Report(*t.run, 1, Result(ProbeOutcome::kFail, {"ib.port_state"}), T0 + 3s);
  EXPECT_EQ(Find(a, Kind::kCancel), nullptr);
  ASSERT_NE(Find(a, Kind::kPhaseOver), nullptr);
  EXPECT_EQ(t.run->probes().socket.rank1->outcome, ProbeOutcome::kFail);
  EXPECT_EQ(t.run->NextDeadline(), T0 + 3s + 130s) << "the grace of the old phase is gone";
}

TEST(PairRun, AnAgentLostMidProbeLosesThePhaseAndCancelsItsPeer) {
  TwoNodes t;
  t.run->Start(T0);
  EXPECT_TRUE(t.run->OnAgentLost("node-c", "stream closed").empty());
  PairRunActions a = t.run->OnAgentLost("node-b", "stream closed");
  const PairRunAction* cancel = Find(a, Kind::kCancel, "node-a");
  ASSERT_NE(cancel, nullptr);
  EXPECT_EQ(cancel->text, "agent node-b disconnected during the probe (stream closed)");
  EXPECT_EQ(a.back().text, "lost");
  EXPECT_TRUE(t.run->done());
  EXPECT_FALSE(t.run->probes().ib.attempted);
}

TEST(PairRun, APhaseCannotStartWithAnAgentThatIsNotConnected) {
  TwoNodes t;
  t.connected.erase("node-a");
  PairRunActions a = t.run->Start(T0);
  ASSERT_EQ(Kinds(a), std::vector<Kind>{Kind::kPhaseOver});
  EXPECT_EQ(a[0].text, "lost");
  EXPECT_TRUE(t.run->done());
  EXPECT_EQ(t.run->probes().socket.lost, "agent node-a is not connected");
}

TEST(PairRun, AnIdThatCannotBeRelayedLosesThePhase) {
  TwoNodes t;
  t.run->Start(T0);
  t.connected.erase("node-a");
  PairRunActions a = Relay(*t.run);
  EXPECT_EQ(Find(a, Kind::kRelayUniqueId), nullptr);
  EXPECT_TRUE(t.run->done());
  EXPECT_EQ(t.run->probes().socket.lost, "agent node-a disconnected during the probe");
}

TEST(PairRun, AbortCancelsWhatRunsAndLateEventsAreIgnored) {
  TwoNodes t;
  t.run->Start(T0);
  PairRunActions a = t.run->Abort("coordinator shutting down");
  ASSERT_EQ(Kinds(a), (std::vector<Kind>{Kind::kCancel, Kind::kCancel, Kind::kPhaseOver}));
  EXPECT_EQ(a[0].text, "coordinator shutting down");
  EXPECT_TRUE(t.run->done());
  EXPECT_TRUE(Report(*t.run, 0, Result(ProbeOutcome::kPass), T0 + 1s).empty());
  EXPECT_TRUE(Relay(*t.run).empty());
  EXPECT_TRUE(t.run->Abort("again").empty());
  EXPECT_TRUE(Id(*t.run, 0).empty() && Id(*t.run, 1).empty());
}

TEST(PairRun, AReportForARankThatAlreadyReportedIsIgnored) {
  TwoNodes t;
  t.run->Start(T0);
  Relay(*t.run);
  Report(*t.run, 0, Result(ProbeOutcome::kPass), T0 + 1s);
  EXPECT_TRUE(Report(*t.run, 0, Result(ProbeOutcome::kFail), T0 + 1s).empty());
  EXPECT_TRUE(Report(*t.run, 2, Result(ProbeOutcome::kFail), T0 + 1s).empty());
  EXPECT_EQ(Id(*t.run, 1), "s1-p7-socket-r1");
}

TEST(NamesSpecificCause, ConsequencesOfThePeersFailureAreNotACause) {
  EXPECT_FALSE(NamesSpecificCause(Result(ProbeOutcome::kFail)));
  EXPECT_FALSE(NamesSpecificCause(Result(
      ProbeOutcome::kFail, {"peer.exited", "nccl.timeout", "nccl.system", "nccl.internal"})));
  EXPECT_TRUE(NamesSpecificCause(Result(ProbeOutcome::kFail, {"peer.exited", "ib.port_state"})));
}

TEST(PairRun, RailPhasesFollowTheIbPhaseOneAtATimeEachOnItsRail) {
  TwoNodes t({{3, "mlx5_3/1"}, {5, "mlx5_5/1"}});
  t.run->Start(T0);
  PassPhase(*t.run, T0 + 1s);                     // socket
  PairRunActions a = PassPhase(*t.run, T0 + 2s);  // IB, all rails
  ASSERT_EQ(Kinds(a), (std::vector<Kind>{Kind::kPhaseOver, Kind::kAssign, Kind::kAssign}));
  EXPECT_EQ(a[0].rail, -1);
  EXPECT_EQ(a[1].probe_id, "s1-p7-ib-rail3-r0");
  EXPECT_EQ(a[1].mode, ProbeMode::kIb);
  EXPECT_EQ(a[1].rail, 3);
  EXPECT_EQ(a[2].rail, 3);
  EXPECT_EQ(t.run->Holding(Id(*t.run, 0))->rail, 3);
  Relay(*t.run);
  // Rank 0 names the cause: rank 1 is cancelled, and the next rail follows at once.
  a = Report(*t.run, 0, Result(ProbeOutcome::kFail, {"ib.mr_register"}), T0 + 3s);
  ASSERT_EQ(Kinds(a),
            (std::vector<Kind>{Kind::kCancel, Kind::kPhaseOver, Kind::kAssign, Kind::kAssign}))
      << "a failed rail does not stop the next one";
  EXPECT_EQ(a[0].probe_id, "s1-p7-ib-rail3-r1");
  a.erase(a.begin());
  EXPECT_EQ(a[0].rail, 3);
  EXPECT_EQ(a[0].text, "fail");
  EXPECT_EQ(a[1].probe_id, "s1-p7-ib-rail5-r0");
  a = PassPhase(*t.run, T0 + 4s);
  ASSERT_EQ(Kinds(a), std::vector<Kind>{Kind::kPhaseOver});
  EXPECT_EQ(a[0].rail, 5);
  EXPECT_TRUE(t.run->done());
  const PairProbes& p = t.run->probes();
  ASSERT_EQ(p.rails.size(), 2u);
  EXPECT_EQ(p.rails[0].rail, 3);
  EXPECT_EQ(p.rails[0].device, "mlx5_3/1");
  EXPECT_EQ(p.rails[0].ib.rank0->outcome, ProbeOutcome::kFail);
  EXPECT_EQ(p.rails[0].ib.rank1->outcome, ProbeOutcome::kNotRun);
  EXPECT_EQ(p.rails[1].ib.rank1->outcome, ProbeOutcome::kPass);
  EXPECT_EQ(p.ib.rank0->outcome, ProbeOutcome::kPass) << "the IB phase keeps its own results";
}

TEST(PairRun, ALostRailPhaseEndsTheRunWithoutTheRailsAfterIt) {
  TwoNodes t({{0, "mlx5_0/1"}, {1, "mlx5_1/1"}});
  t.run->Start(T0);
  PassPhase(*t.run, T0 + 1s);
  PassPhase(*t.run, T0 + 2s);
  ASSERT_EQ(t.run->Holding(Id(*t.run, 0))->rail, 0);
  PairRunActions a = t.run->Tick(T0 + 2s + 130s);
  EXPECT_NE(Find(a, Kind::kPhaseOver), nullptr);
  EXPECT_EQ(Find(a, Kind::kAssign), nullptr);
  EXPECT_TRUE(t.run->done());
  ASSERT_EQ(t.run->probes().rails.size(), 1u);
  EXPECT_FALSE(t.run->probes().rails[0].ib.lost.empty());
}

TEST(PairRun, NoRailPhasesWhenTheSocketPhaseWasLost) {
  TwoNodes t({{0, "mlx5_0/1"}});
  t.run->Start(T0);
  t.run->OnAgentLost("node-a", "stream closed");
  EXPECT_TRUE(t.run->done());
  EXPECT_TRUE(t.run->probes().rails.empty());
}

NodeInfo WithRails(const std::string& name, const std::vector<std::string>& devices) {
  NodeInfo n;
  n.name = name;
  for (size_t i = 0; i < devices.size(); ++i) {
    Rail r;
    r.index = static_cast<int>(i);
    r.device = devices[i];
    r.port = 1;
    r.active = true;
    r.gpu_bdf = "0000:" + std::to_string(10 + i) + ":00.0";
    n.rails.push_back(r);
  }
  return n;
}

TEST(PairRails, RailsBothNodesHaveOnTheSameHcaAndPortAsSelected) {
  NodeInfo a = WithRails("a", {"mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"});
  NodeInfo b = WithRails("b", {"mlx5_0", "mlx5_1", "mlx5_9", "mlx5_3"});
  b.rails[3].port = 2;
  auto all = PairRails(a, b, RailSelection{.all = true}, 1);
  ASSERT_EQ(all.size(), 2u) << "rail 2 is another HCA on b, rail 3 another port";
  EXPECT_EQ(all[0].rail, 0);
  EXPECT_EQ(all[0].device, "mlx5_0/1");
  EXPECT_EQ(all[1].rail, 1);
  EXPECT_EQ(all[1].device, "mlx5_1/1");
  auto listed = PairRails(a, b, RailSelection{.items = {"1", "2"}}, 1);
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].rail, 1);
  EXPECT_TRUE(PairRails(a, NodeInfo{}, RailSelection{.all = true}, 1).empty())
      << "a node that sent no rail table";
}

TEST(PairRails, EachRailCarriesTheGpuEachNodeProbesItOn) {
  NodeInfo a = WithRails("a", {"mlx5_0", "mlx5_1"});
  NodeInfo b = WithRails("b", {"mlx5_0", "mlx5_1"});
  b.rails[1].gpu_bdf = "0000:99:00.0";
  auto rails = PairRails(a, b, RailSelection{.all = true}, 1);
  ASSERT_EQ(rails.size(), 2u);
  EXPECT_EQ(rails[1].gpu_a, "0000:11:00.0");
  EXPECT_EQ(rails[1].gpu_b, "0000:99:00.0");
}

// Rail `n` on GPU `ga` of node-a and `gb` of node-b ("" unknown).
PairRunSetup::Rail OnGpus(int n, std::string ga, std::string gb) {
  return {n, "mlx5_" + std::to_string(n) + "/1", std::move(ga), std::move(gb)};
}

// The rails of the kAssign actions, one per phase (rank 0's).
std::vector<int> RailsAssigned(const PairRunActions& actions) {
  std::vector<int> out;
  for (const auto& a : actions) {
    if (a.kind == Kind::kAssign && a.rank == 0) out.push_back(a.rail);
  }
  return out;
}

// A running rail phase's probe id of `rank`.
std::string RailId(int rail, int rank) {
  return "s1-p7-ib-rail" + std::to_string(rail) + "-r" + std::to_string(rank);
}

// Both ranks of rail `rail`'s running phase pass.
PairRunActions PassRail(PairRun& run, int rail, SteadyTime now) {
  run.OnUniqueId(RailId(rail, 0), std::string(128, 'x'));
  run.OnReport(RailId(rail, 0), Result(ProbeOutcome::kPass), now);
  return run.OnReport(RailId(rail, 1), Result(ProbeOutcome::kPass), now);
}

TEST(PairRun, RailPhasesOnDifferentGpusRunSideBySideUpToTheLimit) {
  TwoNodes t(
      {OnGpus(0, "g0", "g0"), OnGpus(1, "g1", "g1"), OnGpus(2, "g2", "g2"), OnGpus(3, "g3", "g3")},
      3);
  t.run->Start(T0);
  PassPhase(*t.run, T0 + 1s);
  PairRunActions a = PassPhase(*t.run, T0 + 2s);
  EXPECT_EQ(RailsAssigned(a), (std::vector<int>{0, 1, 2})) << "three at once, the fourth waits";
  EXPECT_EQ(t.run->running(), 3u);
  EXPECT_EQ(t.run->probe_ids(1),
            (std::vector<std::string>{RailId(0, 1), RailId(1, 1), RailId(2, 1)}));

  // Each rank 0's unique id goes to its own phase's rank 1.
  a = t.run->OnUniqueId(RailId(1, 0), std::string(128, 'y'));
  ASSERT_EQ(Kinds(a), std::vector<Kind>{Kind::kRelayUniqueId});
  EXPECT_EQ(a[0].probe_id, RailId(1, 1));
  EXPECT_EQ(a[0].rail, 1);
  EXPECT_EQ(a[0].text, std::string(128, 'y'));
  EXPECT_TRUE(t.run->OnUniqueId(RailId(1, 1), std::string(128, 'y')).empty())
      << "only rank 0 hands out an id";

  // Rail 1 ends first (rank 0 names a cause): its peer is cancelled, the rails beside it run on
  // and rail 3 takes its place.
  a = t.run->OnReport(RailId(1, 0), Result(ProbeOutcome::kFail, {"ib.mr_register"}), T0 + 3s);
  ASSERT_EQ(Kinds(a),
            (std::vector<Kind>{Kind::kCancel, Kind::kPhaseOver, Kind::kAssign, Kind::kAssign}));
  EXPECT_EQ(a[0].probe_id, RailId(1, 1));
  EXPECT_EQ(a[1].rail, 1);
  EXPECT_EQ(a[1].text, "fail");
  EXPECT_EQ(RailsAssigned(a), std::vector<int>{3});
  EXPECT_EQ(t.run->NextDeadline(), T0 + 2s + 130s) << "rails 0 and 2 started first";
  EXPECT_EQ(t.run->Holding(RailId(3, 1))->rail, 3);
  EXPECT_EQ(t.run->Holding(RailId(3, 1))->rank, 1);
  EXPECT_FALSE(t.run->Holding(RailId(1, 1))) << "cancelled";

  PassRail(*t.run, 2, T0 + 4s);
  PassRail(*t.run, 0, T0 + 4s);
  EXPECT_FALSE(t.run->done());
  a = PassRail(*t.run, 3, T0 + 5s);
  ASSERT_EQ(Kinds(a), std::vector<Kind>{Kind::kPhaseOver});
  EXPECT_TRUE(t.run->done());
  const PairProbes& p = t.run->probes();
  std::vector<int> rows;
  for (const auto& r : p.rails) rows.push_back(r.rail);
  EXPECT_EQ(rows, (std::vector<int>{0, 1, 2, 3})) << "in the order they started";
  EXPECT_EQ(p.rails[1].ib.rank0->outcome, ProbeOutcome::kFail);
  EXPECT_EQ(p.rails[1].ib.rank1->outcome, ProbeOutcome::kNotRun);
  EXPECT_EQ(p.rails[3].ib.rank1->outcome, ProbeOutcome::kPass);
}

TEST(PairRun, RailsThatShareAGpuOnEitherNodeWaitForEachOther) {
  // Rails 0 and 1 share node-a's GPU; rail 3 shares node-b's GPU with rail 2; rail 4's GPU on
  // node-b is unknown, so it runs alone.
  TwoNodes t({OnGpus(0, "a0", "b0"), OnGpus(1, "a0", "b1"), OnGpus(2, "a2", "b2"),
              OnGpus(3, "a3", "b2"), OnGpus(4, "a4", "")},
             8);
  t.run->Start(T0);
  PassPhase(*t.run, T0 + 1s);
  PairRunActions a = PassPhase(*t.run, T0 + 2s);
  EXPECT_EQ(RailsAssigned(a), (std::vector<int>{0, 2}));
  a = PassRail(*t.run, 2, T0 + 3s);
  EXPECT_EQ(RailsAssigned(a), std::vector<int>{3}) << "rail 1 still waits for GPU a0";
  a = PassRail(*t.run, 0, T0 + 4s);
  EXPECT_EQ(RailsAssigned(a), std::vector<int>{1});
  PassRail(*t.run, 1, T0 + 5s);
  a = PassRail(*t.run, 3, T0 + 5s);
  EXPECT_EQ(RailsAssigned(a), std::vector<int>{4}) << "alone, once nothing else runs";
  EXPECT_EQ(t.run->running(), 1u);
  PassRail(*t.run, 4, T0 + 6s);
  EXPECT_TRUE(t.run->done());
  EXPECT_EQ(t.run->probes().rails.size(), 5u);
}

TEST(PairRun, ALostRailPhaseLetsTheOthersFinishButStartsNoMore) {
  TwoNodes t({OnGpus(0, "g0", "g0"), OnGpus(1, "g1", "g1"), OnGpus(2, "g2", "g2")}, 2);
  t.run->Start(T0);
  PassPhase(*t.run, T0 + 1s);
  PassPhase(*t.run, T0 + 2s);
  PairRunActions a = t.run->AbortPhase(RailId(0, 0), "malformed unique id from node-b");
  ASSERT_EQ(Kinds(a), (std::vector<Kind>{Kind::kCancel, Kind::kCancel, Kind::kPhaseOver}));
  EXPECT_EQ(a[2].text, "lost");
  EXPECT_EQ(a[2].rail, 0);
  EXPECT_FALSE(t.run->done()) << "rail 1 still runs";
  a = PassRail(*t.run, 1, T0 + 3s);
  ASSERT_EQ(Kinds(a), std::vector<Kind>{Kind::kPhaseOver}) << "rail 2 never starts";
  EXPECT_TRUE(t.run->done());
  ASSERT_EQ(t.run->probes().rails.size(), 2u);
  EXPECT_EQ(t.run->probes().rails[0].ib.lost, "malformed unique id from node-b");
  EXPECT_EQ(t.run->probes().rails[1].ib.rank0->outcome, ProbeOutcome::kPass);
}

TEST(PairRun, AnAgentLostEndsEveryRunningRailPhase) {
  TwoNodes t({OnGpus(0, "g0", "g0"), OnGpus(1, "g1", "g1"), OnGpus(2, "g2", "g2")}, 2);
  t.run->Start(T0);
  PassPhase(*t.run, T0 + 1s);
  PassPhase(*t.run, T0 + 2s);
  PairRunActions a = t.run->OnAgentLost("node-a", "stream closed");
  int cancels = 0, lost = 0;
  for (const auto& x : a) {
    cancels += x.kind == Kind::kCancel;
    lost += x.kind == Kind::kPhaseOver && x.text == "lost";
  }
  EXPECT_EQ(cancels, 4);
  EXPECT_EQ(lost, 2);
  EXPECT_EQ(Find(a, Kind::kAssign), nullptr);
  EXPECT_TRUE(t.run->done());
  EXPECT_FALSE(t.run->NextDeadline());
}

TEST(PairRun, EachRailPhaseHasItsOwnDeadline) {
  TwoNodes t({OnGpus(0, "g0", "g0"), OnGpus(1, "g1", "g1"), OnGpus(2, "g2", "g2")}, 2);
  t.run->Start(T0);
  PassPhase(*t.run, T0 + 1s);
  PassPhase(*t.run, T0 + 2s);
  PassRail(*t.run, 1, T0 + 50s);  // rail 2 starts at 50 s
  PassRail(*t.run, 0, T0 + 60s);
  EXPECT_EQ(t.run->NextDeadline(), T0 + 50s + 130s);
  EXPECT_TRUE(t.run->Tick(T0 + 2s + 130s).empty()) << "rail 0's deadline no longer counts";
  PairRunActions a = t.run->Tick(T0 + 50s + 130s);
  const PairRunAction* over = Find(a, Kind::kPhaseOver);
  ASSERT_NE(over, nullptr);
  EXPECT_EQ(over->rail, 2);
  EXPECT_EQ(over->text, "lost");
  EXPECT_TRUE(t.run->done());
}

}  // namespace
}  // namespace nccl_triage
