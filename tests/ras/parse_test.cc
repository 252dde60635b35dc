// The RAS report parsers and the judgement, on recorded NCCL 2.28.9 reports and on reports
// modelled from NCCL 2.24, 2.26 and 2.30's print formats (fake_ras_server.h says which is which).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "ras/fake_ras_server.h"
#include "ras/render.h"
#include "ras/report.h"

namespace nccl_triage::ras {
namespace {

using testing::ParseTranscript;
using testing::ReadTranscriptFile;

std::string Body(const std::string& file) {
  const std::string text = ReadTranscriptFile(file);
  EXPECT_FALSE(text.empty()) << file;
  return ParseTranscript(text).body;
}

Report Parse(const std::string& file) {
  const std::string body = Body(file);
  auto r = body.front() == '{' ? ParseJsonReport(body) : ParseTextReport(body);
  EXPECT_TRUE(r.ok()) << file << ": " << r.status().message();
  return r.ok() ? *r : Report{};
}

const RankInfo* FindRank(const Communicator& c, int rank) {
  for (const auto& ri : c.ranks) {
    if (ri.ref.rank == rank) return &ri;
  }
  return nullptr;
}

TEST(RasTextReport, HealthyJobHasSummaryGroupsAndNoFindings) {
  const Report r = Parse("nccl-2.28.9-1-healthy-text.txt");
  EXPECT_EQ(r.nccl_version, "2.28.9");
  EXPECT_EQ(r.nodes, 1);
  EXPECT_EQ(r.processes, 2);
  EXPECT_EQ(r.gpus, 2);
  ASSERT_EQ(r.groups.size(), 1u);
  EXPECT_EQ(r.groups[0].ranks_per_comm, 2);
  EXPECT_EQ(r.groups[0].status, "RUNNING");
  EXPECT_EQ(r.groups[0].errors, "OK");
  EXPECT_TRUE(r.communicators.empty());
  EXPECT_TRUE(r.notes.empty()) << r.notes.front();
  const Judgement j = Judge(r);
  EXPECT_EQ(j.state, "ok");
  EXPECT_TRUE(j.findings.empty());
}

TEST(RasTextReport, NamesTheRankThatLaunchedFewerCollectives) {
  const Report r = Parse("nccl-2.28.9-2-lagging-text.txt");
  ASSERT_EQ(r.communicators.size(), 1u);
  const Communicator& c = r.communicators[0];
  EXPECT_EQ(c.hash, "b7bb7673efec257b");
  EXPECT_EQ(c.size, 2);
  EXPECT_EQ(c.problems, std::vector<std::string>{"MISMATCH"});
  ASSERT_NE(FindRank(c, 1), nullptr);
  EXPECT_EQ(FindRank(c, 1)->op_counts.at("AllReduce"), 484u);
  EXPECT_EQ(FindRank(c, 1)->ref, (RankRef{1, "192.0.2.2", 614, "0"}));
  EXPECT_EQ(FindRank(c, 0)->op_counts.at("AllReduce"), 485u);
  const Judgement j = Judge(r);
  EXPECT_EQ(j.state, "stuck");
  ASSERT_EQ(j.findings.size(), 1u);
  EXPECT_EQ(j.findings[0].kind, FindingKind::kLagging);
  EXPECT_EQ(j.findings[0].rank.rank, 1);
  EXPECT_EQ(j.findings[0].rank.pid, 614);
  EXPECT_EQ(j.findings[0].detail, "AllReduce: launched 484, others up to 485");
}

TEST(RasTextReport, StoppedRankIsUnresponsive) {
  for (const char* f :
       {"nccl-2.28.9-3-stopped-5s-text.txt", "nccl-2.28.9-3-stopped-20s-text.txt"}) {
    const Report r = Parse(f);
    EXPECT_EQ(r.missing_processes, 1) << f;
    ASSERT_EQ(r.missing.size(), 1u) << f;
    EXPECT_EQ(r.missing[0], (Process{614, "192.0.2.2", "0"}));
    ASSERT_EQ(r.communicators.size(), 1u);
    EXPECT_EQ(r.communicators[0].missing, 1);
    EXPECT_EQ(r.communicators[0].responding, 1);
    const Judgement j = Judge(r);
    EXPECT_EQ(j.state, "stuck");
    ASSERT_EQ(j.findings.size(), 1u) << j.summary;
    EXPECT_EQ(j.findings[0].kind, FindingKind::kUnresponsive);
    EXPECT_EQ(j.findings[0].rank.rank, 1);
    EXPECT_NE(j.summary.find("rank 1 of communicator b7bb7673efec257b (pid 614 on 192.0.2.2, "
                             "GPU 0) does not answer"),
              std::string::npos)
        << j.summary;
  }
}

TEST(RasTextReport, KilledRankBecomesDeadAndItsPeerReportsARemoteError) {
  const Report early = Parse("nccl-2.28.9-4-killed-3s-text.txt");
  EXPECT_EQ(Judge(early).findings[0].kind, FindingKind::kUnresponsive);
  const Report r = Parse("nccl-2.28.9-4-killed-65s-text.txt");
  EXPECT_EQ(r.dead_processes, 1);
  EXPECT_EQ(r.missing_processes, 0);
  const Judgement j = Judge(r);
  ASSERT_EQ(j.findings.size(), 2u);
  EXPECT_EQ(j.findings[0].kind, FindingKind::kDead);
  EXPECT_EQ(j.findings[0].rank.rank, 1);
  EXPECT_EQ(j.findings[1].kind, FindingKind::kError);
  EXPECT_EQ(j.findings[1].rank.rank, 0);
  EXPECT_EQ(j.findings[1].detail, "Remote process error");
}

TEST(RasTextReport, Nccl224CountsWithoutOperationNames) {
  const Report r = Parse("nccl-2.24.3-modelled-lagging-text.txt");
  EXPECT_EQ(r.nccl_version, "2.24.3+cuda12.6");
  EXPECT_DOUBLE_EQ(r.collection_s, 0.01);
  ASSERT_EQ(r.groups.size(), 2u);
  ASSERT_EQ(r.communicators.size(), 1u);
  EXPECT_EQ(r.communicators[0].size, 16);
  const Judgement j = Judge(r);
  ASSERT_EQ(j.findings.size(), 1u);
  EXPECT_EQ(j.findings[0].kind, FindingKind::kLagging);
  EXPECT_EQ(j.findings[0].rank, (RankRef{11, "10.0.0.12", 48211, "3"}));
  EXPECT_EQ(j.findings[0].detail, "collective: launched 1187, others up to 1200");
}

TEST(RasTextReport, DeadAndSilentProcessesOfAWholeJob) {
  const Report r = Parse("nccl-2.26.2-modelled-dead-text.txt");
  EXPECT_EQ(r.timeouts, 2);
  EXPECT_EQ(r.groups.size(), 3u);
  ASSERT_EQ(r.communicators.size(), 2u);
  EXPECT_EQ(r.communicators[0].hash, "00a1b2c3d4e5f607");
  EXPECT_EQ(r.communicators[0].size, 8);
  EXPECT_EQ(r.communicators[0].responding, 6);
  EXPECT_EQ(r.communicators[0].dead, 1);
  EXPECT_EQ(r.communicators[0].unresponsive, 1);
  EXPECT_EQ(FindRank(r.communicators[0], 7)->state, RankState::kDead);
  EXPECT_EQ(FindRank(r.communicators[0], 6)->state, RankState::kUnresponsive);
  const Judgement j = Judge(r);
  EXPECT_EQ(j.state, "stuck");
  ASSERT_GE(j.findings.size(), 4u);
  EXPECT_EQ(j.findings[0].kind, FindingKind::kDead);
  EXPECT_EQ(j.findings[0].rank.pid, 7002);
  EXPECT_EQ(j.findings[2].kind, FindingKind::kUnresponsive);
  EXPECT_TRUE(r.notes.empty()) << r.notes.front();
}

TEST(RasJsonReport, EveryRankWithItsCounts) {
  const Report r = Parse("nccl-2.28.9-2-lagging-json.txt");
  ASSERT_EQ(r.communicators.size(), 1u);
  const Communicator& c = r.communicators[0];
  EXPECT_EQ(c.hash, "b7bb7673efec257b");
  EXPECT_EQ(c.size, 2);
  EXPECT_EQ(c.responding, 2);
  ASSERT_EQ(c.ranks.size(), 2u);
  EXPECT_EQ(c.ranks[1].op_counts.at("AllReduce"), 484u);
  EXPECT_EQ(c.ranks[1].state, RankState::kRunning);
  const Judgement j = Judge(r);
  ASSERT_EQ(j.findings.size(), 1u);
  EXPECT_EQ(j.findings[0].rank.rank, 1);
  EXPECT_EQ(j.findings[0].kind, FindingKind::kLagging);
}

TEST(RasJsonReport, RepairsTheMissingCommaOfNccl2289) {
  const std::string body = Body("nccl-2.28.9-3-stopped-5s-json.txt");
  const Report r = Parse("nccl-2.28.9-3-stopped-5s-json.txt");
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_NE(r.notes[0].find("repaired"), std::string::npos);
  ASSERT_EQ(r.communicators.size(), 1u);
  EXPECT_EQ(FindRank(r.communicators[0], 1)->state, RankState::kUnresponsive);
  EXPECT_EQ(Judge(r).findings[0].kind, FindingKind::kUnresponsive);
  const Report dead = Parse("nccl-2.28.9-4-killed-65s-json.txt");
  EXPECT_EQ(FindRank(dead.communicators[0], 1)->state, RankState::kDead);
  EXPECT_EQ(dead.communicators[0].dead, 1);
  EXPECT_EQ(dead.communicators[0].unresponsive, 0);
  EXPECT_EQ(r.communicators[0].unresponsive, 1);
  EXPECT_EQ(dead.dead, (std::vector<Process>{{614, "192.0.2.2", "0"}}));
}

TEST(RasJsonReport, StatusErrorsNvmlNumbersAndLaggingOperation) {
  const Report r = Parse("nccl-2.30.7-modelled-status-json.txt");
  EXPECT_TRUE(r.notes.empty());
  const Communicator& c = r.communicators[0];
  EXPECT_EQ(FindRank(c, 1)->ref.gpu, "1 (NVML 3)");
  EXPECT_EQ(FindRank(c, 2)->state, RankState::kAbort);
  EXPECT_EQ(FindRank(c, 2)->error, "System error");
  EXPECT_EQ(FindRank(c, 3)->state, RankState::kNoComm);
  const Judgement j = Judge(r);
  EXPECT_EQ(j.state, "stuck");
  ASSERT_EQ(j.findings.size(), 4u);
  EXPECT_EQ(j.findings[0].kind, FindingKind::kLagging);
  EXPECT_EQ(j.findings[0].rank.rank, 1);
  EXPECT_EQ(j.findings[0].detail, "AllGather: launched 10, others up to 12");
  EXPECT_EQ(j.findings[1].kind, FindingKind::kError);
}

// A healthy two-rank job of NCCL 2.28.9 asked every 10 s for 10 minutes on an H100 (the 60
// reports of tests/gpu/ras-soak.sh, text and JSON alternating; tests/gpu/RESULTS.md): NCCL
// gathers each rank's counts at a slightly different moment, so a report now and then shows one
// rank an operation behind (NCCL's own `MISMATCH`). Judged as the agent's watch judges (each
// report against the one before it), none of the 60 names a rank.
TEST(RasJudgeTwice, ATenMinuteHealthyJobIsNeverNamed) {
  std::vector<Report> reports;
  int single_look_lags = 0;
  for (int i = 0; i < 60; ++i) {
    char name[64];
    std::snprintf(name, sizeof name, "soak-2.28.9/%03d-%s.txt", i, i % 2 == 0 ? "text" : "json");
    reports.push_back(Parse(name));
    const Judgement once = Judge(reports.back());
    if (once.state == "stuck") ++single_look_lags;
    if (i == 0) {
      EXPECT_EQ(once.state, "ok") << name << ": " << once.summary;
      continue;
    }
    const Judgement j = JudgeTwice(reports[reports.size() - 2], reports.back());
    EXPECT_EQ(j.state, "ok") << name << ": " << j.summary;
    EXPECT_TRUE(j.findings.empty()) << name << ": " << j.summary;
  }
  // The reports do hold the momentary lag a single look would name (reports 8 and 58).
  EXPECT_GE(single_look_lags, 2);
}

TEST(RasJudgeTwice, CountsThatMoveAreARunningJob) {
  std::string body = Body("nccl-2.28.9-2-lagging-json.txt");
  const Report first = *ParseJsonReport(body);
  // The same job a moment later: both ranks moved on, rank 1 still one behind.
  body.replace(body.find("\"AllReduce\": 485"), 17, "\"AllReduce\": 590");
  body.replace(body.find("\"AllReduce\": 484"), 17, "\"AllReduce\": 589");
  const Report later = *ParseJsonReport(body);
  EXPECT_EQ(Judge(later).state, "stuck");
  const Judgement j = JudgeTwice(first, later);
  EXPECT_EQ(j.state, "ok");
  EXPECT_TRUE(j.findings.empty());
  EXPECT_NE(j.summary.find("advanced between the two queries"), std::string::npos) << j.summary;
  const Judgement same = JudgeTwice(first, first);
  EXPECT_EQ(same.state, "stuck");
  EXPECT_NE(same.summary.find("did not move"), std::string::npos) << same.summary;
}

TEST(RasTextReport, ARankInAnotherStatusThanTheCountedMajority) {
  auto r = ParseTextReport(
      "NCCL version 2.27.3 compiled with CUDA 12.9\n\nErrors\n======\n\nWarnings\n========\n\n"
      "#0-0 (00000000000000aa) MISMATCH\n"
      "  Communicator ranks have different status\n"
      "  7 ranks have status RUNNING\n"
      "  Rank 3 has status INIT -- GPU 3 managed by process 33 on node 10.0.0.3\n"
      "  Communicator ranks have different AllReduce operation counts\n"
      "  7 ranks have launched up to operation 12\n"
      "  Rank 3 has not launched any operations -- GPU 3 managed by process 33 on node 10.0.0.3\n");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->notes.empty()) << r->notes.front();
  const Judgement j = Judge(*r);
  ASSERT_EQ(j.findings.size(), 2u) << j.summary;
  EXPECT_EQ(j.findings[0].kind, FindingKind::kLagging);
  EXPECT_EQ(j.findings[0].detail, "AllReduce: launched 0, others up to 12");
  EXPECT_EQ(j.findings[1].kind, FindingKind::kStatus);
  EXPECT_EQ(j.findings[1].rank, (RankRef{3, "10.0.0.3", 33, "3"}));
  EXPECT_EQ(j.findings[1].detail, "status init, the others running");
}

TEST(RasReport, GarbageIsRefusedWithOneLine) {
  auto t = ParseTextReport("HTTP/1.1 400 Bad Request\r\n\r\n<html>");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().message(), "not an NCCL RAS status report: 'HTTP/1.1 400 Bad Request?'");
  EXPECT_FALSE(ParseJsonReport("{\"a\": [1, 2").ok());
  EXPECT_FALSE(ParseJsonReport("[1, 2]").ok());
  EXPECT_FALSE(ParseJsonReport("{\"other\": 1}").ok());
  EXPECT_FALSE(ParseTextReport(std::string(1 << 16, '\0')).ok());
  // Deep nesting from a hostile port: refused, not a stack overflow.
  EXPECT_FALSE(ParseJsonReport(std::string(1 << 20, '[')).ok());
  const std::string deep = std::string(1 << 20, '[') + std::string(1 << 20, ']');
  EXPECT_FALSE(ParseJsonReport(deep).ok());
  // Valid but deep: parsed, and nothing in it is a communicator.
  auto odd = ParseJsonReport("{\"communicators\": " + deep + "}");
  ASSERT_TRUE(odd.ok());
  EXPECT_TRUE(odd->communicators.empty());
}

