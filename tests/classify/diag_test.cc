// NCCL's own diagnostics report (2.31+: NCCL_RUN_DIAGNOSTICS=1, RAS diagnostics), `host:pid NCCL
// DIAG <line>`: how a line is read, that every report line NCCL can print is judged as the
// catalogue's table says (a failed check names a specific cause, a passed or skipped one names
// nothing), and that a failed check outranks the WARNs of the failure it explains.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "classify/classifier.h"
#include "classify/log_line.h"
#include "classify/rules.h"
#include "support/printf_fill.h"

namespace nccl_triage {
namespace {

TEST(ParseLogLine, ReadsADiagnosticsLineWithItsHostAndPid) {
  ParsedLine p = ParseLogLine(
      "node-a:4242 NCCL DIAG [INFO] net bw: required external tool missing in comm 0x5c1d");
  EXPECT_EQ(p.level, NcclLevel::kDiag);
  EXPECT_EQ(p.rank, "node-a:4242");
  EXPECT_EQ(p.message, "[INFO] net bw: required external tool missing in comm 0x5c1d");
  // The rank key is the one the same process's WARN and INFO lines have.
  EXPECT_EQ(ParseLogLine("node-a:4242:4250 [0] NCCL INFO Init COMPLETE").rank, p.rank);
  EXPECT_EQ(ParseLogLine("[2026-12-01 10:00:00] node-a:4242 NCCL DIAG === RAS Diagnostics ===")
                .level,
            NcclLevel::kDiag);
  // Prose that mentions DIAG is text.
  EXPECT_EQ(ParseLogLine("see the NCCL DIAGnostics page").level, NcclLevel::kNone);
}

// One row of agent/classify/catalogue/nccl_diag_messages.tsv.
struct DiagRow {
  std::string check, severity, format, versions;
};

std::vector<DiagRow> ReadDiagCatalogue() {
  std::ifstream in(std::string(NCCL_TRIAGE_SOURCE_DIR) +
                   "/agent/classify/catalogue/nccl_diag_messages.tsv");
  std::vector<DiagRow> rows;
  std::string line;
  bool header = true;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> cols;
    std::stringstream ss(line);
    for (std::string col; std::getline(ss, col, '\t');) cols.push_back(col);
    if (header) {
      header = false;
      EXPECT_EQ(line, "level\tcheck\tseverity\tformat\tfirst\tlast\tversions");
      continue;
    }
    EXPECT_EQ(cols.size(), 7u) << line;
    if (cols.size() == 7) rows.push_back({cols[1], cols[2], cols[3], cols[6]});
  }
  return rows;
}

// printf arguments that read like the report's; the first %s of a line that starts with one is
// the name of the thing compared (`%s: mismatch across ...` prints "CUDA driver version").
std::string Fill(const DiagRow& row) {
  const bool leads = row.format.starts_with('%');
  return testing::FillPrintf(row.format, [&](char conv, size_t index) -> std::string {
    if (conv == 's') {
      if (index == 0 && leads) return row.check == "driver_version" ? "CUDA driver version" : "RAS";
      return "NCCL_SOCKET_IFNAME";
    }
    if (conv == 'x' || conv == 'X') return "5c1d";
    if (conv == 'f' || conv == 'g') return "12.5";
    return "3";
  });
}

bool CatchAll(std::string_view cause) {
  return cause == "ib.verbs_call" || cause == "host.syscall" || cause == "nccl.internal" ||
         cause == "nccl.system";
}

// Every report line of NCCL 2.31.2 and 2.32.6: a failed check is named by a rule with a
// specific cause; a passed, skipped or informational one by none (or by an ignore rule).
TEST(DiagCoverage, EveryFailedCheckNamesACauseAndNoPassedCheckDoes) {
  const std::vector<DiagRow> rows = ReadDiagCatalogue();
  ASSERT_GE(rows.size(), 100u) << "the catalogue of report lines is missing or cut";
  const auto rules = ActiveRules();
  std::map<std::string, int> problems, named;
  for (const DiagRow& row : rows) {
    const std::string line = "node-a:4242 NCCL DIAG " + Fill(row);
    const ParsedLine p = ParseLogLine(line);
    ASSERT_EQ(p.level, NcclLevel::kDiag) << line;
    const auto matches = rules->MatchLine(p);
    const Rule* rule = matches.empty() ? nullptr : &rules->rules()[matches.front().rule];
    const bool names = rule != nullptr && rule->strength != Strength::kIgnore;
    if (row.severity == "problem") {
      ++problems[row.check];
      EXPECT_TRUE(names) << "a failed check no rule names (" << row.check << "): " << line;
      if (names) {
        ++named[row.check];
        EXPECT_FALSE(CatchAll(rule->cause)) << line;
        EXPECT_EQ(rule->lines & kDiagLine, kDiagLine) << rule->name;
      }
    } else {
      EXPECT_TRUE(!names || rule->strength == Strength::kPeer)
          << "a " << row.severity << " line named " << (rule ? rule->cause : "") << ": " << line;
    }
  }
  int total = 0, total_named = 0;
  for (const auto& [check, n] : problems) {
    total += n;
    total_named += named[check];
    std::printf("diag coverage: %-15s %d of %d failed-check formats named\n", check.c_str(),
                named[check], n);
  }
  std::printf("diag coverage: %d of %d failed-check formats named, over %zu report formats\n",
              total_named, total, rows.size());
}

// A constructed log in the report's real shape (tags as NCCL 2.32.6 prints them): a GPU's
// uncorrected ECC errors, then the CUDA failure they cause; the report, not the WARN, answers.
constexpr char kEccThenCuda[] = R"(node-a:101:101 [0] NCCL INFO NCCL version 2.32.6+cuda13.0
node-a:101 NCCL DIAG === RAS Diagnostics ===
node-a:101 NCCL DIAG [OK]   GPU inventory: 1x NVIDIA H100 80GB HBM3 per node consistent across 2 ranks in comm 0x5c1d
node-a:101 NCCL DIAG [WARN] ECC: uncorrected volatile errors on rank(s) {1} (worst=2) across 2 ranks in comm 0x5c1d
node-a:101 NCCL DIAG RAS diagnostics completed in 12.5 ms across 2 ranks
node-b:202:202 [0] NCCL INFO comm 0x5c1d rank 1 nranks 2 cudaDev 0 busId 60 - Init COMPLETE
node-b:202:230 [0] enqueue.cc:1610 NCCL WARN Cuda failure 'uncorrectable ECC error encountered'
node-b:202:230 [0] NCCL INFO enqueue.cc:2244 -> 1
)";

