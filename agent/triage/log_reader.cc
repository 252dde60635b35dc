#include "triage/log_reader.h"

#include <algorithm>

namespace nccl_triage::triage {
namespace {

constexpr size_t kMaxLine = 8192;
constexpr uint64_t kCheckpointEvery = 256;
constexpr size_t kMaxMarks = 4096;

// Days since 1970-01-01 of a civil date (H. Hinnant's algorithm).
int64_t DaysFromCivil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

bool Digits(std::string_view s, size_t pos, size_t n, int* out) {
  if (pos + n > s.size()) return false;
  int v = 0;
  for (size_t i = pos; i < pos + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    v = v * 10 + (s[i] - '0');
  }
  *out = v;
  return true;
}

// A line that may be chosen as a rank's first failure: an NCCL WARN, or text that names an
// error (PyTorch's `[rank3]: ... NCCL error`, a back-trace). Cheap: two substring finds.
bool MayBeRoot(std::string_view text) {
  return text.find(" WARN ") != std::string_view::npos ||
         text.find("rror") != std::string_view::npos;
}

}  // namespace

std::optional<int64_t> ParseRfc3339Nanos(std::string_view t) {
  int y, mo, d, h, mi, s;
  if (!Digits(t, 0, 4, &y) || t.size() < 20 || t[4] != '-' || !Digits(t, 5, 2, &mo) ||
      t[7] != '-' || !Digits(t, 8, 2, &d) || (t[10] != 'T' && t[10] != 't') ||
      !Digits(t, 11, 2, &h) || t[13] != ':' || !Digits(t, 14, 2, &mi) || t[16] != ':' ||
      !Digits(t, 17, 2, &s)) {
    return std::nullopt;
  }
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60) return std::nullopt;
  size_t pos = 19;
  int64_t nanos = 0;
  if (pos < t.size() && t[pos] == '.') {
    ++pos;
    int digits = 0;
    while (pos < t.size() && t[pos] >= '0' && t[pos] <= '9') {
      if (digits < 9) {
        nanos = nanos * 10 + (t[pos] - '0');
        ++digits;
      }
      ++pos;
    }
    if (digits == 0) return std::nullopt;
    for (; digits < 9; ++digits) nanos *= 10;
  }
  int64_t offset = 0;
  if (pos < t.size() && (t[pos] == 'Z' || t[pos] == 'z')) {
    ++pos;
  } else if (pos < t.size() && (t[pos] == '+' || t[pos] == '-')) {
    int oh, om;
    if (!Digits(t, pos + 1, 2, &oh) || pos + 3 >= t.size() || t[pos + 3] != ':' ||
        !Digits(t, pos + 4, 2, &om)) {
      return std::nullopt;
    }
    offset = (t[pos] == '+' ? 1 : -1) * (oh * 3600 + om * 60);
    pos += 6;
  } else {
    return std::nullopt;
  }
  if (pos != t.size()) return std::nullopt;
  const int64_t secs =
      DaysFromCivil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d)) * 86400 + h * 3600 +
      mi * 60 + s - offset;
  return secs * 1'000'000'000 + nanos;
}

void LogReader::Feed(std::string_view bytes) {
  s_.bytes += bytes.size();
  while (!bytes.empty()) {
    const size_t nl = bytes.find('\n');
    std::string_view part = bytes.substr(0, nl);
    const size_t room = kMaxLine - partial_.size();
    if (part.size() > room) partial_cut_ = true;
    partial_.append(part.substr(0, room));
    if (nl == std::string_view::npos) return;
    Line(partial_);
    partial_.clear();
    partial_cut_ = false;
    bytes.remove_prefix(nl + 1);
  }
}

void LogReader::StartTail() {
  // The head ended at its byte limit, most likely inside a line: that line is in the tail whole.
  partial_.clear();
  partial_cut_ = false;
  in_tail_ = true;
  head_last_ns_ = s_.last_ns;
  s_.gap_after_line = s_.lines;
}

void LogReader::Line(std::string_view line) {
  std::optional<int64_t> ns;
  const size_t sp = line.find(' ');
  if (sp != std::string_view::npos && sp >= 20 && sp <= 40) {
    ns = ParseRfc3339Nanos(line.substr(0, sp));
    if (ns) line.remove_prefix(sp + 1);
  }
  if (in_tail_ && ns && head_last_ns_ && *ns <= *head_last_ns_) {
    ++s_.overlap_lines;
    return;
  }
  if (partial_cut_) ++s_.cut_lines;
  classifier_.Feed(line);
  ++s_.lines;
  if (!ns) return;
  if (!s_.first_ns) s_.first_ns = ns;
  s_.last_ns = ns;
  if ((s_.lines - 1) % kCheckpointEvery == 0) checkpoints_.emplace_back(s_.lines, *ns);
  if (marks_.size() < kMaxMarks && MayBeRoot(line)) marks_.emplace_back(s_.lines, *ns);
}

LogSummary LogReader::Finish() {
  if (!partial_.empty()) Line(partial_);
  partial_.clear();
  s_.classification = classifier_.Finish();
  if (!s_.classification.roots.empty()) {
    const uint64_t root = s_.classification.roots.front().line.number;
    auto exact = std::lower_bound(marks_.begin(), marks_.end(), std::make_pair(root, INT64_MIN));
    if (exact != marks_.end() && exact->first == root) {
      s_.root_ns = exact->second;
      s_.root_time_exact = true;
    } else {
      auto after = std::upper_bound(checkpoints_.begin(), checkpoints_.end(),
                                    std::make_pair(root, INT64_MAX));
      if (after != checkpoints_.begin()) s_.root_ns = std::prev(after)->second;
    }
  }
  return std::move(s_);
}

}  // namespace nccl_triage::triage
