// Rule files: the shipped file, the copy built into the binary, a user's file on top, and what a
// broken file says.
#include "classify/rule_files.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "classify/classifier.h"
#include "classify/rules.h"

namespace nccl_triage {
namespace {

const std::string kSource = NCCL_TRIAGE_SOURCE_DIR "/agent/classify/rules.yaml";

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A file in a fresh temporary folder, removed with the object.
class TempFile {
 public:
  explicit TempFile(const std::string& text)
      : dir_(std::filesystem::temp_directory_path() /
             ("rule-files-test-" + std::to_string(getpid()) + "-" + std::to_string(++count_))) {
    std::filesystem::create_directories(dir_);
    std::ofstream(path()) << text;
  }
  ~TempFile() { std::filesystem::remove_all(dir_); }
  std::string path() const { return (dir_ / "rules.yaml").string(); }

 private:
  static inline int count_ = 0;
  std::filesystem::path dir_;
};

std::string ErrorOf(std::string_view yaml) {
  auto r = ParseRules(yaml, "user.yaml");
  return r.ok() ? std::string("(loaded)") : r.status().message();
}

constexpr std::string_view kOneRule = R"(rules:
  - id: site.fabric_manager_down
    cause: cuda.driver
    family: architecture
    lines: [warn, text]
    patterns:
      - 'fabric manager is not running'
    confidence: 0.9
    hint: Start nvidia-fabricmanager on this node.
)";

TEST(RuleFiles, TheBuiltInCopyIsTheShippedFile) {
  EXPECT_EQ(BuiltinRuleText(), Slurp(kSource));
  auto rules = ParseRules(BuiltinRuleText(), "built in");
  ASSERT_TRUE(rules.ok()) << rules.status().message();
  EXPECT_GT(rules->size(), 100u);
}

TEST(RuleFiles, UsesTheBuiltInRulesWhenTheShippedFileIsNotInstalled) {
  auto loaded = LoadRuleFiles({}, "/nonexistent/classify-rules.yaml");
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_EQ((*loaded)->rules().size(), ParseRules(BuiltinRuleText(), "b")->size());
}

TEST(RuleFiles, AUserRuleIsTriedFirstAndClassifiesWithoutARebuild) {
  TempFile user{std::string(kOneRule)};
  auto loaded = LoadRuleFiles({user.path()}, kSource);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_EQ((*loaded)->rules().front().name, "site.fabric_manager_down");
  LogClassifier classifier(*loaded);
  classifier.Feed("n1:1:1 [0] misc/cudawrap.cc:90 NCCL WARN fabric manager is not running");
  Classification c = classifier.Finish();
  ASSERT_FALSE(c.causes.empty());
  EXPECT_EQ(c.causes[0].cause, "cuda.driver");
  EXPECT_EQ(c.causes[0].remedy, "Start nvidia-fabricmanager on this node.");
}

TEST(RuleFiles, AUserRuleWithAShippedIdReplacesIt) {
  TempFile user{R"(rules:
  - id: ibv.reg_mr_enomem
    cause: limits.memlock
    family: ib_resource
    lines: [warn]
    patterns: ['Call to ibv_reg_mr failed']
    confidence: 0.5
    hint: Our clusters set memlock in the job template.
)"};
  auto loaded = LoadRuleFiles({user.path()}, kSource);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  const auto& rules = (*loaded)->rules();
  EXPECT_EQ(std::count_if(rules.begin(), rules.end(),
                          [](const Rule& r) { return r.name == "ibv.reg_mr_enomem"; }),
            1);
  EXPECT_EQ(rules.front().name, "ibv.reg_mr_enomem");  // kept its place
  LogClassifier classifier(*loaded);
  classifier.Feed("n1:1:1 [0] misc/ibvwrap.cc:1 NCCL WARN Call to ibv_reg_mr failed with error x");
  Classification c = classifier.Finish();
  ASSERT_FALSE(c.causes.empty());
  EXPECT_EQ(c.causes[0].remedy, "Our clusters set memlock in the job template.");
}

TEST(RuleFiles, AMissingUserFileIsAnErrorNamingIt) {
  auto loaded = LoadRuleFiles({"/nonexistent/extra.yaml"}, kSource);
  ASSERT_FALSE(loaded.ok());
  EXPECT_NE(loaded.status().message().find("/nonexistent/extra.yaml"), std::string::npos);
}

TEST(RuleFiles, ABrokenRuleIsOneLineNamingTheFileAndTheRule) {
  std::string bad_cause(kOneRule);
  bad_cause.replace(bad_cause.find("cuda.driver"), 11, "cuda.nonsense");
  std::string bad_pattern(kOneRule);
  bad_pattern.replace(bad_pattern.find("'fabric manager"), 1, "'(fabric manager");
  std::string bad_key(kOneRule);
  bad_key.replace(bad_key.find("hint:"), 5, "hnit:");
  std::string no_patterns(kOneRule);
  no_patterns.erase(no_patterns.find("    patterns:"),
                    no_patterns.find("    confidence") - no_patterns.find("    patterns:"));
  std::string bad_family(kOneRule);
  bad_family.replace(bad_family.find("architecture"), 12, "healthy");
  std::string bad_version(kOneRule);
  bad_version += "    nccl: {from: two}\n";
  for (const std::string& text :
       {bad_cause, bad_pattern, bad_key, no_patterns, bad_family, bad_version}) {
    const std::string error = ErrorOf(text);
    SCOPED_TRACE(text);
    EXPECT_EQ(error.find('\n'), std::string::npos) << error;
    EXPECT_EQ(error.rfind("user.yaml:", 0), 0u) << error;
    EXPECT_NE(error.find("rule site.fabric_manager_down"), std::string::npos) << error;
  }
  EXPECT_NE(ErrorOf(bad_cause).find("cuda.nonsense"), std::string::npos);
  EXPECT_NE(ErrorOf(bad_key).find("hnit"), std::string::npos);
}

TEST(RuleFiles, TextThatIsNotARuleFileIsOneLine) {
  for (std::string_view text : {"rules: [\n", "- just\n- a list\n", "rules:\n  - 42\n", "",
                                "rules: []\nextra: 1\n"}) {
    const std::string error = ErrorOf(text);
    EXPECT_EQ(error.rfind("user.yaml", 0), 0u) << text << " -> " << error;
    EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  }
  EXPECT_NE(ErrorOf("rules:\n  - 42\n").find("rule 1"), std::string::npos);
}

TEST(RuleFiles, AVersionRangeLimitsARuleToTheLogsNcclVersion) {
  std::string ranged(kOneRule);
  ranged += "    nccl: {from: '2.19', before: '2.23.4'}\n";
  auto rules = ParseRules(ranged, "user.yaml");
  ASSERT_TRUE(rules.ok()) << rules.status().message();
  auto compiled = CompiledRules::Compile(std::move(rules).value());
  ASSERT_TRUE(compiled.ok());
  auto classify = [&](const std::string& version) {
    LogClassifier classifier(*compiled);
    if (!version.empty()) classifier.Feed("n1:1:1 [0] NCCL INFO NCCL version " + version);
    // A file NCCL's catalogue does not know: only the rule can name this line.
    classifier.Feed("n1:1:1 [0] site/fm_check.cc:90 NCCL WARN fabric manager is not running");
    Classification c = classifier.Finish();
    return c.causes.empty() ? std::string() : c.causes[0].cause;
  };
  EXPECT_EQ(classify("2.21.5+cuda12.4"), "cuda.driver");
  EXPECT_EQ(classify("2.19"), "cuda.driver");
  EXPECT_EQ(classify(""), "cuda.driver");  // no version in the log: the rule holds
  EXPECT_EQ(classify("2.18.3"), "");
  EXPECT_EQ(classify("2.23.4"), "");
}

// `differ`: the rule holds only when the two values NCCL compared differ; with equal values the
// line goes on to the next rule.
TEST(RuleFiles, ADifferRuleHoldsOnlyWhenItsTwoGroupsDiffer) {
  constexpr std::string_view kPair = R"(rules:
  - id: site.world_size
    cause: nccl.api_usage
    family: architecture
    lines: [warn]
    patterns: ['mismatch in info from procs, nranks (\d+) vs (\d+)']
    differ: true
    confidence: 0.9
  - id: site.other_field
    cause: versions.mismatch
    family: architecture
    lines: [warn]
    patterns: ['mismatch in info from procs']
    confidence: 0.7
)";
  auto rules = ParseRules(kPair, "user.yaml");
  ASSERT_TRUE(rules.ok()) << rules.status().message();
  auto compiled = CompiledRules::Compile(std::move(rules).value());
  ASSERT_TRUE(compiled.ok());
  auto names = [&](const std::string& values) {
    const std::string line = "n1:1:2 [0] bootstrap.cc:340 NCCL WARN Bootstrap Root : mismatch in "
                             "info from procs, nranks " + values + ", nroots 1 vs 2";
    auto v = RuleNamesForLine(line, **compiled);
    return v.empty() ? std::string() : std::string(v.front());
  };
  EXPECT_EQ(names("2 vs 3"), "site.world_size");
  EXPECT_EQ(names("16 vs 8"), "site.world_size");
  EXPECT_EQ(names("2 vs 2"), "site.other_field");
  EXPECT_EQ(names("12 vs 12"), "site.other_field");

  std::string one_group(kPair);
  const std::string two_groups = "nranks (\\d+) vs (\\d+)";
  one_group.replace(one_group.find(two_groups), two_groups.size(), "nranks (\\d+) vs \\d+");
  const std::string error = ErrorOf(one_group);
  EXPECT_NE(error.find("differ needs two capture groups"), std::string::npos) << error;
  EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  std::string not_bool(kPair);
  not_bool.replace(not_bool.find("differ: true"), 12, "differ: maybe");
  EXPECT_NE(ErrorOf(not_bool).find("differ is not true or false"), std::string::npos);
}

}  // namespace
}  // namespace nccl_triage
