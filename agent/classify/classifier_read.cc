#include "classify/classifier_read.h"

#include <re2/re2.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "classify/classifier_match.h"
#include "classify/knowledge.h"
#include "classify/line_text.h"
#include "core/ids.h"

namespace nccl_triage::classify {

LineReader::LineReader(const CompiledRules& rules, const MessageCatalogue* catalogue)
    : rules_(rules), catalogue_(catalogue) {}

LogLine LineReader::Here(std::string_view line, size_t max) const {
  return LogLine{facts_.counts.lines, Sanitize(Cap(line, max))};
}

namespace {

// Where the next of NCCL's messages starts in a line that holds several (a paste flattened by a
// forum or a quoting reply: `[0] NCCL INFO A. [0] NCCL INFO B`): the `[dev]` before its `NCCL
// INFO`/`NCCL WARN`, or the `host:pid:tid` token before that. npos when none starts after `from`.
size_t NextMessageStart(std::string_view line, size_t from) {
  for (size_t pos = from;;) {
    const size_t mark = line.find("] NCCL ", pos);
    if (mark == std::string_view::npos) return mark;
    const std::string_view level = line.substr(mark + 7, 5);
    if (level != "INFO " && level != "WARN ") {
      pos = mark + 1;
      continue;
    }
    // `[dev]`: up to five digits between `[` and the mark (a bounded look back, so a hostile
    // line full of `] NCCL ` costs no more than its length).
    auto digit_before = [line](size_t i) { return line[i - 1] >= '0' && line[i - 1] <= '9'; };
    size_t digits = mark;
    while (digits > from && mark - digits < 5 && digit_before(digits)) --digits;
    if (digits == mark || digits == from || line[digits - 1] != '[') {
      pos = mark + 1;
      continue;
    }
    size_t start = digits - 1;
    // `host:pid:tid ` just before the `[dev]` belongs to the message.
    if (start >= 2 && line[start - 1] == ' ') {
      const size_t token = line.rfind(' ', start - 2);
      const size_t begin = token == std::string_view::npos ? 0 : token + 1;
      const std::string_view prev = line.substr(begin, start - 1 - begin);
      if (std::count(prev.begin(), prev.end(), ':') == 2 && begin >= from) start = begin;
    }
    return start;
  }
}

}  // namespace

void LineReader::Feed(std::string_view line) {
  ++facts_.counts.lines;
  if (line.size() > kMaxLineBytes) line = line.substr(0, kMaxLineBytes);
  while (!line.empty() && (line.back() == '\r' || line.back() == '\n')) line.remove_suffix(1);
  if (line.find('\0') != std::string_view::npos) ++facts_.counts.binary;
  ParsedLine p = ParseLogLine(line);
  // Several of NCCL's messages on one line: each is read as its own line (same line number).
  // Only a message that itself holds `] NCCL ` can be one.
  if (p.message.find("] NCCL ") == std::string_view::npos) {
    Dispatch(p, line);
    return;
  }
  constexpr int kMaxMessagesPerLine = 64;
  auto past_own_mark = [](std::string_view text) {
    const size_t mark = text.find("] NCCL ");
    return mark == std::string_view::npos ? mark : mark + 2;
  };
  size_t from = past_own_mark(line);
  size_t next = from == std::string_view::npos ? from : NextMessageStart(line, from);
  for (int n = 0; next != std::string_view::npos && n < kMaxMessagesPerLine; ++n) {
    std::string_view piece = line.substr(0, next);
    while (!piece.empty() && piece.back() == ' ') piece.remove_suffix(1);
    Dispatch(ParseLogLine(piece), piece);
    line.remove_prefix(next);
    from = past_own_mark(line);
    next = from == std::string_view::npos ? from : NextMessageStart(line, from);
  }
  Dispatch(ParseLogLine(line), line);
}

void LineReader::Dispatch(const ParsedLine& p, std::string_view line) {
  current_line_ = line;
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

// --- WARN lines ---------------------------------------------------------------------------------

void LineReader::OnWarn(const ParsedLine& p, std::string_view line) {
  LineCounts& counts = facts_.counts;
  ++counts.nccl;
  ++counts.warn;
  const std::vector<CompiledRules::LineMatch> matches =
      MatchRules(rules_, p, facts_.versions.numbers, facts_.env);
  const auto rules = rules_.rules();
  if (!matches.empty() && rules[matches.front().rule].strength == Strength::kIgnore) return;
  facts_.run.last_warn_line = counts.lines;
  for (const auto& m : matches) OnNamedLine(rules[m.rule], p.message, line);
  PluginFacts& plugins = facts_.plugins;
  if (!plugins.no_net_plugin_line &&
      p.message.find("Failed to initialize any NET plugin") == 0) {
    plugins.no_net_plugin_line = Here(line);
    plugins.info_lines_before_no_net = counts.nccl - counts.warn;
  }
  RankState* rs = facts_.ranks.Rank(p.rank);
  const bool first_warn = rs != nullptr && !rs->has_warn;
  if (rs != nullptr) {
    rs->has_warn = true;
    ++rs->warns;
  }
  const WarnRanking ranking = AddWarnCauses(matches, p, line, rs, first_warn);
  if (first_warn) NoteFirstWarn(p, *rs, ranking);
  if (!ranking.named) ++counts.unmatched_warns;
  NoteRejectedSetting(p, line);
  if (first_warn) {
    const int tier = ranking.named ? ranking.root_tier : static_cast<int>(kTierContext);
    facts_.ranks.roots.push_back({std::string(Cap(p.rank, kMaxFieldBytes)),
                                  {counts.lines, Sanitize(line)},
                                  std::string(Cap(p.timestamp, kMaxFieldBytes)),
                                  tier,
                                  ranking.named});
  }
}

// NCCL's setup code reports a failed step through the wrapper of the call (CUDACHECK's `Cuda
// failure '...'`, SYSCHECK's `Call to X failed`), then, from the same source file, its own
// summary of the operation (`Error while creating shared memory segment ...`). When the rank's
// first WARN was only such a wrapper, the summary that follows it names the failure: its cause is
// the rank's root, ranked where the wrapper was. A WARN no rule names still has the path of the
// catalogue that printed it.
LineReader::WarnRanking LineReader::AddWarnCauses(
    const std::vector<CompiledRules::LineMatch>& matches, const ParsedLine& p,
    std::string_view line, RankState* rs, bool first_warn) {
  const size_t line_no = facts_.counts.lines;
  const bool summary_of_first = rs != nullptr && !first_warn && rs->warns == 2 &&
                                rs->first_warn_generic && !rs->first_warn_file.empty() &&
                                FileOnly(p.file) == rs->first_warn_file;
  WarnRanking out;
  out.first_generic = !matches.empty();
  for (const auto& m : matches) {
    const Rule& r = rules_.rules()[m.rule];
    if (r.strength != Strength::kGeneric) out.first_generic = false;
    const double confidence = Boost(r, r.confidence, facts_.env);
    if (summary_of_first && r.strength == Strength::kRoot) {
      causes_.AddCause(r, kTierRoot, confidence, line_no, line, rs->first_warn_ts);
      CauseAcc& acc = causes_.causes.find(r.cause)->second;
      if (acc.tier == kTierRoot && acc.rule == &r) {
        acc.order_line = rs->first_warn_line;
        acc.summary = true;
      }
      continue;
    }
    const int tier = TierFor(r.strength, first_warn, true);
    out.root_tier = std::min(out.root_tier, tier);
    causes_.AddCause(r, tier, confidence, line_no, line, p.timestamp);
  }
  out.named = !matches.empty();
  if (out.named) return out;
  // No rule names it: NCCL's own catalogue still knows which path printed it.
  if (const MessagePath* path = CataloguePath(*catalogue_, p)) {
    const int tier = path->verdict == FaultClass::kUnknown
                         ? static_cast<int>(kTierFollow)
                         : TierFor(Strength::kGeneric, first_warn, true);
    out.root_tier = std::min(out.root_tier, tier);
    causes_.AddPathCause(*path, tier, line_no, line, p.timestamp);
    out.named = path->verdict != FaultClass::kUnknown;
    out.first_generic = out.named;
  }
  return out;
}

void LineReader::NoteFirstWarn(const ParsedLine& p, RankState& rs, const WarnRanking& ranking) {
  rs.first_warn_file = std::string(Cap(FileOnly(p.file), kMaxFieldBytes));
  rs.first_warn_generic = ranking.first_generic;
  rs.first_warn_line = facts_.counts.lines;
  rs.first_warn_ts = std::string(Cap(p.timestamp, kMaxFieldBytes));
}

// The first WARN that quotes a setting's value NCCL would not accept.
void LineReader::NoteRejectedSetting(const ParsedLine& p, std::string_view line) {
  EnvFacts& env = facts_.env;
  if (!env.rejected_lines.empty()) return;
  for (const std::string& quoted : env.rejected_quoted) {
    if (p.message.find(quoted) == std::string_view::npos) continue;
    env.rejected_lines.push_back(Here(line));
    break;
  }
}

void LineReader::OnCode(std::string_view rank, int code, std::string_view message,
                        std::string_view line) {
  if (code == 0 || code == 7) return;  // ncclSuccess, ncclInProgress
  RankFacts& ranks = facts_.ranks;
  auto it = ranks.ranks.find(rank);
  if (it != ranks.ranks.end() && it->second.has_warn) {
    if (it->second.code_after_warn < 0) it->second.code_after_warn = code;
    return;
  }
  // The first `-> N` of a rank that printed no WARN is where the error was raised. Only a
  // failed system call (2) names its component: internal errors (3) there are mostly the
  // abort of a rank whose peer failed.
  RankState* rs = ranks.Rank(rank);
  if (rs != nullptr && !rs->has_code) {
    rs->has_code = true;
    const std::string_view file = message.substr(0, message.find(' '));
    if (code == 2 && !facts_.net.ib_trace_line && file.find("net_ib") != std::string_view::npos) {
      facts_.net.ib_trace_line = Here(line);
    }
    if (!ranks.trace_root && code == 2) {
      auto rule = rules_.MatchFile(file);
      // Only components whose calls are all outside the IB path: net_ib.cc also fails in
      // its out-of-band socket, so a bare `net_ib.cc -> 2` does not say which path failed.
      if (rule && rules_.rules()[*rule].verdict == FaultClass::kArchitecture) {
        ranks.trace_root = TraceRoot{*rule,
                                     code,
                                     {facts_.counts.lines, Sanitize(line)},
                                     std::string(Cap(rank, kMaxFieldBytes))};
      }
    }
  }
  if (ranks.orphan_code < 0) {
    ranks.orphan_code = code;
    ranks.orphan_line = {facts_.counts.lines, Sanitize(line)};
  }
}

// A line a rule named, read for what the derived findings need (only named lines are read, so
// the common line pays nothing): a CUDA line for "no device", a network-not-found line.
void LineReader::OnNamedLine(const Rule& r, std::string_view msg, std::string_view line) {
  if (ids::kCudaDriver == r.cause) {
    OnNoDevice(msg, line);
  } else if (!facts_.plugins.net_not_found_line &&
             (ids::kNcclApiUsage == r.cause || ids::kIbHcaPresent == r.cause)) {
    OnNetNotFound(msg, line);
  }
}

void LineReader::OnNoDevice(std::string_view msg, std::string_view line) {
  if (facts_.devices.no_device_line) return;
  if (msg.find("no CUDA-capable device is detected") != std::string_view::npos ||
      msg.find("CUDA_ERROR_NO_DEVICE") != std::string_view::npos ||
      msg.find("Cuda failure 100 ") != std::string_view::npos) {
    facts_.devices.no_device_line = Here(line);
  }
}

// `Error: network X not found.` for a network that only a plugin provides (not IB, Socket).
void LineReader::OnNetNotFound(std::string_view msg, std::string_view line) {
  const size_t at = msg.find("Error: network ");
  if (at == std::string_view::npos) return;
  std::string_view name = msg.substr(at + 15);
  const size_t end = name.find(" not found");
  if (end == std::string_view::npos) return;
  name = name.substr(0, end);
  if (name == "IB" || name == "Socket" || name.empty()) return;
  facts_.plugins.net_not_found_line = Here(line);
}

// A line of NCCL's diagnostics report. A failed check names its cause above every other tier; a
// passed or skipped check (a rule of strength ignore, or none) names nothing, and a report is no
// proof that the job then worked.
void LineReader::OnDiag(const ParsedLine& p, std::string_view line) {
  ++facts_.counts.nccl;
  ++facts_.counts.diag;
  for (const auto& m : rules_.MatchLine(p)) {
    const Rule& r = rules_.rules()[m.rule];
    if (r.strength == Strength::kIgnore) break;
    const int tier = r.strength == Strength::kRoot || r.strength == Strength::kGeneric
                         ? static_cast<int>(kTierDiag)
                         : TierFor(r.strength, false, false);
    causes_.AddCause(r, tier, Boost(r, r.confidence, facts_.env), facts_.counts.lines, line,
                     p.timestamp);
  }
}

// --- text lines --------------------------------------------------------------------------------

void LineReader::OnText(const ParsedLine& p, std::string_view line) {
  if (p.message.empty()) return;
  VersionFacts& versions = facts_.versions;
  const size_t text_lines = ++facts_.counts.nonempty_text;
  if (versions.gpu_arch == nullptr && text_lines <= 4096) {
    versions.gpu_arch = FindGpuArchitecture(p.message);
    if (versions.gpu_arch != nullptr) versions.gpu_line = Here(line);
  }
  if (p.message.find("NCCL version ") != std::string_view::npos) {
    OnVersion(ParseVersion(p.message), line);
  }
  if (p.message.front() == '#') OnTestsBanner(p.message, line);
  const bool row = IsTestsResultRow(p.message);
  OnTestsHeaderOrSummary(p.message, row, line);
  const bool step = OnProgressText(p, row);
  bool root_found = false;
  const std::vector<CompiledRules::LineMatch> matches =
      MatchRules(rules_, p, facts_.versions.numbers, facts_.env);
  if (matches.empty() && !step && OnBareNcclMessage(p, line)) return;
  for (const auto& m : matches) {
    const Rule& r = rules_.rules()[m.rule];
    if (r.strength == Strength::kIgnore) break;
    OnNamedLine(r, p.message, line);
    int tier = TierFor(r.strength, false, false);
    // Quoted text is a little less direct than the WARN itself.
    causes_.AddCause(r, tier, Boost(r, r.confidence, facts_.env) * 0.9, facts_.counts.lines, line,
                     p.timestamp);
    if (m.code > 0 && facts_.ranks.text_code < 0) facts_.ranks.text_code = m.code;
    root_found = root_found || tier <= kTierSecondary;
  }
  if (root_found) AddTextRoot(p, line);
}

// nccl-tests' summary, or one of its result rows with no wrong element: collectives ran and
// returned correct data. The program's own steps after NCCL set up (`Iteration: 10. Average time
// per step`, `{'loss': 1.2, ...}`): each step runs collectives, so they completed. Once a step
// after the last WARN is known, later steps change nothing until another WARN comes. True for a
// step line.
bool LineReader::OnProgressText(const ParsedLine& p, bool result_row) {
  RunProgress& run = facts_.run;
  if (p.message.find("Out of bounds values : 0 OK") != std::string_view::npos ||
      p.message.find("# Avg bus bandwidth") != std::string_view::npos ||
      result_row || IsProgramSuccessLine(p.message)) {
    run.tests_passed = true;
    run.last_success_line = facts_.counts.lines;
  }
  const bool settled = run.progress_seen && run.last_success_line > run.last_warn_line;
  const bool step = facts_.counts.nccl > 0 && !settled && IsProgressLine(p.message);
  if (step) {
    run.progress_seen = true;
    run.last_success_line = facts_.counts.lines;
  }
  return step;
}

// nccl-tests' device list: a rank listed by a second process before any result row came
// between the listings means each process runs a test of its own. A later run pasted after the
// first one's results lists its ranks again legitimately.
void LineReader::OnTestsBanner(std::string_view msg, std::string_view line) {
  if (msg.size() > 512 || msg.find(" Pid ") == std::string_view::npos) return;
  static const RE2 kListing(
      R"(^#\s+Rank\s+(\d{1,6})\s+(?:Group\s+\d+\s+)?Pid\s+(\d{1,9})\s+on\s)");
  int rank = 0;
  long pid = 0;
  if (!RE2::PartialMatch(msg, kListing, &rank, &pid)) return;
  TestsBanner& tests = facts_.tests;
  auto it = tests.ranks.find(rank);
  if (it == tests.ranks.end()) {
    if (tests.ranks.size() < TestsBanner::kMaxRanks) {
      tests.ranks.emplace(rank, TestsBanner::Listing{pid, Here(line)});
    }
    return;
  }
  if (it->second.pid == pid) return;
  if (facts_.run.last_success_line > it->second.line.number) {
    it->second = TestsBanner::Listing{pid, Here(line)};  // a new run: it lists its ranks anew
    return;
  }
  if (!tests.relisted) tests.relisted = std::make_pair(it->second.line, Here(line));
}

// nccl-tests' banner and summary lines, and its result rows between them: a banner or summary
// printed again within a few lines, with no result row (and, for banners, no summary) since the
// first, is a second process acting as rank 0. A run pasted after another one prints its own
// rows or summary in between; processes started together print their banners together.
void LineReader::OnTestsHeaderOrSummary(std::string_view msg, bool result_row,
                                        std::string_view line) {
  if (msg.size() > 512) return;
  constexpr size_t kTogether = 16;  // lines: the two processes' output interleaves closely
  TestsBanner& tests = facts_.tests;
  const size_t now = facts_.counts.lines;
  auto again = [&](const std::optional<LogLine>& last, size_t since) {
    return last && !tests.relisted && last->number > tests.last_row && last->number > since &&
           now - last->number <= kTogether;
  };
  if (result_row) {
    tests.last_row = now;
    return;
  }
  static const RE2 kHeader(R"(#?\s*nThread \d+ nGpus \d+ minBytes \d+)");
  if (msg.find("nThread ") != std::string_view::npos && RE2::PartialMatch(msg, kHeader)) {
    const size_t summary = tests.last_summary ? tests.last_summary->number : 0;
    if (again(tests.last_header, summary)) {
      tests.relisted = std::make_pair(*tests.last_header, Here(line));
    }
    tests.last_header = Here(line);
    return;
  }
  if (msg.find("# Avg bus bandwidth") != std::string_view::npos) {
    const size_t header = tests.last_header ? tests.last_header->number : 0;
    if (again(tests.last_summary, header)) {
      tests.relisted = std::make_pair(*tests.last_summary, Here(line));
    }
    tests.last_summary = Here(line);
  }
}

// A quoted error that names a cause: the rank's root when the log has no WARN lines.
void LineReader::AddTextRoot(const ParsedLine& p, std::string_view line) {
  std::vector<RootCandidate>& roots = facts_.ranks.text_roots;
  if (roots.size() >= kMaxTextRoots) return;
  std::string key(Cap(p.rank, kMaxFieldBytes));
  const bool seen = std::any_of(roots.begin(), roots.end(),
                                [&](const RootCandidate& r) { return r.rank == key; });
  if (seen) return;
  roots.push_back({key,
                   {facts_.counts.lines, Sanitize(line)},
                   std::string(Cap(p.timestamp, kMaxFieldBytes)),
                   kTierSecondary,
                   true});
}

// NCCL's own message without its `host:pid:tid [dev] NCCL LEVEL` prefix: a paste of the message
// alone, or a framework's quote of NCCL's last error (PyTorch prints `Last error:` and the WARN's
// text on the next line). When the text is what one of NCCL's WARN or INFO formats prints
// (formats that start with literal text, so prose never matches a hole), it is read as that
// line: a WARN names its path, an INFO its set-up step. True when it was.
bool LineReader::OnBareNcclMessage(const ParsedLine& p, std::string_view line) {
  std::string_view msg = p.message;
  while (!msg.empty() && (msg.front() == ' ' || msg.front() == '\t')) msg.remove_prefix(1);
  if (msg.size() < 12 || msg.size() > 1024 || catalogue_ == nullptr) return false;
  ParsedLine as_nccl = p;
  as_nccl.message = msg;
  if (catalogue_->MatchQuotedWarn(msg) != nullptr) {
    as_nccl.level = NcclLevel::kWarn;
    OnWarn(as_nccl, line);
    return true;
  }
  // `Init COMPLETE` formats open with the caller's name (`%s comm %p rank %d ...`).
  const bool init_line =
      EndsWith(msg, "- Init COMPLETE") && msg.find(" nranks ") != std::string_view::npos;
  if (init_line || catalogue_->MatchBareInfo(msg) != nullptr) {
    as_nccl.level = NcclLevel::kInfo;
    OnInfo(as_nccl, line);
    return true;
  }
  return false;
}

}  // namespace nccl_triage::classify
