#include "kernel/kernel_log.h"

#include <array>
#include <charconv>
#include <optional>

#include "base/utf8.h"

namespace nccl_triage::kernel {
namespace {

constexpr size_t kMaxEvidence = 400;  // a record as evidence: one line, bounded
constexpr size_t kMaxDictEntries = 32;  // a kmsg device dictionary holds a handful

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

std::string_view TrimLeft(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  return s;
}

std::string_view TrimRight(std::string_view s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

template <typename T>
bool ParseNumber(std::string_view s, T* out) {
  if (s.empty()) return false;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && end == s.data() + s.size();
}

std::string Evidence(std::string_view s) {
  s = TrimRight(TrimLeft(s));
  std::string out = SanitizeUtf8(Utf8Prefix(s, kMaxEvidence));
  for (char& c : out) {
    if (c == '\n') c = ' ';
  }
  return out;
}

// A message of at most kMaxKernelMessageBytes (cut on a character boundary, with the marker and
// the number of bytes left out), valid UTF-8. `more_cut`: bytes already left out of it.
std::string BoundedMessage(std::string_view s, size_t more_cut = 0) {
  if (s.size() <= kMaxKernelMessageBytes && more_cut == 0) return SanitizeUtf8(s);
  const std::string_view kept = Utf8Prefix(s, kMaxKernelMessageBytes);
  return SanitizeUtf8(kept) + std::string(kKernelMessageCutMarker) +
         std::to_string(s.size() - kept.size() + more_cut) + " bytes]";
}

// `\xHH` escapes of /dev/kmsg; a newline becomes a space (one message, one line).
std::string Unescape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned value = 0;
    if (s[i] == '\\' && i + 3 < s.size() && s[i + 1] == 'x' &&
        std::from_chars(s.data() + i + 2, s.data() + i + 4, value, 16).ptr == s.data() + i + 4) {
      out += value == '\n' || value == '\t' ? ' ' : static_cast<char>(value);
      i += 3;
      continue;
    }
    out += s[i];
  }
  return out;
}

// `[  123.456789]`: seconds since boot, as microseconds; `rest` is what follows `] `.
bool ParseBracketSeconds(std::string_view s, int64_t* usec, std::string_view* rest) {
  if (s.empty() || s.front() != '[') return false;
  const size_t close = s.find(']');
  if (close == std::string_view::npos) return false;
  std::string_view inner = TrimLeft(s.substr(1, close - 1));
  const size_t dot = inner.find('.');
  if (dot == std::string_view::npos) return false;
  int64_t sec = 0, frac = 0;
  std::string_view frac_text = inner.substr(dot + 1);
  if (!ParseNumber(inner.substr(0, dot), &sec) || frac_text.size() > 9 ||
      !ParseNumber(frac_text, &frac)) {
    return false;
  }
  for (size_t n = frac_text.size(); n < 6; ++n) frac *= 10;
  for (size_t n = frac_text.size(); n > 6; --n) frac /= 10;
  *usec = sec * 1'000'000 + frac;
  *rest = TrimLeft(s.substr(close + 1));
  return true;
}

int MonthIndex(std::string_view name) {
  static constexpr std::array<std::string_view, 12> kMonths = {
      "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  for (size_t i = 0; i < kMonths.size(); ++i) {
    if (kMonths[i] == name) return static_cast<int>(i) + 1;
  }
  return 0;
}

// `[Fri Aug 29 20:09:52 2025]` (dmesg -T / --ctime).
bool ParseBracketCtime(std::string_view s, int64_t* wall_ms, std::string_view* rest) {
  if (s.size() < 26 || s.front() != '[') return false;
  const size_t close = s.find(']');
  if (close == std::string_view::npos || close < 20) return false;
  std::string_view t = s.substr(1, close - 1);  // "Fri Aug 29 20:09:52 2025"
  if (t.size() < 20 || t[3] != ' ' || t[7] != ' ') return false;
  const int month = MonthIndex(t.substr(4, 3));
  std::string_view day_text = TrimLeft(t.substr(8, 2));
  std::string_view clock = t.substr(11, 8);
  std::string_view year_text = TrimLeft(t.substr(19));
  int day = 0, year = 0, h = 0, m = 0, sec = 0;
  if (month == 0 || !ParseNumber(day_text, &day) || !ParseNumber(year_text, &year) ||
      clock.size() != 8 || clock[2] != ':' || clock[5] != ':' ||
      !ParseNumber(clock.substr(0, 2), &h) || !ParseNumber(clock.substr(3, 2), &m) ||
      !ParseNumber(clock.substr(6, 2), &sec)) {
    return false;
  }
  *wall_ms = UnixMsFromCivil(year, month, day, h, m, sec);
  *rest = TrimLeft(s.substr(close + 1));
  return true;
}

// `2025-08-29T20:09:52,123456+00:00 msg` (dmesg --time-format iso); the offset is applied.
bool ParseIso(std::string_view s, int64_t* wall_ms, std::string_view* rest) {
  if (s.size() < 20 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' ||
      s[16] != ':') {
    return false;
  }
  int year = 0, month = 0, day = 0, h = 0, m = 0, sec = 0;
  if (!ParseNumber(s.substr(0, 4), &year) || !ParseNumber(s.substr(5, 2), &month) ||
      !ParseNumber(s.substr(8, 2), &day) || !ParseNumber(s.substr(11, 2), &h) ||
      !ParseNumber(s.substr(14, 2), &m) || !ParseNumber(s.substr(17, 2), &sec)) {
    return false;
  }
  size_t i = 19;
  int64_t ms = 0;
  if (i < s.size() && (s[i] == ',' || s[i] == '.')) {
    size_t digits = 0;
    for (++i; i < s.size() && IsDigit(s[i]); ++i, ++digits) {
      if (digits < 3) ms = ms * 10 + (s[i] - '0');
    }
    for (; digits < 3; ++digits) ms *= 10;
  }
  int64_t offset_min = 0;
  if (i + 6 <= s.size() && (s[i] == '+' || s[i] == '-') && s[i + 3] == ':') {
    int oh = 0, om = 0;
    if (ParseNumber(s.substr(i + 1, 2), &oh) && ParseNumber(s.substr(i + 4, 2), &om)) {
      offset_min = (s[i] == '+' ? 1 : -1) * (oh * 60 + om);
      i += 6;
    }
  } else if (i < s.size() && s[i] == 'Z') {
    ++i;
  }
  if (i < s.size() && s[i] != ' ') return false;
  *wall_ms = UnixMsFromCivil(year, month, day, h, m, sec) + ms - offset_min * 60'000;
  *rest = TrimLeft(s.substr(i));
  return true;
}

// `Feb 14 05:03:41 host kernel: msg`: the message after `kernel: `.
bool ParseSyslog(std::string_view s, std::string_view* rest) {
  if (s.size() < 16 || MonthIndex(s.substr(0, 3)) == 0 || s[3] != ' ' || s[9] != ':') return false;
  const size_t k = s.find(" kernel: ");
  if (k == std::string_view::npos) return false;
  *rest = TrimLeft(s.substr(k + 9));
  return true;
}

// `<6>`: the priority prefix of dmesg -r; returns the level.
int StripPriority(std::string_view* s) {
  if (s->size() < 3 || s->front() != '<') return -1;
  const size_t close = s->find('>');
  int prio = 0;
  if (close == std::string_view::npos || close > 5 ||
      !ParseNumber(s->substr(1, close - 1), &prio)) {
    return -1;
  }
  s->remove_prefix(close + 1);
  return prio & 7;
}

}  // namespace

