#include "core/env_names.h"

#include <algorithm>
#include <array>

namespace nccl_triage {

bool IsNcclVariableName(std::string_view name) {
  if (!name.starts_with("NCCL_") || name.size() == 5) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
}

bool LooksSecret(std::string_view name) {
  static constexpr std::array<std::string_view, 6> kWords = {"TOKEN",    "SECRET", "KEY",
                                                             "PASSWORD", "PASSWD", "CREDENTIAL"};
  auto upper = [](char c) { return c >= 'a' && c <= 'z' ? static_cast<char>(c - 32) : c; };
  while (!name.empty()) {
    size_t end = name.find('_');
    std::string_view word = name.substr(0, end);
    name.remove_prefix(end == std::string_view::npos ? name.size() : end + 1);
    for (std::string_view w : kWords) {
      auto same = [&](std::string_view a) {
        return a.size() == w.size() && std::equal(a.begin(), a.end(), w.begin(),
                                                  [&](char x, char y) { return upper(x) == y; });
      };
      if (same(word) || (word.size() == w.size() + 1 && upper(word.back()) == 'S' &&
                         same(word.substr(0, w.size())))) {
        return true;
      }
    }
  }
  return false;
}

}  // namespace nccl_triage
