// The HTTP/1.1 that HttpServer speaks, as pure functions of text: where a request head ends, the
// head parsed under hard limits, and a response written out. No sockets here, so the parser is
// tested with string literals and fuzzed (fuzz/exporter).
//
// Only what the agent's and the coordinator's endpoints need: GET and POST in origin form, a body
// only with Content-Length (Transfer-Encoding is answered 501), keep-alive by the HTTP/1.0 and 1.1
// rules. Every limit is checked while parsing, so an over-long head or too many header lines is an
// error status (431, 414, 400) before anything is stored for it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace nccl_triage {

// Bounds on one request. The server reads no more than max_head_bytes before it has seen the end
// of the head, so a header flood costs at most that much memory per connection.
struct HttpLimits {
  size_t max_head_bytes = 16 * 1024;  // request line and header lines, with their line ends
  size_t max_headers = 64;            // header lines; real clients send fewer than 15
  size_t max_target_bytes = 4096;     // the request target (path and query)
  size_t max_body_bytes = 1 << 20;    // Content-Length above this is answered 413
};

// A request head that parsed within the limits. Header names are lower case; values are trimmed.
struct HttpHead {
  std::string method;
  std::string path;                                // percent-decoded, without the query
  std::multimap<std::string, std::string> params;  // query parameters, decoded
  std::vector<std::pair<std::string, std::string>> headers;
  size_t content_length = 0;
  bool keep_alive = false;       // the client may send another request on this connection
  bool expect_continue = false;  // "Expect: 100-continue"
};

// What ParseHttpHead gives: a head, or the status to answer (400, 414, 431, 501, 505) and why.
struct HttpHeadResult {
  std::optional<HttpHead> head;
  int error_status = 0;
  std::string error;
};

// The offset just past the blank line that ends the head in `buffer` (CRLF CRLF, or bare LF as RFC
// 9112 allows), or nullopt when it has not arrived yet. The search starts at `from` (the length
// already searched) so that a head arriving a byte at a time costs linear time.
std::optional<size_t> FindHeadEnd(std::string_view buffer, size_t from = 0);

// Parses the head (everything before the blank line, which may be included).
HttpHeadResult ParseHttpHead(std::string_view head, const HttpLimits& limits = {});

// "%2F" -> "/"; with plus_is_space (query strings) '+' -> ' '. A malformed escape stays as it is.
std::string PercentDecode(std::string_view text, bool plus_is_space);

// "Not Found" for 404; "Unknown" for a code without a phrase here.
std::string_view ReasonPhrase(int status);

// A whole response: status line, Content-Type, Content-Length, Connection, the extra headers,
// the body.
std::string FormatHttpResponse(
    int status, std::string_view content_type, std::string_view body, bool keep_alive,
    const std::vector<std::pair<std::string, std::string>>& headers = {});

}  // namespace nccl_triage
