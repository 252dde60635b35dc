// HttpServer: one small HTTP server (cpp-httplib) for /metrics, /livez, /readyz and /status of the
// agent, and for the coordinator's endpoints; handlers are plain functions from a request to a
// reply, so they are tested without a socket.
//
// Start() binds (port 0 picks a free port, which tests use) and serves on a background thread
// with a small fixed pool, so a slow client cannot starve the others and an idle server costs no
// CPU. Stop() (and the destructor) ends it and joins. Handlers run on the pool's threads and must
// be thread-safe. Register handlers before Start().
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "base/status.h"

namespace nccl_triage {

class Logger;

struct HttpRequest {
  std::string method;
  std::string path;
  std::multimap<std::string, std::string> params;  // query parameters
  std::string body;
};

struct HttpReply {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

using HttpHandler = std::function<HttpReply(const HttpRequest&)>;

// "0.0.0.0:9500", "127.0.0.1:0", "[::1]:9500", ":9500" (all interfaces) -> host and port.
StatusOr<std::pair<std::string, int>> ParseListenAddress(std::string_view address);

class HttpServer {
 public:
  explicit HttpServer(Logger* log = nullptr, int threads = 4);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  void Get(const std::string& path, HttpHandler handler);
  void Post(const std::string& path, HttpHandler handler);

  // Binds and starts serving; returns the bound port.
  StatusOr<int> Start(const std::string& host, int port);
  void Stop();
  int port() const { return port_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int port_ = 0;
};

}  // namespace nccl_triage
