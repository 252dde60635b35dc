// The text report, line by line. The formats are NCCL's client_support.cc (2.24 to 2.30); each
// recognised line is named by the words it starts with, so a line of a newer NCCL that is not
// understood is kept as a note instead of being misread.
#include <algorithm>
#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>
#include <map>
#include <set>
#include <vector>

#include "ras/report.h"
#include "ras/text_util.h"

namespace nccl_triage::ras {
namespace {

using detail::AfterPrefix;
using detail::Ints;
using detail::ParseInt;
using detail::Split;
using detail::StartsWith;
using detail::Trim;

// " -- GPU 0 managed by process 614 on node 192.0.2.2" or " -- [process information not found]"
void ParseRankTail(std::string_view tail, RankRef& ref) {
  constexpr std::string_view kGpu = "GPU ";
  constexpr std::string_view kBy = " managed by process ";
  constexpr std::string_view kOn = " on node ";
  tail = Trim(tail);
  if (!StartsWith(tail, kGpu)) return;
  const auto by = tail.find(kBy);
  if (by == std::string_view::npos) return;
  ref.gpu = std::string(Trim(tail.substr(kGpu.size(), by - kGpu.size())));
  std::string_view rest = tail.substr(by + kBy.size());
  const auto on = rest.find(kOn);
  if (on == std::string_view::npos) return;
  ParseInt(rest.substr(0, on), ref.pid);
  ref.host = std::string(Trim(rest.substr(on + kOn.size())));
}

// "Process 614 on node 192.0.2.2 managing GPU 0" (GPUs "0,1" or "0,1 (NVML 2,3)").
bool ParseProcessLine(std::string_view line, Process& p) {
  std::string_view rest;
  if (!AfterPrefix(line, "Process ", rest)) return false;
  const auto on = rest.find(" on node ");
  const auto managing = rest.find(" managing GPU");
  if (on == std::string_view::npos || managing == std::string_view::npos || managing < on) {
    return false;
  }
  if (!ParseInt(rest.substr(0, on), p.pid)) return false;
  p.host = std::string(rest.substr(on + 9, managing - on - 9));
  std::string_view gpus = rest.substr(managing + 13);
  if (StartsWith(gpus, "s")) gpus.remove_prefix(1);
  p.gpus = std::string(Trim(gpus));
  return true;
}

class TextParser {
 public:
  explicit TextParser(Report& r) : r_(r) {}

  void Line(std::string_view raw) {
    const std::string_view line = Trim(raw);
    const bool indented = !raw.empty() && raw.front() == ' ';
    if (line.empty()) {
      // A blank line ends a block of the Errors and Warnings sections; the summary's tables are
      // separated by blank lines and end at the next header.
      if (block_ != Block::kSummary && block_ != Block::kGroups) block_ = Block::kNone;
      return;
    }
    if (!indented && Header(line)) return;
    // The summary's and the group table's rows are indented, some of their header lines not.
    if (block_ == Block::kSummary && Summary(line)) return;
    if (block_ == Block::kGroups && GroupRow(line)) return;
    if (Body(line)) return;
    if (line.find_first_not_of("=") == std::string_view::npos) return;  // underlines
    r_.notes.push_back("line not understood: " + std::string(line.substr(0, 120)));
  }

  bool recognised() const { return recognised_ > 0; }

  // Internal to this file: everything below is the parser's state and steps.
  enum class Block {
    kNone, kSummary, kGroups, kIncomplete, kDead, kTimeout, kCommIncomplete, kCommError,
    kCommMismatch
  };

