#include "classify/log_line.h"

#include <cctype>

namespace nccl_triage {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

bool AllDigits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!IsDigit(c)) return false;
  }
  return true;
}

std::string_view TrimRight(std::string_view s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

std::string_view TrimLeft(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  return s;
}

// Strips the leading `[timestamp] ` (NCCL 2.2x+, NCCL_DEBUG_TIMESTAMP_FORMAT) and PyTorch's
// `[rankN]:` prefixes, in any order, at most twice.
std::string_view StripBracketPrefixes(std::string_view s, ParsedLine& out) {
  for (int i = 0; i < 2 && !s.empty() && s.front() == '['; ++i) {
    size_t close = s.find(']');
    if (close == std::string_view::npos || close > 64) break;
    std::string_view inside = s.substr(1, close - 1);
    if (inside.size() > 4 && inside.substr(0, 4) == "rank" && AllDigits(inside.substr(4))) {
      out.rank = inside;
      s.remove_prefix(close + 1);
      if (!s.empty() && s.front() == ':') s.remove_prefix(1);
      s = TrimLeft(s);
    } else if (!inside.empty() && IsDigit(inside.front())) {
      out.timestamp = inside;
      s = TrimLeft(s.substr(close + 1));
    } else {
      break;
    }
  }
  return s;
}

// `host:pid:tid` -> `host:pid`, or empty when the token does not have that shape.
std::string_view RankKey(std::string_view token) {
  size_t last = token.rfind(':');
  if (last == std::string_view::npos || last == 0) return {};
  size_t prev = token.rfind(':', last - 1);
  if (prev == std::string_view::npos || prev == 0) return {};
  if (!AllDigits(token.substr(last + 1)) || !AllDigits(token.substr(prev + 1, last - prev - 1))) {
    return {};
  }
  return token.substr(0, last);
}

// `host:pid` (a DIAG line's prefix), or empty when the token does not have that shape.
std::string_view HostPid(std::string_view token) {
  size_t colon = token.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || !AllDigits(token.substr(colon + 1))) {
    return {};
  }
  return token;
}

// Reads the prefix before `NCCL <LEVEL>`: host token, `[dev]`, optional `file:LINE`, `(func)`.
void ParsePrefix(std::string_view prefix, ParsedLine& out) {
  bool first = true;
  bool seen_device = false;
  while (!prefix.empty()) {
    prefix = TrimLeft(prefix);
    size_t end = prefix.find(' ');
    std::string_view token = prefix.substr(0, end);
    prefix = end == std::string_view::npos ? std::string_view{} : prefix.substr(end);
    if (token.empty()) continue;
    if (first) {
      first = false;
      std::string_view key = RankKey(token);
      if (key.empty() && out.level == NcclLevel::kDiag) key = HostPid(token);
      if (!key.empty()) {
        out.rank = key;
        continue;
      }
    } else if (out.rank.empty() && !seen_device && out.file.empty()) {
      // A quoting or launcher prefix before the rank (`> `, `node2: `, `(RayWorker pid=1) `): the
      // first later token of the shape `host:pid:tid` whose host is a name, not a clock time.
      std::string_view key = RankKey(token);
      if (!key.empty() && key.find_first_not_of("0123456789:") != std::string_view::npos) {
        out.rank = key;
        continue;
      }
    }
    if (token.front() == '[') seen_device = true;
    if (token.front() == '[' || token.front() == '(') continue;
    size_t colon = token.rfind(':');
    if (colon != std::string_view::npos && colon > 0 && AllDigits(token.substr(colon + 1))) {
      out.file = token;
    }
  }
}

// NCCL up to 2.3 wrote no "NCCL" before the level: `host:pid:tid [dev] file.cu:LINE WARN msg`,
// `host:pid:tid [dev] INFO msg`, and users paste just `include/socket.h:344 WARN msg`. The level
// word counts only right after a `[dev]` token or a `file.ext:LINE` token, so prose that says
// "WARN" or "INFO" stays text.
bool IsLegacyLevelAnchor(std::string_view token) {
  if (token.size() >= 3 && token.front() == '[' && token.back() == ']') {
    return AllDigits(token.substr(1, token.size() - 2));
  }
  size_t colon = token.rfind(':');
  if (colon == std::string_view::npos || !AllDigits(token.substr(colon + 1))) return false;
  std::string_view file = token.substr(0, colon);
  size_t dot = file.rfind('.');
  if (dot == std::string_view::npos) return false;
  std::string_view ext = file.substr(dot + 1);
  return ext == "cc" || ext == "cu" || ext == "c" || ext == "h" || ext == "cpp";
}

bool ParseLegacy(std::string_view s, ParsedLine& out) {
  for (std::string_view word : {std::string_view(" WARN "), std::string_view(" INFO ")}) {
    size_t pos = s.find(word);
    if (pos == std::string_view::npos || pos == 0) continue;
    size_t space = s.rfind(' ', pos - 1);
    size_t start = space == std::string_view::npos ? 0 : space + 1;
    if (!IsLegacyLevelAnchor(s.substr(start, pos - start))) continue;
    out.level = word == " WARN " ? NcclLevel::kWarn : NcclLevel::kInfo;
    ParsePrefix(s.substr(0, pos), out);
    out.message = TrimLeft(s.substr(pos + word.size()));
    return true;
  }
  return false;
}

}  // namespace

ParsedLine ParseLogLine(std::string_view line) {
  ParsedLine out;
  std::string_view s = StripBracketPrefixes(TrimRight(line), out);
  size_t pos = s.find("NCCL ");
  while (pos != std::string_view::npos) {
    if (pos == 0 || s[pos - 1] == ' ') {
      std::string_view rest = s.substr(pos + 5);
      NcclLevel level = NcclLevel::kNone;
      size_t word = 0;
      if (rest.substr(0, 4) == "WARN") {
        level = NcclLevel::kWarn, word = 4;
      } else if (rest.substr(0, 4) == "INFO") {
        level = NcclLevel::kInfo, word = 4;
      } else if (rest.substr(0, 5) == "TRACE") {
        level = NcclLevel::kTrace, word = 5;
      } else if (rest.substr(0, 4) == "DIAG") {
        level = NcclLevel::kDiag, word = 4;
      } else if (rest.substr(0, 4) == "ATTN") {
        // 2.32+: `file.cc:LINE (func) NCCL ATTN msg`, a notice of what earlier releases said
        // in INFO (`Failed to initialize NET plugin IB`): read as INFO.
        level = NcclLevel::kInfo, word = 4;
      }
      if (level != NcclLevel::kNone && (rest.size() == word || rest[word] == ' ')) {
        out.level = level;
        ParsePrefix(s.substr(0, pos), out);
        out.message = TrimLeft(rest.substr(word));
        return out;
      }
    }
    pos = s.find("NCCL ", pos + 1);
  }
  if (ParseLegacy(s, out)) return out;
  out.message = s;
  return out;
}

int BacktraceCode(std::string_view message) {
  // The message ends in "-> N" with N a small non-negative integer.
  size_t n = message.size();
  size_t digits = 0;
  while (digits < n && digits < 4 && IsDigit(message[n - 1 - digits])) ++digits;
  if (digits == 0 || digits == 4 || n <= digits + 3) return -1;  // `file:LINE` comes first
  if (message.substr(n - digits - 3, 3) != "-> ") return -1;
  int code = 0;
  for (size_t i = n - digits; i < n; ++i) code = code * 10 + (message[i] - '0');
  return code;
}

}  // namespace nccl_triage
