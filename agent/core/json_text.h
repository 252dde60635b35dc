// DumpJson: the one way JSON made from host or user data becomes text.
//
// nlohmann's dump() throws on a string that is not UTF-8, and a kernel log line, a process name
// or a sysfs value can hold any bytes: one such byte would abort `check --format json` or answer
// every GET /status with 500. DumpJson never throws on text: strings and object keys that are not
// well-formed UTF-8 are written through SanitizeUtf8 (base/utf8.h: each bad byte becomes U+FFFD).
// Pure; thread-safe.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>

namespace nccl_triage {

// `j` as text (indent < 0: one line), every string valid UTF-8.
std::string DumpJson(const nlohmann::json& j, int indent = -1);

// A copy of `j` whose strings and keys are valid UTF-8 (for writers that need the value).
nlohmann::json SanitizedJson(const nlohmann::json& j);

// The string member `key` of an object, or "" (not an object, no such member, not a string):
// how the readers of API server answers take a field that may be missing or malformed.
std::string StringMember(const nlohmann::json& j, const char* key);

}  // namespace nccl_triage
