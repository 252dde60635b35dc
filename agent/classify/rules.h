// The classifier's rules: NCCL (and PyTorch c10d, CUDA) log patterns as data.
//
// The rules live in a YAML file (agent/classify/rules.yaml, installed as
// share/nccl-triage/classify-rules.yaml and built into the binary as a fallback); ParseRules reads
// one such text, CompiledRules matches a set of them. Each rule names the lines it reads, one or
// more RE2 patterns, the catalogue cause id, the class of the path that failed, how strong the
// evidence is, an optional refinement of the catalogue's remedy and an optional NCCL version
// range.
//
// Matching is one pass per line: the patterns of all rules that read a line kind are one
// RE2::Set (a DFA over the line, whatever the number of rules); only a rule that needs a capture
// (a proxy's `retcode N`) runs its own regex, and only on a line the set already matched.
// CompiledRules is immutable after construction and safe to share between threads.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/reflect.h"
#include "base/status.h"
#include "classify/log_line.h"
#include "core/catalogue.h"
#include "core/ids.h"
#include "core/model.h"

namespace nccl_triage {

// Which lines a rule reads (a bit mask).
enum LineKindBit : unsigned {
  kWarnLine = 1u << 0,  // `... NCCL WARN <message>`
  kInfoLine = 1u << 1,  // `... NCCL INFO <message>`
  kTextLine = 1u << 2,  // anything else: c10d/PyTorch output, a probe's own lines, tracebacks
  kDiagLine = 1u << 3,  // `... NCCL DIAG <message>`: NCCL's own diagnostics report (2.31+)
};

// Where the rule's patterns look.
enum class RuleField {
  kMessage,  // the text after `NCCL WARN ` / `NCCL INFO ` (the whole line for text lines)
  kFile,     // the `file.cc:LINE` of a WARN line (generic fallbacks: which component failed)
};

// How much a match says about the root cause. The order is the ranking order of causes.
enum class Strength {
  kRoot,     // names the failing call or condition precisely
  kGeneric,  // a fallback that only knows which component failed (the call decides the class)
  kSuspect,  // INFO that names a likely cause when the run did not complete (a bridge interface
             // chosen for sockets, GDR off on every HCA): below any line that names the failing
             // call, dropped when the run completed
  kContext,  // INFO that explains a failure only when the run failed and IB was wanted
  kFollow,   // a wrapper or side effect of an earlier failure; the cause is the preceding WARN
  kPeer,     // the remote side went away; the cause is in another rank's log
  kWeak,     // only an error code or its text (ncclSystemError, `-> 2`): no failing call named
  kIgnore,   // a WARN that healthy runs print too (async GID-table events): never a root
};
constexpr auto NamesOf(Type<Strength>) {
  return std::array{Named(Strength::kRoot, "root"), Named(Strength::kGeneric, "generic"),
                    Named(Strength::kSuspect, "suspect"), Named(Strength::kContext, "context"),
                    Named(Strength::kFollow, "follow"), Named(Strength::kPeer, "peer"),
                    Named(Strength::kWeak, "weak"), Named(Strength::kIgnore, "ignore")};
}

// A dotted NCCL version as numbers: "2.19.3" -> {2, 19, 3}. Compared component by component,
// missing components are 0.
using NcclVersion = std::vector<int>;
// Empty when `text` does not start with a dotted number.
NcclVersion ParseNcclVersion(std::string_view text);

struct Rule {
  std::string name;        // unique, stable; tests refer to rules by name
  std::string_view cause;  // the catalogue entry's id (static storage)
  // The class of this verdict: which path failed (DESIGN "two meanings of class"). A memlock
  // failure in ibv_reg_mr is kIbResource although the catalogue files limits.memlock under
  // architecture (where its fix lives): the log classifier judges by the failing call.
  FaultClass verdict = FaultClass::kUnknown;
  Strength strength = Strength::kRoot;
  unsigned lines = 0;  // LineKindBit mask
  RuleField field = RuleField::kMessage;
  std::vector<std::string> patterns;  // RE2 syntax; any one matching names the line
  double confidence = 0;              // 0..1 for a match on a rank's first WARN
  std::string remedy;                 // empty: the catalogue's remedy; else this line's
  // When set, a matching line also goes on to the next rules (one line, several candidate
  // causes, e.g. ibv_modify_qp EINVAL: GID index or PKey index).
  bool also_next = false;
  // When this NCCL_* variable is seen set in the log (`NCCL_X set by environment to ...`), the
  // cause is the more likely one: its confidence is raised.
  std::string boost_env;
  int result_code = -1;  // the ncclResult_t this line implies (c10d's ncclSystemError: 2), or -1
  int code_group = 0;    // > 0: the group of patterns[0] holding an ncclResult_t (`retcode N`)
  // The rule holds only when groups 1 and 2 of patterns[0] capture different text: NCCL printed
  // two values it compared (`nranks 2 vs 3`), and which differ says what went wrong.
  bool differ = false;
  // When not empty, the rule holds only after one of these NCCL_* variables was seen set in the
  // log (`NCCL_TOPO_FILE set by environment to ...` before an XML import error).
  std::vector<std::string> after_env;
  // When not empty, the cause is kept only when the log's network (`Using network Socket`)
  // starts with this.
  std::string network;
  NcclVersion nccl_from;    // empty: no lower bound (inclusive)
  NcclVersion nccl_before;  // empty: no upper bound (exclusive)
  bool nccl_known = false;  // the rule holds only when the log names its NCCL version
  std::string origin;       // "file:line" of the rule, for messages