  // An unindented line: a section or block header.
  bool Header(std::string_view line) {
    std::string_view rest;
    if (AfterPrefix(line, "NCCL version ", rest)) {
      r_.nccl_version = std::string(rest.substr(0, rest.find(' ')));
      ++recognised_;
      return true;
    }
    if (StartsWith(line, "CUDA runtime version")) return true;
    if (line == "Job summary") {
      block_ = Block::kSummary;
      ++recognised_;
      return true;
    }
    if (AfterPrefix(line, "Communicators...", rest)) {
      // " (0.123s)" ; older versions print two decimals.
      rest = Trim(rest);
      if (rest.size() > 3 && rest.front() == '(' && rest.substr(rest.size() - 2) == "s)") {
        detail::ParseDouble(rest.substr(1, rest.size() - 3), r_.collection_s);
      }
      block_ = Block::kNone;
      ++recognised_;
      return true;
    }
    if (StartsWith(line, "Group ") && line.find("Comms") != std::string_view::npos) {
      block_ = Block::kGroups;
      return true;
    }
    if (line == "No communicator data collected!" || line == "Errors" || line == "Warnings") {
      block_ = Block::kNone;
      return true;
    }
    if (line == "INCOMPLETE") return Enter(Block::kIncomplete);
    if (line == "DEAD") return Enter(Block::kDead);
    if (line == "TIMEOUT") return Enter(Block::kTimeout);
    if (line.front() == '#' && line.find(" (") != std::string_view::npos) return CommHeader(line);
    return false;
  }

  bool Enter(Block b) {
    block_ = b;
    ++recognised_;
    return true;
  }

  // "#0-0 (b7bb7673efec257b) MISMATCH"
  bool CommHeader(std::string_view line) {
    const auto open = line.find(" (");
    const auto close = line.find(") ");
    if (open == std::string_view::npos || close == std::string_view::npos || close < open) {
      return false;
    }
    int group = -1;
    const std::string_view id = line.substr(1, open - 1);
    ParseInt(id.substr(0, id.find('-')), group);
    const std::string hash = detail::NormalizeHash(line.substr(open + 2, close - open - 2));
    const std::string_view kind = Trim(line.substr(close + 2));
    comm_index_ = CommFor(hash, group);
    Communicator& comm = Comm();
    if (std::find(comm.problems.begin(), comm.problems.end(), kind) == comm.problems.end()) {
      comm.problems.emplace_back(kind);
    }
    group_index_ = -1;
    op_.clear();
    list_state_ = RankState::kUnknown;
    if (kind == "INCOMPLETE") return Enter(Block::kCommIncomplete);
    if (kind == "ERROR") return Enter(Block::kCommError);
    if (kind == "MISMATCH") return Enter(Block::kCommMismatch);
    r_.notes.push_back("communicator block of unknown kind: " + std::string(kind));
    block_ = Block::kNone;
    return true;
  }

  Communicator& Comm() { return r_.communicators[static_cast<size_t>(comm_index_)]; }
  CountGroup* Group() {
    return group_index_ < 0 ? nullptr : &Comm().count_groups[static_cast<size_t>(group_index_)];
  }
  void AddGroup(CountGroup g, bool current) {
    Comm().count_groups.push_back(std::move(g));
    group_index_ = current ? static_cast<int>(Comm().count_groups.size()) - 1 : -1;
  }

  int CommFor(const std::string& hash, int group) {
    for (size_t i = 0; i < r_.communicators.size(); ++i) {
      if (r_.communicators[i].hash == hash) return static_cast<int>(i);
    }
    Communicator c;
    c.hash = hash;
    for (const auto& g : r_.groups) {
      if (g.group == group) {
        c.size = g.ranks_per_comm;
        group_status_[hash] = g.status;
      }
    }
    r_.communicators.push_back(std::move(c));
    return static_cast<int>(r_.communicators.size()) - 1;
  }

  RankInfo& RankFor(int rank) {
    for (auto& ri : Comm().ranks) {
      if (ri.ref.rank == rank) return ri;
    }
    RankInfo ri;
    ri.ref.rank = rank;
    Comm().ranks.push_back(std::move(ri));
    return Comm().ranks.back();
  }

