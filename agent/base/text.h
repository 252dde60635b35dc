// Small text helpers shared across components. Header-only; pure.
#pragma once

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

}  // namespace nccl_triage
