#include "classify/classifier.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include <re2/re2.h>

#include "base/utf8.h"
#include "classify/knowledge.h"
#include "classify/log_line.h"
#include "classify/message_catalogue.h"
#include "classify/rules.h"
#include "core/catalogue.h"
#include "core/ids.h"

namespace nccl_triage {
namespace {

constexpr size_t kMaxLineBytes = 4096;  // longer lines are cut: a log line is never that long
constexpr size_t kMaxEvidence = 5;      // lines kept per cause
constexpr size_t kMaxRanks = 65536;     // rank keys tracked (first WARN per rank)
constexpr size_t kMaxTextRoots = 64;    // free-text root candidates (logs without WARN lines)
constexpr size_t kMaxTransports = 8;
constexpr size_t kMaxIbPorts = 64;  // NCCL's MAX_IB_DEVS is 32
constexpr size_t kMaxIbLines = 4;
constexpr size_t kMaxFieldBytes = 128;  // network name, version, environment values
// Heterogeneous lookup: rank keys and messages arrive as string_views into the line.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

// Ranking tiers: a cause's tier is that of its strongest match; lower ranks first.
enum Tier : int {
  // A failed check of NCCL's own diagnostics report (2.31+): NCCL tested the path itself and
  // names what failed, stronger than any WARN of the failure it explains.
  kTierDiag = -1,
  kTierRoot = 0,       // matched on a rank's first WARN
  kTierSecondary = 1,  // a precise rule on a later WARN or on quoted text (c10d `Last error:`)
  // No WARN on the rank, but its back-trace starts in a file that names the component
  // (`misc/socket.cc:564 -> 2`): where the error was raised, only in runs that did not complete.
  kTierTrace = 2,
  kTierSuspect = 3,  // INFO naming a likely cause of a run that did not complete
  kTierContext = 4,  // INFO context (IB wanted and missing); unmatched first WARNs rank here
  kTierFollow = 5,   // peer exits and wrappers: the cause is elsewhere
  kTierWeak = 6,     // error codes and their names only
  kTierNone = 99,
};

bool StartsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool EndsWith(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}

// Valid UTF-8 stays; invalid bytes become U+FFFD and control characters (except tab) become '?',
// so evidence is always printable and serialisable as JSON.
std::string Sanitize(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const size_t len = Utf8SequenceLength(s, i);
    if (len == 0) {
      out.append(kUtf8Replacement);
      ++i;
    } else if (len == 1) {
      const auto c = static_cast<unsigned char>(s[i]);
      out.push_back((c < 0x20 && c != '\t') || c == 0x7f ? '?' : s[i]);
      ++i;
    } else {
      out.append(s.substr(i, len));
      i += len;
    }
  }
  return out;
}

std::string_view Cap(std::string_view s, size_t n) { return s.size() > n ? s.substr(0, n) : s; }

// The source file of a WARN's `file.cc:LINE` (`misc/shmutils.cc:103 (func)` -> `misc/shmutils.cc`).
std::string_view FileOnly(std::string_view file) {
  file = file.substr(0, file.find(' '));
  return file.substr(0, file.rfind(':'));
}

// A result row of nccl-tests (`  8388608  2097152  float  sum  -1  123.4  68.00  127.50  0 ...`):
// size, count, type, [redop,] root, time, algbw, busbw and #wrong, here 0 or N/A.
bool IsTestsResultRow(std::string_view text) {
  if (text.size() > 512 || text.find_first_of("0123456789") == std::string_view::npos) return false;
  static const RE2 kRow(
      R"(\b\d+\s+\d+\s+(?:float|double|half|bfloat16|u?int(?:8|32|64)|fp8_e4m3|fp8_e5m2)\s+)"
      R"((?:[a-z]+\s+)?-?\d+\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+(?:0|N/A)(?:\s|$))");
  return RE2::PartialMatch(text, kRow);
}

// A step of the program that uses the communicator, printed after it ran (training and
// benchmark loops: `Iteration: 10. Average time per step so far: 0.0013`, `step 200 | loss 2.31`,
// `{'loss': 1.92, 'learning_rate': 2e-05, 'epoch': 0.4}`, `Iter #9: 412.3 img/sec per GPU`,
// `Epoch 1: 100%|...| 50/50 [00:10<00:00, 4.9it/s]`): a counted step with a measured figure.
// Each step of a data-parallel loop runs collectives, so a step that finished is a collective
// that completed; a step count alone (a progress bar at 0 %) or a figure alone is not.
bool IsProgressLine(std::string_view text) {
  if (text.size() > 512) return false;
  static const RE2 kStep(
      R"((?i)(?:\b(?:iter(?:ation)?|step|epoch)s?\s*[:#=]?\s*\[?\s*[1-9]\d*\b[^\n]{0,200}?)"
      R"(\b(?:loss|time per step|s/it|it/s|img/sec|images/sec|samples?/s(?:ec)?|tokens?/s(?:ec)?|)"
      R"(throughput|elapsed time|grad[_ ]norm|learning[_ ]rate|lr)\b))");
  static const RE2 kTrainerDict(R"(\{'loss': [0-9])");
  static const RE2 kTotal(R"((?i)\btotal (?:img|images|samples|tokens)/sec on \d+ GPU)");
  const bool digit = text.find_first_of("123456789") != std::string_view::npos;
  return digit && (RE2::PartialMatch(text, kStep) || RE2::PartialMatch(text, kTrainerDict) ||
                   RE2::PartialMatch(text, kTotal));
}

// A program's own word that its NCCL collectives worked (`vLLM NCCL is successful!`, `all_reduce
// test passed`): positive evidence, as nccl-tests' rows are.
bool IsProgramSuccessLine(std::string_view text) {
  if (text.size() > 512) return false;
  static const RE2 kSuccess(
      R"((?i)\b(?:nccl|all[-_ ]?reduce|all[-_ ]?gather|collectives?)\b[^\n]{0,60}\b)"
      R"((?:is successful|succeeded|passed)\b)");
  if (RE2::PartialMatch(text, kSuccess)) return true;
  // A benchmark's measured result with its own data check (`... busbw_GBps 0.773 check ok`,
  // `bus bandwidth 12.5 GB/s, results correct`): a collective completed and returned the right
  // data. A figure alone is not enough (a job can print a rate and then fail its check).
  static const RE2 kCheckedRate(
      R"((?i)\b(?:bus[-_ ]?bw|alg[-_ ]?bw|bus bandwidth)\S*\s*[:=]?\s*\d[\d.]*[^\n]{0,80}?)"
      R"(\b(?:check(?:ed)?\s*[:=]?\s*(?:ok|passed)|results? (?:correct|ok|verified)|verified)\b)");
  const bool rate = text.find("bw") != std::string_view::npos ||
                    text.find("BW") != std::string_view::npos ||
                    text.find("andwidth") != std::string_view::npos;
  return rate && RE2::PartialMatch(text, kCheckedRate);
}

// "2.28.9" from "NCCL version 2.28.9+cuda13.0", or empty.
std::string ParseVersion(std::string_view text) {
  size_t pos = text.find("NCCL version ");
  if (pos == std::string_view::npos) return {};
  std::string_view rest = text.substr(pos + 13);
  size_t n = 0;
  int dots = 0;
  while (n < rest.size() && n < 16 && ((rest[n] >= '0' && rest[n] <= '9') || rest[n] == '.')) {
    if (rest[n] == '.') ++dots;
    ++n;
  }
  while (n > 0 && rest[n - 1] == '.') --n, --dots;
  if (dots < 1) return {};
  return std::string(rest.substr(0, n));
}

bool IEqualsPrefix(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i) {
    char a = s[i];
    if (a >= 'a' && a <= 'z') a = static_cast<char>(a - 'a' + 'A');
    if (a != prefix[i]) return false;
  }
  return true;
}

std::string ToUpper(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  }
  return out;
}

struct CauseAcc {
  const Rule* rule = nullptr;  // the rule of the strongest match (verdict, remedy)
  int tier = kTierNone;
  double confidence = 0;
  size_t order_line = 0;  // where the strongest tier was first reached
  std::string order_ts;
  std::vector<LogLine> evidence;
  size_t matches = 0;
  bool refined = false;
  // Named by the summary that followed a rank's first WARN from the same file (OnWarn): ranked
  // before the wrapper's cause of that WARN.
  bool summary = false;
  // For causes that come from result codes rather than rules.
  FaultClass code_verdict = FaultClass::kUnknown;
};

struct RankState {
  bool has_warn = false;
  bool init_complete = false;  // `... - Init COMPLETE`
  bool torn_down = false;      // `... - Destroy COMPLETE`: the rank finished its communicator
  // Its channels: through an IB port with GPUDirect RDMA, through one without, through sockets.
  bool ib_gdr = false;
  bool ib_plain = false;
  bool net_socket = false;
  bool net_ib = false;
  bool has_code = false;  // a failing `-> N` seen on this rank (before or after its WARN)
  // Its NET plugin: an external one loaded (`Plugin Path :`, `Loaded net plugin`), or none
  // (`Using internal network plugin`, `Could not find: libnccl-net.so`).
  bool plugin_external = false;
  bool plugin_internal = false;
  int code_after_warn = -1;
  // Its first WARN: where NCCL printed it (`misc/shmutils.cc`, without the line), whether only a
  // generic rule or the catalogue's path named it (a wrapper's error: `Cuda failure 'invalid
  // argument'`), and where it was; and how many WARNs the rank printed.
  std::string first_warn_file;
  bool first_warn_generic = false;
  size_t first_warn_line = 0;
  std::string first_warn_ts;
  int warns = 0;
};

// The first back-trace line of a rank without a WARN whose file a file rule names.
struct TraceRoot {
  size_t rule = 0;
  int code = -1;
  LogLine line;
  std::string rank;
};

struct RootCandidate {
  std::string rank;
  LogLine line;
  std::string ts;
  int tier = kTierContext;
  bool matched = false;
};

}  // namespace

