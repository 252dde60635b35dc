#include "classify/rules.h"

#include <re2/re2.h>
#include <re2/set.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <mutex>
#include <set>
#include <unordered_map>

#include "core/ids.h"

namespace nccl_triage {
namespace {

constexpr FaultClass kArch = FaultClass::kArchitecture;
constexpr FaultClass kUnk = FaultClass::kUnknown;

constexpr std::array kRefinements = {
    // `Failed to initialize any NET plugin` / `network IB not found` say that IB is missing;
    // these say why.
    Refinement{ids::kIbHcaPresent, ids::kIbRdmaCoreMissing},
    Refinement{ids::kIbHcaPresent, ids::kContainerRdmaDevices},
    Refinement{ids::kIbHcaPresent, ids::kIbDriver},
    // `Failed to initialize any NET plugin` because NCCL_NET named no network, or forced IB
    // while NCCL_IB_DISABLE turned it off: the setting, not the HCA.
    Refinement{ids::kIbHcaPresent, ids::kNcclEnvValue},
    // A socket connect that failed while NCCL's interface choice shows a loopback, link-local or
    // container-bridge address (or the connect went to one): the choice, not the network.
    Refinement{ids::kNetConnect, ids::kNetSocketIfname},
    // An error completion (NCCL's status, rdma-core's `got completion with error`, UCX's) whose
    // syndrome is the local protection error with vendor syndrome 0x51: GPUDirect RDMA blocked by
    // PCIe ACS or the IOMMU, the reason the completions fail.
    Refinement{ids::kIbFabric, ids::kIbGdrAcs},
    // The same with another vendor syndrome: the local buffer's memory key does not cover the
    // access, a registration problem.
    Refinement{ids::kIbFabric, ids::kIbMrRegister},
};

// NCCL_FACTS A2. ncclSuccess and ncclInProgress are not failures.
constexpr std::array kCodes = {
    ResultCodeCause{1, "ncclUnhandledCudaError", ids::kCudaDriver, kArch},
    ResultCodeCause{2, "ncclSystemError", ids::kNcclSystem, kUnk},
    ResultCodeCause{3, "ncclInternalError", ids::kNcclInternal, kUnk},
    ResultCodeCause{4, "ncclInvalidArgument", ids::kNcclApiUsage, kUnk},
    ResultCodeCause{5, "ncclInvalidUsage", ids::kNcclApiUsage, kUnk},
    ResultCodeCause{6, "ncclRemoteError", ids::kPeerExited, kUnk},
    ResultCodeCause{8, "ncclTimeout", ids::kNcclTimeout, kUnk},
};

constexpr std::array<std::string_view, 17> kRuleKeys = {
    "id",         "cause", "family",    "strength", "lines",     "field",
    "patterns",   "confidence", "hint", "also_next", "boost_env", "result_code",
    "code_group", "nccl",  "after_env", "network",  "differ"};

}  // namespace

namespace {

RE2::Options PatternOptions() {
  RE2::Options o;
  o.set_log_errors(false);
  o.set_max_mem(64 << 20);  // the sets' DFAs: a hundred rules with `.*` need more than 8 MiB
  return o;
}

// Reads one rule entry; errors name the rule and the line in the file.
class RuleReader {
 public:
  RuleReader(std::string_view source, const YAML::Node& node, size_t position)
      : source_(source), node_(node), position_(position) {}

