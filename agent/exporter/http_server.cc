#include "exporter/http_server.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
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
#include "exporter/listen_socket.h"

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

// How often the acceptor looks for connections past their deadline.
constexpr auto kSweepEvery = std::chrono::milliseconds(100);
// Accepts per wake-up, so a connection flood cannot keep the acceptor from its deadlines.
constexpr int kAcceptBurst = 256;
// A connection of the health reserve that has not sent a request line after this long may be
// evicted for a newcomer when the reserve is full: a kubelet sends its probe as soon as it
// connects (well within this on a node), so idle or slow connections cannot keep it out unless
// they arrive faster than the reserve's size in this time.
constexpr auto kReserveGrace = std::chrono::milliseconds(20);

std::string PeerAddress(const sockaddr* sa) {
  char text[INET6_ADDRSTRLEN] = {};
  if (sa == nullptr) return "unknown";
  if (sa->sa_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(sa)->sin_addr, text, sizeof(text));
  } else if (sa->sa_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(sa);
    if (IN6_IS_ADDR_V4MAPPED(&a->sin6_addr)) {
      inet_ntop(AF_INET, &a->sin6_addr.s6_addr[12], text, sizeof(text));
    } else {
      inet_ntop(AF_INET6, &a->sin6_addr, text, sizeof(text));
    }
  }
  return text[0] ? text : "unknown";
}

// A whole response written by hand, for the two moments libmicrohttpd has no connection for: a
// connection refused before it is handed over, and one cut at its deadline.
std::string PlainResponse(int status, std::string_view reason, std::string_view body) {
  return "HTTP/1.1 " + std::to_string(status) + " " + std::string(reason) +
         "\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + std::string(body);
}

struct Route {
  HttpHandler handler;
  bool health = false;
};

// One request, from its head to libmicrohttpd's completion notice.
struct Request {
  std::string body;
  bool too_large = false;
  bool dispatched = false;
  std::optional<HttpReply> reply;  // set by a worker, read after the connection is resumed
};

struct Job {
  MHD_Connection* connection = nullptr;
  Request* request = nullptr;
  HttpRequest http;
  const Route* route = nullptr;
};

}  // namespace

struct HttpServer::Impl {
  // One libmicrohttpd daemon and what it may hold: the general pool or the health reserve.
  struct Pool {
    Impl* server = nullptr;
    bool health_only = false;
    MHD_Daemon* daemon = nullptr;
    int max_total = 0;
    int max_per_peer = 0;
    std::chrono::milliseconds head_timeout{};
    // Guarded by Impl::mu.
    int open = 0;
    std::unordered_map<std::string, int> per_peer;
  };
  
  // One connection, from libmicrohttpd's start notice to its close notice.
  struct Conn {
    Pool* pool = nullptr;
    int fd = -1;
    std::string peer;
    Clock::time_point deadline;
    bool in_request = false;  // a head arrived and its reply is not sent yet
    bool off_path = false;    // on the reserve, a request line for another path than health
    bool line_seen = false;   // on the reserve, the request line of a health probe arrived
    bool cut = false;         // shut down by us; no longer counted in its pool
    Clock::time_point started;
  };

  explicit Impl(Logger* l, HttpServerOptions o) : log(l), options(std::move(o)) {}

  Logger* log;
  HttpServerOptions options;
  std::map<std::string, Route> get_routes, post_routes;
  Pool general{}, reserve{};

  int listen_fd = -1;
  int wake_fd = -1;
  std::atomic<bool> stopping{false};
  std::thread acceptor;

  std::mutex mu;  // the pools' counts, `conns`, the note throttle
  std::unordered_map<Conn*, std::unique_ptr<Conn>> conns;
  Clock::time_point last_note{};
  uint64_t unnoted = 0;

  std::mutex jobs_mu;
  std::condition_variable jobs_cv;
  std::deque<Job> jobs;
  bool jobs_closed = false;
  std::vector<std::thread> workers;

  std::atomic<uint64_t> requests{0}, refused_peer{0}, refused_total{0}, reserved{0},
      bad_requests{0}, timed_out{0};