// The causes a classification keeps, by id.
using KeptMap = std::map<std::string, CauseAcc, std::less<>>;

struct LogClassifier::State {
  State(std::shared_ptr<const CompiledRules> rules, std::shared_ptr<const MessageCatalogue> cat)
      : rules_owner(std::move(rules)), compiled(*rules_owner), catalogue(std::move(cat)) {}

  std::shared_ptr<const CompiledRules> rules_owner;
  const CompiledRules& compiled;
  std::shared_ptr<const MessageCatalogue> catalogue;
  // Causes named only by the catalogue's path of a WARN (no rule): dropped when the run set up
  // cleanly after them, as an unmatched WARN before Init COMPLETE is set-up noise.
  std::set<std::string, std::less<>> path_only;

  size_t line_no = 0;
  size_t nccl_lines = 0;
  size_t warn_lines = 0;
  size_t nonempty_text_lines = 0;
  size_t binary_lines = 0;
  size_t unmatched_warns = 0;
  size_t diag_lines = 0;  // lines of NCCL's diagnostics report

  std::map<std::string, CauseAcc, std::less<>> causes;
  std::unordered_map<std::string, RankState, StringHash, std::equal_to<>> ranks;
  std::vector<RootCandidate> roots;
  std::vector<RootCandidate> text_roots;

  bool init_complete = false;
  size_t ranks_initialised = 0;  // ranks that printed Init COMPLETE
  size_t ranks_torn_down = 0;    // of those, ranks that also printed Destroy COMPLETE
  size_t last_init_line = 0;
  bool channels = false;
  bool tests_passed = false;     // nccl-tests printed its summary (`# Out of bounds values : 0 OK`)
  bool teardown = false;         // some rank printed `Destroy COMPLETE`
  bool setup_seen = false;       // NCCL chose interfaces or a network, or counted its ranks
  bool ib_devices_used = false;  // `NET/IB : Using [0]mlx5_1:1/RoCE ...`: some HCA opened
  std::optional<TraceRoot> trace_root;
  std::vector<std::string> transports;
  std::vector<std::string> local_transports;  // "P2P/CUMEM/read", "SHM/direct/direct"
  std::vector<std::string> ib_devices;        // index -> "mlx5_0:1" from the first `Using [` line
  std::vector<int> ib_used;                   // indices named by `via NET/IB/<i>` channel lines
  bool gdrdma = false;
  std::vector<LogLine> ib_lines;
  std::string network;
  std::string version;
  NcclVersion version_numbers;
  std::string env_net;                // NCCL_NET's value when the log shows it
  std::vector<std::string> env_seen;  // NCCL_* variables named by rules' boost_env, when set
  std::vector<std::string> env_set;   // NCCL_* variables seen set (bounded)
  std::vector<LogLine> env_lines;     // their lines, for causes that need them (after_env)
  std::vector<std::string> env_values;  // the values of env_set, in the same order
  // A value NCCL would not accept (CheckEnvValue), quoted as `"<value>"` to find NCCL's WARN that
  // rejects it; that WARN makes the setting the root, not the file that printed it.
  std::vector<std::string> env_rejected_quoted;
  std::vector<LogLine> env_rejected_lines;  // the setting's line, then the WARN quoting it
  // Channel lines that tell ranks apart (first of each kind): GDRDMA or not, IB or sockets.
  std::optional<LogLine> gdr_line, plain_ib_line, socket_channel_line, ib_channel_line;
  int nccl_cuda_major = -1;    // `NCCL version 2.21.5+cuda12.4`
  int driver_cuda_major = -1;  // `cudaDriverVersion 12020`
  LogLine nccl_cuda_line, driver_cuda_line;
  // NET plugin selection (2.27+): the plugins NCCL tried and failed (`Failed to initialize NET
  // plugin IB`), and the WARN that none could be used. NCCL tries only the plugins whose name
  // NCCL_NET matches (plugin/net.cc), so a WARN with no plugin tried means NCCL_NET named none.
  std::vector<std::string> net_plugins_failed;
  std::optional<LogLine> no_net_plugin_line;
  // `Error: network gIB not found.` (a network no built-in plugin provides), and the first line
  // that says a net plugin did not load; the first plugin line of each kind per rank.
  std::optional<LogLine> net_not_found_line;
  std::optional<LogLine> plugin_not_loaded_line;
  std::optional<LogLine> plugin_external_line, plugin_internal_line;
  // The first `-> 2` inside NET/IB of a rank that printed no WARN before it.
  std::optional<LogLine> ib_trace_line;
  // CUDA found no device (`no CUDA-capable device is detected`, CUDA 100), and the first NCCL
  // init line that names a process's CUDA device (`... cudaDev 0 nvmlDev 0 busId 60 ...`).
  std::optional<LogLine> no_device_line;
  std::optional<LogLine> device_opened_line;
  size_t info_lines_before_no_net = 0;
  const GpuArchitecture* gpu_arch = nullptr;  // the first GPU generation a line names
  LogLine gpu_line;
  // Causes derived from several lines that stay unless the run completed (not only set up).
  std::set<std::string, std::less<>> keep_unless_completed;
  // Positive evidence of a completed run, and WARNs after it.
  bool progress_seen = false;  // the program's own steps after NCCL set up (IsProgressLine)
  size_t last_success_line = 0;
  size_t last_warn_line = 0;
  bool gdr_enabled = false;  // `GPU Direct RDMA Enabled for HCA`
  // `NCCL version X` per distinct X (the first line of each, at most two).
  std::vector<std::pair<std::string, LogLine>> versions_seen;
  // `mtu N` of NET/IB connection lines per distinct N (the first line of each, at most two).
  std::vector<std::pair<int, LogLine>> mtus_seen;

  int text_code = -1;
  int orphan_code = -1;  // first `-> N` on a rank without a WARN
  LogLine orphan_line;
  bool finished = false;
  std::string_view current_line;  // the line being fed

  static int TierFor(Strength s, bool first_warn, bool warn_line) {
    switch (s) {
      case Strength::kRoot:
      case Strength::kGeneric:
        return first_warn && warn_line ? kTierRoot : kTierSecondary;
      case Strength::kSuspect:
        return kTierSuspect;
      case Strength::kContext:
        return kTierContext;
      case Strength::kFollow:
      case Strength::kPeer:
        return kTierFollow;
      case Strength::kWeak:
        return kTierWeak;
      case Strength::kIgnore:
        return kTierNone;
    }
    return kTierNone;
  }

  double Boost(const Rule& r, double confidence) const {
    if (!r.boost_env.empty() &&
        std::find(env_seen.begin(), env_seen.end(), r.boost_env) != env_seen.end()) {
      return std::min(0.95, confidence + 0.3);
    }
    return confidence;
  }

  void AddEvidence(CauseAcc& acc, size_t number, std::string_view line) {
    ++acc.matches;
    if (acc.evidence.size() >= kMaxEvidence) return;
    if (!acc.evidence.empty() && acc.evidence.back().number == number) return;
    acc.evidence.push_back({number, Sanitize(line)});
  }

  void AddCause(const Rule& r, int tier, double confidence, std::string_view line,
                std::string_view ts) {
    auto found = causes.find(r.cause);
    CauseAcc& acc = found != causes.end() ? found->second
                                          : causes.emplace(r.cause, CauseAcc{}).first->second;
    if (!path_only.empty()) path_only.erase(std::string(r.cause));
    AddEvidence(acc, line_no, line);
    if (tier < acc.tier) {
      acc.tier = tier;
      acc.rule = &r;
      acc.confidence = confidence;
      acc.order_line = line_no;
      acc.order_ts = std::string(Cap(ts, kMaxFieldBytes));
    } else if (tier == acc.tier) {
      if (confidence > acc.confidence) {
        acc.confidence = confidence;
        acc.rule = &r;
      }
      // Ranks may be concatenated out of time order: keep the earliest timestamp.
      if (!ts.empty() && !acc.order_ts.empty() && ts < acc.order_ts) {
        acc.order_ts = std::string(Cap(ts, kMaxFieldBytes));
        acc.order_line = line_no;
      }
    }
  }

  // The path of a WARN no rule names: the source file NCCL printed before WARN, else its message
  // against NCCL's format strings.
  const MessagePath* CataloguePath(const ParsedLine& p) const {
    // The file first: one lookup, and as precise (a file answers only when all its WARNs share
    // one path). The message is matched when the line names no file or an ambiguous one.
    if (!p.file.empty()) {
      if (const MessagePath* path = catalogue->PathOfFile(p.file)) return path;
    }
    if (const CatalogueMessage* m = catalogue->MatchWarn(Cap(p.message, 1024))) {
      return FindMessagePath(m->path);
    }
    // aws-ofi-nccl puts `NET/OFI ` before every warning it prints (NCCL_OFI_WARN), also those
    // whose text the catalogue cannot hold (formats pasted together from macros, releases it has
    // not read): the plugin's path all the same.
    if (StartsWith(p.message, "NET/OFI ")) return FindMessagePath("net_ofi");
    return nullptr;
  }

  void AddPathCause(const MessagePath& path, int tier, std::string_view line,
                    std::string_view ts) {
    auto [it, inserted] = causes.try_emplace(std::string(path.cause.str()));
    CauseAcc& acc = it->second;
    if (inserted) path_only.insert(it->first);
    AddEvidence(acc, line_no, line);
    if (tier < acc.tier) {
      acc.tier = tier;
      acc.rule = nullptr;
      acc.code_verdict = path.verdict;
      acc.confidence = 0.5;
      acc.order_line = line_no;
      acc.order_ts = std::string(Cap(ts, kMaxFieldBytes));
    }
  }

  RankState* Rank(std::string_view key) {
    auto it = ranks.find(key);
    if (it != ranks.end()) return &it->second;
    if (ranks.size() >= kMaxRanks) return nullptr;
    return &ranks.emplace(std::string(key), RankState{}).first->second;
  }

