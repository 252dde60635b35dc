// UTF-8 validity for text that comes from the host or its users (kernel log lines, process names,
// sysfs values, pod names). The project's one sanitiser: every label value and JSON string made
// from such text passes through it (the JSON writer core/json_text.h applies the same rule).
// Pure; thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace nccl_triage {

// The replacement character U+FFFD, as UTF-8.
inline constexpr std::string_view kUtf8Replacement = "\xEF\xBF\xBD";

// Length (1..4) of the well-formed UTF-8 sequence that starts at s[i], or 0 when the bytes there
// are not one: a stray continuation byte, a truncated sequence, an overlong form, a surrogate or a
// code point above U+10FFFF.
size_t Utf8SequenceLength(std::string_view s, size_t i);

// Whether all of `s` is well-formed UTF-8.
bool IsValidUtf8(std::string_view s);

// `s` with each byte that does not start a well-formed sequence replaced by U+FFFD; valid text
// (ASCII control characters included) is returned unchanged.
std::string SanitizeUtf8(std::string_view s);

// The longest prefix of `s` of at most `max_bytes` bytes that does not end inside a sequence.
std::string_view Utf8Prefix(std::string_view s, size_t max_bytes);

}  // namespace nccl_triage
