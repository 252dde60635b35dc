#include "core/rank_merge.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

namespace nccl_triage {
namespace {

ProbeResult Rank(int rank, ProbeOutcome o, std::vector<std::string> causes = {},
                 std::optional<int> nccl = std::nullopt) {
  ProbeResult r;
  r.rank = rank;
  r.outcome = o;
  r.nccl_result = nccl;
  r.detail = "d" + std::to_string(rank);
  if (!causes.empty()) {
    Classification c;
    for (const auto& id : causes) {
      ClassifiedCause cc;
      cc.cause = id;
      c.causes.push_back(cc);
    }
    r.classification = c;
  }
  return r;
}

ProbeResult Passed(int rank, double busbw, double seconds, std::string transport) {
  ProbeResult r = Rank(rank, ProbeOutcome::kPass);
  r.busbw_bytes_per_second = busbw;
  r.algbw_bytes_per_second = busbw / 2;
  r.time_seconds = seconds;
  r.duration_seconds = seconds * 10;
  r.transport = std::move(transport);
  return r;
}

std::vector<std::string> Causes(const ProbeResult& r) {
  std::vector<std::string> ids;
  if (r.classification) {
    for (const auto& c : r.classification->causes) ids.push_back(c.cause);
  }
  return ids;
}

TEST(MergeRankResults, NoRanksIsNotRun) {
  EXPECT_EQ(MergeRankResults({}).outcome, ProbeOutcome::kNotRun);
}

TEST(MergeRankResults, APassIsAsFastAsItsSlowestRank) {
  ProbeResult m = MergeRankResults({Passed(0, 20e9, 0.010, "NET/IB"),
                                    Passed(1, 18e9, 0.012, "NET/IB")});
  EXPECT_EQ(m.outcome, ProbeOutcome::kPass);
  EXPECT_EQ(m.rank, 0);
  EXPECT_EQ(m.detail, "d0");
  EXPECT_DOUBLE_EQ(m.busbw_bytes_per_second, 18e9);
  EXPECT_DOUBLE_EQ(m.algbw_bytes_per_second, 9e9);
  EXPECT_DOUBLE_EQ(m.time_seconds, 0.012);
  EXPECT_DOUBLE_EQ(m.duration_seconds, 0.12);
}

TEST(MergeRankResults, APassWhereOneRankFellBackToSocketsRunsViaSockets) {
  ProbeResult m = MergeRankResults({Passed(0, 20e9, 0.01, "NET/IB"),
                                    Passed(1, 20e9, 0.01, "NET/Socket")});
  EXPECT_EQ(m.transport, "NET/Socket");
  m = MergeRankResults({Passed(0, 20e9, 0.01, "NET/Socket"), Passed(1, 20e9, 0.01, "NET/IB")});
  EXPECT_EQ(m.transport, "NET/Socket");
}

TEST(MergeRankResults, OnePassingRankDoesNotMakeAPass) {
  for (ProbeOutcome o : {ProbeOutcome::kFail, ProbeOutcome::kTimeout, ProbeOutcome::kCrashed,
                         ProbeOutcome::kUnavailable, ProbeOutcome::kNotRun}) {
    EXPECT_EQ(MergeRankResults({Rank(0, ProbeOutcome::kPass), Rank(1, o)}).outcome, o);
    EXPECT_EQ(MergeRankResults({Rank(0, o), Rank(1, ProbeOutcome::kPass)}).outcome, o);
  }
}

TEST(MergeRankResults, TheDetailNamesTheRankThatExplainsTheProbe) {
  ProbeResult m =
      MergeRankResults({Rank(0, ProbeOutcome::kPass), Rank(1, ProbeOutcome::kTimeout)});
  EXPECT_EQ(m.detail, "rank 1: d1");
}

TEST(MergeRankResults, TheCrashedRankExplainsThePairAndItsPeersOwnCauseIsKept) {
  ProbeResult m = MergeRankResults(
      {Rank(0, ProbeOutcome::kFail, {"peer.exited", "ib.fabric"}, 6),
       Rank(1, ProbeOutcome::kCrashed)});
  EXPECT_EQ(m.outcome, ProbeOutcome::kCrashed);
  EXPECT_EQ(m.detail, "rank 1: d1");
  // The crashed rank's log named nothing; its peer's own cause is kept, its "remote process
  // exited" is the crash itself seen from the other side and is not a cause of the pair.
  EXPECT_EQ(Causes(m), std::vector<std::string>{"ib.fabric"});
}

TEST(MergeRankResults, ACrashExplainsThePairBeforeAFailureWithANamedCause) {
  ProbeResult m = MergeRankResults(
      {Rank(0, ProbeOutcome::kFail, {"limits.memlock"}), Rank(1, ProbeOutcome::kCrashed)});
  EXPECT_EQ(m.outcome, ProbeOutcome::kCrashed);
  EXPECT_EQ(Causes(m), std::vector<std::string>{"limits.memlock"});
}

TEST(MergeRankResults, ACrashExplainsThePairBeforeATimeout) {
  ProbeResult m =
      MergeRankResults({Rank(0, ProbeOutcome::kTimeout), Rank(1, ProbeOutcome::kCrashed)});
  EXPECT_EQ(m.outcome, ProbeOutcome::kCrashed);
  EXPECT_EQ(m.rank, 1);
}

TEST(MergeRankResults, UnavailableExplainsItsPeersTimeoutAndUnnamedFailure) {
  EXPECT_EQ(
      MergeRankResults({Rank(0, ProbeOutcome::kUnavailable), Rank(1, ProbeOutcome::kFail)}).outcome,
      ProbeOutcome::kUnavailable);
  EXPECT_EQ(MergeRankResults({Rank(0, ProbeOutcome::kTimeout), Rank(1, ProbeOutcome::kUnavailable)})
                .outcome,
            ProbeOutcome::kUnavailable);
  ProbeResult no_id = Rank(1, ProbeOutcome::kFail);
  no_id.detail = "no unique id from rank 0 on fd 3 before the deadline";
  EXPECT_EQ(MergeRankResults({Rank(0, ProbeOutcome::kUnavailable), no_id}).outcome,
            ProbeOutcome::kUnavailable);
}

TEST(MergeRankResults, AFailureWithACauseOfItsOwnExplainsThePairBeforeUnavailable) {
  ProbeResult m = MergeRankResults({Rank(0, ProbeOutcome::kUnavailable),
                                    Rank(1, ProbeOutcome::kFail, {"net.config"})});
  EXPECT_EQ(m.outcome, ProbeOutcome::kFail);
  EXPECT_EQ(m.rank, 1);
}

TEST(MergeRankResults, ACrashExplainsThePairBeforeUnavailable) {
  EXPECT_EQ(MergeRankResults({Rank(0, ProbeOutcome::kUnavailable), Rank(1, ProbeOutcome::kCrashed)})
                .outcome,
            ProbeOutcome::kCrashed);
}

TEST(MergeRankResults, UnavailableExplainsThePairBeforeARankThatDidNotRun) {
  ProbeResult m =
      MergeRankResults({Rank(0, ProbeOutcome::kNotRun), Rank(1, ProbeOutcome::kUnavailable)});
  EXPECT_EQ(m.outcome, ProbeOutcome::kUnavailable);
  EXPECT_EQ(m.rank, 1);
}

TEST(MergeRankResults, ARealErrorExplainsThePairBeforeItsPeersTimeout) {
  // ncclSystemError with a log that names nothing: still this rank's own failure.
  ProbeResult m = MergeRankResults(
      {Rank(0, ProbeOutcome::kTimeout), Rank(1, ProbeOutcome::kFail, {}, 2)});
  EXPECT_EQ(m.outcome, ProbeOutcome::kFail);
  EXPECT_EQ(m.rank, 1);
}

TEST(MergeRankResults, ATimeoutExplainsItsPeersConsequences) {
  // Each of these only says the other side went away.
  ProbeResult remote = Rank(1, ProbeOutcome::kFail, {}, 6);
  ProbeResult exited = Rank(1, ProbeOutcome::kFail, {"peer.exited"});
  ProbeResult unattributed = Rank(1, ProbeOutcome::kFail, {"nccl.system"});
  ProbeResult stopped = Rank(1, ProbeOutcome::kFail);
  stopped.detail = "stopped: rank 0 timed out";
  for (const ProbeResult& peer : {remote, exited, unattributed, stopped}) {
    ProbeResult m = MergeRankResults({Rank(0, ProbeOutcome::kTimeout), peer});
    EXPECT_EQ(m.outcome, ProbeOutcome::kTimeout) << peer.detail;
    EXPECT_EQ(m.rank, 0) << peer.detail;
  }
}

TEST(MergeRankResults, TheRankWhoseLogNamesACauseExplainsThePair) {
  ProbeResult m = MergeRankResults({Rank(0, ProbeOutcome::kFail, {"peer.exited"}),
                                    Rank(1, ProbeOutcome::kFail, {"limits.memlock"})});
  EXPECT_EQ(m.rank, 1);
  EXPECT_EQ(Causes(m), std::vector<std::string>{"limits.memlock"});
}

TEST(MergeRankResults, AmongEqualFailuresRankZeroExplainsAndBothCausesAreKept) {
  ProbeResult m = MergeRankResults({Rank(0, ProbeOutcome::kFail, {"ib.fabric"}),
                                    Rank(1, ProbeOutcome::kFail, {"limits.memlock"})});
  EXPECT_EQ(m.rank, 0);
  EXPECT_EQ(Causes(m), (std::vector<std::string>{"ib.fabric", "limits.memlock"}));
}

TEST(MergeRankResults, ManyRanksFollowTheSameRule) {
  // The intra-node probe: one rank per GPU.
  ProbeResult m = MergeRankResults({Passed(0, 100e9, 0.01, "P2P/CUMEM"),
                                    Rank(1, ProbeOutcome::kFail, {}, 6),
                                    Rank(2, ProbeOutcome::kCrashed),
                                    Rank(3, ProbeOutcome::kTimeout)});
  EXPECT_EQ(m.outcome, ProbeOutcome::kCrashed);
  EXPECT_EQ(m.detail, "rank 2: d2");
}

}  // namespace
}  // namespace nccl_triage