  StatusOr<Rule> Read() {
    if (!node_.IsMap()) return Error(node_, "is not a map of keys");
    Rule r;
    r.origin = source_ + ":" + std::to_string(node_.Mark().line + 1);
    if (!Scalar("id", r.name) || r.name.empty()) return Error(node_, "needs an `id`");
    name_ = r.name;
    for (auto it = node_.begin(); it != node_.end(); ++it) {
      const std::string key = it->first.as<std::string>("");
      if (std::find(kRuleKeys.begin(), kRuleKeys.end(), key) == kRuleKeys.end()) {
        return Error(it->first, "unknown key `" + key + "`");
      }
    }
    std::string text;
    if (!Scalar("cause", text)) return Error(node_, "needs a `cause` (a catalogue id)");
    const CauseInfo* info = FindCause(text);
    if (info == nullptr) return Error(node_["cause"], "cause `" + text + "` is not in the catalogue");
    r.cause = info->id;
    if (!Scalar("family", text)) return Error(node_, "needs a `family`");
    auto family = FromString<FaultClass>(text);
    if (!family || *family == FaultClass::kHealthy) {
      return Error(node_["family"], "family `" + text + "` is not ib_resource, architecture or unknown");
    }
    r.verdict = *family;
    text = "root";
    Scalar("strength", text);
    auto strength = FromString<Strength>(text);
    if (!strength) return Error(node_["strength"], "unknown strength `" + text + "`");
    r.strength = *strength;
    Status st = Lines(r);
    if (!st.ok()) return st;
    text = "message";
    Scalar("field", text);
    if (text != "message" && text != "file") {
      return Error(node_["field"], "field `" + text + "` is not message or file");
    }
    r.field = text == "file" ? RuleField::kFile : RuleField::kMessage;
    if (r.field == RuleField::kFile && r.lines != kWarnLine) {
      return Error(node_["field"], "a file rule reads WARN lines only (`lines: [warn]`)");
    }
    st = Patterns(r);
    if (!st.ok()) return st;
    if (!Number("confidence", r.confidence) || r.confidence < 0 || r.confidence > 1) {
      return Error(node_, "needs a `confidence` between 0 and 1");
    }
    Scalar("hint", r.remedy);
    Scalar("boost_env", r.boost_env);
    Scalar("network", r.network);
    if (const YAML::Node env = node_["after_env"]) {
      if (!env.IsSequence()) return Error(env, "after_env is not a list of NCCL_* names");
      for (const auto& e : env) {
        if (!e.IsScalar() || e.Scalar().rfind("NCCL_", 0) != 0) {
          return Error(e, "after_env names an NCCL_* variable");
        }
        r.after_env.push_back(e.Scalar());
      }
    }
    if (node_["also_next"]) {
      try {
        r.also_next = node_["also_next"].as<bool>();
      } catch (const YAML::Exception&) {
        return Error(node_["also_next"], "also_next is not true or false");
      }
    }
    double v = -1;
    if (node_["result_code"] && (!Number("result_code", v) || v < 0 || v > 100)) {
      return Error(node_["result_code"], "result_code is not an ncclResult_t");
    }
    r.result_code = static_cast<int>(v);
    v = 0;
    if (node_["code_group"] && (!Number("code_group", v) || v < 1 || v > 9)) {
      return Error(node_["code_group"], "code_group is not a capture group number");
    }
    r.code_group = static_cast<int>(v);
    if (r.code_group > 0) {
      RE2 re(r.patterns.front(), PatternOptions());
      if (re.NumberOfCapturingGroups() < r.code_group) {
        return Error(node_["code_group"], "the first pattern has no group " +
                                              std::to_string(r.code_group));
      }
    }
    if (const YAML::Node d = node_["differ"]) {
      try {
        r.differ = d.as<bool>();
      } catch (const YAML::Exception&) {
        return Error(d, "differ is not true or false");
      }
      if (r.differ && RE2(r.patterns.front(), PatternOptions()).NumberOfCapturingGroups() < 2) {
        return Error(d, "differ needs two capture groups in the first pattern");
      }
    }
    st = Versions(r);
    if (!st.ok()) return st;
    return r;
  }

 private:
  Status Error(const YAML::Node& at, const std::string& what) const {
    const YAML::Mark mark = at.IsDefined() ? at.Mark() : node_.Mark();
    std::string who = name_.empty() ? "rule " + std::to_string(position_ + 1) : "rule " + name_;
    return InvalidArgument(source_ + ":" + std::to_string(mark.line + 1) + ": " + who + ": " +
                           what);
  }

  bool Scalar(const char* key, std::string& out) const {
    const YAML::Node v = node_[key];
    if (!v || !v.IsScalar()) return false;
    out = v.Scalar();
    return true;
  }

  bool Number(const char* key, double& out) const {
    const YAML::Node v = node_[key];
    if (!v || !v.IsScalar()) return false;
    try {
      out = v.as<double>();
    } catch (const YAML::Exception&) {
      return false;
    }
    return true;
  }

  Status Lines(Rule& r) const {
    const YAML::Node v = node_["lines"];
    if (!v || !v.IsSequence() || v.size() == 0) {
      return Error(v, "needs `lines`: a list of warn, info, text, diag");
    }
    for (const auto& k : v) {
      const std::string kind = k.IsScalar() ? k.Scalar() : "";
      if (kind == "warn") {
        r.lines |= kWarnLine;
      } else if (kind == "info") {
        r.lines |= kInfoLine;
      } else if (kind == "text") {
        r.lines |= kTextLine;
      } else if (kind == "diag") {
        r.lines |= kDiagLine;
      } else {
        return Error(k, "line kind `" + kind + "` is not warn, info, text or diag");
      }
    }
    return Status::Ok();
  }