  bool Summary(std::string_view line) {
    if (line.front() == '(' || StartsWith(line, "Nodes") || StartsWith(line, "per node") ||
        StartsWith(line, "Processes")) {
      summary_columns_ = line;  // the last header line says which table follows
      return true;
    }
    std::vector<long long> v;
    if (!Ints(line, v)) return false;
    // "Nodes Processes/node GPUs/process Processes GPUs" (5) or "Nodes Processes GPUs" (3), the
    // latter headed "(total) (total) (total)"; the other tables break the job down (2 columns).
    if (v.size() == 5) {
      r_.nodes = static_cast<int>(v[0]);
      r_.processes = static_cast<int>(v[3]);
      r_.gpus = static_cast<int>(v[4]);
    } else if (v.size() == 3 && StartsWith(summary_columns_, "(total)")) {
      r_.nodes = static_cast<int>(v[0]);
      r_.processes = static_cast<int>(v[1]);
      r_.gpus = static_cast<int>(v[2]);
    }
    return true;
  }

  bool GroupRow(std::string_view line) {
    if (line.front() == '#') return true;  // the second header line
    const auto t = Split(line);
    if (t.size() != 8) return false;
    CommGroup g;
    if (!ParseInt(t[0], g.group) || !ParseInt(t[1], g.comms) || !ParseInt(t[2], g.nodes) ||
        !ParseInt(t[4], g.ranks_per_comm) || !ParseInt(t[5], g.ranks_in_group)) {
      return false;
    }
    g.ranks_per_node = std::string(t[3]);
    g.status = std::string(t[6]);
    g.errors = std::string(t[7]);
    r_.groups.push_back(std::move(g));
    ++recognised_;
    return true;
  }

  bool Body(std::string_view line) {
    switch (block_) {
      case Block::kIncomplete:
      case Block::kDead:
        return ProcessBlock(line);
      case Block::kTimeout: {
        std::string_view rest;
        if (AfterPrefix(line, "Encountered ", rest)) return ParseInt(FirstWord(rest), r_.timeouts);
        return false;
      }
      case Block::kCommIncomplete:
        return CommIncomplete(line);
      case Block::kCommError:
        return CommError(line);
      case Block::kCommMismatch:
        return CommMismatch(line);
      default:
        return false;
    }
  }

  static std::string_view FirstWord(std::string_view s) { return s.substr(0, s.find(' ')); }

  bool ProcessBlock(std::string_view line) {
    std::string_view rest;
    auto& list = block_ == Block::kDead ? r_.dead : r_.missing;
    if (AfterPrefix(line, "Missing communicator data from ", rest)) {
      return ParseInt(FirstWord(rest), r_.missing_processes);
    }
    if (line.find(" considered dead") != std::string_view::npos) {
      return ParseInt(FirstWord(line), r_.dead_processes);
    }
    if (StartsWith(line, "[could not find")) return true;
    Process p;
    if (ParseProcessLine(line, p)) {
      list.push_back(std::move(p));
      return true;
    }
    return false;
  }

  // "Rank 3 -- GPU ..." or "Rank 3 <verb ...> -- GPU ..." -> the rank's entry of the current
  // communicator, with what the line says of its process filled in where it was not known, and
  // the text between; nullptr when the line is not one of these.
  RankInfo* RankLine(std::string_view line, std::string_view& middle) {
    std::string_view rest;
    int rank = -1;
    if (!AfterPrefix(line, "Rank ", rest)) return nullptr;
    const auto sp = rest.find_first_of(" ");
    if (!ParseInt(rest.substr(0, sp), rank)) return nullptr;
    rest = sp == std::string_view::npos ? std::string_view() : rest.substr(sp);
    const auto dash = rest.find(" -- ");
    middle = Trim(rest.substr(0, dash));
    RankRef ref;
    ref.rank = rank;
    if (dash != std::string_view::npos) ParseRankTail(rest.substr(dash + 4), ref);
    RankInfo& ri = RankFor(rank);
    if (ri.ref.host.empty()) ri.ref.host = ref.host;
    if (ri.ref.pid < 0) ri.ref.pid = ref.pid;
    if (ri.ref.gpu.empty()) ri.ref.gpu = ref.gpu;
    return &ri;
  }

