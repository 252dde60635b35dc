// The part of a workload's environment that nccl-triage may keep: NCCL_* settings and a short
// allow-list of GPU placement variables. Everything else is dropped while parsing.
//
// Environments carry secrets (tokens, passwords, cloud keys). Nothing outside the allow-list is
// copied out of the raw /proc/<pid>/environ buffer: not into the result, not into a log line,
// not into an error message (errors name the variable count or the position, never a value or a
// name outside the allow-list). Pure functions; thread-safe.
#pragma once

#include <map>
#include <span>
#include <string>
#include <string_view>

namespace nccl_triage::workload {

// Names kept besides NCCL_*: which GPUs and which rank a process is. Documented in the README.
std::span<const std::string_view> EnvironAllowList();

// True for the names that may be kept: "NCCL_" followed by [A-Z0-9_]+, or an allow-listed name.
bool IsKeptEnvName(std::string_view name);

struct FilteredEnviron {
  std::map<std::string, std::string> kept;  // allow-listed names only
  int total = 0;                            // entries seen in the buffer
  int malformed = 0;   // entries with no '=' or a name that is not a plain identifier
  int bad_values = 0;  // allow-listed names whose value is not printable text (or too long)
  friend bool operator==(const FilteredEnviron&, const FilteredEnviron&) = default;
};

// Longest value kept; NCCL settings are short, anything longer is not one.
inline constexpr size_t kMaxEnvValueBytes = 1024;

// Parses a NUL-separated environ buffer ("A=1\0B=2\0"). Binary garbage, missing '=', a missing
// final NUL and empty entries are tolerated: such entries are counted and skipped.
FilteredEnviron FilterEnviron(std::string_view raw);

}  // namespace nccl_triage::workload
