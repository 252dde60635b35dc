#include "classify/eval_cases.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <regex>
#include <sstream>
#include <string_view>

#include "classify/classifier.h"
#include "core/catalogue.h"

namespace nccl_triage::eval {
namespace {

namespace fs = std::filesystem;

// Threads of earlier evaluation sets: kept out of the corpus so that they stay independent.
constexpr std::array<std::string_view, 76> kEarlierEvaluation = {
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

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// The unseen sets, each gathered after the rules it measures (README in each folder).
const std::array<fs::path, 4> kUnseenDirs = {
    fs::path(NCCL_TRIAGE_SOURCE_DIR) / "tests/classify/unseen",
    fs::path(NCCL_TRIAGE_SOURCE_DIR) / "tests/classify/unseen-2",
    fs::path(NCCL_TRIAGE_SOURCE_DIR) / "tests/classify/unseen-3",
    fs::path(NCCL_TRIAGE_SOURCE_DIR) / "tests/classify/unseen-4"};

// The sources of the unseen set, read once (GitHub names are case-insensitive).
const std::set<std::string>& UnseenSources() {
  static const std::set<std::string> sources = [] {
    std::set<std::string> out;
    std::error_code ec;
    for (const fs::path& dir : kUnseenDirs) {
      for (const auto& e : fs::directory_iterator(dir, ec)) {
        if (e.path().extension() != ".yaml") continue;
        try {
          YAML::Node n = YAML::LoadFile(e.path().string());
          if (n["source"]) out.insert(Lower(n["source"].as<std::string>()));
        } catch (const YAML::Exception&) {
          // A malformed case is reported by the unseen set's own loader.
        }
      }
    }
    return out;
  }();
  return sources;
}

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Str(const YAML::Node& n, const char* key) {
  return n[key] && n[key].IsScalar() ? n[key].as<std::string>() : std::string();
}

// Fills the label fields shared by both kinds of case; an empty error means well-formed.
std::string LoadLabel(const YAML::Node& n, Case& out) {
  auto cls = FromString<FaultClass>(Str(n, "class"));
  if (!cls) return "unknown class '" + Str(n, "class") + "'";
  out.expected = *cls;
  out.cause = Str(n, "cause");
  if (out.cause == "unknown") out.cause.clear();
  if (!out.cause.empty() && FindCause(out.cause) == nullptr) {
    return "cause is not in the catalogue: " + out.cause;
  }
  if (n["log_tells"]) {
    try {
      out.log_tells = n["log_tells"].as<bool>();
    } catch (const YAML::Exception&) {
      return "log_tells is not a boolean";
    }
  }
  return {};
}

std::string LoadThreadCase(const fs::path& path, bool refuse_held_out, Case& out) {
  YAML::Node n;
  try {
    n = YAML::LoadFile(path.string());
  } catch (const YAML::Exception& e) {
    return e.what();
  }
  if (!n.IsMap()) return "not a mapping";
  static const std::set<std::string> kKeys = {"source", "environment", "class", "cause",
                                              "basis",  "log_tells",   "note",  "log"};
  for (const auto& kv : n) {
    if (!kKeys.count(kv.first.as<std::string>())) {
      return "unknown key " + kv.first.as<std::string>();
    }
  }
  for (const char* key : {"source", "environment", "class", "basis", "note", "log"}) {
    if (Str(n, key).empty()) return std::string("missing ") + key;
  }
  out.file = path.filename().string();
  out.source = Str(n, "source");
  out.environment = Str(n, "environment");
  out.basis = Str(n, "basis");
  out.note = Str(n, "note");
  out.log = Str(n, "log");
  static const std::regex kSource(R"(^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+#[0-9]+$)");
  if (!std::regex_match(out.source, kSource)) return "source is not owner/repo#N: " + out.source;
  if (refuse_held_out && IsHeldOut(out.source)) {
    return "source is held out for independent evaluation: " + out.source;
  }
  if (std::string err = LoadLabel(n, out); !err.empty()) return err;
  if (out.basis != "resolution" && out.basis != "maintainer" && out.basis != "log") {
    return "basis must be resolution, maintainer or log: " + out.basis;
  }
  return {};
}

}  // namespace

bool IsEarlierEvaluationThread(const std::string& source) {
  const std::string s = Lower(source);
  return std::any_of(kEarlierEvaluation.begin(), kEarlierEvaluation.end(),
                     [&](std::string_view h) { return Lower(std::string(h)) == s; });
}

bool IsHeldOut(const std::string& source) {
  return IsEarlierEvaluationThread(source) || UnseenSources().count(Lower(source)) > 0;
}

std::vector<Case> LoadThreadCases(const fs::path& dir, bool refuse_held_out,
                                  std::vector<std::string>& errors) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.path().extension() == ".yaml") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  std::vector<Case> cases;
  for (const auto& f : files) {
    Case c;
    if (std::string err = LoadThreadCase(f, refuse_held_out, c); !err.empty()) {
      errors.push_back(f.filename().string() + ": " + err);
      continue;
    }
    cases.push_back(std::move(c));
  }
  return cases;
}

