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
#include <initializer_list>
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
const fs::path kUnseen2Dir = fs::path(NCCL_TRIAGE_SOURCE_DIR) / "tests/classify/unseen-2";
const fs::path kUnseen3Dir = fs::path(NCCL_TRIAGE_SOURCE_DIR) / "tests/classify/unseen-3";
const fs::path kUnseen4Dir = fs::path(NCCL_TRIAGE_SOURCE_DIR) / "tests/classify/unseen-4";
const fs::path kUnseen5Dir = fs::path(NCCL_TRIAGE_SOURCE_DIR) / "tests/classify/unseen-5";
const fs::path kUnseen6Dir = fs::path(NCCL_TRIAGE_SOURCE_DIR) / "tests/classify/unseen-6";
const fs::path kUnseen7Dir = fs::path(NCCL_TRIAGE_SOURCE_DIR) / "tests/classify/unseen-7";
const fs::path kUnseen8Dir = fs::path(NCCL_TRIAGE_SOURCE_DIR) / "tests/classify/unseen-8";
const fs::path kUnseen9Dir = fs::path(NCCL_TRIAGE_SOURCE_DIR) / "tests/classify/unseen-9";
const fs::path kUnseen10Dir = fs::path(NCCL_TRIAGE_SOURCE_DIR) / "tests/classify/unseen-10";
const fs::path kUnseen11Dir = fs::path(NCCL_TRIAGE_SOURCE_DIR) / "tests/classify/unseen-11";
const fs::path kUnseen12Dir = fs::path(NCCL_TRIAGE_SOURCE_DIR) / "tests/classify/unseen-12";
const fs::path kUnseen13Dir = fs::path(NCCL_TRIAGE_SOURCE_DIR) / "tests/classify/unseen-13";
const fs::path kUnseen14Dir = fs::path(NCCL_TRIAGE_SOURCE_DIR) / "tests/classify/unseen-14";
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
// not read (44 cases). The bars are a guard against regressions.
constexpr double kUnseenMinClass = 0.97;
constexpr double kUnseenMinCause = 0.97;
constexpr double kUnseen2MinClass = 0.89;
constexpr double kUnseen2MinCause = 0.89;
constexpr double kUnseen3MinClass = 0.97;
constexpr double kUnseen3MinCause = 0.94;
constexpr double kUnseen4MinClass = 0.89;
constexpr double kUnseen4MinCause = 0.82;
constexpr size_t kUnseen4MaxHealthyOnFailed = 1;
constexpr double kUnseen5MinClass = 0.90;
constexpr double kUnseen5MinCause = 0.88;
constexpr size_t kUnseen5MaxHealthyOnFailed = 0;
constexpr double kUnseen6MinClass = 0.97;
constexpr double kUnseen6MinCause = 0.97;
constexpr size_t kUnseen6MaxHealthyOnFailed = 0;
constexpr double kUnseen7MinClass = 0.95;
constexpr double kUnseen7MinCause = 0.86;
constexpr size_t kUnseen7MaxHealthyOnFailed = 0;
constexpr double kUnseen8MinClass = 0.86;
constexpr double kUnseen8MinCause = 0.82;
constexpr size_t kUnseen8MaxHealthyOnFailed = 1;
constexpr double kUnseen9MinClass = 0.84;
constexpr double kUnseen9MinCause = 0.81;
constexpr size_t kUnseen9MaxHealthyOnFailed = 0;
constexpr double kUnseen10MinClass = 0.90;
constexpr double kUnseen10MinCause = 0.88;
constexpr size_t kUnseen10MaxHealthyOnFailed = 0;
constexpr double kUnseen11MinClass = 0.86;
constexpr double kUnseen11MinCause = 0.86;
constexpr size_t kUnseen11MaxHealthyOnFailed = 0;
constexpr double kUnseen12MinClass = 0.85;
constexpr double kUnseen12MinCause = 0.80;
constexpr double kUnseen13MinClass = 0.88;
constexpr double kUnseen13MinCause = 0.83;
constexpr double kUnseen14MinClass = 0.56;
constexpr double kUnseen14MinCause = 0.50;
constexpr size_t kUnseen14MaxHealthyOnFailed = 0;
constexpr size_t kUnseen13MaxHealthyOnFailed = 0;
constexpr size_t kUnseen12MaxHealthyOnFailed = 0;
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

