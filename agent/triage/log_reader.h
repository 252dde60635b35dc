// LogReader: one container log, as the API streams it, into the classifier.
//
// The triage asks the API for `timestamps=true`: the container runtime's RFC 3339 time before
// each line is the one clock all pods of a job share (NCCL prints its own only when told to),
// so it orders the first failures of different pods. The reader splits the byte stream into
// lines (bounded: a line is cut at 8 KiB, the rest dropped), takes the time off, feeds the text
// to the classifier and remembers when lines were written — exactly for lines that can become a
// rank's first failure, approximately (a checkpoint every 256 lines) for the others — so the
// summary can say when this log's first failing line was written.
//
// A log read as a head and a tail (the head cut at its byte limit) is fed as the head, then
// StartTail(), then the tail: the head's cut last line is dropped and tail lines no later than
// the head's last line are skipped (the two reads overlap when the log is short).
//
// Pure and bounded: memory does not grow with the log. One reader per log.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "classify/classifier.h"
#include "core/classification.h"

namespace nccl_triage::triage {

// "2024-05-01T12:00:00.123456789Z" (or with an offset) -> nanoseconds since the epoch.
std::optional<int64_t> ParseRfc3339Nanos(std::string_view text);

// What one log says, and when.
struct LogSummary {
  Classification classification;
  uint64_t bytes = 0;               // as received, timestamps included
  uint64_t lines = 0;               // fed to the classifier
  std::optional<int64_t> first_ns;  // the runtime's time of the first and last line read
  std::optional<int64_t> last_ns;
  std::optional<int64_t> root_ns;  // when the log's first failing line (roots[0]) was written
  bool root_time_exact = false;    // false: the checkpoint before it
  uint64_t gap_after_line = 0;     // > 0: lines after this one come from the tail read
  uint64_t overlap_lines = 0;      // tail lines skipped, already read in the head
  uint64_t cut_lines = 0;          // lines longer than 8 KiB, cut
};

class LogReader {
 public:
  LogReader() = default;
  LogReader(const LogReader&) = delete;
  LogReader& operator=(const LogReader&) = delete;

  void Feed(std::string_view bytes);
  void StartTail();
  LogSummary Finish();  // call once

 private:
  void Line(std::string_view line);

  LogClassifier classifier_;
  std::string partial_;
  bool partial_cut_ = false;
  bool in_tail_ = false;
  std::optional<int64_t> head_last_ns_;
  LogSummary s_;
  std::vector<std::pair<uint64_t, int64_t>> marks_;        // (line, time) of candidate roots
  std::vector<std::pair<uint64_t, int64_t>> checkpoints_;  // (line, time) every 256 lines
};

}  // namespace nccl_triage::triage
