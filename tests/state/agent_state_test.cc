#include "state/agent_state.h"

#include <gtest/gtest.h>

#include <thread>

namespace nccl_triage {
namespace {

ProbeResult Probe(std::string peer, ProbeMode mode, ProbeOutcome outcome, double seconds) {
  ProbeResult r;
  r.peer = std::move(peer);
  r.mode = mode;
  r.outcome = outcome;
  r.duration_seconds = seconds;
  return r;
}

TEST(AgentState, NotReadyUntilTheFirstCycleEvenWhenItFailed) {
  AgentState state("n1", "0.1.0", 1000);
  EXPECT_FALSE(state.Ready());
  EXPECT_EQ(state.View().Verdict().fault_class, FaultClass::kUnknown);
  state.SetCycle(nullptr, nullptr, nullptr, 2000, 2500, "gather: root unreadable");
  EXPECT_TRUE(state.Ready());
  EXPECT_EQ(state.View().cycle.last_error, "gather: root unreadable");
  EXPECT_DOUBLE_EQ(state.View().cycle.last_duration_seconds, 0.5);
}

TEST(AgentState, VerdictComesFromProbesWhenTheCoordinatorSentOne) {
  AgentState state("n1", "v", 0);
  auto report = std::make_shared<NodeReport>();
  report->fault_class = FaultClass::kArchitecture;
  report->causes = {"limits.memlock"};
  state.SetCycle(report, nullptr, nullptr, 1, 2, "");
  EXPECT_EQ(state.View().Verdict().fault_class, FaultClass::kArchitecture);
  EXPECT_EQ(state.View().Verdict().basis, Basis::kChecks);
  NodeVerdict v{FaultClass::kIbResource, Basis::kProbes, {"limits.memlock"}, "socket ok, IB fails"};
  state.SetProbeVerdict(v);
  EXPECT_EQ(state.View().Verdict().fault_class, FaultClass::kIbResource);
  EXPECT_EQ(state.View().Verdict().basis, Basis::kProbes);
  state.SetProbeVerdict(std::nullopt);
  EXPECT_EQ(state.View().Verdict().basis, Basis::kChecks);
}

TEST(AgentState, KeepsTheLastProbePerPeerAndModeButEveryObservation) {
  AgentState state("n1", "v", 0);
  state.RecordProbe(Probe("n2", ProbeMode::kSocket, ProbeOutcome::kFail, 1), 10);
  state.RecordProbe(Probe("n2", ProbeMode::kSocket, ProbeOutcome::kPass, 2), 20);
  state.RecordProbe(Probe("n2", ProbeMode::kIb, ProbeOutcome::kPass, 3), 30);
  AgentStateView v = state.View();
  ASSERT_EQ(v.probes.size(), 2u);
  EXPECT_EQ(v.probes.at({"n2", ProbeMode::kSocket})->result.outcome, ProbeOutcome::kPass);
  EXPECT_EQ(v.last_probe_unix_ms, 30);
  EXPECT_EQ(state.ProbeObservationsAfter(0).size(), 3u);
  EXPECT_EQ(state.ProbeObservationsAfter(2).size(), 1u);
  state.RemovePeer("n2");
  EXPECT_TRUE(state.View().probes.empty());
}

// A pair's IB probe passes (NCCL spreads over every rail), then its rail 5 fails alone: the pair's
// `ib` row keeps the pass, the rail's failure is its own row, and both go with the peer.
TEST(AgentState, ARailProbeIsKeptApartFromThePairsIbProbe) {
  AgentState state("n1", "v", 0);
  state.RecordProbe(Probe("n2", ProbeMode::kIb, ProbeOutcome::kPass, 1), 10);
  state.RecordProbe(Probe("n2", ProbeMode::kIb, ProbeOutcome::kFail, 1), 20, 5, "=mlx5_5:1");
  state.RecordProbe(Probe("n2", ProbeMode::kIb, ProbeOutcome::kPass, 1), 30, 6, "=mlx5_6:1");
  AgentStateView v = state.View();
  ASSERT_EQ(v.probes.size(), 1u);
  EXPECT_EQ(v.probes.at({"n2", ProbeMode::kIb})->result.outcome, ProbeOutcome::kPass);
  ASSERT_EQ(v.rail_probes.size(), 2u);
  const ProbeRecord& rail5 = *v.rail_probes.at({"n2", 5});
  EXPECT_EQ(rail5.result.outcome, ProbeOutcome::kFail);
  EXPECT_EQ(rail5.rail, 5);
  EXPECT_EQ(rail5.ib_hca, "=mlx5_5:1");
  EXPECT_EQ(state.ProbeObservationsAfter(0).size(), 3u);  // every probe's duration is observed
  state.RecordProbe(Probe("n3", ProbeMode::kIb, ProbeOutcome::kPass, 1), 40, 5, "=mlx5_5:1");
  state.RemovePeer("n2");
  v = state.View();
  EXPECT_TRUE(v.probes.empty());
  ASSERT_EQ(v.rail_probes.size(), 1u);
  EXPECT_EQ(v.rail_probes.begin()->first, (RailProbeKey{"n3", 5}));
}

TEST(AgentState, ViewIsAConsistentCopy) {
  AgentState state("n1", "v", 0);
  state.SetPairVerdict("n2", PairVerdict{FaultClass::kHealthy}, 5);
  AgentStateView before = state.View();
  state.SetPairVerdict("n3", PairVerdict{FaultClass::kIbResource}, 6);
  EXPECT_EQ(before.pairs.size(), 1u);
  EXPECT_EQ(state.View().pairs.size(), 2u);
  EXPECT_GT(state.View().generation, before.generation);
}

TEST(AgentState, WaitForChangeWakesOnAWriteAndOnStop) {
  AgentState state("n1", "v", 0);
  uint64_t g = state.Generation();
  std::thread writer([&] { state.SetCoordinatorStatus("connected"); });
  std::stop_source stop;
  EXPECT_GT(state.WaitForChange(g, stop.get_token()), g);
  writer.join();
  std::thread stopper([&] { stop.request_stop(); });
  state.WaitForChange(state.Generation(), stop.get_token());  // returns because of the stop
  stopper.join();
}

TEST(AgentStateView, NcclVersionIsTheLatestReported) {
  AgentState state("n1", "v", 0);
  EXPECT_EQ(state.View().NcclVersion(), "");
  ProbeResult a = Probe("n2", ProbeMode::kSocket, ProbeOutcome::kPass, 1);
  a.nccl_version = "2.27.3";
  state.RecordProbe(a, 10);
  ProbeResult b = Probe("n3", ProbeMode::kSocket, ProbeOutcome::kPass, 1);
  b.nccl_version = "2.28.9";
  state.RecordProbe(b, 20);
  EXPECT_EQ(state.View().NcclVersion(), "2.28.9");
}

}  // namespace
}  // namespace nccl_triage
