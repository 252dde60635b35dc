#include "base/byte_size.h"

#include <array>
#include <charconv>
#include <system_error>
#include <utility>

namespace nccl_triage {

std::optional<uint64_t> ParseByteSize(std::string_view text) {
  size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  if (digits == 0) return std::nullopt;
  uint64_t n = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + digits, n);
  if (ec != std::errc()) return std::nullopt;
  // Every unit kByteSizePattern names, with its power of two.
  static constexpr std::array<std::pair<std::string_view, int>, 15> kUnits = {{
      {"", 0},     {"B", 0},    {"K", 10},   {"k", 10},   {"Ki", 10},
      {"KiB", 10}, {"M", 20},   {"Mi", 20},  {"MiB", 20}, {"G", 30},
      {"Gi", 30},  {"GiB", 30}, {"T", 40},   {"Ti", 40},  {"TiB", 40},
  }};
  const std::string_view unit = text.substr(digits);
  for (const auto& [name, shift] : kUnits) {
    if (unit != name) continue;
    if (shift > 0 && n > (UINT64_MAX >> shift)) return std::nullopt;
    return n << shift;
  }
  return std::nullopt;
}

}  // namespace nccl_triage
