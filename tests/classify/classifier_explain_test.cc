// The verdict's prose on its own (agent/classify/classifier_explain.h): hand-built kept causes.
#include "classify/classifier_explain.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "classify/classifier_rank.h"

namespace nccl_triage::classify {
namespace {

using ::testing::HasSubstr;

CauseAcc Kept(int tier, size_t line, FaultClass verdict) {
  CauseAcc acc;
  acc.tier = tier;
  acc.order_line = line;
  acc.code_verdict = verdict;
  acc.evidence.push_back({line, "evidence"});
  return acc;
}

// Facts of a log with `lines` lines, judged with Explain after the causes are ranked.
struct Explained {
  LineCounts counts;
  RunProgress run;
  NetworkFacts net;
  std::string version;
  std::string env_net;
  RankFacts ranks;
  bool completed = false;

  Classification Of(const KeptMap& kept) const {
    Classification out;
    out.causes = RankCauses(kept);
    FillRoots(ranks, run.init_complete, out);
    Explain({.counts = counts,
             .run = run,
             .net = net,
             .nccl_version = version,
             .env_net = env_net,
             .ranks = ranks,
             .completed = completed},
            kept, out);
    return out;
  }
};

TEST(Explain, SaysAnEmptyInputIsEmpty) {
  const Classification c = Explained{}.Of({});
  EXPECT_EQ(c.fault_class, FaultClass::kUnknown);
  EXPECT_EQ(c.reason, "empty input: no lines to classify");
}

TEST(Explain, NamesTheRankThatFailedFirstForARootCause) {
  Explained e;
  e.counts.lines = 12;
  e.ranks.roots.push_back({"gpu-1:42", {9, "WARN"}, "", kTierRoot, true});
  const Classification c = e.Of({{"shm.size", Kept(kTierRoot, 9, FaultClass::kArchitecture)}});
  EXPECT_EQ(c.fault_class, FaultClass::kArchitecture);
  EXPECT_EQ(c.reason.substr(0, c.reason.find(';')),
            "rank gpu-1:42 failed first (line 9): shm.size");
  EXPECT_THAT(c.reason, HasSubstr("outside the IB path"));
}

TEST(Explain, NamesTheLineForASecondaryCause) {
  Explained e;
  e.counts.lines = 12;
  const Classification c = e.Of({{"ib.fabric", Kept(kTierSecondary, 7, FaultClass::kIbResource)}});
  EXPECT_EQ(c.fault_class, FaultClass::kIbResource);
  EXPECT_THAT(c.reason, HasSubstr("line 7: ib.fabric; the failing call is on the IB path"));
}

TEST(Explain, SaysWhichSettingWantedIbForAContextCause) {
  Explained e;
  e.counts.lines = 12;
  e.env_net = "IB";
  const Classification c =
      e.Of({{"ib.hca_present", Kept(kTierContext, 3, FaultClass::kIbResource)}});
  EXPECT_THAT(c.reason, HasSubstr("IB was wanted (NCCL_NET=IB) and line 3 says why"));
}

TEST(Explain, SaysAnRdmaPluginWantedIbWhenNoSettingDid) {
  Explained e;
  e.counts.lines = 12;
  e.net.rdma_plugin_line = LogLine{2, "NET/Plugin: Loaded net plugin NCCL RDMA Plugin (v5)"};
  const Classification plugin =
      e.Of({{"ib.hca_present", Kept(kTierContext, 3, FaultClass::kIbResource)}});
  EXPECT_THAT(plugin.reason, HasSubstr("IB was wanted (an RDMA net plugin loaded at line 2)"));
  e.net.rdma_plugin_line.reset();
  const Classification settings =
      e.Of({{"ib.hca_present", Kept(kTierContext, 3, FaultClass::kIbResource)}});
  EXPECT_THAT(settings.reason, HasSubstr("IB was wanted (by the job's NCCL_IB_* settings)"));
}

TEST(Explain, CallsACompletedRunHealthyWithItsProof) {
  Explained e;
  e.counts.lines = 40;
  e.counts.nccl = 30;
  e.run.tests_passed = true;
  e.run.last_success_line = 38;
  e.net.transports = {"P2P", "NET/IB"};
  e.completed = true;
  const Classification c = e.Of({});
  EXPECT_EQ(c.fault_class, FaultClass::kHealthy);
  EXPECT_EQ(c.reason,
            "run completed (a finished collective's result at line 38, channels via P2P, NET/IB) "
            "without a WARN");
}

TEST(Explain, NeverCallsARunHealthyWithoutProof) {
  Explained e;
  e.counts.lines = 40;
  e.counts.nccl = 30;
  e.version = "2.21.5";
  e.run.init_complete = true;
  e.run.last_init_line = 30;
  const Classification c = e.Of({});
  EXPECT_EQ(c.fault_class, FaultClass::kUnknown);
  EXPECT_THAT(c.reason, HasSubstr("no failure named and no proof that the run worked (30 NCCL "
                                  "line(s), NCCL 2.21.5, Init COMPLETE at line 30)"));
  EXPECT_THAT(c.reason, HasSubstr("the log ends after Init COMPLETE"));
}

TEST(Explain, QuotesTheFirstUnmatchedWarn) {
  Explained e;
  e.counts.lines = 10;
  e.counts.nccl = 1;
  e.ranks.roots.push_back({"h:1", {6, "h:1:1 [0] x.cc:1 NCCL WARN something new"}, "",
                           kTierContext, false});
  const Classification c = e.Of({});
  EXPECT_EQ(c.reason, "the first WARN (line 6) matches no rule: h:1:1 [0] x.cc:1 NCCL WARN "
                      "something new");
}

TEST(Explain, SaysWhenNoLineIsNccls) {
  Explained e;
  e.counts.lines = 3;
  e.counts.binary = 1;
  EXPECT_EQ(e.Of({}).reason, "no NCCL log lines in 3 line(s) (the input looks binary)");
}

}  // namespace
}  // namespace nccl_triage::classify
