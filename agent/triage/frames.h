// The stream between `nccl-triage-server triage-fetch` (the child that reads the API over HTTPS)
// and `nccl-triage triage` (the small binary, which classifies as it reads).
//
// Logs can be gigabytes and hostile, so the contract is framed, bounded and streamed: the child
// writes a magic line, then frames `<kind> <stream> <length>\n<length bytes>`. Kind `J` carries
// one JSON record (a pod, an agent verdict, the start or end of a log; at most 1 MiB), kind `L`
// a piece of one log's bytes (at most 64 KiB) for the log opened as `<stream>`. The parent never
// holds more than one frame, and a stream that breaks the contract (another magic, a bad header,
// an oversized frame, a frame cut at the end) is refused with a line, never misread.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

#include "base/status.h"

namespace nccl_triage::triage {

inline constexpr std::string_view kFetchMagic = "nccl-triage/triage-fetch/v1\n";
inline constexpr size_t kMaxJsonFrame = 1 << 20;
inline constexpr size_t kMaxLogFrame = 64 << 10;

// A JSON record frame; `type` becomes the record's "type" field.
std::string JsonFrame(std::string_view type, nlohmann::json record);
// The header of a log frame; the caller writes `length` (<= kMaxLogFrame) bytes after it.
std::string LogFrameHeader(uint64_t stream, size_t length);

struct Frame {
  char kind = 0;  // 'J' or 'L'
  uint64_t stream = 0;
  std::string_view payload;  // valid only during the callback
};

// Cuts a byte stream, fed in pieces of any size, into frames.
class FrameDecoder {
 public:
  using Handler = std::function<Status(const Frame&)>;

  // Calls `on_frame` for every complete frame. An error (the contract broken, or the handler's
  // own) sticks: later calls return it.
  Status Feed(std::string_view bytes, const Handler& on_frame);
  // At the end of the stream: an error when it ended inside a frame or before the magic line.
  Status Finish() const;

 private:
  std::string buf_;
  bool magic_seen_ = false;
  Status error_;
};

}  // namespace nccl_triage::triage