  bool CommIncomplete(std::string_view line) {
    std::string_view rest;
    if (AfterPrefix(line, "Missing communicator data from ", rest)) {
      return ParseInt(FirstWord(rest), Comm().missing);
    }
    // 2.24/2.25: "The missing ranks: 1,5"
    if (AfterPrefix(line, "The missing rank", rest)) {
      const auto colon = rest.find(':');
      if (colon == std::string_view::npos) return false;
      for (auto t : detail::SplitOn(rest.substr(colon + 1), ',')) {
        int rank = -1;
        if (ParseInt(Trim(t), rank)) RankFor(rank).state = RankState::kUnresponsive;
      }
      return true;
    }
    if (AfterPrefix(line, "The unknown ranks", rest)) return true;
    std::string_view middle;
    RankInfo* ri = RankLine(line, middle);
    if (ri == nullptr) return false;
    ri->state = RankState::kUnresponsive;
    return true;
  }

  bool CommError(std::string_view line) {
    if (StartsWith(line, "Initialization error")) {
      error_kind_ = "initialization: ";
      return true;
    }
    if (StartsWith(line, "Asynchronous error")) {
      error_kind_ = "";
      return true;
    }
    // "2 ranks reported Remote process error": the ranks listed next share it.
    const auto reported = line.find(" ranks reported ");
    int n = 0;
    if (reported != std::string_view::npos && ParseInt(line.substr(0, reported), n)) {
      group_error_ = std::string(line.substr(reported + 16));
      return true;
    }
    std::string_view middle;
    RankInfo* ri = RankLine(line, middle);
    if (ri == nullptr) return false;
    std::string_view err;
    ri->error = error_kind_ + (AfterPrefix(middle, "reported ", err) ? std::string(err)
                                                                      : group_error_);
    return true;
  }

  static RankState StateFromWord(std::string_view w) {
    if (w == "RUNNING") return RankState::kRunning;
    if (w == "INIT") return RankState::kInit;
    if (w == "FINALIZE") return RankState::kFinalize;
    if (w == "ABORT") return RankState::kAbort;
    if (w == "NOCOMM") return RankState::kNoComm;
    return RankState::kUnknown;
  }

