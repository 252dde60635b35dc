// The real-world corpus (tests/classify/corpus/*.yaml): logs as users pasted them into public
// issue threads, each labelled from the thread's resolution or a maintainer's answer. The test
// measures the classifier against those labels and against the naive regex baseline
// (`ibv_|NET/IB` -> ib_resource, else architecture), per split, and fails below the bars set
// from the last measurement (see kBars). The case loader refuses malformed cases and the threads held out for
// independent evaluation.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "classify/classifier.h"
#include "core/catalogue.h"

namespace nccl_triage {
namespace {

namespace fs = std::filesystem;

const fs::path kCorpusDir = fs::path(NCCL_TRIAGE_SOURCE_DIR) / "tests/classify/corpus";

// Threads kept out of this corpus: an independent evaluation set is built from them. A case
// whose source is one of these is refused, so the held-out set stays unseen.
constexpr std::array<std::string_view, 76> kHeldOut = {
    "Azure/azhpc-images#327",
    "EleutherAI/bergson#444",
    "EvolvingLMMs-Lab/open-r1-multimodal#7",
    "InternLM/lmdeploy#1108",
    "MiaAI-Lab/DeepSeek-v4-Flash-DSpark-2x-DGX-Spark#259",
    "NVIDIA-NeMo/Automodel#1038",
    "NVIDIA-NeMo/Speech#13996",
    "NVIDIA/nccl#1000",
    "NVIDIA/nccl#1020",
    "NVIDIA/nccl#1141",
    "NVIDIA/nccl#1176",
    "NVIDIA/nccl#1235",
    "NVIDIA/nccl#1267",
    "NVIDIA/nccl#133",
    "NVIDIA/nccl#1488",
    "NVIDIA/nccl#1524",
    "NVIDIA/nccl#1573",
    "NVIDIA/nccl#1589",
    "NVIDIA/nccl#1676",
    "NVIDIA/nccl#1726",
    "NVIDIA/nccl#1837",
    "NVIDIA/nccl#2013",
    "NVIDIA/nccl#2101",
    "NVIDIA/nccl#214",
    "NVIDIA/nccl#230",
    "NVIDIA/nccl#241",
    "NVIDIA/nccl#290",
    "NVIDIA/nccl#331",
    "NVIDIA/nccl#342",
    "NVIDIA/nccl#379",
    "NVIDIA/nccl#426",
    "NVIDIA/nccl#451",
    "NVIDIA/nccl#525",
    "NVIDIA/nccl#676",
    "NVIDIA/nccl#697",
    "NVIDIA/nccl#718",
    "NVIDIA/nccl#769",
    "NVIDIA/nccl#778",
    "NVIDIA/nccl#799",
    "NVIDIA/nccl#897",
    "NVIDIA/nccl#905",
    "NVIDIA/nccl#925",
    "NVIDIA/nccl#928",
    "NVIDIA/nccl#929",
    "NVIDIA/nccl-tests#12",
    "NVIDIA/nccl-tests#14",
    "NVIDIA/nccl-tests#188",
    "NVIDIA/nccl-tests#206",
    "NVIDIA/nccl-tests#219",
    "NVIDIA/nccl-tests#287",
    "Peterande/D-FINE#289",
    "aws/aws-ofi-nccl#584",
    "awslabs/awsome-distributed-ai#192",
    "awslabs/awsome-distributed-ai#312",
    "dmlc/xgboost#5963",
    "getainode/ainode#89",
    "hiyouga/EasyR1#505",
    "hkproj/pytorch-transformer-distributed#1",
    "horovod/horovod#1117",
    "horovod/horovod#147",
    "horovod/horovod#3929",
    "horovod/horovod#3949",
    "karpathy/nanoGPT#55",
    "marin-community/marin#6940",
    "marin-community/marin#7018",
    "mila-iqia/milabench#183",
    "pytorch/ci-infra#490",
    "pytorch/pytorch#111424",
    "pytorch/pytorch#40622",
    "pytorch/pytorch#81628",
    "pytorch/torchtitan#853",
    "scitix/sichek#51",
    "vllm-project/vllm#3069",
    "vllm-project/vllm#3071",
    "vllm-project/vllm#6689",
    "vllm-project/vllm#7882",
};

// GitHub owner and repository names are case-insensitive.
std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

bool IsHeldOut(const std::string& source) {
  return std::any_of(kHeldOut.begin(), kHeldOut.end(),
                     [&](std::string_view h) { return Lower(std::string(h)) == Lower(source); });
}

struct Case {
  std::string file;
  std::string source;  // owner/repo#N
  std::string environment;
  FaultClass expected = FaultClass::kUnknown;
  std::string cause;  // catalogue id, or empty when the thread names none
  std::string basis;  // resolution | maintainer | log
  bool log_tells = true;
  std::string note;
  std::string log;
};

// Loads one case; an empty error means it is well-formed.
std::string LoadCase(const fs::path& path, Case& out) {
  YAML::Node n;
  try {
    n = YAML::LoadFile(path.string());
  } catch (const YAML::Exception& e) {
    return e.what();
  }
  static const std::set<std::string> kKeys = {"source", "environment", "class", "cause",
                                              "basis",  "log_tells",   "note",  "log"};
  for (const auto& kv : n) {
    if (!kKeys.count(kv.first.as<std::string>())) {
      return "unknown key " + kv.first.as<std::string>();
    }
  }
  for (const char* key : {"source", "environment", "class", "basis", "note", "log"}) {
    if (!n[key] || n[key].as<std::string>().empty()) return std::string("missing ") + key;
  }
  out.file = path.filename().string();
  out.source = n["source"].as<std::string>();
  out.environment = n["environment"].as<std::string>();
  out.cause = n["cause"] ? n["cause"].as<std::string>() : "";
  if (out.cause == "unknown") out.cause.clear();
  out.basis = n["basis"].as<std::string>();
  out.log_tells = n["log_tells"] ? n["log_tells"].as<bool>() : true;
  out.note = n["note"].as<std::string>();
  out.log = n["log"].as<std::string>();
  static const std::regex kSource(R"(^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+#[0-9]+$)");
  if (!std::regex_match(out.source, kSource)) return "source is not owner/repo#N: " + out.source;
  if (IsHeldOut(out.source)) return "source is held out for independent evaluation: " + out.source;
  auto cls = ParseFaultClass(n["class"].as<std::string>());
  if (!cls) return "unknown class " + n["class"].as<std::string>();
  out.expected = *cls;
  if (!out.cause.empty() && FindCause(out.cause) == nullptr) {
    return "cause is not in the catalogue: " + out.cause;
  }
  if (out.basis != "resolution" && out.basis != "maintainer" && out.basis != "log") {
    return "basis must be resolution, maintainer or log: " + out.basis;
  }
  return {};
}

std::vector<Case> LoadCorpus() {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(kCorpusDir)) {
    if (e.path().extension() == ".yaml") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  std::vector<Case> cases;
  for (const auto& f : files) {
    Case c;
    std::string err = LoadCase(f, c);
    if (!err.empty()) {
      ADD_FAILURE() << f.filename() << ": " << err;
      continue;
    }
    cases.push_back(std::move(c));
  }
  return cases;
}

// The one-line classifier this project has to beat.
FaultClass Baseline(const std::string& log) {
  return log.find("ibv_") != std::string::npos || log.find("NET/IB") != std::string::npos
             ? FaultClass::kIbResource
             : FaultClass::kArchitecture;
}

constexpr std::array kClasses = {FaultClass::kIbResource, FaultClass::kArchitecture,
                                 FaultClass::kHealthy, FaultClass::kUnknown};

struct Tally {
  size_t n = 0, ours = 0, base = 0, cause = 0;
  double Ours() const { return n ? static_cast<double>(ours) / static_cast<double>(n) : 1; }
  double Base() const { return n ? static_cast<double>(base) / static_cast<double>(n) : 1; }
  double Cause() const { return n ? static_cast<double>(cause) / static_cast<double>(n) : 1; }
};

// The bars, set a little under what the classifier measured on this corpus (README, "Accuracy
// on real-world logs", has the table). Measured: class 93.4 % (198/212), cause 85.8 % (182/212)
// over 212 cases, 38 of the right answers being `unknown` on a log that does not tell (by the
// label alone: 160/212, 75.5 %); per split
// ib_resource 93.3 % (regex 68.9 %), architecture 91.6 % (regex 90.8 %), healthy 96.0 %, unknown
// 100 %. Raise the bars when the classifier improves; never lower them to let a regression
// through.
struct SplitBar {
  FaultClass split;
  double min_class;       // the classifier's class accuracy on the split
  double min_vs_regex;    // its lead over the regex (negative: how far behind it may be)
};
constexpr double kMinClass = 0.92;
constexpr double kMinCause = 0.85;
constexpr std::array kBars = {
    SplitBar{FaultClass::kIbResource, 0.91, 0.20},
    SplitBar{FaultClass::kArchitecture, 0.90, 0.0},
    SplitBar{FaultClass::kHealthy, 0.95, 0.05},
};

// A case whose log does not tell (`log_tells: false`: only the thread names the resolution, or
// the excerpt stops before anything proves the run worked) is answered right by its label or by
// `unknown`: "the log cannot say" is the honest answer there, and `healthy` needs proof in the
// log (a completed init or collective), never the thread's word.
bool ClassRight(const Case& k, const Classification& c) {
  return c.fault_class == k.expected || (!k.log_tells && c.fault_class == FaultClass::kUnknown);
}

// A case's cause is right when the thread names none and the class is right, or when the top
// cause is the one the thread names (or, for a log that does not tell, the answer is unknown).
bool CauseRight(const Case& k, const Classification& c) {
  if (!k.log_tells && c.fault_class == FaultClass::kUnknown) return true;
  if (k.cause.empty()) return c.fault_class == k.expected;
  return !c.causes.empty() && c.causes.front().cause == k.cause;
}

TEST(RealCorpus, CasesAreWellFormedAndNoneIsHeldOut) {
  auto cases = LoadCorpus();
  EXPECT_GE(cases.size(), 212u);
  std::set<std::string> logs;
  for (const auto& k : cases) {
    EXPECT_TRUE(logs.insert(k.log).second) << k.file << ": the same log as another case";
  }
}

TEST(RealCorpus, TheHeldOutCheckRefusesHeldOutSources) {
  EXPECT_TRUE(IsHeldOut("NVIDIA/nccl#676"));
  EXPECT_TRUE(IsHeldOut("nvidia/NCCL-tests#188"));
  EXPECT_FALSE(IsHeldOut("NVIDIA/nccl#67"));
  EXPECT_FALSE(IsHeldOut("NVIDIA/nccl#6760"));
}

TEST(RealCorpus, ClassifierMeetsTheBarsOnEverySplit) {
  auto cases = LoadCorpus();
  ASSERT_FALSE(cases.empty());
  std::map<FaultClass, Tally> split;
  Tally all;
  size_t untold_unknown = 0;  // right by answering unknown on a log that does not tell
  std::map<std::pair<FaultClass, FaultClass>, size_t> confusion, base_confusion;
  for (const auto& k : cases) {
    Classification c = ClassifyLogText(k.log);
    FaultClass b = Baseline(k.log);
    bool ok = ClassRight(k, c);
    if (ok && c.fault_class != k.expected) ++untold_unknown;
    bool cause_ok = CauseRight(k, c);
    for (Tally* t : {&split[k.expected], &all}) {
      ++t->n;
      t->ours += ok ? 1 : 0;
      t->base += b == k.expected ? 1 : 0;
      t->cause += cause_ok ? 1 : 0;
    }
    ++confusion[{k.expected, c.fault_class}];
    ++base_confusion[{k.expected, b}];
    if (!ok || !cause_ok) {
      std::printf("MISS %-48s expected %s/%s got %s/%s  (%s)\n", k.file.c_str(),
                  std::string(ToString(k.expected)).c_str(),
                  k.cause.empty() ? "-" : k.cause.c_str(),
                  std::string(ToString(c.fault_class)).c_str(),
                  c.causes.empty() ? "-" : c.causes.front().cause.c_str(), c.reason.c_str());
    }
  }
  auto print_confusion = [](const char* title, const auto& m) {
    std::printf("\n%s (rows: label, columns: answer)\n%-14s", title, "");
    for (FaultClass col : kClasses) std::printf("%14s", std::string(ToString(col)).c_str());
    std::printf("\n");
    for (FaultClass row : kClasses) {
      std::printf("%-14s", std::string(ToString(row)).c_str());
      for (FaultClass col : kClasses) {
        auto it = m.find({row, col});
        std::printf("%14zu", it == m.end() ? size_t{0} : it->second);
      }
      std::printf("\n");
    }
  };
  print_confusion("classifier", confusion);
  print_confusion("regex baseline", base_confusion);
  std::printf("\n%-14s %6s %16s %16s %16s\n", "split", "cases", "class (ours)", "class (regex)",
              "cause (ours)");
  auto row = [](const std::string& name, const Tally& t) {
    std::printf("%-14s %6zu %9zu %5.1f%% %9zu %5.1f%% %9zu %5.1f%%\n", name.c_str(), t.n, t.ours,
                100 * t.Ours(), t.base, 100 * t.Base(), t.cause, 100 * t.Cause());
  };
  for (FaultClass s : kClasses) row(std::string(ToString(s)), split[s]);
  row("all", all);
  std::printf("(%zu of the right answers are unknown on a log that does not tell)\n",
              untold_unknown);

  EXPECT_GE(all.Ours(), kMinClass) << "class accuracy below the bar";
  EXPECT_GE(all.Cause(), kMinCause) << "cause accuracy below the bar";
  for (const SplitBar& bar : kBars) {
    const Tally& t = split[bar.split];
    EXPECT_GE(t.n, 10u) << ToString(bar.split) << ": too few cases to measure the split";
    EXPECT_GE(t.Ours(), bar.min_class) << ToString(bar.split) << ": class accuracy below the bar";
    EXPECT_GE(t.Ours(), t.Base() + bar.min_vs_regex)
        << ToString(bar.split) << ": ours " << t.Ours() << " vs regex " << t.Base();
  }
}

}  // namespace
}  // namespace nccl_triage