int64_t UnixMsFromCivil(int year, int month, int day, int hour, int minute, int second) {
  // Days from 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil).
  const int y = year - (month <= 2 ? 1 : 0);
  const int era = (y >= 0 ? y : y - 399) / 400;
  const int yoe = y - era * 400;
  const int mp = (month + 9) % 12;
  const int doy = (153 * mp + 2) / 5 + day - 1;
  const int doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  const int64_t days = static_cast<int64_t>(era) * 146097 + doe - 719468;
  return ((days * 24 + hour) * 60 + minute) * 60'000 + static_cast<int64_t>(second) * 1000;
}

std::optional<KernelRecord> ParseKmsgRecord(std::string_view record) {
  const size_t semi = record.find(';');
  if (semi == std::string_view::npos) return std::nullopt;
  std::string_view header = record.substr(0, semi);
  std::array<std::string_view, 4> fields;
  size_t n = 0;
  while (n < fields.size()) {
    const size_t comma = header.find(',');
    fields[n++] = header.substr(0, comma);
    if (comma == std::string_view::npos) break;
    header.remove_prefix(comma + 1);
  }
  KernelRecord r;
  int prio = 0;
  int64_t usec = 0;
  if (n < 4 || !ParseNumber(fields[0], &prio) || !ParseNumber(fields[1], &r.seq) ||
      !ParseNumber(fields[2], &usec) || fields[3].empty()) {
    return std::nullopt;
  }
  r.level = prio & 7;
  r.has_seq = true;
  r.mono_usec = usec;
  std::string_view body = record.substr(semi + 1);
  size_t nl = body.find('\n');
  r.message = BoundedMessage(Unescape(TrimRight(body.substr(0, nl))));
  while (nl != std::string_view::npos && r.dict.size() < kMaxDictEntries) {
    body.remove_prefix(nl + 1);
    nl = body.find('\n');
    std::string_view cont = body.substr(0, nl);
    if (cont.empty() || cont.front() != ' ') continue;  // continuation lines start with a blank
    cont.remove_prefix(1);
    const size_t eq = cont.find('=');
    if (eq == std::string_view::npos || eq == 0) continue;
    r.dict.emplace_back(BoundedMessage(cont.substr(0, eq)),
                        BoundedMessage(Unescape(TrimRight(cont.substr(eq + 1)))));
  }
  r.line = Evidence(r.message);
  return r;
}

