// libFuzzer target: what HttpServer does with the bytes a client sends, without a socket. The
// input is cut into reads of input-chosen sizes and searched for the end of the head as the
// server searches it (resuming where it stopped), which must agree with one search over the
// whole; the head is parsed under the default and under small limits; ParseListenAddress takes the
// same bytes. Nothing may crash; a parsed head respects its limits; an error has a 4xx/5xx status
// and a reason; the response written for it is a complete head.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdlib>
#include <string>

#include "exporter/http_server.h"
#include "exporter/http_server_protocol.h"
#include "fuzz_check.h"

using nccl_triage::fuzz::Require;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace nccl_triage;
  FuzzedDataProvider in(data, size);
  const size_t small_headers = in.ConsumeIntegralInRange<size_t>(0, 8);
  const std::string bytes = in.ConsumeRemainingBytesAsString();
  FuzzedDataProvider cuts(data, size);

  // Incremental search, in the server's way, against one search over everything.
  std::string buffer;
  size_t scanned = 0, at = 0;
  std::optional<size_t> end;
  while (at < bytes.size() && !end) {
    const size_t n = std::min(bytes.size() - at, cuts.ConsumeIntegralInRange<size_t>(1, 64));
    buffer.append(bytes, at, n);
    at += n;
    end = FindHeadEnd(buffer, scanned);
    scanned = buffer.size();
  }
  Require(end == FindHeadEnd(bytes));

  const std::string_view head = end ? std::string_view(bytes).substr(0, *end) : bytes;
  HttpLimits small;
  small.max_headers = small_headers;
  small.max_head_bytes = 256;
  small.max_target_bytes = 64;
  for (const HttpLimits& limits : {HttpLimits{}, small}) {
    HttpHeadResult r = ParseHttpHead(head, limits);
    if (r.head) {
      Require(r.head->headers.size() <= limits.max_headers);
      Require(!r.head->path.empty() && r.head->path.front() == '/');
      Require(!r.head->method.empty());
    } else {
      Require(r.error_status >= 400 && r.error_status < 600 && !r.error.empty());
      const std::string response = FormatHttpResponse(r.error_status, "text/plain", r.error, false);
      Require(FindHeadEnd(response).has_value());
    }
  }
  if (auto addr = ParseListenAddress(bytes); addr.ok()) {
    Require(addr->second >= 0 && addr->second <= 65535 && !addr->first.empty());
  }
  return 0;
}
