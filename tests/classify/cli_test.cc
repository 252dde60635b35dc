// `nccl-triage classify-log`, run in-process: formats, exit codes, stdin-free error paths.
#include "cmd_nccl_triage/cli.h"
#include "support/docs.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

namespace nccl_triage {
namespace {

const std::string kLogs = std::string(NCCL_TRIAGE_SOURCE_DIR) + "/tests/fixtures/nccl-logs";

int RunClassify(std::vector<std::string> args, std::string* out, std::string* err) {
  std::ostringstream o, e;
  CliContext ctx{std::move(args), o, e, "nccl-triage"};
  int rc = RunClassifyLogCommand(ctx);
  *out = o.str();
  *err = e.str();
  return rc;
}

TEST(ClassifyLogCommand, JsonFollowsTheDesignContract) {
  std::string out, err;
  ASSERT_EQ(
      RunClassify({kLogs + "/h200-nccl-2.28.9/forceib.r0.log", "--format", "json"}, &out, &err), 0)
      << err;
  auto j = nlohmann::json::parse(out);
  EXPECT_EQ(j["class"], "ib_resource");
  EXPECT_EQ(j["causes"][0]["cause"], "ib.hca_present");
  EXPECT_EQ(j["causes"][0]["class"], "ib_resource");
  EXPECT_TRUE(j["causes"][0]["evidence"].is_array());
  EXPECT_EQ(j["result_code"], 5);
  EXPECT_EQ(j["nccl_version"], "2.28.9");
}

TEST(ClassifyLogCommand, TableShowsVerdictDecisiveLinesAndFix) {
  std::string out, err;
  ASSERT_EQ(RunClassify({kLogs + "/h200-nccl-2.28.9/badif.r1.log"}, &out, &err), 0) << err;
  EXPECT_NE(out.find("class:      architecture"), std::string::npos) << out;
  EXPECT_NE(out.find("rank vm:550  line 6:"), std::string::npos) << out;
  EXPECT_NE(out.find("net.socket_ifname"), std::string::npos) << out;
  EXPECT_NE(out.find("fix: "), std::string::npos) << out;
  EXPECT_TRUE(err.empty());
}

TEST(ClassifyLogCommand, HealthyAndUnknownStillExitZero) {
  std::string out, err;
  EXPECT_EQ(RunClassify({"--format=json", kLogs + "/h200-nccl-2.28.9/socket.r0.log"}, &out, &err),
            0);
  EXPECT_EQ(nlohmann::json::parse(out)["class"], "healthy");
  EXPECT_EQ(
      RunClassify({kLogs + "/synthetic/unmatched-warn-plugin-2.21.log", "--format", "json"}, &out, &err),
      0);
  EXPECT_EQ(nlohmann::json::parse(out)["class"], "unknown");
}

TEST(ClassifyLogCommand, UnreadableInputExitsTwoWithOneLine) {
  std::string out, err;
  EXPECT_EQ(RunClassify({kLogs + "/does-not-exist.log"}, &out, &err), 2);
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  EXPECT_NE(err.find("cannot open"), std::string::npos);
  EXPECT_EQ(RunClassify({kLogs}, &out, &err), 2);
  EXPECT_NE(err.find("directory"), std::string::npos);
}

TEST(ClassifyLogCommand, ReadmeWorkedExampleIsTheCommandsRealOutput) {
  const std::string text = testing::ReadUserDocs();
  const std::string cmd = "$ nccl-triage classify-log tests/fixtures/nccl-logs/";
  size_t a = text.find(cmd);
  ASSERT_NE(a, std::string::npos) << "no worked example in the README";
  size_t path_end = text.find('\n', a);
  std::string rel = text.substr(a + cmd.size(), path_end - a - cmd.size());
  size_t b = text.find("```", path_end);
  ASSERT_NE(b, std::string::npos);
  std::string shown = text.substr(path_end + 1, b - path_end - 1);
  std::string out, err;
  ASSERT_EQ(RunClassify({kLogs + "/" + rel}, &out, &err), 0) << err;
  EXPECT_EQ(shown, out) << "update the README's worked example";
}

TEST(ClassifyLogCommand, UsageErrorsExitTwo) {
  std::string out, err;
  EXPECT_EQ(RunClassify({"--format", "yaml", "x.log"}, &out, &err), 2);
  EXPECT_EQ(RunClassify({"--bogus"}, &out, &err), 2);
  EXPECT_EQ(RunClassify({"a.log", "b.log"}, &out, &err), 2);
  EXPECT_EQ(RunClassify({"--help"}, &out, &err), 0);
  EXPECT_NE(out.find("usage: nccl-triage classify-log"), std::string::npos);
}

// A rule file of the user's, as the chart mounts it: the log is classified by it without a
// rebuild; a broken one is one line on stderr naming the rule, and exit 2.
TEST(ClassifyLogCommand, RulesFlagAddsAUserRuleFile) {
  const std::string dir = ::testing::TempDir();
  const std::string log = dir + "/site.log";
  const std::string rules = dir + "/site-rules.yaml";
  std::ofstream(log) << "n1:1:1 [0] init.cc:90 NCCL WARN fabric manager is not running\n";
  std::ofstream(rules) << "rules:\n"
                          "  - id: site.fabric_manager\n"
                          "    cause: cuda.driver\n"
                          "    family: architecture\n"
                          "    lines: [warn]\n"
                          "    patterns: ['fabric manager is not running']\n"
                          "    confidence: 0.9\n";
  std::string out, err;
  ASSERT_EQ(RunClassify({log, "--format", "json"}, &out, &err), 0) << err;
  EXPECT_EQ(nlohmann::json::parse(out)["class"], "unknown");
  ASSERT_EQ(RunClassify({log, "--format", "json", "--rules", rules}, &out, &err), 0) << err;
  EXPECT_EQ(nlohmann::json::parse(out)["class"], "architecture");
  EXPECT_EQ(nlohmann::json::parse(out)["causes"][0]["cause"], "cuda.driver");

  std::ofstream(rules) << "rules:\n  - id: site.broken\n    cause: no.such_cause\n";
  EXPECT_EQ(RunClassify({log, "--rules", rules}, &out, &err), 2);
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  EXPECT_NE(err.find("rule site.broken"), std::string::npos) << err;
}

}  // namespace
}  // namespace nccl_triage