  // The rules that name a line and hold for the log's NCCL version (when it is known) and the
  // environment it showed so far.
  std::vector<CompiledRules::LineMatch> Match(const ParsedLine& p) const {
    std::vector<CompiledRules::LineMatch> matches = compiled.MatchLine(p);
    std::erase_if(matches, [&](const CompiledRules::LineMatch& m) {
      const Rule& r = compiled.rules()[m.rule];
      if (!r.AppliesTo(version_numbers)) return true;
      return !r.after_env.empty() &&
             std::none_of(r.after_env.begin(), r.after_env.end(), [&](const std::string& e) {
               return std::find(env_set.begin(), env_set.end(), e) != env_set.end();
             });
    });
    return matches;
  }

  // The first version names the log's; a second one (another node's rank 0) is a skew.
  void OnVersion(std::string v, std::string_view line) {
    if (v.empty()) return;
    if (nccl_cuda_major < 0) {
      nccl_cuda_major = NcclCudaMajor(line);
      if (nccl_cuda_major >= 0) nccl_cuda_line = {line_no, Sanitize(Cap(line, 512))};
    }
    if (version.empty()) {
      version = v;
      version_numbers = ParseNcclVersion(version);
    }
    if (versions_seen.size() < 2 &&
        std::none_of(versions_seen.begin(), versions_seen.end(),
                     [&](const auto& x) { return x.first == v; })) {
      versions_seen.emplace_back(std::move(v), LogLine{line_no, Sanitize(Cap(line, 512))});
    }
  }

  // `NET/IB: ... qpn 1234 mtu 5 ...`: the active MTU of a connection's port (an enum: 5 = 4096).
  void OnMtu(std::string_view msg, std::string_view line) {
    const size_t at = msg.find(" mtu ");
    if (at == std::string_view::npos || mtus_seen.size() >= 2) return;
    int mtu = 0;
    size_t i = at + 5;
    while (i < msg.size() && i < at + 10 && msg[i] >= '0' && msg[i] <= '9') {
      mtu = mtu * 10 + (msg[i] - '0');
      ++i;
    }
    if (i == at + 5) return;
    if (std::none_of(mtus_seen.begin(), mtus_seen.end(),
                     [&](const auto& x) { return x.first == mtu; })) {
      mtus_seen.emplace_back(mtu, LogLine{line_no, Sanitize(Cap(line, 512))});
    }
  }

  void OnWarn(const ParsedLine& p, std::string_view line) {
    ++nccl_lines;
    ++warn_lines;
    const std::vector<CompiledRules::LineMatch> matches = Match(p);
    const auto rules = compiled.rules();
    if (!matches.empty() && rules[matches.front().rule].strength == Strength::kIgnore) return;
    last_warn_line = line_no;
    for (const auto& m : matches) OnNamedLine(rules[m.rule], p.message, line);
    if (!no_net_plugin_line && p.message.find("Failed to initialize any NET plugin") == 0) {
      no_net_plugin_line = LogLine{line_no, Sanitize(Cap(line, 512))};
      info_lines_before_no_net = nccl_lines - warn_lines;
    }
    RankState* rs = Rank(p.rank);
    bool first_warn = rs != nullptr && !rs->has_warn;
    if (rs != nullptr) {
      rs->has_warn = true;
      ++rs->warns;
    }
    // NCCL's setup code reports a failed step through the wrapper of the call (CUDACHECK's `Cuda
    // failure '...'`, SYSCHECK's `Call to X failed`), then, from the same source file, its own
    // summary of the operation (`Error while creating shared memory segment ...`). When the
    // rank's first WARN was only such a wrapper, the summary that follows it names the failure:
    // its cause is the rank's root, ranked where the wrapper was.
    const bool summary_of_first = rs != nullptr && !first_warn && rs->warns == 2 &&
                                  rs->first_warn_generic && !rs->first_warn_file.empty() &&
                                  FileOnly(p.file) == rs->first_warn_file;
    int root_tier = kTierContext;
    bool first_generic = !matches.empty();
    for (const auto& m : matches) {
      const Rule& r = rules[m.rule];
      if (r.strength != Strength::kGeneric) first_generic = false;
      if (summary_of_first && r.strength == Strength::kRoot) {
        AddCause(r, kTierRoot, Boost(r, r.confidence), line, rs->first_warn_ts);
        CauseAcc& acc = causes.find(r.cause)->second;
        if (acc.tier == kTierRoot && acc.rule == &r) {
          acc.order_line = rs->first_warn_line;
          acc.summary = true;
        }
        continue;
      }
      int tier = TierFor(r.strength, first_warn, true);
      root_tier = std::min(root_tier, tier);
      AddCause(r, tier, Boost(r, r.confidence), line, p.timestamp);
    }
    bool named = !matches.empty();
    if (!named) {
      // No rule names it: NCCL's own catalogue still knows which path printed it.
      if (const MessagePath* path = CataloguePath(p)) {
        int tier = path->verdict == FaultClass::kUnknown
                       ? static_cast<int>(kTierFollow)
                       : TierFor(Strength::kGeneric, first_warn, true);
        root_tier = std::min(root_tier, tier);
        AddPathCause(*path, tier, line, p.timestamp);
        named = path->verdict != FaultClass::kUnknown;
        first_generic = named;
      }
    }
    if (first_warn) {
      rs->first_warn_file = std::string(Cap(FileOnly(p.file), kMaxFieldBytes));
      rs->first_warn_generic = first_generic;
      rs->first_warn_line = line_no;
      rs->first_warn_ts = std::string(Cap(p.timestamp, kMaxFieldBytes));
    }
    if (!named) ++unmatched_warns;
    if (env_rejected_lines.empty()) {
      for (const std::string& quoted : env_rejected_quoted) {
        if (p.message.find(quoted) == std::string_view::npos) continue;
        env_rejected_lines.push_back({line_no, Sanitize(Cap(line, 512))});
        break;
      }
    }
    if (first_warn) {
      roots.push_back({std::string(Cap(p.rank, kMaxFieldBytes)),
                       {line_no, Sanitize(line)},
                       std::string(Cap(p.timestamp, kMaxFieldBytes)),
                       named ? root_tier : static_cast<int>(kTierContext),
                       named});
    }
  }

  void OnCode(std::string_view rank, int code, std::string_view message, std::string_view line) {
    if (code == 0 || code == 7) return;  // ncclSuccess, ncclInProgress
    auto it = ranks.find(rank);
    if (it != ranks.end() && it->second.has_warn) {
      if (it->second.code_after_warn < 0) it->second.code_after_warn = code;
      return;
    }
    // The first `-> N` of a rank that printed no WARN is where the error was raised. Only a
    // failed system call (2) names its component: internal errors (3) there are mostly the
    // abort of a rank whose peer failed.
    RankState* rs = Rank(rank);
    if (rs != nullptr && !rs->has_code) {
      rs->has_code = true;
      if (code == 2 && !ib_trace_line &&
          message.substr(0, message.find(' ')).find("net_ib") != std::string_view::npos) {
        ib_trace_line = LogLine{line_no, Sanitize(Cap(line, 512))};
      }
      if (!trace_root && code == 2) {
        std::string_view file = message.substr(0, message.find(' '));
        auto rule = compiled.MatchFile(file);
        // Only components whose calls are all outside the IB path: net_ib.cc also fails in
        // its out-of-band socket, so a bare `net_ib.cc -> 2` does not say which path failed.
        if (rule && compiled.rules()[*rule].verdict == FaultClass::kArchitecture) {
          trace_root = TraceRoot{
              *rule, code, {line_no, Sanitize(line)}, std::string(Cap(rank, kMaxFieldBytes))};
        }
      }
    }
    if (orphan_code < 0) {
      orphan_code = code;
      orphan_line = {line_no, Sanitize(line)};
    }
  }

  // A line a rule named, read for what the derived findings need (only named lines are read, so
  // the common line pays nothing): a CUDA line for "no device", a network-not-found line.
  void OnNamedLine(const Rule& r, std::string_view msg, std::string_view line) {
    if (ids::kCudaDriver == r.cause) {
      OnNoDevice(msg, line);
    } else if (!net_not_found_line &&
               (ids::kNcclApiUsage == r.cause || ids::kIbHcaPresent == r.cause)) {
      OnNetNotFound(msg, line);
    }
  }

  void OnNoDevice(std::string_view msg, std::string_view line) {
    if (no_device_line) return;
    if (msg.find("no CUDA-capable device is detected") != std::string_view::npos ||
        msg.find("CUDA_ERROR_NO_DEVICE") != std::string_view::npos ||
        msg.find("Cuda failure 100 ") != std::string_view::npos) {
      no_device_line = LogLine{line_no, Sanitize(Cap(line, 512))};
    }
  }

  // `Error: network X not found.` for a network that only a plugin provides (not IB, Socket).
  void OnNetNotFound(std::string_view msg, std::string_view line) {
    const size_t at = msg.find("Error: network ");
    if (at == std::string_view::npos) return;
    std::string_view name = msg.substr(at + 15);
    const size_t end = name.find(" not found");
    if (end == std::string_view::npos) return;
    name = name.substr(0, end);
    if (name == "IB" || name == "Socket" || name.empty()) return;
    net_not_found_line = LogLine{line_no, Sanitize(Cap(line, 512))};
  }