  Status Patterns(Rule& r) const {
    const YAML::Node v = node_["patterns"];
    if (!v || !v.IsSequence() || v.size() == 0) {
      return Error(v, "needs `patterns`: a list of regular expressions");
    }
    for (const auto& p : v) {
      if (!p.IsScalar() || p.Scalar().empty()) return Error(p, "a pattern is not a string");
      RE2 re(p.Scalar(), PatternOptions());
      if (!re.ok()) return Error(p, "pattern `" + p.Scalar() + "` does not compile: " + re.error());
      r.patterns.push_back(p.Scalar());
    }
    return Status::Ok();
  }

  Status Versions(Rule& r) const {
    const YAML::Node v = node_["nccl"];
    if (!v) return Status::Ok();
    if (!v.IsMap()) return Error(v, "nccl is not a map {from: VERSION, before: VERSION}");
    for (auto it = v.begin(); it != v.end(); ++it) {
      const std::string key = it->first.as<std::string>("");
      const std::string value = it->second.IsScalar() ? it->second.Scalar() : "";
      if (key == "known") {
        if (value != "true" && value != "false") {
          return Error(it->second, "nccl.known is true or false, not `" + value + "`");
        }
        r.nccl_known = value == "true";
        continue;
      }
      NcclVersion parsed = ParseNcclVersion(value);
      if (parsed.empty()) return Error(it->second, "`" + value + "` is not a dotted version");
      if (key == "from") {
        r.nccl_from = std::move(parsed);
      } else if (key == "before") {
        r.nccl_before = std::move(parsed);
      } else {
        return Error(it->first, "nccl takes `from`, `before` and `known`, not `" + key + "`");
      }
    }
    return Status::Ok();
  }

  std::string source_;
  const YAML::Node& node_;
  size_t position_;
  std::string name_;
};

int CompareVersions(const NcclVersion& a, const NcclVersion& b) {
  for (size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
    const int x = i < a.size() ? a[i] : 0;
    const int y = i < b.size() ? b[i] : 0;
    if (x != y) return x < y ? -1 : 1;
  }
  return 0;
}

}  // namespace

NcclVersion ParseNcclVersion(std::string_view text) {
  NcclVersion out;
  size_t i = 0;
  while (i < text.size() && out.size() < 4) {
    if (text[i] < '0' || text[i] > '9') break;
    int n = 0;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9' && n < 100000) {
      n = n * 10 + (text[i] - '0');
      ++i;
    }
    out.push_back(n);
    if (i >= text.size() || text[i] != '.') break;
    ++i;
  }
  return out;
}

bool Rule::AppliesTo(const NcclVersion& version) const {
  if (version.empty()) return !nccl_known;
  if (!nccl_from.empty() && CompareVersions(version, nccl_from) < 0) return false;
  if (!nccl_before.empty() && CompareVersions(version, nccl_before) >= 0) return false;
  return true;
}

StatusOr<std::vector<Rule>> ParseRules(std::string_view yaml, std::string_view source) {
  const std::string where(source);
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml));
  } catch (const YAML::ParserException& e) {
    return InvalidArgument(where + ":" + std::to_string(e.mark.line + 1) + ": not YAML: " + e.msg);
  }
  if (!root.IsMap() || !root["rules"] || !root["rules"].IsSequence()) {
    return InvalidArgument(where + ": a rule file is a map with a `rules:` list");
  }
  for (auto it = root.begin(); it != root.end(); ++it) {
    if (it->first.as<std::string>("") != "rules") {
      return InvalidArgument(where + ":" + std::to_string(it->first.Mark().line + 1) +
                             ": unknown key `" + it->first.as<std::string>("") + "`");
    }
  }
  std::vector<Rule> rules;
  std::set<std::string, std::less<>> names;
  const YAML::Node list = root["rules"];
  for (size_t i = 0; i < list.size(); ++i) {
    const YAML::Node node = list[i];
    StatusOr<Rule> r = RuleReader(where, node, i).Read();
    if (!r.ok()) return r.status();
    if (!names.insert(r->name).second) {
      return InvalidArgument(r->origin + ": rule " + r->name + ": the id is used twice");
    }
    rules.push_back(std::move(r).value());
  }
  return rules;
}

std::vector<Rule> MergeRules(std::vector<Rule> base, std::vector<Rule> overrides) {
  std::vector<Rule> added;
  for (auto& r : overrides) {
    auto same = std::find_if(base.begin(), base.end(), [&](const Rule& b) { return b.name == r.name; });
    if (same != base.end()) {
      *same = std::move(r);
    } else {
      added.push_back(std::move(r));
    }
  }
  added.insert(added.end(), std::make_move_iterator(base.begin()),
               std::make_move_iterator(base.end()));
  return added;
}