namespace {

// A kernel timestamp that falls back by more than this starts another boot (printk stamps of one
// boot can go back a little across CPUs, never by seconds).
constexpr int64_t kBootRestartUsec = 1'000'000;

// journalctl's boot separators: "-- Boot 0f3c... --" (the id) and "-- Reboot --" (older).
// Returns true for either, with `id` set for the first.
bool JournalBootLine(std::string_view s, std::string* id, bool* reboot) {
  s = TrimLeft(s);
  if (s.size() < 6 || s.substr(0, 3) != "-- " || s.substr(s.size() - 3) != " --") return false;
  std::string_view inner = s.substr(3, s.size() - 6);
  if (inner == "Reboot") {
    *reboot = true;
    return true;
  }
  if (inner.substr(0, 5) != "Boot ") return false;
  inner.remove_prefix(5);
  if (inner.empty() || inner.size() > 64) return false;
  for (char c : inner) {
    const bool hex = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
    if (!hex && c != '-') return false;
  }
  *id = std::string(inner);
  return true;
}

// Marks the records before the text's last boot (a `-- Reboot --` line, or timestamps that start
// again) as of an earlier boot. `segment[i]`: how many `-- Reboot --` lines precede record i.
void MarkEarlierBoots(std::vector<KernelRecord>& records, const std::vector<int>& segment) {
  const int last_reboot = segment.empty() ? 0 : segment.back();
  std::vector<int> restart(records.size(), 0);
  int restarts = 0;
  std::optional<int64_t> latest;
  for (size_t i = 0; i < records.size(); ++i) {
    if (i > 0 && segment[i] != segment[i - 1]) latest.reset();
    if (const auto& u = records[i].mono_usec) {
      if (latest && *u + kBootRestartUsec < *latest) ++restarts;
      if (!latest || *u > *latest || *u + kBootRestartUsec < *latest) latest = *u;
    }
    restart[i] = restarts;
  }
  for (size_t i = 0; i < records.size(); ++i) {
    if (segment[i] < last_reboot) {
      records[i].earlier_boot = "above a journal `-- Reboot --` line";
    } else if (restart[i] < restarts) {
      records[i].earlier_boot = "kernel timestamps start again from zero later in the log";
    }
  }
}

}  // namespace

std::vector<KernelRecord> ParseDmesgText(std::string_view text) {
  std::vector<KernelRecord> records;
  std::vector<int> segment;  // per record: `-- Reboot --` lines above it
  int reboots = 0;
  std::string boot_id;
  // The last record's message as continuation lines extend it, bounded: bytes past the bound are
  // only counted, so an Xid followed by 20,000 indented lines costs no more than one line.
  std::string pending;
  size_t pending_cut = 0;
  bool extended = false;
  auto finish = [&] {
    if (extended) records.back().message = BoundedMessage(pending, pending_cut);
    extended = false;
  };
  auto start = [&](KernelRecord r) {
    finish();
    pending = r.message;
    pending_cut = 0;
    if (r.boot_id.empty()) r.boot_id = boot_id;
    records.push_back(std::move(r));
    segment.push_back(reboots);
  };
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    std::string_view raw = TrimRight(text.substr(0, nl));
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    std::string_view s = raw;
    if (TrimLeft(s).empty()) continue;
    bool reboot = false;
    if (JournalBootLine(s, &boot_id, &reboot)) {
      if (reboot) {
        ++reboots;
        boot_id.clear();
      }
      continue;
    }

    KernelRecord r;
    int64_t usec = 0, wall = 0;
    std::string_view rest;
    const int level = StripPriority(&s);
    if (auto kmsg = level < 0 ? ParseKmsgRecord(s) : std::nullopt; kmsg) {
      start(std::move(*kmsg));
      continue;
    }
    if (ParseBracketSeconds(s, &usec, &rest)) {
      r.mono_usec = usec;
    } else if (ParseBracketCtime(s, &wall, &rest) || ParseIso(s, &wall, &rest)) {
      r.wall_ms = wall;
    } else if (ParseSyslog(s, &rest)) {
      // no year in a syslog stamp: no time
    } else if (!records.empty() && (s.front() == ' ' || s.front() == '\t')) {
      // An indented line without a stamp continues the record before it.
      const std::string_view more = TrimLeft(s);
      if (pending.size() <= kMaxKernelMessageBytes) {
        pending += ' ';
        pending += more;
      } else {
        pending_cut += 1 + more.size();
      }
      extended = true;
      KernelRecord& prev = records.back();
      if (prev.line.size() < kMaxEvidence) {
        prev.line = Evidence(prev.line + ' ' + std::string(more));
      }
      continue;
    } else {
      rest = TrimLeft(s);
    }
    r.level = level;
    r.message = BoundedMessage(rest);
    r.line = Evidence(raw);
    start(std::move(r));
  }
  finish();
  MarkEarlierBoots(records, segment);
  return records;
}

}  // namespace nccl_triage::kernel
