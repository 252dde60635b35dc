// HttpServer: the small HTTP/1.1 server of the agent (/metrics, /livez, /readyz, /status) and of
// the coordinator (the same and POST /sweep). Handlers are plain functions from a request to a
// reply, so they are tested without a socket.
//
// Built to stay up under hostile clients, which cpp-httplib 0.11 did not: there a
// worker thread read each connection with a 5 s timeout per read and no total, so four clients
// sending a header line every 3 s held all four workers and /livez timed out; and it stored every
// header line it was sent, so one request of a million headers cost 200 MB. Here:
//   - one I/O thread reads and writes every connection without blocking (poll), so a slow client
//     holds a buffer, never a thread;
//   - a request head is cut at HttpLimits::max_head_bytes and max_headers while it arrives, before
//     it is parsed (431), a body above max_body_bytes is refused before it is read (413);
//   - a request must arrive whole within request_timeout of its first byte (408 and close), an
//     idle keep-alive connection is closed after idle_timeout, a reply must be taken within
//     write_timeout;
//   - at most max_connections_per_peer connections per client address and max_connections in all;
//     a connection above either is answered 503 and closed at once;
//   - handlers run on a pool of worker threads, and health handlers (GetHealth: /livez, /readyz)
//     on a thread of their own, so a slow /status or /metrics never delays a liveness probe.
//
// Start() binds (port 0 picks a free port, which tests use). Stop() (and the destructor) closes
// every connection and joins every thread. Handlers run on the worker threads and must be
// thread-safe; health handlers must also be quick. Register handlers before Start().
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "exporter/http_server_protocol.h"

namespace nccl_triage {

class Logger;

struct HttpRequest {
  std::string method;
  std::string path;
  std::multimap<std::string, std::string> params;  // query parameters
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // names in lower case
  std::string peer;                                          // client address, "10.0.0.7"

  // The first value of header `name` (lower case), or "" when absent.
  std::string_view Header(std::string_view name) const;
};

struct HttpReply {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // extra response headers
};

using HttpHandler = std::function<HttpReply(const HttpRequest&)>;

// "0.0.0.0:9500", "127.0.0.1:0", "[::1]:9500", ":9500" (all interfaces) -> host and port.
StatusOr<std::pair<std::string, int>> ParseListenAddress(std::string_view address);

struct HttpServerOptions {
  int threads = 4;  // workers for ordinary handlers; health handlers have one more of their own
  HttpLimits limits;
  int max_connections = 256;
  int max_connections_per_peer = 8;
  std::chrono::milliseconds request_timeout{10'000};  // first byte to whole request
  std::chrono::milliseconds idle_timeout{5'000};      // keep-alive connection without a request
  std::chrono::milliseconds write_timeout{10'000};    // reply ready to reply taken
  int max_requests_per_connection = 100;
};

// What the server turned away since Start(); tests and logs read it.
struct HttpServerCounters {
  uint64_t requests = 0;       // requests handed to a handler
  uint64_t refused_peer = 0;   // connections over max_connections_per_peer
  uint64_t refused_total = 0;  // connections over max_connections
  uint64_t bad_requests = 0;   // heads answered 4xx/5xx before a handler (431, 400, 413, ...)
  uint64_t timed_out = 0;      // connections closed by a deadline
};

class HttpServer {
 public:
  explicit HttpServer(Logger* log = nullptr, int threads = 4);
  HttpServer(Logger* log, HttpServerOptions options);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  void Get(const std::string& path, HttpHandler handler);
  void Post(const std::string& path, HttpHandler handler);
  // A GET for a health probe: served by its own thread, never queued behind other handlers.
  void GetHealth(const std::string& path, HttpHandler handler);

  // Binds and starts serving; returns the bound port.
  StatusOr<int> Start(const std::string& host, int port);
  void Stop();
  int port() const { return port_; }
  HttpServerCounters counters() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int port_ = 0;
};

}  // namespace nccl_triage