std::span<const DerivedCause> DerivedCauses() {
  static constexpr std::array kDerived = {kVersionSkew,    kMtuSkew,        kBadSetting,
                                          kNetworkSkew,    kGdrSkew,        kCudaMajorSkew,
                                          kNcclTooOld,     kPluginNotLoaded, kGidSelection,
                                          kDeviceNotGiven, kRefusedRetries, kSeparateTestJobs,
                                          kSharedGpu};
  return kDerived;
}

std::span<const Refinement> Refinements() { return kRefinements; }
std::span<const ResultCodeCause> ResultCodeCauses() { return kCodes; }

const ResultCodeCause* FindResultCode(int code) {
  for (const auto& c : kCodes) {
    if (c.code == code) return &c;
  }
  return nullptr;
}

// One RE2::Set per line kind and field: every pattern of the rules that read it, each mapped
// back to its rule.
struct CompiledRules::Sets {
  struct One {
    std::unique_ptr<RE2::Set> set;
    std::vector<size_t> rule_of;  // pattern index in the set -> rule index
    bool empty() const { return rule_of.empty(); }
  };
  One warn, info, text, diag, file;
  std::unordered_map<size_t, std::unique_ptr<RE2>> code_regexes;  // rules with a code_group
  std::unordered_map<size_t, std::unique_ptr<RE2>> differ_regexes;  // rules with differ

  // Sorted, distinct indices of the rules whose patterns match `field`.
  static void Match(const One& s, std::string_view field, std::vector<size_t>& out) {
    out.clear();
    if (s.empty()) return;
    thread_local std::vector<int> hits;
    hits.clear();
    if (!s.set->Match(re2::StringPiece(field.data(), field.size()), &hits)) return;
    for (int h : hits) out.push_back(s.rule_of[static_cast<size_t>(h)]);
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
  }
};

CompiledRules::CompiledRules() : sets_(std::make_unique<Sets>()) {}
CompiledRules::~CompiledRules() = default;

StatusOr<std::shared_ptr<const CompiledRules>> CompiledRules::Compile(std::vector<Rule> rules) {
  std::shared_ptr<CompiledRules> c(new CompiledRules());
  c->rules_ = std::move(rules);
  Sets& s = *c->sets_;
  for (Sets::One* one : {&s.warn, &s.info, &s.text, &s.diag, &s.file}) {
    one->set = std::make_unique<RE2::Set>(PatternOptions(), RE2::UNANCHORED);
  }
  std::set<std::string_view> names;
  for (size_t i = 0; i < c->rules_.size(); ++i) {
    const Rule& r = c->rules_[i];
    if (!names.insert(r.name).second) {
      return InvalidArgument(r.origin + ": rule " + r.name + ": the id is used twice");
    }
    std::vector<Sets::One*> into;
    if (r.field == RuleField::kFile) {
      into.push_back(&s.file);
    } else {
      if (r.lines & kWarnLine) into.push_back(&s.warn);
      if (r.lines & kInfoLine) into.push_back(&s.info);
      if (r.lines & kTextLine) into.push_back(&s.text);
      if (r.lines & kDiagLine) into.push_back(&s.diag);
    }
    for (const std::string& p : r.patterns) {
      for (Sets::One* one : into) {
        std::string error;
        if (one->set->Add(re2::StringPiece(p), &error) < 0) {
          return InvalidArgument(r.origin + ": rule " + r.name + ": pattern `" + p +
                                 "` does not compile: " + error);
        }
        one->rule_of.push_back(i);
      }
    }
    if (r.code_group > 0 && !r.patterns.empty()) {
      s.code_regexes.emplace(i, std::make_unique<RE2>(r.patterns.front(), PatternOptions()));
    }
    if (r.differ && !r.patterns.empty()) {
      s.differ_regexes.emplace(i, std::make_unique<RE2>(r.patterns.front(), PatternOptions()));
    }
  }
  for (Sets::One* one : {&s.warn, &s.info, &s.text, &s.diag, &s.file}) {
    if (!one->empty() && !one->set->Compile()) {
      return InvalidArgument("the rules' patterns do not fit in the matcher's memory");
    }
  }
  return std::shared_ptr<const CompiledRules>(std::move(c));
}