  // NET plugin lines (INFO, or text when pasted without the prefix): whether a rank loaded an
  // external plugin or runs without one, and whether a plugin failed to load.
  void OnPluginLine(std::string_view rank, std::string_view msg, std::string_view line) {
    const bool plugin = StartsWith(msg, "NET/Plugin") || StartsWith(msg, "Plugin Path :");
    if (!plugin) return;
    const bool external = StartsWith(msg, "Plugin Path :") ||
                          msg.find("Loaded net plugin") != std::string_view::npos;
    const bool internal = msg.find("Using internal network plugin") != std::string_view::npos ||
                          msg.find("Could not find: libnccl-net") != std::string_view::npos ||
                          msg.find("No plugin found") != std::string_view::npos;
    const bool failed =
        internal || msg.find("returned ") != std::string_view::npos ||
        msg.find("Failed to find ncclNetPlugin") != std::string_view::npos ||
        msg.find("cannot open shared object") != std::string_view::npos ||
        msg.find("undefined symbol") != std::string_view::npos;
    const LogLine here{line_no, Sanitize(Cap(line, 512))};
    // `Plugin load returned 0` is a success; any other code, or the texts above, is a failure.
    const bool load_ok = msg.find("returned 0 ") != std::string_view::npos ||
                         EndsWith(msg, "returned 0");
    if (failed && !load_ok && !plugin_not_loaded_line) plugin_not_loaded_line = here;
    if (!external && !internal) return;
    RankState* rs = Rank(rank);
    if (rs == nullptr) return;
    if (external) {
      rs->plugin_external = true;
      if (!plugin_external_line) plugin_external_line = here;
    } else {
      rs->plugin_internal = true;
      if (!plugin_internal_line) plugin_internal_line = here;
    }
  }

  void OnEnv(std::string_view msg) {
    size_t sp = msg.find(' ');
    if (sp == std::string_view::npos) return;
    std::string_view name = msg.substr(0, sp);
    std::string_view rest = msg.substr(sp);
    std::string_view value;
    if (StartsWith(rest, " set by environment to ")) {
      value = rest.substr(23);
    } else if (StartsWith(rest, " set to ")) {
      value = rest.substr(8);
    } else {
      return;
    }
    while (!value.empty() && (value.back() == '.' || value.back() == ' ')) value.remove_suffix(1);
    if (name == "NCCL_NET") env_net = std::string(Cap(value, kMaxFieldBytes));
    if (env_set.size() < 64 && std::find(env_set.begin(), env_set.end(), name) == env_set.end()) {
      env_set.emplace_back(name);
      env_values.emplace_back(Cap(value, kMaxFieldBytes));
      env_lines.push_back({line_no, Sanitize(Cap(current_line, 512))});
      if (!value.empty() && CheckEnvValue(name, env_values.back())) {
        env_rejected_quoted.push_back("\"" + env_values.back() + "\"");
      }
    }
    for (const auto& r : compiled.rules()) {
      if (!r.boost_env.empty() && r.boost_env == name &&
          std::find(env_seen.begin(), env_seen.end(), name) == env_seen.end()) {
        env_seen.emplace_back(name);
      }
    }
  }

  void OnTransport(std::string_view rank, std::string_view msg) {
    size_t via = msg.find(" via ");
    if (via == std::string_view::npos) return;
    channels = true;
    std::string_view t = msg.substr(via + 5);
    t = t.substr(0, t.find(' '));
    size_t slash = t.find('/');
    std::string name;
    if (slash != std::string_view::npos && t.substr(0, slash) == "NET") {
      std::string_view rest = t.substr(slash + 1);
      name = "NET/" + std::string(rest.substr(0, rest.find('/')));
    } else {
      name = std::string(t.substr(0, slash));
    }
    name = Sanitize(Cap(name, 32));
    if (name == "NET/IB") OnIbChannel(t, msg);
    if (name == "NET/IB" || name == "NET/Socket") OnNetChannel(rank, name, t);
    if (name == "P2P" || name == "SHM") {
      // The rest of the line names the kind in full ("P2P/direct pointer/read" has a space).
      std::string_view full = msg.substr(via + 5);
      while (!full.empty() && (full.back() == ' ' || full.back() == '\r')) full.remove_suffix(1);
      std::string kind = Sanitize(Cap(full, 48));
      if (local_transports.size() < kMaxTransports &&
          std::find(local_transports.begin(), local_transports.end(), kind) ==
              local_transports.end()) {
        local_transports.push_back(std::move(kind));
      }
    }
    if (transports.size() < kMaxTransports &&
        std::find(transports.begin(), transports.end(), name) == transports.end()) {
      transports.push_back(std::move(name));
    }
  }

  // Which network each rank's channels took, and whether its IB channels used GPUDirect RDMA.
  void OnNetChannel(std::string_view rank, std::string_view name, std::string_view via) {
    RankState* rs = Rank(rank);
    if (rs == nullptr) return;
    const LogLine here{line_no, Sanitize(Cap(current_line, 512))};
    if (name == "NET/Socket") {
      rs->net_socket = true;
      if (!socket_channel_line) socket_channel_line = here;
      return;
    }
    rs->net_ib = true;
    if (!ib_channel_line) ib_channel_line = here;
    if (via.find("/GDRDMA") != std::string_view::npos) {
      rs->ib_gdr = true;
      if (!gdr_line) gdr_line = here;
    } else {
      rs->ib_plain = true;
      if (!plain_ib_line) plain_ib_line = here;
    }
  }

  void OnDriverVersion(std::string_view digits, std::string_view line) {
    long v = 0;
    size_t n = 0;
    while (n < digits.size() && n < 6 && digits[n] >= '0' && digits[n] <= '9') {
      v = v * 10 + (digits[n] - '0');
      ++n;
    }
    if (n == 0 || driver_cuda_major >= 0) return;
    driver_cuda_major = DriverCudaMajor(v);
    driver_cuda_line = {line_no, Sanitize(Cap(line, 512))};
  }

  void KeepIbLine(std::string_view line) {
    if (ib_lines.size() < kMaxIbLines) ib_lines.push_back({line_no, Sanitize(Cap(line, 512))});
  }

  // `NET/IB/0/GDRDMA`, `NET/IB/3(1)/GDRDMA` (PXN through a peer's NIC), `NET/IB/0`.
  void OnIbChannel(std::string_view via, std::string_view msg) {
    // A bare "NET/IB" (a cut or mangled line) has no port after it.
    std::string_view rest = via.size() > 7 ? via.substr(7) : std::string_view{};  // after "NET/IB/"
    int index = 0;
    size_t digits = 0;
    while (digits < rest.size() && digits < 4 && rest[digits] >= '0' && rest[digits] <= '9') {
      index = index * 10 + (rest[digits] - '0');
      ++digits;
    }
    if (digits > 0 && ib_used.size() < kMaxIbPorts &&
        std::find(ib_used.begin(), ib_used.end(), index) == ib_used.end()) {
      ib_used.push_back(index);
      KeepIbLine(msg);
    }
    if (rest.find("/GDRDMA") != std::string_view::npos) gdrdma = true;
  }

