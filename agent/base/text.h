// Small text helpers shared across components. Header-only; pure.
#pragma once

#include <string>
#include <string_view>

namespace nccl_triage {

// a == b with ASCII letters compared without case ("GPU-6F4D" == "gpu-6f4d", "socket" == "Socket").
inline bool EqualsIgnoringAsciiCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    auto lower = [](char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c; };
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

// At most `max` bytes of `s`, each byte outside printable ASCII (0x20..0x7e) replaced by
// `replacement`: a one-line excerpt of bytes that may be anything (a garbage result line, a
// malformed id). Text that should keep its UTF-8 goes through base/utf8.h instead.
inline std::string PrintableAscii(std::string_view s, size_t max, char replacement = '?') {
  std::string out(s.substr(0, max));
  for (char& c : out) {
    if (c < 0x20 || c > 0x7e) c = replacement;
  }
  return out;
}

// The items of a range of strings with sep between them: Join(std::vector{"a", "b"}) == "a, b".
// The one join of the code base; paths are joined by the file helpers, not here.
template <typename Range>
std::string Join(const Range& items, std::string_view sep = ", ") {
  std::string out;
  bool first = true;
  for (const auto& item : items) {
    if (!first) out.append(sep);
    out.append(std::string_view(item));
    first = false;
  }
  return out;
}

}  // namespace nccl_triage
