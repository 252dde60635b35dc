#include "triage/frames.h"

#include <charconv>
#include <nlohmann/json.hpp>

#include "core/json_text.h"

namespace nccl_triage::triage {
namespace {

constexpr size_t kMaxHeader = 48;  // "L 18446744073709551615 1048576\n" and some slack

bool ParseNumber(std::string_view s, uint64_t* out) {
  if (s.empty()) return false;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && ptr == s.data() + s.size();
}

}  // namespace

std::string JsonFrame(std::string_view type, nlohmann::json record) {
  record["type"] = type;
  std::string body = DumpJson(record);
  return "J 0 " + std::to_string(body.size()) + "\n" + body;
}

std::string LogFrameHeader(uint64_t stream, size_t length) {
  return "L " + std::to_string(stream) + " " + std::to_string(length) + "\n";
}

Status FrameDecoder::Feed(std::string_view bytes, const Handler& on_frame) {
  if (!error_.ok()) return error_;
  buf_.append(bytes);
  size_t pos = 0;
  auto fail = [&](std::string message) {
    error_ = InvalidArgument(std::move(message));
    buf_.clear();
    return error_;
  };
  if (!magic_seen_) {
    const size_t n = std::min(buf_.size(), kFetchMagic.size());
    if (std::string_view(buf_).substr(0, n) != kFetchMagic.substr(0, n)) {
      return fail("not a triage-fetch stream (it does not start with " +
                  std::string(kFetchMagic.substr(0, kFetchMagic.size() - 1)) + ")");
    }
    if (buf_.size() < kFetchMagic.size()) return Status::Ok();
    magic_seen_ = true;
    pos = kFetchMagic.size();
  }
  while (pos < buf_.size()) {
    std::string_view rest = std::string_view(buf_).substr(pos);
    const size_t nl = rest.substr(0, kMaxHeader).find('\n');
    if (nl == std::string_view::npos) {
      if (rest.size() >= kMaxHeader) return fail("a frame header is longer than a header can be");
      break;
    }
    std::string_view header = rest.substr(0, nl);
    const size_t sp1 = header.find(' ');
    const size_t sp2 = sp1 == std::string_view::npos ? sp1 : header.find(' ', sp1 + 1);
    uint64_t stream = 0;
    uint64_t length = 0;
    if (sp1 != 1 || sp2 == std::string_view::npos ||
        !ParseNumber(header.substr(sp1 + 1, sp2 - sp1 - 1), &stream) ||
        !ParseNumber(header.substr(sp2 + 1), &length)) {
      return fail("a malformed frame header");
    }
    const char kind = header[0];
    if (kind != 'J' && kind != 'L')
      return fail(std::string("a frame of unknown kind '") + kind + "'");
    const size_t bound = kind == 'J' ? kMaxJsonFrame : kMaxLogFrame;
    if (length > bound) {
      return fail("a frame of " + std::to_string(length) + " bytes (at most " +
                  std::to_string(bound) + ")");
    }
    if (rest.size() < nl + 1 + length) break;
    Frame f{kind, stream, rest.substr(nl + 1, length)};
    Status s = on_frame(f);
    if (!s.ok()) {
      error_ = s;
      buf_.clear();
      return error_;
    }
    pos += nl + 1 + length;
  }
  buf_.erase(0, pos);
  return Status::Ok();
}

Status FrameDecoder::Finish() const {
  if (!error_.ok()) return error_;
  if (!magic_seen_) return InvalidArgument("the stream ended before it began (no magic line)");
  if (!buf_.empty()) return InvalidArgument("the stream ended inside a frame");
  return Status::Ok();
}

}  // namespace nccl_triage::triage