  // Refusals are logged at most once a minute with a count, so a flood cannot flood the log.
  // Called with `mu` held.
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

  // --- libmicrohttpd callbacks -------------------------------------------------------------

  static void OnConnection(void* cls, MHD_Connection* connection, void** socket_context,
                           MHD_ConnectionNotificationCode code) {
    auto* pool = static_cast<Pool*>(cls);
    Impl& s = *pool->server;
    std::lock_guard lock(s.mu);
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
      auto c = std::make_unique<Conn>();
      c->pool = pool;
      if (const auto* info =
              MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD)) {
        c->fd = info->connect_fd;
      }
      if (const auto* info =
              MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS)) {
        c->peer = PeerAddress(info->client_addr);
      }
      c->started = Clock::now();
      c->deadline = c->started + pool->head_timeout;
      *socket_context = c.get();
      s.conns.emplace(c.get(), std::move(c));
      return;
    }
    // Closed: the socket is closed after this returns, so the sweeper, which holds `mu`, never
    // touches a descriptor that was reused.
    auto* c = static_cast<Conn*>(*socket_context);
    if (c == nullptr) return;
    if (!c->cut) s.Release(*pool, c->peer);
    s.conns.erase(c);
    *socket_context = nullptr;
  }

  static Conn* ConnOf(MHD_Connection* connection) {
    const auto* info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return info ? static_cast<Conn*>(info->socket_context) : nullptr;
  }

  static void OnCompleted(void* cls, MHD_Connection* connection, void** req_cls,
                          MHD_RequestTerminationCode) {
    auto* pool = static_cast<Pool*>(cls);
    delete static_cast<Request*>(*req_cls);
    *req_cls = nullptr;
    std::lock_guard lock(pool->server->mu);
    if (Conn* c = ConnOf(connection)) {
      c->in_request = false;
      // The next request on a kept-alive connection must arrive whole in time too; the reserve
      // keeps its one deadline from the connection's start.
      if (!pool->health_only) c->deadline = Clock::now() + pool->head_timeout;
    }
  }

  // The request line arrived (the head may not have). On the reserve a request for another path
  // than a health probe is answered 503 and cut instead of holding its place until its deadline.
  static void* OnRequestLine(void* cls, const char* uri, MHD_Connection* connection) {
    auto* pool = static_cast<Pool*>(cls);
    if (!pool->health_only) return nullptr;
    const std::string_view target = uri ? uri : "";
    auto route = pool->server->get_routes.find(std::string(target.substr(0, target.find('?'))));
    const bool health = route != pool->server->get_routes.end() && route->second.health;
    std::lock_guard lock(pool->server->mu);
    if (Conn* c = ConnOf(connection)) {
      c->line_seen = health;
      if (!health && !c->cut) {
        // At once, not at the next sweep: its place is for a probe. libmicrohttpd is reading
        // this connection's head, not writing to it.
        c->off_path = true;
        pool->server->Cut(*c, BusyReply());
      }
    }
    return nullptr;  // the request's own state starts in OnRequest
  }

  static MHD_Result Queue(MHD_Connection* connection, const HttpReply& reply) {
    MHD_Response* response = MHD_create_response_from_buffer(
        reply.body.size(), const_cast<char*>(reply.body.data()), MHD_RESPMEM_MUST_COPY);
    if (response == nullptr) return MHD_NO;
    MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE, reply.content_type.c_str());
    for (const auto& [name, value] : reply.headers) {
      MHD_add_response_header(response, name.c_str(), value.c_str());
    }
    MHD_Result queued = MHD_queue_response(connection, static_cast<unsigned>(reply.status),
                                           response);
    MHD_destroy_response(response);
    return queued;
  }

  MHD_Result Refuse(MHD_Connection* connection, int status, const std::string& why) {
    ++bad_requests;
    return Queue(connection, HttpReply{status, "text/plain; charset=utf-8", why + "\n", {}});
  }

  static MHD_Result OnRequest(void* cls, MHD_Connection* connection, const char* url,
                              const char* method, const char* /*version*/,
                              const char* upload_data, size_t* upload_data_size,
                              void** req_cls) {
    auto* pool = static_cast<Pool*>(cls);
    Impl& s = *pool->server;
    auto* r = static_cast<Request*>(*req_cls);
    if (r == nullptr) {  // the head arrived
      r = new Request;
      *req_cls = r;
      {
        std::lock_guard lock(s.mu);
        if (Conn* c = ConnOf(connection)) c->in_request = true;
      }
      const int fields = MHD_get_connection_values(connection, MHD_HEADER_KIND, nullptr, nullptr);
      if (fields > static_cast<int>(s.options.max_headers)) {
        return s.Refuse(connection, 431,
                        "more than " + std::to_string(s.options.max_headers) + " header fields");
      }
      if (const char* length =
              MHD_lookup_connection_value(connection, MHD_HEADER_KIND, "Content-Length")) {
        uint64_t n = 0;
        auto [end, ec] = std::from_chars(length, length + std::strlen(length), n);
        if (ec == std::errc() && n > s.options.max_body_bytes) {
          return s.Refuse(connection, 413, "request body too large");
        }
      }
      return MHD_YES;
    }
    if (*upload_data_size > 0) {
      if (r->body.size() + *upload_data_size > s.options.max_body_bytes) {
        r->too_large = true;
      } else {
        r->body.append(upload_data, *upload_data_size);
      }
      *upload_data_size = 0;
      return MHD_YES;
    }
    if (r->reply) return Queue(connection, *r->reply);
    if (r->dispatched) return MHD_YES;  // not expected: a suspended connection is not called
    if (r->too_large) return s.Refuse(connection, 413, "request body too large");
    return s.Dispatch(*pool, connection, url, method, *r);
  }

  MHD_Result Dispatch(Pool& pool, MHD_Connection* connection, const char* url, const char* method,
                   Request& r) {
    const std::string path = url ? url : "";
    const std::string verb = method ? method : "";
    const auto& routes = verb == "GET" ? get_routes : post_routes;
    auto route = routes.find(path);
    if (route == routes.end() || (verb != "GET" && verb != "POST")) {
      const bool elsewhere = get_routes.count(path) || post_routes.count(path);
      return elsewhere ? Queue(connection, {405, "text/plain; charset=utf-8", "Method Not Allowed\n"})
                       : Queue(connection, {404, "text/plain; charset=utf-8", "Not Found\n"});
    }
    if (pool.health_only && !route->second.health) {
      return Queue(connection, {503, "text/plain; charset=utf-8",
                                "too many connections: only health probes are served now\n"});
    }
    HttpRequest request;
    request.method = verb;
    request.path = path;
    request.body = std::move(r.body);
    MHD_get_connection_values(
        connection, MHD_GET_ARGUMENT_KIND,
        [](void* out, MHD_ValueKind, const char* key, const char* value) {
          static_cast<HttpRequest*>(out)->params.emplace(key ? key : "", value ? value : "");
          return MHD_YES;
        },
        &request);
    MHD_get_connection_values(
        connection, MHD_HEADER_KIND,
        [](void* out, MHD_ValueKind, const char* key, const char* value) {
          std::string name = key ? key : "";
          std::transform(name.begin(), name.end(), name.begin(),
                         [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
          static_cast<HttpRequest*>(out)->headers.emplace_back(std::move(name),
                                                               value ? value : "");
          return MHD_YES;
        },
        &request);
    if (const auto* info =
            MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS)) {
      request.peer = PeerAddress(info->client_addr);
    }
    ++requests;
    if (route->second.health) {
      HttpReply reply = Call(route->second, request);
      // A place in the reserve serves one probe.
      if (pool.health_only) reply.headers.emplace_back("Connection", "close");
      return Queue(connection, reply);
    }
    // An ordinary handler runs on a worker; the connection sleeps until its reply is ready.
    MHD_suspend_connection(connection);
    r.dispatched = true;
    {
      std::lock_guard lock(jobs_mu);
      if (!jobs_closed) {
        jobs.push_back(Job{connection, &r, std::move(request), &route->second});
        jobs_cv.notify_one();
        return MHD_YES;
      }
    }
    r.reply = HttpReply{503, "text/plain; charset=utf-8", "shutting down\n", {}};
    MHD_resume_connection(connection);
    return MHD_YES;
  }

  HttpReply Call(const Route& route, const HttpRequest& request) {
    try {
      return route.handler(request);
    } catch (const std::exception& e) {
      if (log) log->Error("http", request.method + " " + request.path + ": " + e.what());
      return {500, "text/plain; charset=utf-8", "internal error\n", {}};
    }
  }

  void Work() {
    for (;;) {
      Job job;
      {
        std::unique_lock lock(jobs_mu);
        jobs_cv.wait(lock, [&] { return jobs_closed || !jobs.empty(); });
        if (jobs.empty()) return;
        job = std::move(jobs.front());
        jobs.pop_front();
      }
      // Jobs left at Stop() are answered without their handler, so that every suspended
      // connection is resumed before the daemons stop.
      job.request->reply =
          stopping ? HttpReply{503, "text/plain; charset=utf-8", "shutting down\n", {}}
                   : Call(*job.route, job.http);
      MHD_resume_connection(job.connection);
    }
  }

  // --- connections: where each goes, and their deadlines ------------------------------------

  // Called with `mu` held.
  void Release(Pool& pool, const std::string& peer) {
    --pool.open;
    if (auto p = pool.per_peer.find(peer); p != pool.per_peer.end() && --p->second <= 0) {
      pool.per_peer.erase(p);
    }
  }

  // Called with `mu` held: the pool with room for a connection from `peer`, or nullptr.
  Pool* Place(const std::string& peer) {
    for (Pool* pool : {&general, &reserve}) {
      auto it = pool->per_peer.find(peer);
      const int from_peer = it == pool->per_peer.end() ? 0 : it->second;
      if (pool->open < pool->max_total && from_peer < pool->max_per_peer) {
        ++pool->open;
        ++pool->per_peer[peer];
        return pool;
      }
    }
    return nullptr;
  }

  // Whether the bytes already arrived on `fd` are a GET of a health path.
  bool SentHealthProbe(int fd) const {
    char buf[64];
    const ssize_t n = ::recv(fd, buf, sizeof(buf), MSG_PEEK | MSG_DONTWAIT);
    if (n < 5) return false;
    const std::string_view line(buf, static_cast<size_t>(n));
    if (!line.starts_with("GET ")) return false;
    const std::string_view target = line.substr(4);
    for (const auto& [path, route] : get_routes) {
      if (route.health && target.starts_with(path) && target.size() > path.size() &&
          (target[path.size()] == ' ' || target[path.size()] == '?')) {
        return true;
      }
    }
    return false;
  }

  // Called with `mu` held: a place in `pool` above its caps (a probe; bounded by libmicrohttpd's
  // backstop, twice the caps).
  Pool* PlaceAnyway(Pool& pool, const std::string& peer) {
    ++pool.open;
    ++pool.per_peer[peer];
    return &pool;
  }

  void Accept() {
    for (int i = 0; i < kAcceptBurst; ++i) {
      sockaddr_storage ss{};
      socklen_t len = sizeof(ss);
      int fd = ::accept4(listen_fd, reinterpret_cast<sockaddr*>(&ss), &len,
                         SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
          std::lock_guard lock(mu);
          Note(std::string("accept: ") + std::strerror(errno));
          // Out of descriptors: the listening socket stays readable; wait instead of spinning.
          std::this_thread::sleep_for(kSweepEvery);
        }
        return;
      }
      const std::string peer = PeerAddress(reinterpret_cast<const sockaddr*>(&ss));
      Impl::Pool* pool = nullptr;
      {
        std::lock_guard lock(mu);
        pool = Place(peer);
        if (pool == nullptr) {
          // Under a flood the probe's request is often in the socket before it is accepted: one
          // that is gets the reserve even when the reserve is full of fresh connections.
          const bool probe = SentHealthProbe(fd);
          if (EvictFromReserve(peer, probe)) pool = Place(peer);
          if (pool == nullptr && probe) pool = PlaceAnyway(reserve, peer);
        }
        if (pool == nullptr) {
          const bool peer_full = general.open < general.max_total;
          ++(peer_full ? refused_peer : refused_total);
          Note("refused a connection from " + peer + ": " +
               (peer_full ? std::to_string(general.max_per_peer) +
                                " connections open from that address"
                          : std::to_string(general.max_total + reserve.max_total) +
                                " connections open"));
        }
      }
      if (pool == nullptr) {
        static const std::string kBusy =
            PlainResponse(503, "Service Unavailable", "too many connections\n");
        [[maybe_unused]] ssize_t n =
            ::send(fd, kBusy.data(), kBusy.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        // Drop what already arrived, so the close is a FIN after the 503 and not a reset that
        // would discard it on the client's side.
        char scratch[4096];
        for (int k = 0; k < 16 && ::recv(fd, scratch, sizeof(scratch), MSG_DONTWAIT) > 0; ++k) {
        }
        ::close(fd);
        continue;
      }
      if (pool == &reserve) ++reserved;
      // libmicrohttpd closes the socket itself when it cannot take it.
      if (MHD_add_connection(pool->daemon, fd, reinterpret_cast<const sockaddr*>(&ss), len) !=
          MHD_YES) {
        std::lock_guard lock(mu);
        Release(*pool, peer);
      }
    }
  }

  // Called with `mu` held. Ends `c` from our side: `reply` when it is waiting for input (so
  // libmicrohttpd is not writing to it), then a shutdown that libmicrohttpd sees as the client's
  // close. From here the connection no longer counts in its pool.
  void Cut(Conn& c, const std::string& reply) {
    c.cut = true;
    if (!c.in_request) {
      [[maybe_unused]] ssize_t n =
          ::send(c.fd, reply.data(), reply.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    }
    ::shutdown(c.fd, SHUT_RDWR);
    Release(*c.pool, c.peer);
  }

  static const std::string& BusyReply() {
    static const std::string k503 = PlainResponse(
        503, "Service Unavailable", "too many connections: only health probes are served now\n");
    return k503;
  }

  // Called with `mu` held, when `peer` found no place: with the reserve full (and room for the
  // peer in it, or `probe`: the connection already sent a health probe), cuts the reserve's
  // oldest connection that has sent no request line within kReserveGrace (any, for a probe).
  // True when one was cut.
  bool EvictFromReserve(const std::string& peer, bool probe) {
    auto it = reserve.per_peer.find(peer);
    if (reserve.open < reserve.max_total ||
        (!probe && it != reserve.per_peer.end() && it->second >= reserve.max_per_peer)) {
      return false;
    }
    const auto now = Clock::now();
    Conn* oldest = nullptr;
    for (auto& [key, c] : conns) {
      if (c->pool != &reserve || c->cut || c->line_seen || c->in_request || c->fd < 0) continue;
      if (!probe && now - c->started < kReserveGrace) continue;
      if (oldest == nullptr || c->started < oldest->started) oldest = c.get();
    }
    if (oldest == nullptr) return false;
    Cut(*oldest, BusyReply());
    return true;
  }

  // Cuts every connection whose head did not arrive in time (408), and on the reserve every
  // request line for another path (503).
  void Sweep() {
    static const std::string k408 =
        PlainResponse(408, "Request Timeout", "request not complete in time\n");
    const auto now = Clock::now();
    std::lock_guard lock(mu);
    for (auto& [key, c] : conns) {
      if (c->cut || c->fd < 0 || now < c->deadline) continue;
      if (c->in_request && !c->pool->health_only) continue;
      if (!c->off_path) {
        ++timed_out;
        Note("closed a connection from " + c->peer + ": request not complete in time");
      }
      Cut(*c, c->off_path ? BusyReply() : k408);
    }
  }

  void Loop() {
    while (!stopping) {
      pollfd fds[2] = {{wake_fd, POLLIN, 0}, {listen_fd, POLLIN, 0}};
      int ready = ::poll(fds, 2, static_cast<int>(kSweepEvery.count()));
      if (ready < 0 && errno != EINTR) break;
      if (stopping) break;
      if (ready > 0 && fds[1].revents) Accept();
      Sweep();
    }
  }

  StatusOr<MHD_Daemon*> StartDaemon(Pool& pool, std::chrono::seconds idle) {
    const unsigned idle_seconds = static_cast<unsigned>(std::max<int64_t>(1, idle.count()));
    MHD_Daemon* d = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_NO_LISTEN_SOCKET |
            MHD_ALLOW_SUSPEND_RESUME,
        0, nullptr, nullptr, &Impl::OnRequest, &pool,
        // Backstops above our own counts: a connection we cut stops counting for us at once, for
        // libmicrohttpd only when it has closed it.
        MHD_OPTION_CONNECTION_LIMIT, static_cast<unsigned>(2 * pool.max_total + 16),
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, static_cast<unsigned>(2 * pool.max_per_peer + 4),
        MHD_OPTION_CONNECTION_TIMEOUT, idle_seconds,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, options.connection_memory,
        MHD_OPTION_NOTIFY_CONNECTION, &Impl::OnConnection, &pool,
        MHD_OPTION_NOTIFY_COMPLETED, &Impl::OnCompleted, &pool,
        MHD_OPTION_URI_LOG_CALLBACK, &Impl::OnRequestLine, &pool,
        MHD_OPTION_END);
    if (d == nullptr) return Unavailable("cannot start the HTTP daemon (libmicrohttpd)");
    return d;
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
  auto listening = ListenTcp(host, port);
  if (!listening.ok()) return listening.status();
  const int fd = listening->fd;
  port_ = listening->port;

  Impl& s = *impl_;
  const HttpServerOptions& o = s.options;
  s.general = Impl::Pool{&s, false, nullptr, o.max_connections, o.max_connections_per_peer,
                   o.request_timeout, 0, {}};
  s.reserve = Impl::Pool{&s, true, nullptr, o.health_connections, o.health_connections_per_peer,
                   o.health_timeout, 0, {}};
  auto general = s.StartDaemon(s.general, o.idle_timeout);
  auto reserve = s.StartDaemon(
      s.reserve, std::chrono::ceil<std::chrono::seconds>(o.health_timeout));
  if (!general.ok() || !reserve.ok()) {
    if (general.ok()) MHD_stop_daemon(*general);
    if (reserve.ok()) MHD_stop_daemon(*reserve);
    ::close(fd);
    return Unavailable("cannot serve " + where + ": libmicrohttpd did not start");
  }
  s.general.daemon = *general;
  s.reserve.daemon = *reserve;
  s.listen_fd = fd;
  s.wake_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  s.stopping = false;
  s.jobs_closed = false;
  for (int i = 0; i < std::max(1, o.threads); ++i) s.workers.emplace_back([&s] { s.Work(); });
  s.acceptor = std::thread([&s] { s.Loop(); });
  return port_;
}

void HttpServer::Stop() {
  Impl& s = *impl_;
  if (!s.acceptor.joinable()) return;
  s.stopping = true;
  uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(s.wake_fd, &one, sizeof(one));
  s.acceptor.join();
  {
    std::lock_guard lock(s.jobs_mu);
    s.jobs_closed = true;
  }
  s.jobs_cv.notify_all();
  for (auto& t : s.workers) t.join();
  s.workers.clear();
  for (Impl::Pool* pool : {&s.general, &s.reserve}) {
    MHD_stop_daemon(pool->daemon);
    pool->daemon = nullptr;
  }
  ::close(s.listen_fd);
  ::close(s.wake_fd);
  s.listen_fd = s.wake_fd = -1;
}

HttpServerCounters HttpServer::counters() const {
  return {impl_->requests,  impl_->refused_peer, impl_->refused_total,
          impl_->reserved,  impl_->bad_requests, impl_->timed_out};
}

}  // namespace nccl_triage
