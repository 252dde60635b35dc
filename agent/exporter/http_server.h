// HttpServer: the HTTP/1.1 endpoints of the agent (/metrics, /livez, /readyz, /status) and of the
// coordinator (the same and POST /sweep), served by libmicrohttpd. Handlers are plain functions
// from a request to a reply, so they are tested without a socket.
//
// libmicrohttpd parses the requests and drives every connection from one epoll thread, so a slow
// client holds a small buffer, never a thread. On top of it:
//   - each connection has a fixed memory pool (HttpServerOptions::connection_memory): a request
//     head that does not fit is answered 431 and closed, so a header flood costs at most that much;
//     more than max_headers header fields is 431 too, a body above max_body_bytes 413;
//   - a request head must arrive whole within request_timeout of the connection's start or of the
//     previous reply (408 and close; a slowloris that trickles a byte a second is cut there), and a
//     connection silent for idle_timeout is closed;
//   - connections are counted per client address and in all. Up to max_connections (and
//     max_connections_per_peer from one address) go to the general pool; the connections above
//     that go to a reserve of health_connections (health_connections_per_peer per address) that
//     serves only the health paths (GetHealth: /livez, /readyz): a request line for another path
//     is answered 503 and closed at once, every connection is cut after health_timeout, and when
//     the reserve is full a newcomer takes the place of its oldest connection that has sent no
//     request line within 20 ms (a kubelet sends its probe as soon as it connects); a newcomer
//     whose health request already arrived when it is accepted always gets a place. A place
//     serves one probe (Connection: close). A flood of slow or idle clients therefore fills the
//     general pool and never the kubelet's way in; other connections above both get 503;
//   - ordinary handlers run on a pool of worker threads (the connection is suspended meanwhile);
//     health handlers run at once on the I/O thread, so a slow /status never delays /livez.
//
// Start() binds (port 0 picks a free port, which tests use). Stop() (and the destructor) closes
// every connection and joins every thread. Handlers run on the worker threads and must be
// thread-safe; health handlers must also be quick. Register handlers before Start().
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"

namespace nccl_triage {

class Logger;

struct HttpRequest {
  std::string method;
  std::string path;                                // percent-decoded, without the query
  std::multimap<std::string, std::string> params;  // query parameters, decoded
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
  int threads = 4;  // workers for ordinary handlers
  int max_connections = 256;
  int max_connections_per_peer = 8;
  int health_connections = 32;  // the reserve for /livez and /readyz, beyond max_connections
  int health_connections_per_peer = 4;
  size_t connection_memory = 32 * 1024;  // per connection: the request head and I/O buffers
  size_t max_headers = 64;               // header fields; real clients send fewer than 15
  size_t max_body_bytes = 1 << 20;       // a larger body is answered 413
  std::chrono::milliseconds request_timeout{10'000};  // start or last reply to a whole head
  std::chrono::seconds idle_timeout{5};               // a connection without any traffic
  std::chrono::milliseconds health_timeout{2'000};    // a connection of the reserve, in all
};

// What the server turned away since Start(); tests and logs read it.
struct HttpServerCounters {
  uint64_t requests = 0;       // requests handed to a handler
  uint64_t refused_peer = 0;   // connections over both per-address caps
  uint64_t refused_total = 0;  // connections over both pools
  uint64_t reserved = 0;       // connections served by the health reserve
  uint64_t bad_requests = 0;   // heads answered 4xx here before a handler (too many fields, 413)
  uint64_t timed_out = 0;      // connections cut at request_timeout or health_timeout
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
  // A GET for a health probe: answered on the I/O thread and by the reserve of connections.
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