std::vector<Case> LoadCaptureCases(const fs::path& dir, std::vector<std::string>& errors) {
  std::vector<fs::path> scenarios;
  std::error_code ec;
  for (const auto& set : fs::directory_iterator(dir, ec)) {
    const std::string name = set.path().filename().string();
    if (!set.is_directory() || name.size() < 9 || name.substr(name.size() - 9) != "-failures") {
      continue;
    }
    for (const auto& s : fs::directory_iterator(set.path(), ec)) {
      if (fs::exists(s.path() / "case.yaml")) scenarios.push_back(s.path());
    }
  }
  std::sort(scenarios.begin(), scenarios.end());
  std::vector<Case> cases;
  for (const auto& s : scenarios) {
    const std::string label = s.parent_path().filename().string() + "/" + s.filename().string();
    YAML::Node n;
    try {
      n = YAML::LoadFile((s / "case.yaml").string());
    } catch (const YAML::Exception& e) {
      errors.push_back(label + ": " + e.what());
      continue;
    }
    Case c;
    c.file = label;
    c.source = label;
    c.basis = "capture";
    if (std::string err = LoadLabel(n, c); !err.empty()) {
      errors.push_back(label + ": " + err);
      continue;
    }
    for (int rank = 0; rank < 64; ++rank) {
      const fs::path log = s / ("r" + std::to_string(rank) + ".log");
      if (!fs::exists(log)) break;
      c.log += ReadFile(log);
      if (!c.log.empty() && c.log.back() != '\n') c.log += '\n';
    }
    if (c.log.empty()) {
      errors.push_back(label + ": no rank logs (r0.log, r1.log, ...)");
      continue;
    }
    cases.push_back(std::move(c));
  }
  return cases;
}

FaultClass Baseline(const std::string& log) {
  return log.find("ibv_") != std::string::npos || log.find("NET/IB") != std::string::npos
             ? FaultClass::kIbResource
             : FaultClass::kArchitecture;
}

bool ClassRight(const Case& k, const Classification& c) {
  return c.fault_class == k.expected || (!k.log_tells && c.fault_class == FaultClass::kUnknown);
}

bool CauseRight(const Case& k, const Classification& c) {
  if (!k.log_tells && c.fault_class == FaultClass::kUnknown) return true;
  if (k.cause.empty()) return c.fault_class == k.expected;
  return !c.causes.empty() && c.causes.front().cause == k.cause;
}

Report Score(const std::vector<Case>& cases) {
  Report r;
  for (const auto& k : cases) {
    Classification c = ClassifyLogText(k.log);
    FaultClass b = Baseline(k.log);
    bool ok = ClassRight(k, c);
    if (ok && c.fault_class != k.expected) ++r.untold_unknown;
    if (c.fault_class == FaultClass::kHealthy && k.expected != FaultClass::kHealthy) {
      ++r.healthy_on_failed;
    }
    bool cause_ok = CauseRight(k, c);
    for (Tally* t : {&r.split[k.expected], &r.all}) {
      ++t->n;
      t->ours += ok ? 1 : 0;
      t->base += b == k.expected ? 1 : 0;
      t->cause += cause_ok ? 1 : 0;
    }
    ++r.confusion[{k.expected, c.fault_class}];
    ++r.base_confusion[{k.expected, b}];
    if (!ok || !cause_ok) {
      char buf[1024];
      std::snprintf(buf, sizeof(buf), "MISS %-48s expected %s/%s got %s/%s  (%.300s)",
                    k.file.c_str(), std::string(ToString(k.expected)).c_str(),
                    k.cause.empty() ? "-" : k.cause.c_str(),
                    std::string(ToString(c.fault_class)).c_str(),
                    c.causes.empty() ? "-" : c.causes.front().cause.c_str(), c.reason.c_str());
      r.misses.emplace_back(buf);
    }
  }
  return r;
}

void Print(const std::string& title, const Report& r) {
  constexpr std::array kClasses = {FaultClass::kIbResource, FaultClass::kArchitecture,
                                   FaultClass::kHealthy, FaultClass::kUnknown};
  std::printf("\n== %s ==\n", title.c_str());
  for (const auto& m : r.misses) std::printf("%s\n", m.c_str());
  auto print_confusion = [&](const char* name, const auto& m) {
    std::printf("\n%s (rows: label, columns: answer)\n%-14s", name, "");
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
  print_confusion("classifier", r.confusion);
  print_confusion("regex baseline", r.base_confusion);
  std::printf("\n%-14s %6s %16s %16s %16s\n", "split", "cases", "class (ours)", "class (regex)",
              "cause (ours)");
  auto row = [](const std::string& name, const Tally& t) {
    std::printf("%-14s %6zu %9zu %5.1f%% %9zu %5.1f%% %9zu %5.1f%%\n", name.c_str(), t.n, t.ours,
                100 * t.Ours(), t.base, 100 * t.Base(), t.cause, 100 * t.Cause());
  };
  for (FaultClass s : kClasses) {
    auto it = r.split.find(s);
    row(std::string(ToString(s)), it == r.split.end() ? Tally{} : it->second);
  }
  row("all", r.all);
  std::printf("(%zu of the right answers are unknown on a log that does not tell; %zu healthy "
              "answers on logs of failed runs)\n",
              r.untold_unknown, r.healthy_on_failed);
}

}  // namespace nccl_triage::eval
