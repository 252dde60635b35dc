#include "exporter/http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>

#include "base/log.h"

namespace nccl_triage {

std::string_view HttpRequest::Header(std::string_view name) const {
  for (const auto& [n, v] : headers) {
    if (n == name) return v;
  }
  return {};
}

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

namespace {

using Clock = std::chrono::steady_clock;

// After a reply that closes the connection, what the client still sends is read and dropped for
// this long (or this much) before the close: closing with unread input makes the kernel send a
// reset, and the client would see "connection reset" instead of our 431 or 413.
constexpr auto kLinger = std::chrono::milliseconds(1000);
constexpr size_t kLingerBytes = 1 << 20;
// Accepts per wake-up, so a connection flood cannot keep the loop from serving the others.
constexpr int kAcceptBurst = 64;

struct Route {
  HttpHandler handler;
  bool health = false;
};

struct Job {
  uint64_t conn = 0;
  HttpRequest request;
  const Route* route = nullptr;
  bool keep_alive = false;
};

struct Done {
  uint64_t conn = 0;
  std::string bytes;
  bool keep_alive = false;
};

// Jobs for one kind of worker, taken in arrival order.
struct JobQueue {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Job> jobs;
  bool stopping = false;
};

struct Conn {
  enum class State { kReading, kHandling, kWriting, kLingering };
  int fd = -1;
  std::string peer;
  State state = State::kReading;
  std::string in;
  size_t scanned = 0;            // bytes of `in` already searched for the end of the head
  std::optional<HttpHead> head;  // parsed, waiting for its body
  size_t head_bytes = 0;
  bool request_started = false;
  std::string out;
  size_t out_done = 0;
  bool close_after_write = false;
  int served = 0;
  size_t lingered = 0;
  Clock::time_point deadline;
};

std::string PeerAddress(const sockaddr_storage& ss) {
  char text[INET6_ADDRSTRLEN] = {};
  if (ss.ss_family == AF_INET) {
    const auto& a = reinterpret_cast<const sockaddr_in&>(ss);
    inet_ntop(AF_INET, &a.sin_addr, text, sizeof(text));
  } else if (ss.ss_family == AF_INET6) {
    const auto& a = reinterpret_cast<const sockaddr_in6&>(ss);
    if (IN6_IS_ADDR_V4MAPPED(&a.sin6_addr)) {
      inet_ntop(AF_INET, &a.sin6_addr.s6_addr[12], text, sizeof(text));
    } else {
      inet_ntop(AF_INET6, &a.sin6_addr, text, sizeof(text));
    }
  }
  return text[0] ? text : "unknown";
}

}  // namespace

struct HttpServer::Impl {
  explicit Impl(Logger* l, HttpServerOptions o) : log(l), options(std::move(o)) {}

  Logger* log;
  HttpServerOptions options;
  std::map<std::string, Route> get_routes, post_routes;

  int listen_fd = -1;
  int wake_fd = -1;
  std::atomic<bool> stop_io{false};
  std::thread io_thread;
  std::vector<std::thread> workers;
  JobQueue pool, health;
  std::mutex done_mu;
  std::vector<Done> done;

  // Owned by the I/O thread.
  std::unordered_map<uint64_t, Conn> conns;
  std::unordered_map<std::string, int> per_peer;
  uint64_t next_conn = 1;
  Clock::time_point accept_paused_until{};
  Clock::time_point last_note{};
  uint64_t unnoted = 0;

  std::atomic<uint64_t> requests{0}, refused_peer{0}, refused_total{0}, bad_requests{0},
      timed_out{0};

  void Wake() {
    uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(wake_fd, &one, sizeof(one));
  }

  // Refusals are logged at most once a minute with a count, so a flood cannot flood the log.
  void Note(const std::string& what) {
    ++unnoted;
    const auto now = Clock::now();
    if (log == nullptr || now - last_note < std::chrono::seconds(60)) return;
    log->Warn("http", what + (unnoted > 1 ? " (" + std::to_string(unnoted) +
                                                " refusals since the last such line)"
                                          : ""));
    last_note = now;
    unnoted = 0;
  }

  void Close(uint64_t id) {
    auto it = conns.find(id);
    if (it == conns.end()) return;
    ::close(it->second.fd);
    if (auto p = per_peer.find(it->second.peer); p != per_peer.end() && --p->second <= 0) {
      per_peer.erase(p);
    }
    conns.erase(it);
  }

  void Reply(uint64_t id, Conn& c, std::string bytes, bool keep_alive) {
    c.out = std::move(bytes);
    c.out_done = 0;
    c.state = Conn::State::kWriting;
    c.close_after_write =
        !keep_alive || ++c.served >= options.max_requests_per_connection || stop_io;
    c.deadline = Clock::now() + options.write_timeout;
    Write(id, c);
  }