  // `NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/RoCE [RO]; OOB ib0:10.0.0.1<0>`
  void OnIbUsing(std::string_view msg) {
    if (!ib_devices.empty()) return;
    KeepIbLine(msg);
    size_t pos = msg.find(": Using ");
    std::string_view list = msg.substr(pos + 8);
    list = list.substr(0, list.find(';'));
    while (!list.empty() && ib_devices.size() < kMaxIbPorts) {
      size_t open = list.find('[');
      if (open == std::string_view::npos) break;
      size_t close = list.find(']', open);
      if (close == std::string_view::npos) break;
      std::string_view idx = list.substr(open + 1, close - open - 1);
      std::string_view dev = list.substr(close + 1);
      dev = dev.substr(0, dev.find(' '));
      list = list.substr(close + 1);
      int index = 0;
      if (idx.empty() || idx.size() > 4 ||
          !std::all_of(idx.begin(), idx.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        continue;  // `[RO]` (relaxed ordering) and other flags
      }
      for (char c : idx) index = index * 10 + (c - '0');
      if (index >= static_cast<int>(kMaxIbPorts)) continue;
      if (ib_devices.size() <= static_cast<size_t>(index)) ib_devices.resize(index + 1);
      ib_devices[index] = Sanitize(Cap(dev.substr(0, dev.find('/')), 64));
    }
  }

  // A line of NCCL's diagnostics report. A failed check names its cause above every other
  // tier; a passed or skipped check (a rule of strength ignore, or none) names nothing, and a
  // report is no proof that the job then worked.
  void OnDiag(const ParsedLine& p, std::string_view line) {
    ++nccl_lines;
    ++diag_lines;
    for (const auto& m : compiled.MatchLine(p)) {
      const Rule& r = compiled.rules()[m.rule];
      if (r.strength == Strength::kIgnore) break;
      const int tier = r.strength == Strength::kRoot || r.strength == Strength::kGeneric
                           ? static_cast<int>(kTierDiag)
                           : TierFor(r.strength, false, false);
      AddCause(r, tier, Boost(r, r.confidence), line, p.timestamp);
    }
  }

  void OnInfo(const ParsedLine& p, std::string_view line) {
    ++nccl_lines;
    std::string_view msg = p.message;
    int code = BacktraceCode(msg);
    if (code >= 0) {
      OnCode(p.rank, code, msg, line);
      return;
    }
    if (EndsWith(msg, "Init COMPLETE")) {
      init_complete = true;
      last_init_line = line_no;
      RankState* rs = Rank(p.rank);
      if (rs != nullptr && !rs->init_complete) {
        rs->init_complete = true;
        ++ranks_initialised;
      }
    }
    // A clean teardown: the rank's communicator was destroyed after its collectives finished.
    // `Abort COMPLETE` is the opposite and does not count.
    if (EndsWith(msg, "Destroy COMPLETE")) {
      RankState* rs = Rank(p.rank);
      if (rs != nullptr && !rs->torn_down) {
        rs->torn_down = true;
        if (rs->init_complete) ++ranks_torn_down;
      }
      teardown = true;
      last_success_line = line_no;
    }
    if (StartsWith(msg, "NET/IB") && msg.find("GPU Direct RDMA Enabled") != std::string_view::npos) {
      gdr_enabled = true;
    }
    if (StartsWith(msg, "NET/IB")) OnMtu(msg, line);
    // `Channel 00/0 : 1[0] -> 0[0] [receive] via NET/IB/0` (2.5+); `Ring 00 : ...` (2.4).
    if (StartsWith(msg, "Channel ") || StartsWith(msg, "Ring ")) OnTransport(p.rank, msg);
    if (StartsWith(msg, "cudaDriverVersion ")) OnDriverVersion(msg.substr(18), line);
    if (StartsWith(msg, "Failed to initialize NET plugin ") && net_plugins_failed.size() < 8) {
      net_plugins_failed.emplace_back(Cap(msg.substr(32), 32));
    }
    if (StartsWith(msg, "Using network ") && network.empty()) {
      network = Sanitize(Cap(msg.substr(14), kMaxFieldBytes));
    }
    if (StartsWith(msg, "NCCL version ")) OnVersion(ParseVersion(msg), line);
    if (StartsWith(msg, "Using network") || StartsWith(msg, "Using internal Network") ||
        StartsWith(msg, "NET/Socket : Using") || StartsWith(msg, "Bootstrap : Using") ||
        msg.find(" nranks ") != std::string_view::npos) {
      setup_seen = true;
    }
    if (StartsWith(msg, "NET/IB") && msg.find(": Using [") != std::string_view::npos) {
      ib_devices_used = true;
      OnIbUsing(msg);
    }
    if (StartsWith(msg, "NCCL_")) OnEnv(msg);
    OnPluginLine(p.rank, msg, line);
    // `comm 0x.. rank 0 nranks 2 cudaDev 0 ...`, `ncclCommInitRank comm ...`, 2.32's `[Rank 0] ...`.
    if (!device_opened_line &&
        (StartsWith(msg, "comm ") || StartsWith(msg, "ncclCommInit") || StartsWith(msg, "[Rank ")) &&
        msg.find(" cudaDev ") != std::string_view::npos) {
      device_opened_line = LogLine{line_no, Sanitize(Cap(line, 512))};
    }
    for (const auto& m : Match(p)) {
      const Rule& r = compiled.rules()[m.rule];
      AddCause(r, TierFor(r.strength, false, false), r.confidence, line, p.timestamp);
    }
  }

  void OnText(const ParsedLine& p, std::string_view line) {
    if (p.message.empty()) return;
    ++nonempty_text_lines;
    if (gpu_arch == nullptr && nonempty_text_lines <= 4096) {
      gpu_arch = FindGpuArchitecture(p.message);
      if (gpu_arch != nullptr) gpu_line = {line_no, Sanitize(Cap(line, 512))};
    }
    if (p.message.find("NCCL version ") != std::string_view::npos) {
      OnVersion(ParseVersion(p.message), line);
    }
    // nccl-tests' summary, or one of its result rows with no wrong element: collectives ran and
    // returned correct data.
    if (p.message.find("Out of bounds values : 0 OK") != std::string_view::npos ||
        p.message.find("# Avg bus bandwidth") != std::string_view::npos ||
        IsTestsResultRow(p.message) || IsProgramSuccessLine(p.message)) {
      tests_passed = true;
      last_success_line = line_no;
    }
    // The program's own steps after NCCL set up (`Iteration: 10. Average time per step`,
    // `{'loss': 1.2, ...}`): each step runs collectives, so they completed. Once a step after
    // the last WARN is known, later steps change nothing until another WARN comes.
    const bool settled = progress_seen && last_success_line > last_warn_line;
    const bool step = nccl_lines > 0 && !settled && IsProgressLine(p.message);
    if (step) {
      progress_seen = true;
      last_success_line = line_no;
    }
    bool root_found = false;
    const std::vector<CompiledRules::LineMatch> matches = Match(p);
    if (matches.empty() && !step && OnBareNcclMessage(p, line)) return;
    for (const auto& m : matches) {
      const Rule& r = compiled.rules()[m.rule];
      if (r.strength == Strength::kIgnore) break;
      OnNamedLine(r, p.message, line);
      int tier = TierFor(r.strength, false, false);
      // Quoted text is a little less direct than the WARN itself.
      AddCause(r, tier, Boost(r, r.confidence) * 0.9, line, p.timestamp);
      if (m.code > 0 && text_code < 0) text_code = m.code;
      root_found = root_found || tier <= kTierSecondary;
    }
    if (root_found && text_roots.size() < kMaxTextRoots) {
      std::string key(Cap(p.rank, kMaxFieldBytes));
      bool seen = std::any_of(text_roots.begin(), text_roots.end(),
                              [&](const RootCandidate& r) { return r.rank == key; });
      if (!seen) {
        text_roots.push_back({key,
                              {line_no, Sanitize(line)},
                              std::string(Cap(p.timestamp, kMaxFieldBytes)),
                              kTierSecondary,
                              true});
      }
    }
  }

  // NCCL's own message without its `host:pid:tid [dev] NCCL LEVEL` prefix: a paste of the
  // message alone, or a framework's quote of NCCL's last error (PyTorch prints `Last error:`
  // and the WARN's text on the next line). When the text is what one of NCCL's WARN or INFO
  // formats prints (formats that start with literal text, so prose never matches a hole), it is
  // read as that line: a WARN names its path, an INFO its set-up step. True when it was.
  bool OnBareNcclMessage(const ParsedLine& p, std::string_view line) {
    std::string_view msg = p.message;
    while (!msg.empty() && (msg.front() == ' ' || msg.front() == '\t')) msg.remove_prefix(1);
    if (msg.size() < 12 || msg.size() > 1024 || catalogue == nullptr) return false;
    ParsedLine as_nccl = p;
    as_nccl.message = msg;
    // rdma-core's own messages (libibverbs, the mlx5 provider) are always plain text on stderr:
    // the text rules read them, they are not NCCL's lines without a prefix.
    auto ncclish = [](const CatalogueMessage* m) {
      return m != nullptr && !StartsWith(m->file, "libibverbs/") &&
             !StartsWith(m->file, "providers/");
    };
    if (ncclish(catalogue->MatchQuotedWarn(msg))) {
      as_nccl.level = NcclLevel::kWarn;
      OnWarn(as_nccl, line);
      return true;
    }
    // `Init COMPLETE` formats open with the caller's name (`%s comm %p rank %d ...`).
    const bool init_line = EndsWith(msg, "- Init COMPLETE") &&
                           msg.find(" nranks ") != std::string_view::npos;
    if (init_line || ncclish(catalogue->MatchBareInfo(msg))) {
      as_nccl.level = NcclLevel::kInfo;
      OnInfo(as_nccl, line);
      return true;
    }
    return false;
  }

  void Feed(std::string_view line) {
    ++line_no;
    if (line.size() > kMaxLineBytes) line = line.substr(0, kMaxLineBytes);
    while (!line.empty() && (line.back() == '\r' || line.back() == '\n')) line.remove_suffix(1);
    current_line = line;
    if (line.find('\0') != std::string_view::npos) ++binary_lines;
    ParsedLine p = ParseLogLine(line);
    switch (p.level) {
      case NcclLevel::kWarn:
        OnWarn(p, line);
        break;
      case NcclLevel::kInfo:
      case NcclLevel::kTrace:
        OnInfo(p, line);
        break;
      case NcclLevel::kDiag:
        OnDiag(p, line);
        break;
      case NcclLevel::kNone:
        OnText(p, line);
        break;
    }
  }

  Classification Finish();
  void AddMultiLineFindings(bool completed);
  void AddDerived(const DerivedCause& derived, int tier, double confidence,
                  std::vector<LogLine> evidence, bool keep_until_completed = false);
  KeptMap KeepCauses(bool success, bool set_up, bool completed, bool socket_network,
                     bool ib_in_use);
  void FillRoots(Classification& out, bool success);
  void Explain(Classification& out, const KeptMap& kept, bool completed);
};

namespace {

struct Ranked {
  std::string id;
  const CauseAcc* acc;
};

// Orders by tier, then by time: timestamps when every item of the tier has one (a rank that
// failed first is the primary root), else line numbers; then refinements first, then confidence.
template <typename T, typename TierFn, typename TsFn, typename LineFn, typename TieFn>
void SortByTierAndTime(std::vector<T>& v, TierFn tier, TsFn ts, LineFn line, TieFn tie) {
  std::map<int, bool> all_ts;
  for (const auto& x : v) {
    auto [it, inserted] = all_ts.emplace(tier(x), true);
    if (ts(x).empty()) it->second = false;
  }
  std::stable_sort(v.begin(), v.end(), [&](const T& a, const T& b) {
    if (tier(a) != tier(b)) return tier(a) < tier(b);
    if (all_ts[tier(a)] && ts(a) != ts(b)) return ts(a) < ts(b);
    if (line(a) != line(b)) return line(a) < line(b);
    return tie(a, b);
  });
}

std::string PathSentence(FaultClass c) {
  switch (c) {
    case FaultClass::kIbResource:
      return "the failing call is on the IB path (ibverbs or NET/IB): ib_resource";
    case FaultClass::kArchitecture:
      return "the failing call is outside the IB path (socket, bootstrap, shared memory, CUDA, "
             "NCCL version or setup): architecture";
    default:
      return "the failing call is not named";
  }
}

double Round2(double x) { return std::round(x * 100.0) / 100.0; }

}  // namespace

Classification LogClassifier::State::Finish() {
  Classification out;
  out.lines = line_no;
  out.transports = transports;
  out.local_transports = local_transports;
  for (int i : ib_used) {
    if (i < static_cast<int>(ib_devices.size()) && !ib_devices[i].empty()) {
      out.ib_ports.push_back(ib_devices[i]);
    }
  }
  std::sort(out.ib_ports.begin(), out.ib_ports.end());
  out.gdrdma = gdrdma;
  out.ib_lines = ib_lines;
  out.network = network;
  out.nccl_version = version;
  out.init_complete = init_complete;
  const bool success = init_complete || channels || tests_passed;
  // Positive evidence that the run worked, and no WARN after it: a finished nccl-tests run, or a
  // clean teardown (Destroy COMPLETE) of every rank that completed its init. Init COMPLETE and
  // channel lines alone are not: ranks connect before one of them fails, and the log of a rank
  // whose peer was killed, or of a job that hung, ends right after them.
  const bool every_rank_torn_down = teardown && ranks_torn_down >= ranks_initialised;
  // A WARN after init means the run went on to fail, even when a teardown follows it.
  const size_t clean_until = init_complete ? std::min(last_init_line, last_success_line)
                                           : last_success_line;
  const bool completed = (every_rank_torn_down || tests_passed || progress_seen) &&
                         last_success_line > 0 &&
                         last_warn_line <= clean_until;
  // Set up without a failure after it (the old, weaker test): INFO suspects (a bridge interface,
  // GDR off) explain failures to set up, so they are dropped once init completed cleanly.
  const size_t last_setup_line = std::max(last_init_line, last_success_line);
  const bool set_up = (init_complete || teardown || tests_passed || progress_seen) &&
                      last_setup_line > 0 &&
                      last_warn_line <= last_setup_line;
  const bool socket_network =
      IEqualsPrefix(network, "SOCKET") ||
      (network.empty() && std::find(transports.begin(), transports.end(), "NET/Socket") !=
                              transports.end());
  const bool ib_used = ib_devices_used || std::find(transports.begin(), transports.end(),
                                                    "NET/IB") != transports.end();

  AddMultiLineFindings(completed);
  const KeptMap kept = KeepCauses(success, set_up, completed, socket_network, ib_used);
  std::vector<Ranked> ranked;
  for (const auto& [id, acc] : kept) ranked.push_back({id, &acc});
  SortByTierAndTime(
      ranked, [](const Ranked& r) { return r.acc->tier; },
      [](const Ranked& r) -> const std::string& { return r.acc->order_ts; },
      [](const Ranked& r) { return r.acc->order_line; },
      [](const Ranked& a, const Ranked& b) {
        if (a.acc->refined != b.acc->refined) return a.acc->refined;
        if (a.acc->summary != b.acc->summary) return a.acc->summary;
        if (a.acc->confidence != b.acc->confidence) return a.acc->confidence > b.acc->confidence;
        return a.id < b.id;
      });

  for (const auto& r : ranked) {
    ClassifiedCause c;
    c.cause = r.id;
    c.fault_class = r.acc->rule != nullptr ? r.acc->rule->verdict : r.acc->code_verdict;
    const CauseInfo* info = FindCause(r.id);
    c.fix_class = info != nullptr ? info->fault_class : FaultClass::kUnknown;
    c.confidence = Round2(r.acc->confidence);
    c.evidence = r.acc->evidence;
    c.diagnostics = r.acc->tier == kTierDiag;
    if (r.acc->rule != nullptr && !r.acc->rule->remedy.empty()) {
      c.remedy = std::string(r.acc->rule->remedy);
    } else if (info != nullptr) {
      c.remedy = std::string(info->remedy);
    }
    out.causes.push_back(std::move(c));
  }

  FillRoots(out, success);
  Explain(out, kept, completed);
  return out;
}

// Findings from more than one line: two NCCL versions in one job, two MTUs on its connections.
void LogClassifier::State::AddDerived(const DerivedCause& derived, int tier, double confidence,
                                      std::vector<LogLine> evidence, bool keep_until_completed) {
  const CauseId cause = derived.cause;
  const FaultClass verdict = derived.verdict;
  CauseAcc& acc = causes[std::string(cause.str())];
  if (tier < acc.tier) {
    acc.tier = tier;
    acc.rule = nullptr;
    acc.code_verdict = verdict;
    acc.confidence = confidence;
    acc.order_line = evidence.empty() ? line_no : evidence.front().number;
    acc.order_ts.clear();
  }
  for (const auto& line : evidence) AddEvidence(acc, line.number, line.text);
  if (keep_until_completed) keep_unless_completed.insert(std::string(cause.str()));
}

// Findings from more than one line: two NCCL versions in one job, two MTUs on its connections;
// and, for a run that did not complete, what an expert reads across lines and ranks: a setting
// NCCL cannot honour, ranks on different networks or with and without GPUDirect RDMA, an NCCL
// build for a CUDA the driver does not offer, an NCCL older than the GPU generation.
void LogClassifier::State::AddMultiLineFindings(bool completed) {
  if (versions_seen.size() >= 2) {
    CauseAcc& acc = causes[std::string(kVersionSkew.cause)];
    if (acc.tier > kTierSecondary) {
      acc.tier = kTierSecondary;
      acc.rule = nullptr;
      acc.code_verdict = kVersionSkew.verdict;
      acc.confidence = 0.8;
      acc.order_line = versions_seen[1].second.number;
    }
    // Two versions seen outrank any one-line reading of the same symptom (a known bug).
    acc.confidence = std::max(acc.confidence, 0.8);
    for (const auto& [v, line] : versions_seen) AddEvidence(acc, line.number, line.text);
  }
  if (mtus_seen.size() >= 2) {
    CauseAcc& acc = causes[std::string(kMtuSkew.cause)];
    acc.tier = kTierSuspect;
    acc.code_verdict = kMtuSkew.verdict;
    acc.confidence = 0.5;
    acc.order_line = mtus_seen[1].second.number;
    for (const auto& [m, line] : mtus_seen) AddEvidence(acc, line.number, line.text);
  }
  if (completed) return;

  // Settings: each value against what NCCL accepts, then the pairs that contradict.
  // A value NCCL would not take is a suspect; quoted back in a WARN, it is the root.
  for (size_t i = 0; i < env_set.size(); ++i) {
    if (!CheckEnvValue(env_set[i], env_values[i])) continue;
    const bool quoted = !env_rejected_lines.empty() &&
                        env_rejected_lines.front().text.find("\"" + env_values[i] + "\"") !=
                            std::string::npos;
    if (quoted) {
      AddDerived(kBadSetting, kTierRoot, 0.9, {env_lines[i], env_rejected_lines.front()});
    } else {
      AddDerived(kBadSetting, kTierSecondary, 0.8, {env_lines[i]});
    }
  }
  struct View : EnvView {
    const State* s;
    explicit View(const State* st) : s(st) {}
    std::optional<std::string_view> Get(std::string_view name) const override {
      for (size_t i = 0; i < s->env_set.size(); ++i) {
        if (s->env_set[i] == name) return s->env_values[i];
      }
      return std::nullopt;
    }
  } view(this);
  if (CheckEnvCombination(view)) {
    std::vector<LogLine> lines;
    for (size_t i = 0; i < env_set.size(); ++i) {
      if (env_set[i] == "NCCL_NET" || env_set[i] == "NCCL_IB_DISABLE") {
        lines.push_back(env_lines[i]);
      }
    }
    AddDerived(kBadSetting, kTierRoot, 0.9, std::move(lines));
  }

  // No NET plugin could be used. With INFO on, NCCL says which plugins it tried; none tried means
  // NCCL_NET names a network no plugin provides (NCCL does not print NCCL_NET). Only IB tried
  // while NCCL_IB_DISABLE=1: NCCL_NET forced the network that the other setting turned off.
  if (no_net_plugin_line && info_lines_before_no_net >= 3) {
    std::optional<LogLine> disabled;
    for (size_t i = 0; i < env_set.size(); ++i) {
      if (env_set[i] == "NCCL_IB_DISABLE" && !env_values[i].empty() && env_values[i][0] != '0') {
        disabled = env_lines[i];
      }
    }
    const bool only_ib = !net_plugins_failed.empty() &&
                         std::all_of(net_plugins_failed.begin(), net_plugins_failed.end(),
                                     [](const std::string& n) { return n.rfind("IB", 0) == 0; });
    if (net_plugins_failed.empty()) {
      AddDerived(kBadSetting, kTierRoot, 0.9, {*no_net_plugin_line});
    } else if (only_ib && disabled) {
      AddDerived(kBadSetting, kTierRoot, 0.9, {*disabled, *no_net_plugin_line});
    }
  }

  // Ranks on different networks: the ranks on sockets found no usable HCA (or were told not to
  // use one) while their peers run IB; the job cannot connect them.
  bool some_ib = false, some_socket_only = false, some_gdr = false, some_plain_only = false;
  for (const auto& [key, rs] : ranks) {
    some_ib = some_ib || rs.net_ib;
    some_socket_only = some_socket_only || (rs.net_socket && !rs.net_ib);
    some_gdr = some_gdr || rs.ib_gdr;
    some_plain_only = some_plain_only || (rs.ib_plain && !rs.ib_gdr);
  }
  if (some_ib && some_socket_only && ib_channel_line && socket_channel_line) {
    AddDerived(kNetworkSkew, kTierSecondary, 0.75,
               {*socket_channel_line, *ib_channel_line});
  }
  // One rank with GPUDirect RDMA and another without: that rank's node lacks the peer-memory
  // module (or its PCIe path forbids GDR).
  if (some_gdr && some_plain_only && gdr_line && plain_ib_line) {
    AddDerived(kGdrSkew, kTierSuspect, 0.55,
               {*plain_ib_line, *gdr_line}, /*keep_until_completed=*/true);
  }
  // An NCCL built for a newer CUDA major than the driver offers.
  if (nccl_cuda_major > 0 && driver_cuda_major > 0 && nccl_cuda_major > driver_cuda_major) {
    AddDerived(kCudaMajorSkew, kTierSecondary, 0.8,
               {nccl_cuda_line, driver_cuda_line});
  }
  // An NCCL older than the GPU generation the log names.
  if (gpu_arch != nullptr && !version_numbers.empty() &&
      version_numbers < ParseNcclVersion(gpu_arch->min_nccl)) {
    std::vector<LogLine> lines = {gpu_line};
    if (!versions_seen.empty()) lines.push_back(versions_seen.front().second);
    AddDerived(kNcclTooOld, kTierRoot, 0.8, std::move(lines));
  }
  // A network only a plugin provides was asked for and a plugin did not load: the plugin (its
  // library, its dependencies, its ABI) is the fault, not the network's name.
  if (net_not_found_line && plugin_not_loaded_line) {
    AddDerived(kPluginNotLoaded, kTierRoot, 0.9, {*net_not_found_line, *plugin_not_loaded_line});
  }
  // Ranks that loaded an external net plugin beside ranks that run without one: the nodes run
  // different software images (plugin, LD_LIBRARY_PATH), so their network stacks differ.
  bool some_external_only = false, some_internal_only = false;
  for (const auto& [key, rs] : ranks) {
    some_external_only = some_external_only || (rs.plugin_external && !rs.plugin_internal);
    some_internal_only = some_internal_only || (rs.plugin_internal && !rs.plugin_external);
  }
  if (some_external_only && some_internal_only && plugin_external_line && plugin_internal_line) {
    AddDerived(kVersionSkew, kTierSuspect, 0.6, {*plugin_internal_line, *plugin_external_line},
               /*keep_until_completed=*/true);
  }
  // No CUDA device in one process while another opened its GPU: not the driver (it works for the
  // other process) but the device this process was given.
  if (no_device_line && device_opened_line) {
    AddDerived(kDeviceNotGiven, kTierRoot, 0.95, {*no_device_line, *device_opened_line});
  }
  // No WARN, a system error raised inside NET/IB, after the job steered the RoCE GID choice: the
  // GID those settings select (or fail to find) is the likely fault.
  if (ib_trace_line) {
    std::vector<LogLine> lines;
    for (size_t i = 0; i < env_set.size(); ++i) {
      if (env_set[i] == "NCCL_IB_GID_INDEX" || env_set[i] == "NCCL_IB_ADDR_RANGE" ||
          env_set[i] == "NCCL_IB_ADDR_FAMILY" || env_set[i] == "NCCL_IB_ROCE_VERSION_NUM") {
        if (lines.size() + 1 < kMaxEvidence) lines.push_back(env_lines[i]);
      }
    }
    if (!lines.empty()) {
      lines.push_back(*ib_trace_line);
      AddDerived(kGidSelection, kTierSuspect, 0.5, std::move(lines),
                 /*keep_until_completed=*/true);
    }
  }
}

// The causes that stay, with the evidence they show: context only when the run failed and IB
// was wanted, suspects only when it did not complete, wrappers only without a real cause, an
// orphan result code or a back-trace only when nothing else explains a failed run.
KeptMap LogClassifier::State::KeepCauses(bool success, bool set_up, bool completed,
                                         bool socket_network, bool ib_in_use) {
  // An HCA NCCL could not open is skipped; it is the fault only when NCCL then used no HCA at
  // all (it fell back to sockets, or IB was missing), not when it went on with other HCAs.
  if (!ib_devices_used) {
    for (auto& [id, acc] : causes) {
      if (acc.tier == kTierContext && acc.rule != nullptr &&
          acc.rule->cause == ids::kContainerRdmaDevices) {
        acc.tier = kTierSecondary;
      }
    }
  }
  // Which causes stay: context only when the run failed and IB was wanted (forced, or an IB
  // call failed); everything else always.
  bool strong_ib = false;
  bool any_strong = false;
  for (const auto& [id, acc] : causes) {
    if (acc.tier <= kTierSecondary) {
      any_strong = true;
      if (acc.rule != nullptr && acc.rule->verdict == FaultClass::kIbResource) strong_ib = true;
    }
  }
  // IB is wanted when it is forced (NCCL_NET=IB), when an IB call failed, or when the job's
  // settings ask for it (NCCL_IB_HCA names HCAs, NCCL_IB_DISABLE set to 0 on purpose).
  bool ib_asked = false;
  for (size_t i = 0; i < env_set.size(); ++i) {
    if (env_set[i] == "NCCL_IB_HCA" ||
        (env_set[i] == "NCCL_IB_DISABLE" && (env_values[i] == "0" || env_values[i] == "0."))) {
      ib_asked = true;
    }
  }
  const bool ib_wanted = strong_ib || IEqualsPrefix(env_net, "IB") || ib_asked;
  // Asked for IB and ran on sockets anyway: the context says why, even on a run that set up.
  const bool fell_back = ib_asked && socket_network && !ib_in_use;
  const bool keep_context = ib_wanted && (!success || any_strong || fell_back);

  KeptMap kept;
  for (const auto& [id, acc] : causes) {
    if (acc.tier == kTierContext && !keep_context) continue;
    if (acc.tier == kTierNone) continue;
    // INFO that names a likely cause: only for a run that did not complete, and only where its
    // condition holds (the network it needs; GDR off on every HCA while IB was used).
    const bool derived = keep_unless_completed.count(id) > 0;
    if (set_up && path_only.count(id) > 0) continue;
    if (acc.tier == kTierSuspect && (derived ? completed : set_up)) continue;
    // A line of another layer (a rule that reads only text lines: libfabric, libmlx5, a
    // framework's CUDA error) before NCCL's proof that the collectives finished did not stop
    // them: the run is judged by that proof.
    if (completed && acc.rule != nullptr && acc.rule->lines == kTextLine &&
        acc.order_line < last_success_line) {
      continue;
    }
    if (acc.rule != nullptr && !acc.rule->network.empty() &&
        !(socket_network ? IEqualsPrefix(acc.rule->network, "SOCKET")
                         : IEqualsPrefix(network, ToUpper(acc.rule->network)))) {
      continue;
    }
    if (id == ids::kIbPeermem && acc.tier == kTierSuspect && !derived &&
        (gdr_enabled || gdrdma || !ib_in_use)) {
      continue;
    }
    // Wrappers (`[Proxy Service] Failed to execute operation`) only repeat a failure that a
    // real cause already names; peer exits stay, they show which ranks saw it.
    if (any_strong && acc.tier == kTierFollow && acc.rule != nullptr &&
        acc.rule->strength == Strength::kFollow) {
      continue;
    }
    CauseAcc& k = kept.emplace(id, acc).first->second;
    // A rule that holds after an NCCL_* setting shows that line too, first.
    if (acc.rule != nullptr && !acc.rule->after_env.empty()) {
      for (size_t i = 0; i < env_set.size(); ++i) {
        const bool shown =
            std::any_of(k.evidence.begin(), k.evidence.end(),
                        [&](const LogLine& l) { return l.number == env_lines[i].number; });
        if (!shown && std::find(acc.rule->after_env.begin(), acc.rule->after_env.end(),
                                env_set[i]) != acc.rule->after_env.end()) {
          k.evidence.insert(k.evidence.begin(), env_lines[i]);
          if (k.evidence.size() > kMaxEvidence) k.evidence.pop_back();
        }
      }
    }
  }
  // Result codes on ranks without any WARN: weak evidence, only when nothing else explains a
  // failed run (`-> 3` from net_ib when IB is disabled is routine in successful runs).
  if (roots.empty() && !success && orphan_code > 0 && kept.empty()) {
    if (const ResultCodeCause* rc = FindResultCode(orphan_code)) {
      CauseAcc acc;
      acc.tier = kTierWeak;
      acc.confidence = 0.25;
      acc.order_line = orphan_line.number;
      acc.evidence.push_back(orphan_line);
      acc.matches = 1;
      acc.code_verdict = rc->verdict;
      kept.emplace(std::string(rc->cause), std::move(acc));
    }
  }
  // A back-trace that starts in a known component, on a rank without a WARN, in a run that did
  // not complete.
  // Channel lines do not count against it: ranks connect channels before one of them fails.
  if (trace_root && !init_complete && !tests_passed) {
    const Rule& r = compiled.rules()[trace_root->rule];
    CauseAcc& acc = kept[std::string(r.cause)];
    if (acc.tier > kTierTrace) {
      acc.tier = kTierTrace;
      acc.rule = &r;
      acc.confidence = std::max(acc.confidence, r.confidence * 0.8);
      acc.order_line = trace_root->line.number;
      acc.evidence.insert(acc.evidence.begin(), trace_root->line);
      if (acc.evidence.size() > kMaxEvidence) acc.evidence.pop_back();
      ++acc.matches;
    }
  }
  for (const auto& ref : Refinements()) {
    auto g = kept.find(ref.general.str());
    auto s = kept.find(ref.specific.str());
    if (g == kept.end() || s == kept.end() || g->second.tier > kTierSecondary) continue;
    if (s->second.tier > g->second.tier) {
      s->second.tier = g->second.tier;
      s->second.order_line = g->second.order_line;
      s->second.order_ts = g->second.order_ts;
    }
    s->second.refined = true;
    s->second.confidence = std::max(s->second.confidence, g->second.confidence);
  }
  return kept;
}

// Roots: the first WARN of every rank, the rank that failed first at the front; and the
// ncclResult_t that reached the API.
void LogClassifier::State::FillRoots(Classification& out, bool success) {
  std::vector<RootCandidate> root_list = roots.empty() ? text_roots : roots;
  SortByTierAndTime(
      root_list, [](const RootCandidate& r) { return r.tier; },
      [](const RootCandidate& r) -> const std::string& { return r.ts; },
      [](const RootCandidate& r) { return r.line.number; },
      [](const RootCandidate&, const RootCandidate&) { return false; });
  // Ranks are told apart by their raw text, but shown sanitized: two ranks that differ only in
  // bytes Sanitize replaces are one rank in the output (found by classify_log_fuzz).
  std::set<std::string> shown;
  for (auto& r : root_list) {
    std::string rank = Sanitize(r.rank);
    if (shown.insert(rank).second) out.roots.push_back({std::move(rank), std::move(r.line)});
  }

  // The ncclResult_t that reached the API: first `-> N` after the primary rank's WARN.
  for (const auto& r : root_list) {
    auto it = ranks.find(r.rank);
    if (it != ranks.end() && it->second.code_after_warn > 0) {
      out.result_code = it->second.code_after_warn;
      break;
    }
  }
  if (!out.result_code && text_code > 0) out.result_code = text_code;
  if (!out.result_code && !success && orphan_code > 0) out.result_code = orphan_code;
}

// The verdict and its one-line reason, from the strongest kept cause down to what was seen.
void LogClassifier::State::Explain(Classification& out, const KeptMap& kept, bool completed) {
  const bool has_follow = std::any_of(out.causes.begin(), out.causes.end(), [&](const auto& c) {
    return kept.at(c.cause).tier == kTierFollow;
  });
  const bool has_weak = std::any_of(out.causes.begin(), out.causes.end(), [&](const auto& c) {
    return kept.at(c.cause).tier == kTierWeak;
  });
  const bool has_strong = !out.causes.empty() && kept.at(out.causes.front().cause).tier <= 1;
  bool unmatched_failed = false;  // an unmatched first WARN followed by an error code
  for (const auto& r : roots) {
    auto it = ranks.find(r.rank);
    if (!r.matched && it != ranks.end() && it->second.code_after_warn > 0) unmatched_failed = true;
  }
  const RootCandidate* first_unmatched = nullptr;
  for (const auto& r : roots) {
    if (!r.matched &&
        (first_unmatched == nullptr || r.line.number < first_unmatched->line.number)) {
      first_unmatched = &r;
    }
  }

  if (line_no == 0) {
    out.fault_class = FaultClass::kUnknown;
    out.reason = "empty input: no lines to classify";
  } else if (has_strong) {
    const ClassifiedCause& top = out.causes.front();
    const LogLine& where = top.evidence.empty() ? LogLine{} : top.evidence.front();
    std::string who;
    if (kept.at(top.cause).tier == kTierDiag) {
      who = "NCCL's diagnostics report (line " + std::to_string(kept.at(top.cause).order_line) +
            ") names it";
    } else if (!out.roots.empty() && kept.at(top.cause).tier == kTierRoot) {
      who = "rank " + (out.roots.front().rank.empty() ? std::string("-") : out.roots.front().rank) +
            " failed first (line " + std::to_string(out.roots.front().line.number) + ")";
    } else {
      who = "line " + std::to_string(where.number);
    }
    out.fault_class = top.fault_class;
    out.reason = who + ": " + top.cause + "; " + PathSentence(top.fault_class);
  } else if (!out.causes.empty() && kept.at(out.causes.front().cause).tier == kTierTrace) {
    const ClassifiedCause& top = out.causes.front();
    out.fault_class = top.fault_class;
    out.reason =
        "no WARN names the failing call, but the back-trace of rank " + Sanitize(trace_root->rank) +
        " starts in " + Sanitize(Cap(trace_root->line.text, 160)) + " (line " +
        std::to_string(trace_root->line.number) + "): " + top.cause + "; " +
        PathSentence(top.fault_class) + "; confirm with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET";
    if (!out.result_code) out.result_code = trace_root->code;
  } else if (!out.causes.empty() && kept.at(out.causes.front().cause).tier == kTierSuspect) {
    // No line names a failing call and the run did not complete; INFO lines show what is
    // likely wrong.
    const ClassifiedCause& top = out.causes.front();
    const CauseInfo* info = FindCause(top.cause);
    out.fault_class = top.fault_class;
    out.reason = "no line names a failing call and the run did not complete, but line " +
                 std::to_string(top.evidence.empty() ? 0 : top.evidence.front().number) +
                 " shows " + (info != nullptr ? std::string(info->title) : top.cause) + ": " +
                 top.cause + "; " + PathSentence(top.fault_class);
  } else if (!out.causes.empty() && kept.at(out.causes.front().cause).tier == kTierContext) {
    // NCCL_NET=IB forced and the IB path missing, in INFO lines only (the log was cut before
    // the WARN, or NCCL printed none): the INFO names the missing piece.
    const ClassifiedCause& top = out.causes.front();
    out.fault_class = top.fault_class;
    const std::string asked = env_net.empty() ? std::string("by the job's NCCL_IB_* settings")
                                              : "NCCL_NET=" + Sanitize(env_net);
    out.reason = "IB was wanted (" + asked + ") and line " +
                 std::to_string(top.evidence.empty() ? 0 : top.evidence.front().number) +
                 " says why it is missing: " + top.cause + "; no WARN named the failing call";
  } else if (has_follow) {
    out.fault_class = FaultClass::kUnknown;
    out.reason =
        "only side effects of a failure elsewhere (a peer exited, a proxy wrapper): the log of "
        "the rank that failed first is not in this input";
  } else if (completed && !has_weak && !unmatched_failed) {
    out.fault_class = FaultClass::kHealthy;
    std::string via;
    for (const auto& t : transports) via += (via.empty() ? "" : ", ") + t;
    const std::string proof =
        tests_passed ? "a finished collective's result at line " + std::to_string(last_success_line)
        : progress_seen
            ? "the program's steps after NCCL set up, at line " +
                  std::to_string(last_success_line)
        : init_complete ? "Init COMPLETE and Destroy COMPLETE"
                        : "Destroy COMPLETE";
    out.reason =
        "run completed (" + proof + (via.empty() ? "" : ", channels via " + via) + ")";
    if (unmatched_warns > 0) {
      out.reason += "; " + std::to_string(unmatched_warns) +
                    " WARN line(s) matched no rule and no error code followed them";
    } else {
      out.reason += " without a WARN";
    }
  } else if (has_weak) {
    const ClassifiedCause& top = out.causes.front();
    out.fault_class = top.fault_class;
    out.reason = "only an error code or its text (" + top.cause +
                 "), no WARN naming the failing call: rerun with NCCL_DEBUG=INFO "
                 "NCCL_DEBUG_SUBSYS=INIT,NET, and run the A/B probe (the job once more with "
                 "NCCL_IB_DISABLE=1: works -> the IB path, still fails -> architecture)";
  } else if (first_unmatched != nullptr) {
    out.fault_class = FaultClass::kUnknown;
    out.reason = "the first WARN (line " + std::to_string(first_unmatched->line.number) +
                 ") matches no rule: " +
                 Sanitize(Cap(first_unmatched->line.text, 200));  // re-sanitise the cut
  } else if ((setup_seen || nccl_lines >= 2) && out.causes.empty() && orphan_code < 0 &&
             text_code < 0) {
    // NCCL set up and no line names a failure, but nothing shows that the run worked either:
    // a job that hung, or a log cut before the failure, looks like this. Never healthy without
    // positive evidence; say what was seen.
    out.fault_class = FaultClass::kUnknown;
    std::string seen = std::to_string(nccl_lines) + " NCCL line(s)";
    if (!version.empty()) seen += ", NCCL " + version;
    if (!network.empty()) seen += ", network " + network;
    std::string via;
    for (const auto& t : transports) via += (via.empty() ? "" : ", ") + t;
    if (!via.empty()) seen += ", channels via " + via;
    if (diag_lines > 0) seen += ", a diagnostics report with no failed check";
    if (init_complete) seen += ", Init COMPLETE at line " + std::to_string(last_init_line);
    if (teardown) seen += ", Destroy COMPLETE at line " + std::to_string(last_success_line);
    if (last_warn_line > 0) seen += ", last WARN at line " + std::to_string(last_warn_line);
    std::string why;
    if (teardown && last_warn_line > last_success_line) {
      why = "a WARN came after the last teardown";
    } else if (teardown) {
      why = std::to_string(ranks_initialised - ranks_torn_down) + " of " +
            std::to_string(ranks_initialised) +
            " initialised rank(s) never tore down: the log ends before the job did";
    } else if (init_complete) {
      why = "the log ends after Init COMPLETE without a finished collective or a teardown "
            "(Destroy COMPLETE): it ends before the job did (a hang, a killed peer, a cut log)";
    } else {
      why = "no Init COMPLETE and no finished collective";
    }
    out.reason = "no failure named and no proof that the run worked (" + seen + "): " + why +
                 "; if the job hung or failed later, classify the rest of the log";
  } else if (nccl_lines > 0) {
    out.fault_class = FaultClass::kUnknown;
    out.reason =
        "NCCL lines but no WARN, no error code and no success marker (Init COMPLETE, channel "
        "lines): the log is incomplete or NCCL_DEBUG was not INFO";
  } else {
    out.fault_class = FaultClass::kUnknown;
    out.reason = "no NCCL log lines in " + std::to_string(line_no) + " line(s)";
    if (binary_lines > 0) out.reason += " (the input looks binary)";
  }
}

LogClassifier::LogClassifier() : LogClassifier(ActiveRules()) {}
LogClassifier::LogClassifier(std::shared_ptr<const CompiledRules> rules)
    : LogClassifier(std::move(rules), MessageCatalogue::Builtin()) {}
LogClassifier::LogClassifier(std::shared_ptr<const CompiledRules> rules,
                             std::shared_ptr<const MessageCatalogue> catalogue)
    : state_(std::make_unique<State>(std::move(rules), std::move(catalogue))) {}
LogClassifier::~LogClassifier() = default;

void LogClassifier::Feed(std::string_view line) { state_->Feed(line); }

Classification LogClassifier::Finish() {
  Classification c = state_->Finish();
  state_->finished = true;
  return c;
}

Classification ClassifyLog(std::istream& in, std::shared_ptr<const CompiledRules> rules) {
  LogClassifier classifier(std::move(rules));
  std::string current;
  bool pending = false;  // bytes after the last newline
  std::array<char, 65536> buf{};
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    auto n = static_cast<size_t>(in.gcount());
    if (n == 0) break;
    std::string_view chunk(buf.data(), n);
    while (!chunk.empty()) {
      size_t nl = chunk.find('\n');
      std::string_view part = chunk.substr(0, nl);
      // Keep at most one byte beyond the cap, so Feed still sees that the line was long.
      if (current.size() <= kMaxLineBytes) {
        current.append(Cap(part, kMaxLineBytes + 1 - current.size()));
      }
      if (nl == std::string_view::npos) {
        pending = true;
        break;
      }
      classifier.Feed(current);
      current.clear();
      pending = false;
      chunk.remove_prefix(nl + 1);
    }
  }
  if (pending) classifier.Feed(current);
  return classifier.Finish();
}

std::string Printable(std::string_view text) { return Sanitize(text); }

Classification ClassifyLogText(std::string_view text) {
  LogClassifier classifier;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    classifier.Feed(text.substr(0, nl));
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
  return classifier.Finish();
}

}  // namespace nccl_triage