TEST(RasReport, LinesOfANewerNcclAreKeptAsNotes) {
  auto r = ParseTextReport(
      "NCCL version 2.99.0 compiled with CUDA 14.0\n\nErrors\n======\n\nSOMETHING NEW\n"
      "  with a detail\n");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->nccl_version, "2.99.0");
  EXPECT_EQ(r->notes.size(), 2u);
}

// Mutated reports (bytes flipped, lines cut, duplicated or dropped, numbers made huge) never
// crash the parsers, the judgement or the rendering; a deterministic stand-in for the fuzzers.
TEST(RasReport, MutatedReportsNeverCrash) {
  std::mt19937 rng(20261206);
  const std::vector<std::string> files = {
      "nccl-2.28.9-2-lagging-text.txt", "nccl-2.28.9-4-killed-65s-json.txt",
      "nccl-2.26.2-modelled-dead-text.txt", "nccl-2.30.7-modelled-status-json.txt",
      "nccl-2.24.3-modelled-lagging-text.txt"};
  int parsed = 0;
  for (const auto& f : files) {
    const std::string body = Body(f);
    for (int i = 0; i < 400; ++i) {
      std::string m = body;
      const int edits = 1 + static_cast<int>(rng() % 8);
      for (int e = 0; e < edits && !m.empty(); ++e) {
        const size_t at = rng() % m.size();
        switch (rng() % 5) {
          case 0: m[at] = static_cast<char>(rng() % 256); break;
          case 1: m.erase(at, rng() % 40); break;
          case 2: m.insert(at, m.substr(at, rng() % 200)); break;
          case 3: m.insert(at, "99999999999999999999999"); break;
          default: m.insert(at, "\n  Rank -1 -- GPU  managed by process  on node \n"); break;
        }
      }
      for (bool json : {false, true}) {
        auto r = json ? ParseJsonReport(m) : ParseTextReport(m);
        if (!r.ok()) continue;
        ++parsed;
        const Judgement j = Judge(*r);
        const Judgement twice = JudgeTwice(*r, *r);
        EXPECT_FALSE(j.state.empty());
        EXPECT_FALSE(twice.state.empty());
        const std::string table = RenderTable(Source{}, *r, j);
        const auto control = [](char c) {
          return c != '\n' && static_cast<unsigned char>(c) < 0x20;
        };
        EXPECT_EQ(std::count_if(table.begin(), table.end(), control), 0);
        (void)ToJson(Source{}, *r, j).dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
      }
    }
  }
  EXPECT_GT(parsed, 1000);
}

}  // namespace
}  // namespace nccl_triage::ras