// The second set (tests/classify/unseen-2, gathered 2026-12-07): no thread of the corpus, of the
// first set or of the earlier held-out evaluation.
// A later set: at least `min_cases` well-formed cases, no thread of an earlier set, of the
// corpus or of the earlier held-out evaluation, none twice.
void ExpectSetApart(const fs::path& dir, size_t min_cases,
                    std::initializer_list<fs::path> earlier) {
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

// The second unseen set (tests/classify/unseen-2, gathered 2026-12-07 after every rule above was
// written; studied since).
TEST(UnseenSet2, CasesAreWellFormedAndNoneIsSeenElsewhere) {
  ExpectSetApart(kUnseen2Dir, 40, {kCorpusDir, kUnseenDir});
}

TEST(UnseenSet2, ClassifierMeetsTheBars) {
  ExpectSetMeetsBars(kUnseen2Dir, "second unseen set of public threads (tests/classify/unseen-2)",
                     kUnseen2MinClass, kUnseen2MinCause);
}

// The third unseen set (tests/classify/unseen-3, gathered 2026-12-07 by someone who did not run
// the classifier, while the rules were being changed by someone who never saw it; scored unseen
// twice, studied since).
TEST(UnseenSet3, CasesAreWellFormedAndNoneIsSeenElsewhere) {
  ExpectSetApart(kUnseen3Dir, 36, {kCorpusDir, kUnseenDir, kUnseen2Dir});
}

TEST(UnseenSet3, ClassifierMeetsTheBars) {
  ExpectSetMeetsBars(kUnseen3Dir, "third unseen set of public threads (tests/classify/unseen-3)",
                     kUnseen3MinClass, kUnseen3MinCause);
}

// The fourth unseen set (tests/classify/unseen-4, gathered 2026-12-07 by someone who did not run
// the classifier, while the rules were being changed by someone who never saw it; studied since).
TEST(UnseenSet4, CasesAreWellFormedAndNoneIsSeenElsewhere) {
  ExpectSetApart(kUnseen4Dir, 40, {kCorpusDir, kUnseenDir, kUnseen2Dir, kUnseen3Dir});
}

TEST(UnseenSet4, ClassifierMeetsTheBars) {
  ExpectSetMeetsBars(kUnseen4Dir, "fourth unseen set of public threads (tests/classify/unseen-4)",
                     kUnseen4MinClass, kUnseen4MinCause, kUnseen4MaxHealthyOnFailed);
}

// The fifth unseen set (tests/classify/unseen-5, gathered 2026-12-07 by someone who did not run
// the classifier or read its rules; scored before and after the work on the fourth set's misses,
// its logs never read while a rule was changed).
TEST(UnseenSet5, CasesAreWellFormedAndNoneIsSeenElsewhere) {
  ExpectSetApart(kUnseen5Dir, 40, {kCorpusDir, kUnseenDir, kUnseen2Dir, kUnseen3Dir, kUnseen4Dir});
}

TEST(UnseenSet5, ClassifierMeetsTheBars) {
  ExpectSetMeetsBars(kUnseen5Dir, "fifth unseen set of public threads (tests/classify/unseen-5)",
                     kUnseen5MinClass, kUnseen5MinCause, kUnseen5MaxHealthyOnFailed);
}

// The sixth unseen set (tests/classify/unseen-6, gathered 2026-12-07 by someone who did not run
// the classifier or read its rules, after the work on the fourth set's misses was done; scored
// once, on that work, its cases not read).
TEST(UnseenSet6, CasesAreWellFormedAndNoneIsSeenElsewhere) {
  ExpectSetApart(kUnseen6Dir, 40,
                 {kCorpusDir, kUnseenDir, kUnseen2Dir, kUnseen3Dir, kUnseen4Dir, kUnseen5Dir});
}

TEST(UnseenSet6, ClassifierMeetsTheBars) {
  ExpectSetMeetsBars(kUnseen6Dir, "sixth unseen set of public threads (tests/classify/unseen-6)",
                     kUnseen6MinClass, kUnseen6MinCause, kUnseen6MaxHealthyOnFailed);
}

// The seventh unseen set (tests/classify/unseen-7, gathered 2026-12-07 by someone who did not
// run the classifier or read its rules, while the fifth and sixth sets' misses were studied;
// scored before and after that work; its misses studied since).
TEST(UnseenSet7, CasesAreWellFormedAndNoneIsSeenElsewhere) {
  ExpectSetApart(kUnseen7Dir, 40,
                 {kCorpusDir, kUnseenDir, kUnseen2Dir, kUnseen3Dir, kUnseen4Dir, kUnseen5Dir,
                  kUnseen6Dir});
}

TEST(UnseenSet7, ClassifierMeetsTheBars) {
  ExpectSetMeetsBars(kUnseen7Dir, "seventh unseen set of public threads (tests/classify/unseen-7)",
                     kUnseen7MinClass, kUnseen7MinCause, kUnseen7MaxHealthyOnFailed);
}

// The eighth unseen set (tests/classify/unseen-8, gathered 2026-12-07 by someone who did not
// run the classifier or read its rules, while the seventh set's misses were studied; scored
// before and after that work; its misses studied since).
TEST(UnseenSet8, CasesAreWellFormedAndNoneIsSeenElsewhere) {
  ExpectSetApart(kUnseen8Dir, 40,
                 {kCorpusDir, kUnseenDir, kUnseen2Dir, kUnseen3Dir, kUnseen4Dir, kUnseen5Dir,
                  kUnseen6Dir, kUnseen7Dir});
}

TEST(UnseenSet8, ClassifierMeetsTheBars) {
  ExpectSetMeetsBars(kUnseen8Dir, "eighth unseen set of public threads (tests/classify/unseen-8)",
                     kUnseen8MinClass, kUnseen8MinCause, kUnseen8MaxHealthyOnFailed);
}

// The ninth unseen set (tests/classify/unseen-9, gathered 2026-12-07 by someone who did not run
// the classifier or read its rules, while the eighth set's misses were studied; scored before
// and after that work; its misses studied since).
TEST(UnseenSet9, CasesAreWellFormedAndNoneIsSeenElsewhere) {
  ExpectSetApart(kUnseen9Dir, 40,
                 {kCorpusDir, kUnseenDir, kUnseen2Dir, kUnseen3Dir, kUnseen4Dir, kUnseen5Dir,
                  kUnseen6Dir, kUnseen7Dir, kUnseen8Dir});
}

TEST(UnseenSet9, ClassifierMeetsTheBars) {
  ExpectSetMeetsBars(kUnseen9Dir, "ninth unseen set of public threads (tests/classify/unseen-9)",
                     kUnseen9MinClass, kUnseen9MinCause, kUnseen9MaxHealthyOnFailed);
}

// The tenth unseen set (tests/classify/unseen-10, gathered 2026-12-07 by someone who did not
// run the classifier or read its rules, while the ninth set's misses were studied; scored before
// and after that work; its misses studied since).
TEST(UnseenSet10, CasesAreWellFormedAndNoneIsSeenElsewhere) {
  ExpectSetApart(kUnseen10Dir, 40,
                 {kCorpusDir, kUnseenDir, kUnseen2Dir, kUnseen3Dir, kUnseen4Dir, kUnseen5Dir,
                  kUnseen6Dir, kUnseen7Dir, kUnseen8Dir, kUnseen9Dir});
}

TEST(UnseenSet10, ClassifierMeetsTheBars) {
  ExpectSetMeetsBars(kUnseen10Dir, "tenth unseen set of public threads (tests/classify/unseen-10)",
                     kUnseen10MinClass, kUnseen10MinCause, kUnseen10MaxHealthyOnFailed);
}

// The eleventh unseen set (tests/classify/unseen-11, gathered 2026-12-07 by someone who did not
// run the classifier or read its rules, while the tenth set's misses were studied; scored before
// and after that work; its misses studied since).
TEST(UnseenSet11, CasesAreWellFormedAndNoneIsSeenElsewhere) {
  ExpectSetApart(kUnseen11Dir, 40,
                 {kCorpusDir, kUnseenDir, kUnseen2Dir, kUnseen3Dir, kUnseen4Dir, kUnseen5Dir,
                  kUnseen6Dir, kUnseen7Dir, kUnseen8Dir, kUnseen9Dir, kUnseen10Dir});
}

TEST(UnseenSet11, ClassifierMeetsTheBars) {
  ExpectSetMeetsBars(kUnseen11Dir,
                     "eleventh unseen set of public threads (tests/classify/unseen-11)",
                     kUnseen11MinClass, kUnseen11MinCause, kUnseen11MaxHealthyOnFailed);
}

// The twelfth unseen set (tests/classify/unseen-12, gathered 2026-12-07 by someone who did not
// run the classifier or read its rules, while the eleventh set's misses were studied; scored
// before and after that work; its misses studied since).
TEST(UnseenSet12, CasesAreWellFormedAndNoneIsSeenElsewhere) {
  ExpectSetApart(kUnseen12Dir, 40,
                 {kCorpusDir, kUnseenDir, kUnseen2Dir, kUnseen3Dir, kUnseen4Dir, kUnseen5Dir,
                  kUnseen6Dir, kUnseen7Dir, kUnseen8Dir, kUnseen9Dir, kUnseen10Dir,
                  kUnseen11Dir});
}

TEST(UnseenSet12, ClassifierMeetsTheBars) {
  ExpectSetMeetsBars(kUnseen12Dir,
                     "twelfth unseen set of public threads (tests/classify/unseen-12)",
                     kUnseen12MinClass, kUnseen12MinCause, kUnseen12MaxHealthyOnFailed);
}

// The thirteenth unseen set (tests/classify/unseen-13, gathered 2026-12-07 by someone who did
// not run the classifier or read its rules, while the twelfth set's misses were studied; scored
// before and after that work; its misses studied since).
TEST(UnseenSet13, CasesAreWellFormedAndNoneIsSeenElsewhere) {
  ExpectSetApart(kUnseen13Dir, 40,
                 {kCorpusDir, kUnseenDir, kUnseen2Dir, kUnseen3Dir, kUnseen4Dir, kUnseen5Dir,
                  kUnseen6Dir, kUnseen7Dir, kUnseen8Dir, kUnseen9Dir, kUnseen10Dir,
                  kUnseen11Dir, kUnseen12Dir});
}

TEST(UnseenSet13, ClassifierMeetsTheBars) {
  ExpectSetMeetsBars(kUnseen13Dir,
                     "thirteenth unseen set of public threads (tests/classify/unseen-13)",
                     kUnseen13MinClass, kUnseen13MinCause, kUnseen13MaxHealthyOnFailed);
}

// The fourteenth unseen set (tests/classify/unseen-14, gathered 2026-12-07 by someone who did
// not run the classifier or read its rules, while the thirteenth set's misses were studied;
// scored before and after that work, only its totals and matrix read).
TEST(UnseenSet14, CasesAreWellFormedAndNoneIsSeenElsewhere) {
  ExpectSetApart(kUnseen14Dir, 40,
                 {kCorpusDir, kUnseenDir, kUnseen2Dir, kUnseen3Dir, kUnseen4Dir, kUnseen5Dir,
                  kUnseen6Dir, kUnseen7Dir, kUnseen8Dir, kUnseen9Dir, kUnseen10Dir,
                  kUnseen11Dir, kUnseen12Dir, kUnseen13Dir});
}

TEST(UnseenSet14, ClassifierMeetsTheBars) {
  ExpectSetMeetsBars(kUnseen14Dir,
                     "fourteenth unseen set of public threads (tests/classify/unseen-14)",
                     kUnseen14MinClass, kUnseen14MinCause, kUnseen14MaxHealthyOnFailed);
}

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
