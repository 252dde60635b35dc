// The classifier on logs its rules were not written from: three sets of public threads
// (tests/classify/unseen, unseen-2, unseen-3, gathered and labelled apart from the rules, README
// there) and the real NCCL failures captured on a GPU (tests/fixtures/nccl-logs/*-failures, one
// misconfiguration each, labelled from what was done). All three thread sets have since become
// development data: their misses were studied, grouped by the kind of knowledge missing, and fixed
// from what NCCL and the layers under it can print (docs/logs.md, "Accuracy on logs no rule was
// written from"), never from one thread's text; a set gathered afterwards is the measure of that
// work. The bars sit at or a little under the last measurement: raise them as the classifier
// improves, never lower them to let a regression through.
#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include "classify/classifier.h"
#include "classify/eval_cases.h"

namespace nccl_triage {
namespace {

namespace fs = std::filesystem;
using eval::Case;

const fs::path kUnseenDir = fs::path(NCCL_TRIAGE_SOURCE_DIR) / "tests/classify/unseen";
const fs::path kCaptureDir = fs::path(NCCL_TRIAGE_SOURCE_DIR) / "tests/fixtures/nccl-logs";
const fs::path kCorpusDir = fs::path(NCCL_TRIAGE_SOURCE_DIR) / "tests/classify/corpus";

std::vector<Case> LoadSet(const fs::path& dir) {
  std::vector<std::string> errors;
  auto cases = eval::LoadThreadCases(dir, /*refuse_held_out=*/false, errors);
  for (const auto& e : errors) ADD_FAILURE() << e;
  return cases;
}

std::vector<Case> LoadUnseen() { return LoadSet(kUnseenDir); }

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::vector<Case> LoadCaptures() {
  std::vector<std::string> errors;
  auto cases = eval::LoadCaptureCases(kCaptureDir, errors);
  for (const auto& e : errors) ADD_FAILURE() << e;
  return cases;
}

// Measured on the classifier these bars guard (docs/logs.md has the tables): unseen threads
// 97.9 % class, 100 % cause (47 cases; 89.4 % / 87.2 % before their misses were studied); the
// second set 90.0 % class, 90.0 % cause (40 cases; 75.0 % / 75.0 % before); GPU captures 100 %
// class, 100 % cause (84 cases: NCCL 2.28.9 and both NCCL 2.32.6 sets alike); the third set
// 97.2 % class, 94.4 % cause (36 cases) since its misses were studied (its unseen figure was
// 80.6 % / 72.2 %); the fourth set 90.0 % / 82.5 % since its misses were studied (85.0 % /
// 77.5 % unseen, one healthy answer on a failed run's log, still there). The fifth set: 81.0 %
// class, 76.2 % cause and no healthy answer on a failed run (42 cases), before and after the
// work on the fourth set's misses alike; 90.5 % / 88.1 % since its misses were studied with the
// sixth's. The sixth set, gathered after that work: 78.0 % class, 75.6 % cause, no healthy answer
// on a failed run (41 cases) when first scored; 100 % / 100 % since its misses were studied. The
// seventh set, gathered while the fifth and sixth were studied, scored before and after that
// work alike: 63.6 % class, 56.8 % cause, no healthy answer on a failed run (44 cases); 95.5 % /
// 86.4 % since its misses were studied. The eighth set, gathered while the seventh was studied:
// 53.3 % class, 51.1 % cause and one healthy answer on a failed run's log before that work,
// 62.2 % / 60.0 % after it, its cases not read (45 cases); 86.7 % / 82.2 % since its misses were
// studied. The ninth set, gathered while the eighth was studied: 65.9 % class, 63.6 % cause
// before that work, 70.5 % / 68.2 % after it, no healthy answer on a failed run, its cases not
// read (44 cases); 84.1 % / 81.8 % since its misses were studied. The tenth set, gathered while
// the ninth was studied: 73.8 % class, 71.4 % cause before that work, 76.2 % / 73.8 % after it,
// no healthy answer on a failed run, its cases not read (42 cases); 90.5 % / 90.5 % since its
// misses were studied. The eleventh set, gathered while the tenth was studied: 69.8 % class,
// 67.4 % cause and one healthy answer on a failed run's log, before and after that work alike,
// its cases not read (43 cases); 86.0 % / 86.0 % and none since its misses were studied. The
// twelfth set, gathered while the eleventh was studied: 61.9 % class, 52.4 % cause, no healthy
// answer on a failed run, before that work, 64.3 % / 57.1 % after it, its cases not read (42
// cases); 88.1 % / 83.3 % since its misses were studied. The thirteenth set, gathered while the
// twelfth was studied: 62.8 % class, 48.8 % cause, no healthy answer on a failed run, before
// and after that work alike, its cases not read (43 cases); 88.4 % / 83.7 % since its misses
// were studied. The fourteenth set, gathered while the thirteenth was studied: 56.8 % class,
// 50.0 % cause, no healthy answer on a failed run, before and after that work alike, its cases
// not read (44 cases); 77.3 % / 75.0 % since its misses were studied. The fifteenth set,
// gathered while the fourteenth was studied: 52.4 % class, 50.0 % cause, no healthy answer on a
// failed run, before and after that work alike, its cases not read (42 cases). The bars are a
// guard against regressions.
constexpr double kUnseenMinClass = 0.97;
constexpr double kUnseenMinCause = 0.97;
constexpr double kCaptureMinClass = 0.99;
constexpr double kCaptureMinCause = 0.99;

TEST(UnseenSet, CasesAreWellFormedAndNoneIsInTheCorpus) {
  auto cases = LoadUnseen();
  EXPECT_GE(cases.size(), 40u);
  std::vector<std::string> errors;
  std::set<std::string> corpus;
  for (const auto& k : eval::LoadThreadCases(kCorpusDir, false, errors)) corpus.insert(k.source);
  std::set<std::string> seen;
  for (const auto& k : cases) {
    EXPECT_EQ(corpus.count(k.source), 0u) << k.file << ": also in the corpus";
    EXPECT_FALSE(eval::IsEarlierEvaluationThread(k.source)) << k.file << ": an earlier set's";
    EXPECT_TRUE(seen.insert(k.source).second) << k.file << ": the same thread twice";
  }
}

TEST(UnseenSet, ClassifierMeetsTheBars) {
  auto cases = LoadUnseen();
  ASSERT_FALSE(cases.empty());
  const eval::Report r = eval::Score(cases);
  eval::Print("unseen public threads (tests/classify/unseen)", r);
  EXPECT_GE(r.all.Ours(), kUnseenMinClass) << "class accuracy below the bar";
  EXPECT_GE(r.all.Cause(), kUnseenMinCause) << "cause accuracy below the bar";
  EXPECT_EQ(r.healthy_on_failed, 0u) << "healthy answered on the log of a failed run";
}

// A later set: at least `min_cases` well-formed cases, no thread of an earlier set, of the
// corpus or of the earlier held-out evaluation, none twice.
void ExpectSetApart(const fs::path& dir, size_t min_cases, const std::vector<fs::path>& earlier) {
  auto cases = LoadSet(dir);
  EXPECT_GE(cases.size(), min_cases);
  std::vector<std::string> errors;
  std::set<std::string> elsewhere;
  for (const auto& other : earlier) {
    for (const auto& k : eval::LoadThreadCases(other, false, errors)) {
      elsewhere.insert(Lower(k.source));
    }
  }
  std::set<std::string> seen;
  for (const auto& k : cases) {
    EXPECT_EQ(elsewhere.count(Lower(k.source)), 0u) << k.file << ": also in another set";
    EXPECT_FALSE(eval::IsEarlierEvaluationThread(k.source)) << k.file << ": an earlier set's";
    EXPECT_TRUE(seen.insert(Lower(k.source)).second) << k.file << ": the same thread twice";
  }
}

// Scores a set, prints its tables under `title`, and holds it to its bars.
// `max_healthy_on_failed` is 0 but for a set scored before anyone read it, where it records what
// was found.
void ExpectSetMeetsBars(const fs::path& dir, const std::string& title, double min_class,
                        double min_cause, size_t max_healthy_on_failed = 0) {
  auto cases = LoadSet(dir);
  ASSERT_FALSE(cases.empty());
  const eval::Report r = eval::Score(cases);
  eval::Print(title, r);
  EXPECT_GE(r.all.Ours(), min_class) << "class accuracy below the bar";
  EXPECT_GE(r.all.Cause(), min_cause) << "cause accuracy below the bar";
  EXPECT_LE(r.healthy_on_failed, max_healthy_on_failed)
      << "healthy answered on the log of a failed run";
}

// The later sets (tests/classify/unseen-2 ... unseen-15), each gathered on 2026-12-07 by someone
// who did not run the classifier or read its rules (the second: after every rule above was
// written), in the order they were gathered: a set holds no thread of the corpus, of the first
// set, of any set before it or of the earlier held-out evaluation. Bars as measured above.
struct LaterSet {
  const char* folder;   // under tests/classify
  const char* ordinal;  // for the printed title
  size_t min_cases;
  double min_class;
  double min_cause;
  size_t max_healthy_on_failed;
};
constexpr LaterSet kLaterSets[] = {
    // gathered after every rule above was written; studied since
    {"unseen-2", "second", 40, 0.89, 0.89, 0},
    // gathered apart while the rules were changed; scored unseen twice, studied since
    {"unseen-3", "third", 36, 0.97, 0.94, 0},
    // gathered apart while the rules were changed; studied since
    {"unseen-4", "fourth", 40, 0.89, 0.82, 1},
    // scored before and after the fourth set's study, unread; studied since
    {"unseen-5", "fifth", 40, 0.90, 0.88, 0},
    // gathered after the fourth set's study; scored once unread; studied since
    {"unseen-6", "sixth", 40, 0.97, 0.97, 0},
    // gathered while the fifth and sixth were studied; studied since
    {"unseen-7", "seventh", 40, 0.95, 0.86, 0},
    // gathered while the seventh was studied; scored before and after; studied since
    {"unseen-8", "eighth", 40, 0.86, 0.82, 1},
    // gathered while the eighth was studied; scored before and after; studied since
    {"unseen-9", "ninth", 40, 0.84, 0.81, 0},
    // gathered while the ninth was studied; scored before and after; studied since
    {"unseen-10", "tenth", 40, 0.90, 0.88, 0},
    // gathered while the tenth was studied; scored before and after; studied since
    {"unseen-11", "eleventh", 40, 0.86, 0.86, 0},
    // gathered while the eleventh was studied; scored before and after; studied since
    {"unseen-12", "twelfth", 40, 0.85, 0.80, 0},
    // gathered while the twelfth was studied; scored before and after; studied since
    {"unseen-13", "thirteenth", 40, 0.88, 0.83, 0},
    // gathered while the thirteenth was studied; scored before and after; studied since
    {"unseen-14", "fourteenth", 40, 0.77, 0.75, 0},
    // gathered while the fourteenth was studied; scored before and after, unread
    {"unseen-15", "fifteenth", 40, 0.52, 0.50, 0},
};

fs::path SetDir(const LaterSet& set) {
  return fs::path(NCCL_TRIAGE_SOURCE_DIR) / "tests/classify" / set.folder;
}

class LaterUnseenSet : public testing::TestWithParam<size_t> {};

TEST_P(LaterUnseenSet, CasesAreWellFormedAndNoneIsSeenElsewhere) {
  const LaterSet& set = kLaterSets[GetParam()];
  std::vector<fs::path> earlier = {kCorpusDir, kUnseenDir};
  for (size_t i = 0; i < GetParam(); ++i) earlier.push_back(SetDir(kLaterSets[i]));
  ExpectSetApart(SetDir(set), set.min_cases, earlier);
}

TEST_P(LaterUnseenSet, ClassifierMeetsTheBars) {
  const LaterSet& set = kLaterSets[GetParam()];
  ExpectSetMeetsBars(SetDir(set),
                     std::string(set.ordinal) + " unseen set of public threads (tests/classify/" +
                         set.folder + ")",
                     set.min_class, set.min_cause, set.max_healthy_on_failed);
}

INSTANTIATE_TEST_SUITE_P(Sets, LaterUnseenSet,
                         testing::Range<size_t>(0, std::size(kLaterSets)),
                         [](const testing::TestParamInfo<size_t>& info) {
                           return "Set" + std::to_string(info.param + 2);
                         });

TEST(GpuCaptures, ClassifierMeetsTheBars) {
  auto cases = LoadCaptures();
  ASSERT_GE(cases.size(), 15u);
  const eval::Report r = eval::Score(cases);
  eval::Print("real NCCL failures captured on a GPU (tests/fixtures/nccl-logs/*-failures)", r);
  EXPECT_GE(r.all.Ours(), kCaptureMinClass) << "class accuracy below the bar";
  EXPECT_GE(r.all.Cause(), kCaptureMinCause) << "cause accuracy below the bar";
  EXPECT_EQ(r.healthy_on_failed, 0u) << "healthy answered on the log of a failed run";
}

}  // namespace
}  // namespace nccl_triage
