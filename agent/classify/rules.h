// The classifier's rule table: NCCL (and PyTorch c10d, CUDA) log patterns as data.
//
// One row per pattern: which lines it reads, a literal that must occur (a cheap prefilter), an
// optional ECMAScript regex run only when the literal matched, the catalogue cause id it names,
// the class of the path that failed, how strong the evidence is, and an optional refinement of the
// catalogue's remedy. The rows and the result-code table are constexpr and immutable; compiled
// regexes live in CompiledRules (built once, read-only afterwards, safe to share between threads).
#pragma once

#include <cstdint>
#include <optional>
#include <regex>
#include <span>
#include <string_view>
#include <vector>

#include "classify/log_line.h"
#include "core/catalogue.h"
#include "core/model.h"

namespace nccl_triage {

// Which lines a rule reads (a bit mask).
enum LineKindBit : unsigned {
  kWarnLine = 1u << 0,  // `... NCCL WARN <message>`
  kInfoLine = 1u << 1,  // `... NCCL INFO <message>`
  kTextLine = 1u << 2,  // anything else: c10d/PyTorch output, a probe's own lines, tracebacks
};

// Where the rule's literal and regex look.
enum class RuleField {
  kMessage,  // the text after `NCCL WARN ` / `NCCL INFO ` (the whole line for text lines)
  kFile,     // the `file.cc:LINE` of a WARN line (generic fallbacks: which component failed)
};

// How much a match says about the root cause. The order is the ranking order of causes.
enum class Strength {
  kRoot,     // names the failing call or condition precisely
  kGeneric,  // a fallback that only knows which component failed (the call decides the class)
  kContext,  // INFO that explains a failure only when the run failed and IB was wanted
  kFollow,   // a wrapper or side effect of an earlier failure; the cause is the preceding WARN
  kPeer,     // the remote side went away; the cause is in another rank's log
  kWeak,     // only an error code or its text (ncclSystemError, `-> 2`): no failing call named
  kIgnore,   // a WARN that healthy runs print too (async GID-table events): never a root
};

struct Rule {
  std::string_view name;  // unique, stable; tests refer to rules by name
  CauseId cause;          // catalogue id (core/ids.h)
  // The class of this verdict: which path failed (DESIGN "two meanings of class"). A memlock
  // failure in ibv_reg_mr is kIbResource although the catalogue files limits.memlock under
  // architecture (where its fix lives): the log classifier judges by the failing call.
  FaultClass verdict;
  Strength strength;
  unsigned lines;  // LineKindBit mask
  RuleField field;
  std::string_view needle;  // literal that must occur in the field (case-sensitive)
  std::string_view regex;   // ECMAScript, searched in the field; empty: the needle decides
  double confidence;        // 0..1 for a match on a rank's first WARN
  std::string_view remedy;  // empty: the catalogue's remedy; else a refinement for this line
  // When set, a matching line also goes on to the next rules (one line, several candidate
  // causes, e.g. ibv_modify_qp EINVAL: GID index or PKey index).
  bool also_next = false;
  // When this NCCL_* variable is seen set in the log (`NCCL_X set by environment to ...`), the
  // cause is the more likely one: its confidence is raised.
  std::string_view boost_env = {};
  // The ncclResult_t this line implies (c10d's ncclSystemError text: 2), or -1.
  int result_code = -1;
  // When > 0, the regex group holding an ncclResult_t (a proxy's `retcode N`).
  int code_group = 0;
};

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

std::span<const Rule> Rules();
std::span<const Refinement> Refinements();
std::span<const ResultCodeCause> ResultCodeCauses();
const ResultCodeCause* FindResultCode(int code);

// The rule table with its regexes compiled. Immutable after construction.
class CompiledRules {
 public:
  CompiledRules();
  // The shared instance (built on first use; thread-safe initialisation, never modified).
  static const CompiledRules& Get();

  std::span<const Rule> rules() const { return rules_; }
  // Whether rule `i` matches `field`. With a code_group, *code receives the captured value.
  bool Matches(size_t i, std::string_view field, int* code = nullptr) const;

  struct LineMatch {
    size_t rule;  // index into rules()
    int code;     // ncclResult_t the match implies, or -1
  };
  // The rules that name one parsed line: the first match in table order, and the following
  // ones while the matching rule says also_next. An ignore rule stops the search.
  std::vector<LineMatch> MatchLine(const ParsedLine& line) const;
  // The first file rule (RuleField::kFile) that names `file` (`misc/socket.cc:564`), for
  // back-trace lines of a rank that printed no WARN; nullopt when none does.
  std::optional<size_t> MatchFile(std::string_view file) const;

 private:
  std::span<const Rule> rules_;
  std::vector<std::optional<std::regex>> regexes_;
  // Regexes without metacharacters (`'out of memory'`) are plain substrings: std::regex costs
  // microseconds per search, a find costs nanoseconds, and a WARN flood runs one per rule.
  std::vector<std::string> literals_;
  std::vector<size_t> warn_rules_, info_rules_, text_rules_;  // candidates per line kind
  std::vector<size_t> file_rules_;
  // A line is mostly not NCCL's (training output between set-up and failure): scanning it for
  // each of a hundred needles is what it costs. The bigrams of a field go into a 4096-bit set
  // once per line; a rule whose needle has a bigram outside it cannot match and is skipped
  // without a scan. Never a false skip: a substring's bigrams are all in the field's set.
  struct Bigrams {
    uint64_t bits[64];
    void Add(std::string_view field);
    bool Has(uint16_t gram) const { return (bits[gram >> 6] >> (gram & 63)) & 1; }
  };
  static uint16_t Gram(char a, char b);
  std::vector<std::vector<uint16_t>> needle_grams_;  // per rule: the needle's bigram hashes
};

// The names of the rules that match one raw log line (as MatchLine after parsing it).
std::vector<std::string_view> RuleNamesForLine(std::string_view line);

}  // namespace nccl_triage
