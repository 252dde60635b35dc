// Runs the whole NCCL log corpus (tests/fixtures/nccl-logs/MANIFEST.tsv) through the classifier:
// each log must get its expected class and top cause, every rule a log names must match a line
// of that log, and together the logs must exercise every rule of the table.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "classify/classifier.h"
#include "classify/rules.h"

namespace nccl_triage {
namespace {

const std::string kCorpus = std::string(NCCL_TRIAGE_SOURCE_DIR) + "/tests/fixtures/nccl-logs";

struct Entry {
  std::string file, fault_class, cause;
  std::vector<std::string> rules;
  std::string description;
};

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, sep)) out.push_back(item);
  return out;
}

std::vector<Entry> LoadManifest() {
  std::ifstream in(kCorpus + "/MANIFEST.tsv");
  std::vector<Entry> entries;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    auto f = Split(line, '\t');
    if (f.size() != 5) {
      ADD_FAILURE() << "bad manifest row: " << line;
      continue;
    }
    Entry e{f[0], f[1], f[2], {}, f[4]};
    if (f[3] != "-") e.rules = Split(f[3], ',');
    entries.push_back(std::move(e));
  }
  return entries;
}

TEST(Corpus, EveryLogIsClassifiedAsExpected) {
  auto entries = LoadManifest();
  ASSERT_GE(entries.size(), 50u);
  size_t ok = 0;
  for (const auto& e : entries) {
    std::ifstream in(kCorpus + "/" + e.file, std::ios::binary);
    ASSERT_TRUE(in) << e.file;
    Classification c = ClassifyLog(in);
    std::string cause = c.causes.empty() ? "-" : c.causes.front().cause;
    bool good = ToString(c.fault_class) == e.fault_class && cause == e.cause;
    EXPECT_TRUE(good) << e.file << ": expected " << e.fault_class << " / " << e.cause << ", got "
                      << ToString(c.fault_class) << " / " << cause << " (" << c.reason << ")";
    if (good) ++ok;
  }
  std::printf("corpus: %zu/%zu classified as expected (%.1f%%)\n", ok, entries.size(),
              100.0 * static_cast<double>(ok) / static_cast<double>(entries.size()));
  EXPECT_EQ(ok, entries.size());
}

TEST(Corpus, EveryNamedRuleMatchesALineOfItsLog) {
  for (const auto& e : LoadManifest()) {
    std::ifstream in(kCorpus + "/" + e.file, std::ios::binary);
    std::set<std::string> seen;
    std::string line;
    while (std::getline(in, line)) {
      for (auto name : RuleNamesForLine(line)) seen.emplace(name);
    }
    for (const auto& r : e.rules) {
      EXPECT_TRUE(seen.count(r)) << e.file << " does not exercise rule " << r;
    }
  }
}

// The logs of the real corpus (tests/classify/corpus/*.yaml), read with yaml-cpp.
std::vector<std::string> RealCorpusLogs() {
  namespace fs = std::filesystem;
  std::vector<std::string> logs;
  for (const auto& f :
       fs::directory_iterator(fs::path(NCCL_TRIAGE_SOURCE_DIR) / "tests/classify/corpus")) {
    if (f.path().extension() != ".yaml") continue;
    try {
      YAML::Node n = YAML::LoadFile(f.path().string());
      if (n["log"]) logs.push_back(n["log"].as<std::string>());
    } catch (const YAML::Exception&) {
      // real_corpus_test reports malformed cases
    }
  }
  return logs;
}

TEST(Corpus, TogetherTheLogsExerciseEveryRule) {
  // A rule is exercised by a fixture log that names it, or by a line of the real corpus.
  std::set<std::string> named;
  for (const auto& e : LoadManifest()) named.insert(e.rules.begin(), e.rules.end());
  for (const auto& log : RealCorpusLogs()) {
    std::stringstream ss(log);
    std::string line;
    while (std::getline(ss, line)) {
      for (auto name : RuleNamesForLine(line)) named.emplace(name);
    }
  }
  for (const auto& r : Rules()) {
    EXPECT_TRUE(named.count(std::string(r.name))) << "no corpus log exercises rule " << r.name;
  }
}

TEST(Corpus, RealCapturesAreClassifiedAsTheRunsEnded) {
  // Captured with NCCL 2.28.9 on an H200 (see MANIFEST.tsv): the two runs that succeeded are
  // healthy even though NET/IB found no device, the forced-IB run is ib_resource.
  struct Case {
    const char* file;
    FaultClass cls;
  };
  for (const Case& k : {Case{"h200-nccl-2.28.9/default.r0.log", FaultClass::kHealthy},
                        Case{"h200-nccl-2.28.9/socket.r1.log", FaultClass::kHealthy},
                        Case{"h200-nccl-2.28.9/forceib.r0.log", FaultClass::kIbResource},
                        Case{"h200-nccl-2.28.9/badif.r0.log", FaultClass::kArchitecture},
                        Case{"h200-nccl-2.28.9/dup.r1.log", FaultClass::kArchitecture}}) {
    std::ifstream in(kCorpus + "/" + k.file);
    Classification c = ClassifyLog(in);
    EXPECT_EQ(c.fault_class, k.cls) << k.file << ": " << c.reason;
  }
  std::ifstream in(kCorpus + "/h200-nccl-2.28.9/default.r0.log");
  Classification c = ClassifyLog(in);
  EXPECT_EQ(c.nccl_version, "2.28.9");
  EXPECT_EQ(c.network, "Socket");
  EXPECT_EQ(c.transports, std::vector<std::string>{"NET/Socket"});
}

}  // namespace
}  // namespace nccl_triage