TEST(DiagClassify, AFailedCheckOutranksTheWarnOfTheFailureItExplains) {
  const Classification c = ClassifyLogText(kEccThenCuda);
  ASSERT_FALSE(c.causes.empty());
  EXPECT_EQ(c.causes.front().cause, "gpu.health");
  EXPECT_TRUE(c.causes.front().diagnostics);
  EXPECT_NE(c.reason.find("NCCL's diagnostics report (line 4) names it"), std::string::npos)
      << c.reason;
  // The WARN's own cause stays, below it, and is not the report's.
  bool cuda_cause = false;
  for (const auto& cause : c.causes) {
    if (cause.cause != "cuda.driver") continue;
    cuda_cause = true;
    EXPECT_FALSE(cause.diagnostics);
  }
  EXPECT_TRUE(cuda_cause);
}

// NCCL reports a setting that differs between ranks as [INFO] (real 2.32.6 captures, where
// NCCL_HOSTID differs on purpose): named below the call that failed, never above it, and not at
// all on a run that set up.
constexpr char kEnvMismatch[] = R"(node-a:101:101 [0] NCCL INFO NCCL version 2.32.6+cuda13.0
node-b:202:202 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to eth9
node-b:202:202 [0] misc/socket.cc:512 NCCL WARN Net : No interface found in the same subnet as remote address 10.0.0.1<43211>
node-b:202:202 [0] NCCL INFO bootstrap.cc:108 -> 2
node-a:101 NCCL DIAG === RAS Diagnostics ===
node-a:101 NCCL DIAG [INFO] NCCL environment: mismatch across 2 ranks in comm 0x5c1d for NCCL_SOCKET_IFNAME
node-a:101 NCCL DIAG [INFO] NCCL environment: NCCL_SOCKET_IFNAME=eth9 on rank(s) {1}
node-a:101 NCCL DIAG RAS diagnostics completed in 12.5 ms across 2 ranks
)";

TEST(DiagClassify, ASettingThatDiffersIsNamedBelowTheFailingCall) {
  const Classification c = ClassifyLogText(kEnvMismatch);
  ASSERT_GE(c.causes.size(), 2u);
  EXPECT_EQ(c.causes[0].cause, "net.connect");
  EXPECT_EQ(c.causes[1].cause, "nccl.env_mismatch");
  EXPECT_EQ(c.fault_class, FaultClass::kArchitecture);
}

TEST(DiagClassify, AReportWithoutAFailedCheckIsNoProofThatTheJobWorked) {
  const Classification c = ClassifyLogText(
      "node-a:101:101 [0] NCCL INFO NCCL version 2.32.6+cuda13.0\n"
      "node-a:101 NCCL DIAG === NCCL Diagnostics ===\n"
      "node-a:101 NCCL DIAG [OK] net bw: skipped (single host or no network transport)\n"
      "node-a:101 NCCL DIAG NCCL diagnostics completed in 3.1 ms across 2 ranks\n"
      "node-a:101:101 [0] NCCL INFO comm 0x5c1d rank 0 nranks 2 - Init COMPLETE\n");
  EXPECT_EQ(c.fault_class, FaultClass::kUnknown);
  EXPECT_TRUE(c.causes.empty());
  EXPECT_NE(c.reason.find("a diagnostics report with no failed check"), std::string::npos)
      << c.reason;
}

TEST(DiagClassify, AnXidNcclSaysNeedsNoActionIsNoFinding) {
  const Classification benign = ClassifyLogText(
      "node-a:101 NCCL DIAG Xid 43 detected at 1700000000 s on host node-a. No user action or "
      "further investigation is required for this Xid.\n");
  EXPECT_TRUE(benign.causes.empty());
  const Classification reset = ClassifyLogText(
      "node-a:101 NCCL DIAG Xid 79 detected at 1700000000 s on host node-a. The NVIDIA Xid "
      "catalog recommends resetting the affected GPU. Follow the documented GPU-reset "
      "capabilities and limitations: https://docs.nvidia.com/deploy/xid-errors\n");
  ASSERT_FALSE(reset.causes.empty());
  EXPECT_EQ(reset.causes.front().cause, "gpu.health");
}

}  // namespace
}  // namespace nccl_triage
