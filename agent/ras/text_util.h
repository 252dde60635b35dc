// Small text helpers shared by the RAS report parsers and the RAS client. Pure; no allocation but
// the results; header-only, so that the client still builds alone (tests/gpu).
#pragma once

#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace nccl_triage::ras::detail {

inline std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

inline bool StartsWith(std::string_view s, std::string_view p) {
  return s.substr(0, p.size()) == p;
}

// True when s starts with p; `rest` is what follows.
inline bool AfterPrefix(std::string_view s, std::string_view p, std::string_view& rest) {
  if (!StartsWith(s, p)) return false;
  rest = s.substr(p.size());
  return true;
}

inline bool ParseInt(std::string_view s, int& out) {
  s = Trim(s);
  int v = 0;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size() || s.empty()) return false;
  out = v;
  return true;
}

inline bool ParseU64(std::string_view s, uint64_t& out) {
  s = Trim(s);
  uint64_t v = 0;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size() || s.empty()) return false;
  out = v;
  return true;
}

inline bool ParseDouble(std::string_view s, double& out) {
  s = Trim(s);
  double v = 0;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size() || s.empty()) return false;
  out = v;
  return true;
}

// Words separated by blanks.
inline std::vector<std::string_view> Split(std::string_view s) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
    const size_t start = i;
    while (i < s.size() && s[i] != ' ' && s[i] != '\t') ++i;
    if (i > start) out.push_back(s.substr(start, i - start));
  }
  return out;
}

inline std::vector<std::string_view> SplitOn(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  for (;;) {
    const size_t at = s.find(sep, start);
    out.push_back(s.substr(start, at == std::string_view::npos ? std::string_view::npos
                                                                : at - start));
    if (at == std::string_view::npos) break;
    start = at + 1;
  }
  return out;
}

// A line of integers only; false when any word is not one.
inline bool Ints(std::string_view line, std::vector<long long>& out) {
  out.clear();
  for (auto w : Split(line)) {
    long long v = 0;
    const auto [ptr, ec] = std::from_chars(w.data(), w.data() + w.size(), v);
    if (ec != std::errc() || ptr != w.data() + w.size()) return false;
    out.push_back(v);
  }
  return !out.empty();
}

// "0xB7BB..." or "b7bb..." -> 16 lower-case hex digits (zero-padded); other text as it is.
inline std::string NormalizeHash(std::string_view h) {
  h = Trim(h);
  if (StartsWith(h, "0x") || StartsWith(h, "0X")) h.remove_prefix(2);
  std::string out;
  for (char c : h) {
    const bool hex = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
    if (!hex) return std::string(h);
    out += (c >= 'A' && c <= 'F') ? static_cast<char>(c - 'A' + 'a') : c;
  }
  if (out.size() < 16) out.insert(0, 16 - out.size(), '0');
  return out;
}

inline std::string Printable(std::string_view s, size_t max = 80) {
  std::string out;
  for (char c : s.substr(0, max)) {
    const auto u = static_cast<unsigned char>(c);
    out += (u >= 0x20 && u < 0x7f) ? c : '?';
  }
  if (s.size() > max) out += "...";
  return out;
}

}  // namespace nccl_triage::ras::detail
