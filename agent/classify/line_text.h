// Text helpers of the classifier: what a line says, read without regard to its NCCL prefix.
//
// Pure functions of their argument; the regular expressions are compiled once and shared
// (thread-safe).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace nccl_triage::classify {

inline bool StartsWith(std::string_view s, std::string_view p) {
  return s.substr(0, p.size()) == p;
}
inline bool EndsWith(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}
inline std::string_view Cap(std::string_view s, size_t n) {
  return s.size() > n ? s.substr(0, n) : s;
}

// Valid UTF-8 stays; invalid bytes become U+FFFD and control characters (except tab) become '?',
// so evidence is always printable and serialisable as JSON.
std::string Sanitize(std::string_view s);

// The source file of a WARN's `file.cc:LINE` (`misc/shmutils.cc:103 (func)` -> `misc/shmutils.cc`).
std::string_view FileOnly(std::string_view file);

// A result row of nccl-tests (`  8388608  2097152  float  sum  -1  123.4  68.00  127.50  0 ...`):
// size, count, type, [redop,] [root,] time, algbw, busbw and the check: #wrong 0 or N/A in
// nccl-tests 2.x, and before it the largest error as a float (`0e+00`, or a rounding error of
// 1e-5 or less; a larger one is wrong data, not a pass).
bool IsTestsResultRow(std::string_view text);

// A line of an RDMA network plugin that loaded (HPC-X's `P2P plugin IBext`, `NET/Plugin: Loaded
// net plugin NCCL RDMA Plugin (v5)`, `Loaded coll plugin SHARP`), in the message of an INFO line.
bool IsRdmaPluginLine(std::string_view msg);

// A step of the program that uses the communicator, printed after it ran (training and
// benchmark loops: `Iteration: 10. Average time per step so far: 0.0013`, `step 200 | loss 2.31`,
// `{'loss': 1.92, 'learning_rate': 2e-05, 'epoch': 0.4}`, `Iter #9: 412.3 img/sec per GPU`,
// `Epoch 1: 100%|...| 50/50 [00:10<00:00, 4.9it/s]`): a counted step with a measured figure.
// Each step of a data-parallel loop runs collectives, so a step that finished is a collective
// that completed; a step count alone (a progress bar at 0 %) or a figure alone is not.
bool IsProgressLine(std::string_view text);

// A program's own word that its NCCL collectives worked (`vLLM NCCL is successful!`, `all_reduce
// test passed`, a benchmark's rate with its own data check): positive evidence, as nccl-tests'
// rows are.
bool IsProgramSuccessLine(std::string_view text);

// "2.28.9" from "NCCL version 2.28.9+cuda13.0", or empty.
std::string ParseVersion(std::string_view text);

// Whether s starts with prefix, ignoring the case of s (prefix is upper case).
bool IEqualsPrefix(std::string_view s, std::string_view prefix);
std::string ToUpper(std::string_view s);

}  // namespace nccl_triage::classify
