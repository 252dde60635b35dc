// Filling a printf format with sample arguments, for tests that turn NCCL's format strings (the
// message catalogues) into the lines NCCL would print. `value(conv, index)` gives the text of the
// index-th conversion, whose letter is `conv` ('s', 'd', 'u', 'x', 'f', 'p', ...); `%%` is a
// percent sign. Flags, width, precision and length modifiers are skipped.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace nccl_triage::testing {

inline std::string FillPrintf(std::string_view format,
                              const std::function<std::string(char conv, size_t index)>& value) {
  std::string out;
  size_t index = 0;
  for (size_t i = 0; i < format.size(); ++i) {
    if (format[i] != '%') {
      out.push_back(format[i]);
      continue;
    }
    size_t j = i + 1;
    while (j < format.size() && std::string_view("-+ #0'123456789.*hlLqjzt").find(format[j]) !=
                                    std::string_view::npos) {
      ++j;
    }
    const char conv = j < format.size() ? format[j] : 's';
    out += conv == '%' ? std::string("%") : value(conv, index++);
    i = j;
  }
  return out;
}

}  // namespace nccl_triage::testing