  void Refuse(uint64_t id, Conn& c, int status, const std::string& why) {
    ++bad_requests;
    Note("refused a request from " + c.peer + ": " + std::to_string(status) + " " + why);
    Reply(id, c, FormatHttpResponse(status, "text/plain; charset=utf-8", why + "\n", false), false);
  }

  void Write(uint64_t id, Conn& c) {
    while (c.out_done < c.out.size()) {
      ssize_t n = ::send(c.fd, c.out.data() + c.out_done, c.out.size() - c.out_done, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      if (n <= 0) {
        Close(id);
        return;
      }
      c.out_done += static_cast<size_t>(n);
    }
    c.out.clear();
    if (c.close_after_write) {
      // Half-close, then drop what the client still sends until it closes too (see kLinger).
      ::shutdown(c.fd, SHUT_WR);
      c.state = Conn::State::kLingering;
      c.deadline = Clock::now() + kLinger;
      c.lingered = 0;
      return;
    }
    c.state = Conn::State::kReading;
    c.request_started = !c.in.empty();
    c.deadline =
        Clock::now() + (c.request_started ? options.request_timeout : options.idle_timeout);
    if (c.request_started) Process(id, c);  // a pipelined request already arrived
  }

  // Turns what has arrived into a request when it is whole; refuses it as soon as it cannot be.
  void Process(uint64_t id, Conn& c) {
    const HttpLimits& limits = options.limits;
    if (!c.head) {
      auto end = FindHeadEnd(c.in, c.scanned);
      if (!end) {
        c.scanned = c.in.size();
        if (c.in.size() > limits.max_head_bytes) {
          Refuse(id, c, 431,
                 "request head larger than " + std::to_string(limits.max_head_bytes) +
                     " bytes or more than " + std::to_string(limits.max_headers) +
                     " header fields");
        }
        return;
      }
      HttpHeadResult parsed = ParseHttpHead(std::string_view(c.in).substr(0, *end), limits);
      if (!parsed.head) {
        Refuse(id, c, parsed.error_status, parsed.error);
        return;
      }
      if (parsed.head->content_length > limits.max_body_bytes) {
        Refuse(id, c, 413, "request body too large");
        return;
      }
      c.head = std::move(parsed.head);
      c.head_bytes = *end;
      if (c.head->expect_continue && c.head->content_length > 0 &&
          c.in.size() < c.head_bytes + c.head->content_length) {
        // Best effort: the socket's send buffer is empty at this point.
        static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
        [[maybe_unused]] ssize_t n =
            ::send(c.fd, kContinue.data(), kContinue.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      }
    }
    const size_t whole = c.head_bytes + c.head->content_length;
    if (c.in.size() < whole) return;

    HttpHead head = std::move(*c.head);
    c.head.reset();
    HttpRequest request{std::move(head.method),  std::move(head.path),
                        std::move(head.params),  c.in.substr(c.head_bytes, head.content_length),
                        std::move(head.headers), c.peer};
    c.in.erase(0, whole);
    c.scanned = 0;
    const auto& routes = request.method == "GET" ? get_routes : post_routes;
    auto route = routes.find(request.path);
    if (route == routes.end() || (request.method != "GET" && request.method != "POST")) {
      const bool elsewhere = get_routes.count(request.path) || post_routes.count(request.path);
      const int status = elsewhere ? 405 : 404;
      Reply(id, c,
            FormatHttpResponse(status, "text/plain; charset=utf-8",
                               std::string(ReasonPhrase(status)) + "\n", head.keep_alive),
            head.keep_alive);
      return;
    }
    ++requests;
    c.state = Conn::State::kHandling;
    JobQueue& q = route->second.health ? health : pool;
    {
      std::lock_guard lock(q.mu);
      q.jobs.push_back(Job{id, std::move(request), &route->second, head.keep_alive});
    }
    q.cv.notify_one();
  }

  void Read(uint64_t id, Conn& c) {
    char buf[16384];
    for (;;) {
      ssize_t n = ::recv(c.fd, buf, sizeof(buf), 0);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      if (n <= 0) {
        Close(id);
        return;
      }
      if (c.state == Conn::State::kLingering) {
        c.lingered += static_cast<size_t>(n);
        if (c.lingered > kLingerBytes) {
          Close(id);
          return;
        }
        continue;
      }
      if (!c.request_started) {
        c.request_started = true;
        c.deadline = Clock::now() + options.request_timeout;
      }
      c.in.append(buf, static_cast<size_t>(n));
      Process(id, c);
      // The connection may be gone, or waiting for a handler or for its reply to be taken.
      auto it = conns.find(id);
      if (it == conns.end() || it->second.state != Conn::State::kReading) return;
    }
  }

  void Accept() {
    if (Clock::now() < accept_paused_until) return;
    for (int i = 0; i < kAcceptBurst; ++i) {
      sockaddr_storage ss{};
      socklen_t len = sizeof(ss);
      int fd = ::accept4(listen_fd, reinterpret_cast<sockaddr*>(&ss), &len,
                         SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
          // Out of descriptors: the listening socket stays readable, so stop polling it a while
          // instead of spinning.
          accept_paused_until = Clock::now() + std::chrono::milliseconds(100);
          Note(std::string("accept: ") + std::strerror(errno));
        }
        return;
      }
      std::string peer = PeerAddress(ss);
      const bool over_total = static_cast<int>(conns.size()) >= options.max_connections;
      const bool over_peer = !over_total && per_peer[peer] >= options.max_connections_per_peer;
      if (over_total || over_peer) {
        ++(over_total ? refused_total : refused_peer);
        Note("refused a connection from " + peer +
             (over_total ? ": " + std::to_string(options.max_connections) + " connections open"
                         : ": " + std::to_string(options.max_connections_per_peer) +
                               " connections open from that address"));
        static const std::string kBusy =
            FormatHttpResponse(503, "text/plain; charset=utf-8", "too many connections\n", false);
        [[maybe_unused]] ssize_t n =
            ::send(fd, kBusy.data(), kBusy.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        // Drop what already arrived, so the close is a FIN after the 503 and not a reset that
        // would discard it on the client's side.
        char scratch[4096];
        for (int k = 0; k < 16 && ::recv(fd, scratch, sizeof(scratch), MSG_DONTWAIT) > 0; ++k) {
        }
        ::close(fd);
        if (per_peer[peer] == 0) per_peer.erase(peer);
        continue;
      }
      ++per_peer[peer];
      Conn c;
      c.fd = fd;
      c.peer = std::move(peer);
      c.deadline = Clock::now() + options.idle_timeout;
      conns.emplace(next_conn++, std::move(c));
    }
  }

  void TakeReplies() {
    uint64_t drained = 0;
    [[maybe_unused]] ssize_t n = ::read(wake_fd, &drained, sizeof(drained));
    std::vector<Done> ready;
    {
      std::lock_guard lock(done_mu);
      ready.swap(done);
    }
    for (auto& d : ready) {
      auto it = conns.find(d.conn);
      if (it == conns.end()) continue;
      Reply(d.conn, it->second, std::move(d.bytes), d.keep_alive);
    }
  }

  void Expire() {
    const auto now = Clock::now();
    std::vector<uint64_t> expired;
    for (auto& [id, c] : conns) {
      if (c.state != Conn::State::kHandling && now >= c.deadline) expired.push_back(id);
    }
    for (uint64_t id : expired) {
      Conn& c = conns.at(id);
      if (c.state == Conn::State::kReading && c.request_started) {
        ++timed_out;
        Note("closed a connection from " + c.peer + ": request not complete in " +
             std::to_string(options.request_timeout.count()) + " ms");
        Refuse(id, c, 408, "request not complete in time");
        // Refuse wrote what it could; the connection lingers briefly, then closes.
        continue;
      }
      if (c.state == Conn::State::kWriting) ++timed_out;
      Close(id);
    }
  }

  void Loop() {
    std::vector<pollfd> fds;
    std::vector<uint64_t> ids;
    while (!stop_io) {
      fds.clear();
      ids.clear();
      fds.push_back({wake_fd, POLLIN, 0});
      const bool accepting = Clock::now() >= accept_paused_until;
      fds.push_back({accepting ? listen_fd : -1, POLLIN, 0});
      auto next = Clock::now() + std::chrono::seconds(1);
      for (auto& [id, c] : conns) {
        short events = 0;
        if (c.state == Conn::State::kReading || c.state == Conn::State::kLingering) events = POLLIN;
        if (c.state == Conn::State::kWriting) events = POLLOUT;
        if (events == 0) continue;
        fds.push_back({c.fd, events, 0});
        ids.push_back(id);
        next = std::min(next, c.deadline);
      }
      if (!accepting) next = std::min(next, accept_paused_until);
      auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next - Clock::now());
      int timeout = static_cast<int>(std::max<int64_t>(0, wait.count() + 1));
      int ready = ::poll(fds.data(), fds.size(), timeout);
      if (ready < 0 && errno != EINTR) break;
      if (ready > 0) {
        if (fds[0].revents) TakeReplies();
        if (fds[1].revents) Accept();
        for (size_t i = 0; i < ids.size(); ++i) {
          const short re = fds[i + 2].revents;
          if (re == 0) continue;
          auto it = conns.find(ids[i]);
          if (it == conns.end() || it->second.fd != fds[i + 2].fd) continue;
          Conn& c = it->second;
          if (c.state == Conn::State::kWriting && (re & (POLLOUT | POLLERR | POLLHUP))) {
            Write(ids[i], c);
          } else if ((c.state == Conn::State::kReading || c.state == Conn::State::kLingering) &&
                     (re & (POLLIN | POLLERR | POLLHUP))) {
            Read(ids[i], c);
          }
        }
      }
      Expire();
    }
    for (auto& [id, c] : conns) ::close(c.fd);
    conns.clear();
    per_peer.clear();
  }

  void Work(JobQueue& q) {
    for (;;) {
      Job job;
      {
        std::unique_lock lock(q.mu);
        q.cv.wait(lock, [&] { return q.stopping || !q.jobs.empty(); });
        if (q.stopping) return;
        job = std::move(q.jobs.front());
        q.jobs.pop_front();
      }
      HttpReply reply;
      try {
        reply = job.route->handler(job.request);
      } catch (const std::exception& e) {
        if (log) log->Error("http", job.request.method + " " + job.request.path + ": " + e.what());
        reply = {500, "text/plain; charset=utf-8", "internal error\n", {}};
      }
      std::string bytes = FormatHttpResponse(reply.status, reply.content_type, reply.body,
                                             job.keep_alive, reply.headers);
      {
        std::lock_guard lock(done_mu);
        done.push_back({job.conn, std::move(bytes), job.keep_alive});
      }
      Wake();
    }
  }
};

HttpServer::HttpServer(Logger* log, int threads)
    : HttpServer(log, HttpServerOptions{.threads = threads}) {}

HttpServer::HttpServer(Logger* log, HttpServerOptions options)
    : impl_(std::make_unique<Impl>(log, std::move(options))) {}

HttpServer::~HttpServer() { Stop(); }

void HttpServer::Get(const std::string& path, HttpHandler handler) {
  impl_->get_routes[path] = Route{std::move(handler), false};
}

void HttpServer::GetHealth(const std::string& path, HttpHandler handler) {
  impl_->get_routes[path] = Route{std::move(handler), true};
}

void HttpServer::Post(const std::string& path, HttpHandler handler) {
  impl_->post_routes[path] = Route{std::move(handler), false};
}

StatusOr<int> HttpServer::Start(const std::string& host, int port) {
  if (impl_->listen_fd >= 0) return Internal("HTTP server already started");
  const std::string where = host + ":" + std::to_string(port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  if (int rc = ::getaddrinfo(host.empty() ? nullptr : host.c_str(), std::to_string(port).c_str(),
                             &hints, &found);
      rc != 0) {
    return Unavailable("cannot listen on " + where + ": " + ::gai_strerror(rc));
  }
  int fd = -1;
  int err = 0;
  for (addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      err = errno;
      continue;
    }
    // SO_REUSEADDR only: with SO_REUSEPORT a second agent on the same port would bind silently
    // and steal half of the scrapes instead of failing at start-up.
    int yes = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    if (::bind(fd, a->ai_addr, a->ai_addrlen) != 0 || ::listen(fd, 128) != 0) {
      err = errno;
      ::close(fd);
      fd = -1;
    }
  }
  ::freeaddrinfo(found);
  if (fd < 0) {
    return Unavailable("cannot listen on " + where + ": " + std::strerror(err) +
                       " (address in use or not local)");
  }
  sockaddr_storage bound{};
  socklen_t len = sizeof(bound);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
  port_ = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6&>(bound).sin6_port
                                            : reinterpret_cast<sockaddr_in&>(bound).sin_port);
  impl_->listen_fd = fd;
  impl_->wake_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  impl_->stop_io = false;
  impl_->pool.stopping = impl_->health.stopping = false;
  for (int i = 0; i < std::max(1, impl_->options.threads); ++i) {
    impl_->workers.emplace_back([this] { impl_->Work(impl_->pool); });
  }
  impl_->workers.emplace_back([this] { impl_->Work(impl_->health); });
  impl_->io_thread = std::thread([this] { impl_->Loop(); });
  return port_;
}

void HttpServer::Stop() {
  if (!impl_->io_thread.joinable()) return;
  impl_->stop_io = true;
  impl_->Wake();
  impl_->io_thread.join();
  for (JobQueue* q : {&impl_->pool, &impl_->health}) {
    std::lock_guard lock(q->mu);
    q->stopping = true;
    q->jobs.clear();
    q->cv.notify_all();
  }
  for (auto& t : impl_->workers) t.join();
  impl_->workers.clear();
  impl_->done.clear();
  ::close(impl_->listen_fd);
  ::close(impl_->wake_fd);
  impl_->listen_fd = impl_->wake_fd = -1;
}

HttpServerCounters HttpServer::counters() const {
  return {impl_->requests, impl_->refused_peer, impl_->refused_total, impl_->bad_requests,
          impl_->timed_out};
}

}  // namespace nccl_triage