  // Whether the rule holds for a log of this NCCL version (empty: unknown, always holds).
  bool AppliesTo(const NcclVersion& version) const;
};

// Reads one rule file. `source` names it in errors. On error: one line naming the source, the
// rule (by id or position) and what is wrong. Unknown keys, unknown causes, classes, strengths,
// line kinds, and patterns RE2 rejects are errors.
StatusOr<std::vector<Rule>> ParseRules(std::string_view yaml, std::string_view source);

// The rules of several files in order: a rule whose id an earlier file has replaces it in place;
// new rules go before all earlier ones (a user's rule is tried before the shipped generic ones).
std::vector<Rule> MergeRules(std::vector<Rule> base, std::vector<Rule> overrides);

// A specific cause that explains a general one: when both are found, the specific one is ranked
// first (e.g. `Failed to initialize any NET plugin` is explained by `Failed to open libibverbs`).
struct Refinement {
  CauseId general;
  CauseId specific;
};

// ncclResult_t values (NCCL_FACTS A2) as weak evidence: `-> N` back-trace lines and retcodes.
struct ResultCodeCause {
  int code;
  std::string_view name;  // ncclSystemError, ...
  CauseId cause;
  FaultClass verdict;
};

// Causes the classifier names from several lines together rather than from one rule: two NCCL
// versions in one job, two MTUs on its connections, and the inference of knowledge.h.
struct DerivedCause {
  CauseId cause;
  FaultClass verdict;
};
inline constexpr DerivedCause kVersionSkew{ids::kVersionsMismatch, FaultClass::kArchitecture};
inline constexpr DerivedCause kMtuSkew{ids::kIbMtuMismatch, FaultClass::kIbResource};
// Read across lines and ranks of a run that did not complete (classify/knowledge.h).
inline constexpr DerivedCause kBadSetting{ids::kNcclEnvValue, FaultClass::kArchitecture};
inline constexpr DerivedCause kNetworkSkew{ids::kIbHcaPresent, FaultClass::kIbResource};
inline constexpr DerivedCause kGdrSkew{ids::kIbPeermem, FaultClass::kIbResource};
inline constexpr DerivedCause kCudaMajorSkew{ids::kVersionsCudaDriver, FaultClass::kArchitecture};
inline constexpr DerivedCause kNcclTooOld{ids::kVersionsNccl, FaultClass::kArchitecture};
// `Error: network gIB not found.` with a line that says the net plugin did not load: the plugin
// that provides that network is missing or broken, not the name.
inline constexpr DerivedCause kPluginNotLoaded{ids::kNetPlugin, FaultClass::kArchitecture};
// A rank that failed inside NET/IB with no WARN (`net_ib.cc:282 -> 2`) after the job chose its
// RoCE GID by NCCL_IB_GID_INDEX, NCCL_IB_ADDR_RANGE, NCCL_IB_ADDR_FAMILY or
// NCCL_IB_ROCE_VERSION_NUM.
inline constexpr DerivedCause kGidSelection{ids::kIbGid, FaultClass::kIbResource};
// One process finds no CUDA device while another process of the job opened its GPU (NCCL's
// `cudaDev N` init line): the driver works, that process was given no GPU (device assignment,
// CUDA_VISIBLE_DEVICES).
inline constexpr DerivedCause kDeviceNotGiven{ids::kGpuVisibility, FaultClass::kArchitecture};
// Two ranks of one communicator (commId) opened the same GPU (busId) of one host and the
// communicator got no further: NCCL refuses a communicator with a GPU twice. A suspect; not read
// when NCCL_HOSTID is set or the ranks built channels (processes of one machine counted as
// different hosts).
inline constexpr DerivedCause kSharedGpu{ids::kGpuDuplicate, FaultClass::kArchitecture};
// Ten and more `connect returned Connection refused, retrying` lines (NCCL before 2.12 counts
// none itself) and no set-up after them: nothing listens at the peer's address and port.
inline constexpr DerivedCause kRefusedRetries{ids::kNetConnect, FaultClass::kArchitecture};
// nccl-tests listed the same rank twice, from two processes, before any result: each process
// ran a test of its own (a binary built without MPI=1 under mpirun, or a launcher of another
// MPI), not one job across them.
inline constexpr DerivedCause kSeparateTestJobs{ids::kJobLauncher, FaultClass::kArchitecture};
std::span<const DerivedCause> DerivedCauses();

std::span<const Refinement> Refinements();
std::span<const ResultCodeCause> ResultCodeCauses();
const ResultCodeCause* FindResultCode(int code);

// A rule set, compiled. Immutable after construction.
class CompiledRules {
 public:
  // InvalidArgument naming the rule when a pattern does not compile or two rules share an id.
  static StatusOr<std::shared_ptr<const CompiledRules>> Compile(std::vector<Rule> rules);
  ~CompiledRules();
  CompiledRules(const CompiledRules&) = delete;
  CompiledRules& operator=(const CompiledRules&) = delete;

