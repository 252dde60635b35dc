// The fixture trees the build wrote (build/fixtures, from fixture-gen) are exactly what the
// generator's presets describe today: a stale tree (a preset changed, the stamp not rewritten)
// fails here rather than in some check's test. Compared entry by entry (type, content, link).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "support/fixture/fixture.h"

namespace nccl_triage {
namespace {

namespace fs = std::filesystem;

// Relative path -> "file:<content>" or "link:<target>" (directories are implied by their entries;
// git does not keep empty ones, so the generator must not make any).
std::map<std::string, std::string> Describe(const fs::path& root) {
  std::map<std::string, std::string> out;
  for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator();
       ++it) {
    const std::string rel = it->path().lexically_relative(root).string();
    if (it->is_symlink()) {
      out[rel] = "link:" + fs::read_symlink(it->path()).string();
    } else if (it->is_directory()) {
      if (fs::is_empty(it->path())) out[rel] = "empty directory";
    } else {
      std::ifstream in(it->path(), std::ios::binary);
      std::ostringstream ss;
      ss << in.rdbuf();
      out[rel] = "file:" + ss.str();
    }
  }
  return out;
}

std::map<std::string, std::string> Describe(const FixtureTree& tree) {
  std::map<std::string, std::string> out;
  for (const auto& [rel, content] : tree.files) out[rel] = "file:" + content;
  for (const auto& [rel, target] : tree.links) out[rel] = "link:" + target;
  return out;
}

TEST(FixtureDrift, GeneratedTreesMatchThePresets) {
  const fs::path committed = NCCL_TRIAGE_FIXTURE_DIR;
  for (const auto& scenario : FixtureScenarios()) {
    auto spec = FixturePreset(scenario);
    ASSERT_TRUE(spec.ok());
    auto want = Describe(BuildFixtureTree(*spec));
    ASSERT_TRUE(fs::is_directory(committed / scenario))
        << scenario << " was not generated (build the `fixtures` target)";
    auto have = Describe(committed / scenario);
    for (const auto& [path, what] : want) {
      auto it = have.find(path);
      if (it == have.end()) {
        ADD_FAILURE() << scenario << "/" << path << " is missing from " << committed
                      << " (build the `fixtures` target)";
      } else if (it->second != what) {
        ADD_FAILURE() << scenario << "/" << path << " differs from the generator";
      }
    }
    for (const auto& [path, what] : have) {
      if (!want.count(path)) ADD_FAILURE() << scenario << "/" << path << " is not generated";
    }
  }
}

TEST(FixtureDrift, WrittenTreeEqualsBuiltTree) {
  const fs::path dir =
      fs::temp_directory_path() / ("nccl-triage-written-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  auto spec = FixturePreset("ib-busy");
  ASSERT_TRUE(spec.ok());
  ASSERT_TRUE(WriteFixture(*spec, dir.string()).ok());
  EXPECT_EQ(Describe(dir), Describe(BuildFixtureTree(*spec)));
  fs::remove_all(dir);
}

TEST(FixtureDrift, NoNodeRootIsCommittedBesideTheGeneratedOnes) {
  // Node roots are generated, never committed: a folder with proc/ or sys/ under tests/fixtures
  // would be a hand-made root that no generator keeps true. Logs and configs may live there.
  const fs::path committed = fs::path(NCCL_TRIAGE_SOURCE_DIR) / "tests/fixtures";
  for (const auto& e : fs::directory_iterator(committed)) {
    EXPECT_FALSE(e.is_directory() &&
                 (fs::exists(e.path() / "proc") || fs::exists(e.path() / "sys")))
        << e.path().filename() << " is a committed node root: make it a preset of fixture-gen";
  }
}

TEST(FixtureDrift, ReadmeListsEveryScenario) {
  std::ifstream in(fs::path(NCCL_TRIAGE_SOURCE_DIR) / "tests/fixtures/README.md");
  std::ostringstream ss;
  ss << in.rdbuf();
  for (const auto& s : FixtureScenarios()) {
    EXPECT_NE(ss.str().find("`" + s + "`"), std::string::npos) << s;
  }
}

TEST(FixtureWriter, RefusesANonEmptyDirectory) {
  const fs::path dir =
      fs::temp_directory_path() / ("nccl-triage-nonempty-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "keep") << "x";
  auto st = WriteFixture(*FixturePreset("cpu-only"), dir.string());
  EXPECT_FALSE(st.ok());
  EXPECT_TRUE(fs::exists(dir / "keep"));
  fs::remove_all(dir);
}

TEST(FixtureWriter, LimitsTextMatchesKernelColumns) {
  const std::string text = LimitsText({{false, 65536}, {false, 65536}}, {{true, 0}, {true, 0}});
  EXPECT_NE(
      text.find("Limit                     Soft Limit           Hard Limit           Units     \n"),
      std::string::npos);
  EXPECT_NE(
      text.find("Max locked memory         65536                65536                bytes     \n"),
      std::string::npos);
  EXPECT_NE(text.find("Max nice priority         0                    0                    \n"),
            std::string::npos);
}

TEST(FixturePreset, FaultsChangeOnlyWhatTheyName) {
  FixtureSpec base = DgxA100Spec();
  FixtureSpec down = ApplyFaults(base, {.port_down = 2});
  EXPECT_EQ(down.hcas[2].ports[0].state, "1: DOWN");
  EXPECT_EQ(down.hcas[1].ports[0].state, "4: ACTIVE");
  FixtureSpec degraded = ApplyFaults(DgxH100Spec(), {.rate_degraded = 0});
  EXPECT_EQ(degraded.hcas[0].ports[0].rate, "200 Gb/sec (2X NDR)");
  FixtureSpec old = ApplyFaults(base, {.nccl_version = std::string("2.7.8")});
  EXPECT_EQ(old.nccl_version, "2.7.8");
  EXPECT_FALSE(FixturePreset("no-such-scenario").ok());
  EXPECT_EQ(RateText(2.5, 1, "SDR"), "2.5 Gb/sec (1X SDR)");
}

}  // namespace
}  // namespace nccl_triage