  bool CommMismatch(std::string_view line) {
    std::string_view rest;
    if (line == "Communicator ranks have different status") {
      status_differs_.insert(Comm().hash);
      op_.clear();
      group_index_ = -1;
      return true;
    }
    if (AfterPrefix(line, "Communicator ranks have different ", rest)) {
      // "<Op> operation counts" (2.26+) or "collective operation counts" (2.24, 2.25).
      const auto sp = rest.find(" operation counts");
      if (sp == std::string_view::npos) return false;
      op_ = std::string(rest.substr(0, sp));
      group_index_ = -1;
      return true;
    }
    // "3 ranks have launched up to operation 1200" / "3 ranks have not launched any operations"
    // / "3 ranks have status RUNNING"
    const auto have = line.find(" ranks have ");
    int n = 0;
    if (have != std::string_view::npos && ParseInt(line.substr(0, have), n)) {
      const std::string_view what = line.substr(have + 12);
      if (AfterPrefix(what, "status ", rest)) {
        list_state_ = StateFromWord(Trim(rest));
        Comm().status_counts[list_state_] += n;
        group_index_ = -1;
        return true;
      }
      uint64_t count = 0;
      if (AfterPrefix(what, "launched up to operation ", rest)) {
        if (!detail::ParseU64(Trim(rest), count)) return false;
      } else if (what != "not launched any operations") {
        return false;
      }
      AddGroup(CountGroup{op_.empty() ? "collective" : op_, n, count, {}}, true);
      return true;
    }
    // 2.24/2.25: "Rank 1,2 has status INIT" (a list, no process details).
    if (AfterPrefix(line, "Rank ", rest) && rest.find(',') != std::string_view::npos &&
        rest.find(" has status ") != std::string_view::npos) {
      const auto hs = rest.find(" has status ");
      const RankState st = StateFromWord(Trim(rest.substr(hs + 12)));
      for (auto t : detail::SplitOn(rest.substr(0, hs), ',')) {
        int rank = -1;
        if (ParseInt(Trim(t), rank)) {
          RankFor(rank).state = st;
          ++Comm().status_counts[st];
        }
      }
      return true;
    }
    std::string_view middle;
    RankInfo* ri = RankLine(line, middle);
    if (ri == nullptr) return false;
    const std::string op = op_.empty() ? "collective" : op_;
    if (AfterPrefix(middle, "has status ", rest)) {
      ri->state = StateFromWord(rest);
      ++Comm().status_counts[ri->state];
    } else if (AfterPrefix(middle, "has launched up to operation ", rest)) {
      uint64_t count = 0;
      if (!detail::ParseU64(rest, count)) return false;
      ri->op_counts[op] = count;
      AddGroup(CountGroup{op, 1, count, {ri->ref.rank}}, false);
    } else if (middle == "has not launched any operations") {
      ri->op_counts[op] = 0;
      AddGroup(CountGroup{op, 1, 0, {ri->ref.rank}}, false);
    } else if (middle.empty()) {
      // A member of the group announced by the line above.
      if (CountGroup* g = Group(); !op_.empty() && g != nullptr) {
        ri->op_counts[g->op] = g->count;
        g->listed.push_back(ri->ref.rank);
      } else if (op_.empty()) {
        ri->state = list_state_;
      }
    } else {
      return false;
    }
    return true;
  }

  // What the parse leaves for the end: the group status of each detailed communicator, and
  // which of them print a status per rank (the others' ranks all have the group's status).
  std::map<std::string, std::string> group_status_;
  std::set<std::string> status_differs_;

  Report& r_;
  Block block_ = Block::kNone;
  int recognised_ = 0;
  std::string_view summary_columns_;
  int comm_index_ = -1;   // indices, not pointers: the vectors grow
  int group_index_ = -1;
  std::string op_;
  RankState list_state_ = RankState::kUnknown;
  std::string error_kind_;
  std::string group_error_;
};

}  // namespace

StatusOr<Report> ParseTextReport(std::string_view body) {
  Report r;
  r.format = "text";
  TextParser p(r);
  size_t start = 0;
  while (start < body.size()) {
    const size_t nl = body.find('\n', start);
    const size_t end = nl == std::string_view::npos ? body.size() : nl;
    std::string_view line = body.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    p.Line(line);
    start = end + 1;
  }
  if (!p.recognised()) {
    return InvalidArgument("not an NCCL RAS status report: '" +
                           detail::Printable(body.substr(0, body.find('\n'))) + "'");
  }
  // A rank missing from a communicator whose process is considered dead is dead; its
  // communicator's answering ranks are the others.
  for (auto& c : r.communicators) {
    const auto gs = p.group_status_.find(c.hash);
    for (auto& ri : c.ranks) {
      if (ri.state == RankState::kUnknown && gs != p.group_status_.end() &&
          p.status_differs_.count(c.hash) == 0) {
        ri.state = TextParser::StateFromWord(gs->second);
      }
      if (ri.state != RankState::kUnresponsive) continue;
      for (const auto& d : r.dead) {
        if (d.pid == ri.ref.pid && d.host == ri.ref.host) ri.state = RankState::kDead;
      }
    }
    if (c.size >= 0) c.responding = c.size - c.missing;
    TallyRanks(c);
  }
  return r;
}

}  // namespace nccl_triage::ras