  std::span<const Rule> rules() const { return rules_; }

  struct LineMatch {
    size_t rule;  // index into rules()
    int code;     // ncclResult_t the match implies, or -1
  };
  // The rules that name one parsed line: the first match in rule order, and the following
  // ones while the matching rule says also_next. An ignore rule stops the search.
  std::vector<LineMatch> MatchLine(const ParsedLine& line) const;
  // The first file rule (RuleField::kFile) that names `file` (`misc/socket.cc:564`), for
  // back-trace lines of a rank that printed no WARN; nullopt when none does.
  std::optional<size_t> MatchFile(std::string_view file) const;

 private:
  CompiledRules();
  // Whether groups 1 and 2 of the first pattern of a `differ` rule capture different text.
  bool GroupsDiffer(size_t rule, std::string_view field) const;
  struct Sets;
  std::vector<Rule> rules_;
  std::unique_ptr<Sets> sets_;
};

// The rules built into the binary: rules.yaml as it was at build time.
std::string_view BuiltinRuleText();

// The rules classifiers use when none are given: the built-in rules until the program installs
// the ones it loaded at start-up (classify/rule_files.h). Thread-safe; a classifier keeps the
// set it started with.
std::shared_ptr<const CompiledRules> ActiveRules();
void SetActiveRules(std::shared_ptr<const CompiledRules> rules);

// The active rules (ActiveRules()->rules()); valid while they stay installed.
std::span<const Rule> Rules();

// The names of the rules that match one raw log line (as MatchLine after parsing it).
std::vector<std::string_view> RuleNamesForLine(std::string_view line,
                                               const CompiledRules& rules = *ActiveRules());

}  // namespace nccl_triage
