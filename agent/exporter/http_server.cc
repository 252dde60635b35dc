#include "exporter/http_server.h"

#include <httplib.h>
#include <sys/socket.h>

#include <charconv>
#include <chrono>
#include <thread>

#include "base/log.h"

namespace nccl_triage {

struct HttpServer::Impl {
  httplib::Server server;
  std::thread thread;
  Logger* log = nullptr;
};

StatusOr<std::pair<std::string, int>> ParseListenAddress(std::string_view address) {
  size_t colon = address.rfind(':');
  if (colon == std::string_view::npos) {
    return InvalidArgument("listen address '" + std::string(address) + "' is not HOST:PORT");
  }
  std::string_view host = address.substr(0, colon);
  std::string_view port_text = address.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  if (host.empty()) host = "0.0.0.0";
  int port = -1;
  auto [ptr, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (ec != std::errc() || ptr != port_text.data() + port_text.size() || port < 0 || port > 65535) {
    return InvalidArgument("listen address '" + std::string(address) + "' has a bad port");
  }
  return std::make_pair(std::string(host), port);
}

HttpServer::HttpServer(Logger* log, int threads) : impl_(std::make_unique<Impl>()) {
  impl_->log = log;
  impl_->server.new_task_queue = [threads] {
    return new httplib::ThreadPool(static_cast<size_t>(threads));
  };
  // Bounded time per connection: a stuck scraper must not hold a worker for long.
  impl_->server.set_read_timeout(5, 0);
  impl_->server.set_write_timeout(5, 0);
  impl_->server.set_keep_alive_timeout(5);
  // SO_REUSEADDR only: httplib's default adds SO_REUSEPORT, with which a second agent on the same
  // port would bind silently and steal half of the scrapes instead of failing at start-up.
  impl_->server.set_socket_options([](int sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
}

HttpServer::~HttpServer() { Stop(); }

namespace {

// The largest request body a handler is given; a larger one is answered 413.
constexpr size_t kMaxBodyBytes = 1 << 20;

void Respond(const HttpHandler& handler, Logger* log, const httplib::Request& req, std::string body,
             httplib::Response& res) {
  HttpRequest r{req.method, req.path, {req.params.begin(), req.params.end()}, std::move(body)};
  HttpReply reply;
  try {
    reply = handler(r);
  } catch (const std::exception& e) {
    if (log) log->Error("http", req.method + " " + req.path + ": " + e.what());
    reply = {500, "text/plain; charset=utf-8", "internal error\n"};
  }
  res.status = reply.status;
  res.set_content(reply.body, reply.content_type.c_str());
}

}  // namespace

void HttpServer::Get(const std::string& path, HttpHandler handler) {
  impl_->server.Get(path, [handler = std::move(handler), log = impl_->log](
                              const httplib::Request& req, httplib::Response& res) {
    Respond(handler, log, req, req.body, res);
  });
}

// A POST without Content-Length or Transfer-Encoding has no body (RFC 9112 6.3), but httplib
// 0.11 reads such a request until the client closes, so `curl -X POST URL` would hang until the
// read timeout. The content-reader form runs before httplib reads the body: read it only when
// the request announces one.
void HttpServer::Post(const std::string& path, HttpHandler handler) {
  impl_->server.Post(path, [handler = std::move(handler), log = impl_->log](
                               const httplib::Request& req, httplib::Response& res,
                               const httplib::ContentReader& content) {
    std::string body;
    if (req.has_header("Content-Length") || req.has_header("Transfer-Encoding")) {
      const bool read = content([&body](const char* data, size_t n) {
        body.append(data, n);
        return body.size() <= kMaxBodyBytes;
      });
      if (!read || body.size() > kMaxBodyBytes) {
        res.status = body.size() > kMaxBodyBytes ? 413 : 400;
        res.set_content(res.status == 413 ? "request body too large\n" : "unreadable body\n",
                        "text/plain; charset=utf-8");
        return;
      }
    }
    Respond(handler, log, req, std::move(body), res);
  });
}

StatusOr<int> HttpServer::Start(const std::string& host, int port) {
  int bound = port == 0 ? impl_->server.bind_to_any_port(host)
                        : (impl_->server.bind_to_port(host, port) ? port : -1);
  if (bound <= 0) {
    return Unavailable("cannot listen on " + host + ":" + std::to_string(port) +
                       " (address in use or not local)");
  }
  port_ = bound;
  impl_->thread = std::thread([this] { impl_->server.listen_after_bind(); });
  // stop() before the accept loop runs would be lost; wait (bounded) until it does.
  for (int i = 0; i < 5000 && !impl_->server.is_running(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return bound;
}

void HttpServer::Stop() {
  if (impl_->thread.joinable()) {
    impl_->server.stop();
    impl_->thread.join();
  }
}

}  // namespace nccl_triage
