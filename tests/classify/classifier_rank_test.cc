// Judging a read log on its own (agent/classify/classifier_rank.h): hand-built facts and causes.
#include "classify/classifier_rank.h"

#include <gtest/gtest.h>

#include <string>

#include "core/ids.h"

namespace nccl_triage::classify {
namespace {

CauseAcc Acc(int tier, size_t line, std::string ts = "", double confidence = 0.5) {
  CauseAcc acc;
  acc.tier = tier;
  acc.order_line = line;
  acc.order_ts = std::move(ts);
  acc.confidence = confidence;
  acc.evidence.push_back({line, "line " + std::to_string(line)});
  return acc;
}

struct Judged {
  RunProgress run;
  NetworkFacts net;
  EnvFacts env;
  RankFacts ranks;
  CauseTable table;

  KeptMap Keep() const {
    return KeepCauses(table, JudgeRun(run, net), run, net, env, ranks, {});
  }
};

TEST(JudgeRun, InitCompleteAloneIsSetUpButNotCompletion) {
  RunProgress run;
  run.init_complete = true;
  run.ranks_initialised = 2;
  run.last_init_line = 10;
  const RunOutcome outcome = JudgeRun(run, NetworkFacts{});
  EXPECT_TRUE(outcome.success);
  EXPECT_TRUE(outcome.set_up);
  EXPECT_FALSE(outcome.completed);  // nothing after init proves that collectives finished
  run.last_warn_line = 11;          // a WARN after init: it did not set up cleanly
  EXPECT_FALSE(JudgeRun(run, NetworkFacts{}).set_up);
}

TEST(JudgeRun, EveryRankTornDownWithoutALaterWarnIsCompletion) {
  RunProgress run;
  run.init_complete = true;
  run.ranks_initialised = run.ranks_torn_down = 2;
  run.teardown = true;
  run.last_init_line = 10;
  run.last_success_line = 20;
  EXPECT_TRUE(JudgeRun(run, NetworkFacts{}).completed);
  run.last_warn_line = 15;  // between init and teardown: the run failed after all
  EXPECT_FALSE(JudgeRun(run, NetworkFacts{}).completed);
  run.last_warn_line = 0;
  run.ranks_torn_down = 1;  // one rank never tore down
  EXPECT_FALSE(JudgeRun(run, NetworkFacts{}).completed);
}

TEST(JudgeRun, ReadsTheNetworkFromItsNameOrTheChannels) {
  NetworkFacts net;
  net.transports = {"P2P", "NET/Socket"};
  EXPECT_TRUE(JudgeRun(RunProgress{}, net).socket_network);
  EXPECT_FALSE(JudgeRun(RunProgress{}, net).ib_in_use);
  net.network = "IB";
  EXPECT_FALSE(JudgeRun(RunProgress{}, net).socket_network);
  net.ib_devices_used = true;
  EXPECT_TRUE(JudgeRun(RunProgress{}, net).ib_in_use);
}

TEST(KeepCauses, DropsContextUnlessIbWasWanted) {
  Judged j;
  j.table.causes["ib.hca_present"] = Acc(kTierContext, 5);
  EXPECT_TRUE(j.Keep().empty());
  j.env.net = "IB";  // NCCL_NET=IB forced it, and the run failed
  EXPECT_EQ(j.Keep().count("ib.hca_present"), 1u);
}

TEST(KeepCauses, DropsSuspectsOnceTheRunSetUp) {
  Judged j;
  j.table.causes["net.config"] = Acc(kTierSuspect, 5);
  EXPECT_EQ(j.Keep().count("net.config"), 1u);
  j.run.init_complete = true;
  j.run.last_init_line = 9;
  j.run.teardown = true;
  j.run.last_success_line = 12;
  EXPECT_TRUE(j.Keep().empty());
}

TEST(KeepCauses, DropsWrappersWhenARealCauseNamesTheFailure) {
  Rule wrapper;
  wrapper.cause = "ib.fabric";
  wrapper.strength = Strength::kFollow;
  Judged j;
  CauseAcc follow = Acc(kTierFollow, 8);
  follow.rule = &wrapper;
  j.table.causes["ib.fabric"] = follow;
  EXPECT_EQ(j.Keep().count("ib.fabric"), 1u);
  j.table.causes["shm.size"] = Acc(kTierRoot, 4);
  const KeptMap kept = j.Keep();
  EXPECT_EQ(kept.count("ib.fabric"), 0u);
  EXPECT_EQ(kept.count("shm.size"), 1u);
}

TEST(KeepCauses, AddsAnOrphanResultCodeOnlyWhenNothingElseExplainsAFailedRun) {
  Judged j;
  j.ranks.orphan_code = 2;  // ncclSystemError on a rank without a WARN
  j.ranks.orphan_line = {7, "x.cc:1 NCCL INFO init.cc:10 -> 2"};
  const KeptMap kept = j.Keep();
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_EQ(kept.begin()->second.tier, kTierWeak);
  EXPECT_EQ(kept.begin()->second.evidence.front().number, 7u);
  j.run.channels = true;  // the run set up: routine codes do not count
  EXPECT_TRUE(j.Keep().empty());
}

TEST(RankCauses, OrdersByTierThenTimeWhenEveryCauseHasOne) {
  KeptMap kept;
  kept["shm.size"] = Acc(kTierRoot, 30, "2026-01-01 10:00:02");
  kept["ib.fabric"] = Acc(kTierRoot, 40, "2026-01-01 10:00:01");
  kept["net.config"] = Acc(kTierSuspect, 1, "2026-01-01 09:00:00");
  const auto ranked = RankCauses(kept);
  ASSERT_EQ(ranked.size(), 3u);
  EXPECT_EQ(ranked[0].cause, "ib.fabric");  // failed first, though printed later
  EXPECT_EQ(ranked[1].cause, "shm.size");
  EXPECT_EQ(ranked[2].cause, "net.config");
  EXPECT_EQ(ranked[0].evidence.front().number, 40u);
}

TEST(RankCauses, OrdersByLineWhenATimestampIsMissingAndRoundsConfidence) {
  KeptMap kept;
  kept["shm.size"] = Acc(kTierRoot, 30, "2026-01-01 10:00:02", 0.876);
  kept["ib.fabric"] = Acc(kTierRoot, 40, "");
  const auto ranked = RankCauses(kept);
  ASSERT_EQ(ranked.size(), 2u);
  EXPECT_EQ(ranked[0].cause, "shm.size");
  EXPECT_DOUBLE_EQ(ranked[0].confidence, 0.88);
  EXPECT_FALSE(ranked[0].remedy.empty());  // the catalogue's, without a rule
}

TEST(FillRoots, PutsTheRankThatFailedFirstInFrontWithItsResultCode) {
  RankFacts ranks;
  ranks.roots.push_back({"b:2", {20, "b warn"}, "10:00:05", kTierRoot, true});
  ranks.roots.push_back({"a:1", {30, "a warn"}, "10:00:01", kTierRoot, true});
  ranks.Rank("a:1")->code_after_warn = 5;
  ranks.Rank("b:2")->code_after_warn = 3;
  Classification out;
  FillRoots(ranks, /*success=*/false, out);
  ASSERT_EQ(out.roots.size(), 2u);
  EXPECT_EQ(out.roots[0].rank, "a:1");
  EXPECT_EQ(out.roots[0].line.number, 30u);
  EXPECT_EQ(out.result_code, 5);
}

TEST(FillRoots, FallsBackToQuotedErrorsAndTheirCode) {
  RankFacts ranks;
  ranks.text_roots.push_back({"rank0", {4, "NCCL error ... unhandled system error"}, "",
                              kTierSecondary, true});
  ranks.text_code = 2;
  Classification out;
  FillRoots(ranks, /*success=*/false, out);
  ASSERT_EQ(out.roots.size(), 1u);
  EXPECT_EQ(out.roots[0].rank, "rank0");
  EXPECT_EQ(out.result_code, 2);
}

}  // namespace
}  // namespace nccl_triage::classify
