// Findings across lines on their own (agent/classify/classifier_findings.h): hand-built facts.
#include "classify/classifier_findings.h"

#include <gtest/gtest.h>

#include <string>

namespace nccl_triage::classify {
namespace {

LogLine L(size_t n, std::string text) { return {n, std::move(text)}; }

TEST(AddMultiLineFindings, TwoNcclVersionsAreASkewEvenInACompletedRun) {
  LogFacts facts;
  facts.versions.seen = {{"2.21.5", L(3, "NCCL version 2.21.5")},
                         {"2.18.1", L(9, "NCCL version 2.18.1")}};
  CauseTable table;
  AddMultiLineFindings(facts, /*completed=*/true, table);
  const CauseAcc& acc = table.causes.at(std::string(kVersionSkew.cause.str()));
  EXPECT_EQ(acc.tier, kTierSecondary);
  EXPECT_EQ(acc.order_line, 9u);
  ASSERT_EQ(acc.evidence.size(), 2u);
  EXPECT_EQ(acc.evidence[0].number, 3u);
}

TEST(AddMultiLineFindings, ReadsNothingElseOnceTheRunCompleted) {
  LogFacts facts;
  facts.devices.no_device_line = L(4, "no CUDA-capable device is detected");
  facts.devices.device_opened_line = L(2, "comm 0x1 rank 0 nranks 2 cudaDev 0");
  CauseTable table;
  AddMultiLineFindings(facts, /*completed=*/true, table);
  EXPECT_TRUE(table.causes.empty());
  AddMultiLineFindings(facts, /*completed=*/false, table);
  const CauseAcc& acc = table.causes.at(std::string(kDeviceNotGiven.cause.str()));
  EXPECT_EQ(acc.tier, kTierRoot);
  EXPECT_EQ(acc.order_line, 4u);  // the process without its GPU first
}

TEST(AddMultiLineFindings, ASettingQuotedBackInAWarnIsTheRoot) {
  LogFacts facts;
  facts.env.names = {"NCCL_PROTO"};
  facts.env.values = {"fast"};
  facts.env.lines = {L(2, "NCCL_PROTO set by environment to fast")};
  CauseTable table;
  AddMultiLineFindings(facts, /*completed=*/false, table);
  EXPECT_EQ(table.causes.at(std::string(kBadSetting.cause.str())).tier, kTierSecondary);

  facts.env.rejected_lines = {L(8, "NCCL WARN Invalid protocol \"fast\"")};
  CauseTable quoted;
  AddMultiLineFindings(facts, /*completed=*/false, quoted);
  const CauseAcc& acc = quoted.causes.at(std::string(kBadSetting.cause.str()));
  EXPECT_EQ(acc.tier, kTierRoot);
  ASSERT_EQ(acc.evidence.size(), 2u);
  EXPECT_EQ(acc.evidence[1].number, 8u);
}

TEST(AddMultiLineFindings, RanksWithAndWithoutGpuDirectRdmaAreASuspectKeptUntilCompletion) {
  LogFacts facts;
  facts.ranks.Rank("a:1")->ib_gdr = true;
  facts.ranks.Rank("b:2")->ib_plain = true;
  facts.net.gdr_line = L(5, "via NET/IB/0/GDRDMA");
  facts.net.plain_ib_line = L(6, "via NET/IB/0");
  CauseTable table;
  AddMultiLineFindings(facts, /*completed=*/false, table);
  const CauseAcc& acc = table.causes.at(std::string(kGdrSkew.cause.str()));
  EXPECT_EQ(acc.tier, kTierSuspect);
  EXPECT_EQ(acc.evidence.front().number, 6u);
  EXPECT_EQ(table.keep_unless_completed.count(std::string(kGdrSkew.cause.str())), 1u);
}

}  // namespace
}  // namespace nccl_triage::classify