std::vector<CompiledRules::LineMatch> CompiledRules::MatchLine(const ParsedLine& line) const {
  const Sets::One* message_set = &sets_->text;
  if (line.level == NcclLevel::kWarn) message_set = &sets_->warn;
  if (line.level == NcclLevel::kInfo || line.level == NcclLevel::kTrace) {
    message_set = &sets_->info;
  }
  if (line.level == NcclLevel::kDiag) message_set = &sets_->diag;
  thread_local std::vector<size_t> hits, file_hits;
  Sets::Match(*message_set, line.message, hits);
  if (line.level == NcclLevel::kWarn && !line.file.empty()) {
    Sets::Match(sets_->file, line.file, file_hits);
    if (!file_hits.empty()) {
      hits.insert(hits.end(), file_hits.begin(), file_hits.end());
      std::sort(hits.begin(), hits.end());
    }
  }
  std::vector<LineMatch> out;
  for (size_t i : hits) {
    const Rule& r = rules_[i];
    if (r.differ && !GroupsDiffer(i, r.field == RuleField::kFile ? line.file : line.message)) {
      continue;
    }
    int code = r.result_code;
    if (r.code_group > 0) {
      auto re = sets_->code_regexes.find(i);
      std::string digits;
      std::vector<RE2::Arg> args(static_cast<size_t>(r.code_group));
      std::vector<const RE2::Arg*> argp(args.size());
      for (size_t k = 0; k < args.size(); ++k) argp[k] = &args[k];
      args.back() = RE2::Arg(&digits);
      const std::string_view field = r.field == RuleField::kFile ? line.file : line.message;
      if (re != sets_->code_regexes.end() &&
          RE2::PartialMatchN(re2::StringPiece(field.data(), field.size()), *re->second,
                             argp.data(), static_cast<int>(argp.size())) &&
          !digits.empty() && digits.size() <= 3 &&
          std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        code = std::stoi(digits);
      }
    }
    out.push_back({i, code});
    if (!r.also_next || r.strength == Strength::kIgnore) break;
  }
  return out;
}

bool CompiledRules::GroupsDiffer(size_t rule, std::string_view field) const {
  auto re = sets_->differ_regexes.find(rule);
  if (re == sets_->differ_regexes.end()) return false;
  std::string a, b;
  return RE2::PartialMatch(re2::StringPiece(field.data(), field.size()), *re->second, &a, &b) &&
         a != b;
}

std::optional<size_t> CompiledRules::MatchFile(std::string_view file) const {
  thread_local std::vector<size_t> hits;
  Sets::Match(sets_->file, file, hits);
  if (hits.empty()) return std::nullopt;
  return hits.front();
}

namespace {

struct Active {
  std::mutex mu;
  std::shared_ptr<const CompiledRules> rules;
};

Active& ActiveState() {
  static Active active;
  return active;
}

}  // namespace

// rules.yaml as text, joined from the pieces builtin_rules.cc (generated by the build) holds:
// one literal would pass the 64 KiB a compiler must support.
std::string BuiltinRuleFileText();

std::string_view BuiltinRuleText() {
  static const std::string text = BuiltinRuleFileText();
  return text;
}

namespace {

// The built-in rules, compiled once. A build whose rules.yaml does not load fails its rule tests;
// at run time that binary would classify with no rules rather than stop.
std::shared_ptr<const CompiledRules> Builtin() {
  static const std::shared_ptr<const CompiledRules> kBuiltin = [] {
    auto parsed = ParseRules(BuiltinRuleText(), "classify-rules.yaml (built in)");
    auto compiled = CompiledRules::Compile(parsed.ok() ? std::move(parsed).value()
                                                       : std::vector<Rule>{});
    return compiled.ok() ? compiled.value() : CompiledRules::Compile({}).value();
  }();
  return kBuiltin;
}

}  // namespace

std::shared_ptr<const CompiledRules> ActiveRules() {
  Active& a = ActiveState();
  {
    std::lock_guard<std::mutex> lock(a.mu);
    if (a.rules) return a.rules;
  }
  std::shared_ptr<const CompiledRules> builtin = Builtin();
  std::lock_guard<std::mutex> lock(a.mu);
  if (!a.rules) a.rules = std::move(builtin);
  return a.rules;
}

void SetActiveRules(std::shared_ptr<const CompiledRules> rules) {
  Active& a = ActiveState();
  std::lock_guard<std::mutex> lock(a.mu);
  a.rules = std::move(rules);
}

std::span<const Rule> Rules() { return ActiveRules()->rules(); }

std::vector<std::string_view> RuleNamesForLine(std::string_view line, const CompiledRules& rules) {
  std::vector<std::string_view> names;
  for (const auto& m : rules.MatchLine(ParseLogLine(line))) {
    names.push_back(rules.rules()[m.rule].name);
  }
  return names;
}

}  // namespace nccl_triage
