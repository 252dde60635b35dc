#include "ras/client.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <string>

#include "ras/text_util.h"

namespace nccl_triage::ras {
namespace {

using Clock = std::chrono::steady_clock;

using detail::Printable;

std::string ErrnoText(int e) { return std::strerror(e); }

int MillisLeft(Clock::time_point until) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now());
  return left.count() <= 0 ? 0 : static_cast<int>(left.count());
}

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  Fd(Fd&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      Reset();
      fd_ = o.fd_;
      o.fd_ = -1;
    }
    return *this;
  }
  ~Fd() { Reset(); }
  int get() const { return fd_; }
  void Reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
};

std::string AddressText(const sockaddr* sa, socklen_t len) {
  char host[NI_MAXHOST] = "";
  char serv[NI_MAXSERV] = "";
  if (::getnameinfo(sa, len, host, sizeof host, serv, sizeof serv,
                    NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
    return "?";
  }
  if (sa->sa_family == AF_INET6) return "[" + std::string(host) + "]:" + serv;
  return std::string(host) + ":" + serv;
}

// Waits for `events` on fd until `until`. Returns 0 when ready, ETIMEDOUT, or an errno.
int WaitFor(int fd, short events, Clock::time_point until) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int r = ::poll(&p, 1, MillisLeft(until));
    if (r > 0) return 0;
    if (r == 0) return ETIMEDOUT;
    if (errno != EINTR) return errno;
  }
}

// One connection: the lines and the body read through a buffer, with the cap and the deadline.
class Connection {
 public:
  Connection(Fd fd, Clock::time_point until, size_t cap, std::string* transcript)
      : fd_(std::move(fd)), until_(until), cap_(cap), transcript_(transcript) {}

  Status Send(const std::string& line) {
    *transcript_ += "> " + line;
    size_t done = 0;
    while (done < line.size()) {
      const ssize_t n = ::send(fd_.get(), line.data() + done, line.size() - done, MSG_NOSIGNAL);
      if (n > 0) {
        done += static_cast<size_t>(n);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        const int w = WaitFor(fd_.get(), POLLOUT, until_);
        if (w == ETIMEDOUT) return DeadlineExceeded("timed out sending '" + Printable(line) + "'");
        if (w != 0) return Unavailable("sending: " + ErrnoText(w));
        continue;
      }
      return Unavailable("sending '" + Printable(line) + "': " + ErrnoText(errno));
    }
    return Status::Ok();
  }

  // One line without its "\n" (and "\r"). `what` names the awaited answer in errors.
  StatusOr<std::string> ReadLine(std::string_view what, size_t max_line = 4096) {
    auto line = NextLine(what, max_line, "< ");
    if (!line.ok()) return line.status();
    if (!*line) {
      return Unavailable("the server closed the connection instead of sending the " +
                         std::string(what));
    }
    return std::move(**line);
  }

  // One line of a report (recorded in the transcript as received), or nullopt where the server
  // closed the connection after a whole line. At most max_line bytes a line and cap_ bytes in all.
  StatusOr<std::optional<std::string>> NextLine(std::string_view what, size_t max_line,
                                                std::string_view prefix = "") {
    for (;;) {
      const auto nl = buffer_.find('\n');
      if (nl != std::string::npos && nl <= max_line) {
        std::string line = buffer_.substr(0, nl);
        buffer_.erase(0, nl + 1);
        consumed_ += nl + 1;
        *transcript_ += std::string(prefix) + line + "\n";
        if (!line.empty() && line.back() == '\r') line.pop_back();
        return std::optional<std::string>(std::move(line));
      }
      if (buffer_.size() > max_line) {
        return InvalidArgument("not an NCCL RAS server: no line end in the first " +
                               std::to_string(max_line) + " bytes of a line of the " +
                               std::string(what) + " ('" + Printable(buffer_) + "')");
      }
      if (consumed_ + buffer_.size() > cap_) return TooLong(what);
      auto more = Fill(what);
      if (!more.ok()) return more.status();
      if (*more == 0) {
        if (buffer_.empty()) return std::optional<std::string>();
        return InvalidArgument("not an NCCL RAS server: the " + std::string(what) +
                               " ended without a line end ('" + Printable(buffer_) + "')");
      }
    }
  }

  // Everything until the server closes, at most cap_ bytes.
  StatusOr<std::string> ReadToEnd(std::string_view what) {
    for (;;) {
      if (buffer_.size() > cap_) return TooLong(what);
      auto more = Fill(what);
      if (!more.ok()) return more.status();
      if (*more == 0) break;
    }
    std::string body;
    body.swap(buffer_);
    *transcript_ += body;
    return body;
  }

 private:
  Status TooLong(std::string_view what) const {
    const std::string size = cap_ % (size_t{1} << 20) == 0 ? std::to_string(cap_ >> 20) + " MiB"
                                                           : std::to_string(cap_ >> 10) + " KiB";
    return InvalidArgument("the " + std::string(what) + " exceeds " + size + "; stopped reading");
  }

  // Reads what is there into buffer_; 0 at end of stream.
  StatusOr<size_t> Fill(std::string_view what) {
    char chunk[16384];
    for (;;) {
      const size_t room = cap_ + 1 - std::min(buffer_.size(), cap_);
      const ssize_t n = ::recv(fd_.get(), chunk, std::min(sizeof chunk, room), 0);
      if (n > 0) {
        buffer_.append(chunk, static_cast<size_t>(n));
        return static_cast<size_t>(n);
      }
      if (n == 0) return size_t{0};
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        const int w = WaitFor(fd_.get(), POLLIN, until_);
        if (w == ETIMEDOUT) {
          return DeadlineExceeded("timed out waiting for the " + std::string(what) + " (" +
                                  std::to_string(buffer_.size()) + " bytes received)");
        }
        if (w != 0) return Unavailable("reading: " + ErrnoText(w));
        continue;
      }
      if (errno == ECONNRESET) {
        return Unavailable("the server reset the connection while sending the " +
                           std::string(what));
      }
      return Unavailable("reading the " + std::string(what) + ": " + ErrnoText(errno));
    }
  }

  Fd fd_;
  Clock::time_point until_;
  size_t cap_;
  std::string* transcript_;
  std::string buffer_;
  size_t consumed_ = 0;  // bytes taken out of buffer_ by NextLine
};

struct Connected {
  Fd fd;
  std::string address;
};

StatusOr<Connected> Connect(const QueryOptions& o, Clock::time_point until) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* list = nullptr;
  const int gai = ::getaddrinfo(o.host.c_str(), o.port.c_str(), &hints, &list);
  if (gai != 0) {
    return InvalidArgument("cannot resolve " + o.host + ":" + o.port + ": " + ::gai_strerror(gai));
  }
  std::string errors;
  bool refused_only = true;
  StatusCode code = StatusCode::kUnavailable;
  for (addrinfo* ai = list; ai != nullptr; ai = ai->ai_next) {
    const std::string addr = AddressText(ai->ai_addr, ai->ai_addrlen);
    Fd fd(::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol));
    if (fd.get() < 0) {
      errors += (errors.empty() ? "" : "; ") + addr + ": " + ErrnoText(errno);
      refused_only = false;
      continue;
    }
    int err = 0;
    if (::connect(fd.get(), ai->ai_addr, ai->ai_addrlen) != 0) {
      err = errno;
      if (err == EINPROGRESS) {
        const auto connect_until = std::min(until, Clock::now() + o.connect_timeout);
        err = WaitFor(fd.get(), POLLOUT, connect_until);
        if (err == 0) {
          socklen_t len = sizeof err;
          if (::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
        }
      }
    }
    if (err == 0) {
      ::freeaddrinfo(list);
      return Connected{std::move(fd), addr};
    }
    if (err != ECONNREFUSED) refused_only = false;
    if (err == ETIMEDOUT) code = StatusCode::kDeadlineExceeded;
    errors += (errors.empty() ? "" : "; ") + addr + ": " +
              (err == ETIMEDOUT ? "connect timed out" : ErrnoText(err));
  }
  ::freeaddrinfo(list);
  std::string msg = "cannot connect to " + o.host + ":" + o.port + " (" + errors + ")";
  if (refused_only) {
    msg += ": nothing listens there (no NCCL 2.24+ process in this network namespace, "
           "NCCL_RAS_ENABLE=0, or another NCCL_RAS_ADDR)";
  }
  return Status(code, msg);
}

bool StartsWithNoCase(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i) {
    const char a = s[i] >= 'A' && s[i] <= 'Z' ? static_cast<char>(s[i] - 'A' + 'a') : s[i];
    const char b =
        prefix[i] >= 'A' && prefix[i] <= 'Z' ? static_cast<char>(prefix[i] - 'A' + 'a') : prefix[i];
    if (a != b) return false;
  }
  return true;
}

std::string Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return std::string(s);
}

}  // namespace

StatusOr<std::pair<std::string, std::string>> SplitHostPort(std::string_view addr) {
  std::string host;
  std::string port;
  if (!addr.empty() && addr.front() == '[') {
    const auto close = addr.find(']');
    if (close == std::string_view::npos) return InvalidArgument("unbalanced '[' in '" +
                                                                Printable(addr) + "'");
    host = std::string(addr.substr(1, close - 1));
    std::string_view rest = addr.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return InvalidArgument("expected ':PORT' after ']'");
      port = std::string(rest.substr(1));
    }
  } else {
    const auto colon = addr.rfind(':');
    if (colon != std::string_view::npos && addr.find(':') == colon) {
      host = std::string(addr.substr(0, colon));
      port = std::string(addr.substr(colon + 1));
    } else {
      host = std::string(addr);  // a name, or a bare IPv6 address
    }
  }
  if (host.empty()) host = kDefaultHost;
  if (port.empty()) port = kDefaultPort;
  for (char c : port) {
    if (c < '0' || c > '9') {
      return InvalidArgument("port '" + Printable(port) + "' is not a number");
    }
  }
  if (port.size() > 5 || std::stoi(port) == 0 || std::stoi(port) > 65535) {
    return InvalidArgument("port " + port + " is out of range");
  }
  return std::make_pair(host, port);
}

namespace {

// The handshake. Anything but "SERVER PROTOCOL <v>" is not a RAS server. Returns <v>.
StatusOr<std::string> Handshake(Connection& conn) {
  if (Status s = conn.Send("CLIENT PROTOCOL " + std::to_string(kClientProtocol) + "\n"); !s.ok()) {
    return s;
  }
  auto hello = conn.ReadLine("handshake answer");
  if (!hello.ok()) return hello.status();
  constexpr std::string_view kServer = "SERVER PROTOCOL ";
  if (!StartsWithNoCase(*hello, kServer)) {
    return InvalidArgument("not an NCCL RAS server: answered '" + Printable(*hello) +
                           "' to the handshake");
  }
  return Trim(std::string_view(*hello).substr(kServer.size()));
}

// The error as the caller sees it once the address is known: "127.0.0.1:28028: ...".
Status AtAddress(const std::string& address, const Status& s) {
  return Status(s.code(), address + ": " + s.message());
}

// Connects and says hello: the reply gets the address, the protocol and (through the connection)
// the transcript. Errors after the connect name the address. The reply must outlive the
// connection and stay where it is while the connection is used.
template <class Reply>
StatusOr<Connection> OpenSession(const QueryOptions& o, Clock::time_point until, Reply& reply) {
  auto connected = Connect(o, until);
  if (!connected.ok()) return connected.status();
  reply.address = connected->address;
  Connection conn(std::move(connected->fd), until, o.max_reply_bytes, &reply.transcript);
  auto protocol = Handshake(conn);
  if (!protocol.ok()) return AtAddress(reply.address, protocol.status());
  reply.server_protocol = std::move(protocol).value();
  reply.protocol_known = reply.server_protocol == std::to_string(kClientProtocol);
  return conn;
}

// One query on a connection of its own: `talk(conn, reply)` asks and reads once the session is
// open; an error it returns names the address. The reply's elapsed time counts from the connect.
template <class Reply, class Talk>
StatusOr<Reply> Query(const QueryOptions& o, const Talk& talk) {
  const auto start = Clock::now();
  Reply reply;
  auto opened = OpenSession(o, start + o.deadline, reply);
  if (!opened.ok()) return opened.status();
  if (Status s = talk(*opened, reply); !s.ok()) return AtAddress(reply.address, s);
  reply.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
  return reply;
}

}  // namespace

StatusOr<RawReply> QueryRas(const QueryOptions& o) {
  return Query<RawReply>(o, [&o](Connection& conn, RawReply& reply) -> Status {
    // The format: JSON where the server has it.
    reply.format = ReplyFormat::kText;
    if (o.format != ReplyFormat::kText) {
      if (Status s = conn.Send("SET FORMAT json\n"); !s.ok()) return s;
      auto answer = conn.ReadLine("answer to SET FORMAT");
      if (!answer.ok()) return answer.status();
      if (StartsWithNoCase(*answer, "OK")) {
        reply.format = ReplyFormat::kJson;
      } else if (StartsWithNoCase(*answer, "ERROR")) {
        if (o.format == ReplyFormat::kJson) {
          return InvalidArgument("the server has no JSON report (NCCL before 2.28.7): '" +
                                 Printable(*answer) + "'");
        }
      } else {
        return InvalidArgument("not an NCCL RAS server: answered '" + Printable(*answer) +
                               "' to SET FORMAT");
      }
    }

    if (Status s = conn.Send(o.verbose ? "VERBOSE STATUS\n" : "STATUS\n"); !s.ok()) return s;
    auto body = conn.ReadToEnd("status report");
    if (!body.ok()) return body.status();
    if (body->empty()) {
      return Unavailable("the server closed the connection without a status report");
    }
    if (StartsWithNoCase(*body, "ERROR")) {
      return InvalidArgument("the server refused STATUS: '" +
                             Printable(body->substr(0, body->find('\n'))) + "'");
    }
    reply.body = std::move(body).value();
    return Status::Ok();
  });
}

StatusOr<DiagnosticsReply> QueryRasDiagnostics(const QueryOptions& o) {
  return Query<DiagnosticsReply>(o, [](Connection& conn, DiagnosticsReply& reply) -> Status {
    // The connection is in text format (the default); JSON would make NCCL refuse the request.
    if (Status s = conn.Send("DIAGNOSTICS\n"); !s.ok()) return s;
    constexpr size_t kMaxLine = 4096;  // NCCL formats a report line into 2 KiB
    constexpr std::string_view kWhat = "diagnostics report";
    constexpr std::string_view kDiag = " NCCL DIAG ";
    for (;;) {
      auto next = conn.NextLine(kWhat, kMaxLine);
      if (!next.ok()) {
        // A server that keeps the connection open after the completion line: the report is whole.
        if (next.status().code() == StatusCode::kDeadlineExceeded && reply.complete) break;
        if (next.status().code() == StatusCode::kDeadlineExceeded && !reply.lines.empty()) {
          return DeadlineExceeded(next.status().message() + "; " +
                                  std::to_string(reply.lines.size()) +
                                  " report line(s) and no completion line");
        }
        return next.status();
      }
      if (!*next) break;  // closed
      std::string& line = **next;
      if (reply.lines.empty()) {
        // The first line says what kind of answer this is.
        if (StartsWithNoCase(line, "BUSY")) {
          reply.busy = true;
          break;
        }
        if (StartsWithNoCase(line, "ERROR: Unknown command")) {
          return Status(StatusCode::kNotFound,
                        std::string(kNoDiagnostics) + ": answered '" + Printable(line) + "'");
        }
        if (StartsWithNoCase(line, "ERROR")) {
          return InvalidArgument("the server refused DIAGNOSTICS: '" + Printable(line) + "'");
        }
        if (line.find(kDiag) == std::string::npos) {
          return InvalidArgument("not an NCCL diagnostics report: the first line is '" +
                                 Printable(line) + "'");
        }
      }
      const auto tag = line.find(kDiag);
      if (tag != std::string::npos) {
        const std::string_view text = std::string_view(line).substr(tag + kDiag.size());
        if (StartsWithNoCase(text, kDiagnosticsDone)) reply.complete = true;
      }
      reply.body += line + "\n";
      reply.lines.push_back(std::move(line));
    }
    if (!reply.busy && reply.lines.empty()) {
      return Unavailable("the server closed the connection without a diagnostics report");
    }
    if (!reply.busy && !reply.complete) {
      return Unavailable("the server closed the connection after " +
                         std::to_string(reply.lines.size()) +
                         " report line(s), before the completion line (the process exited "
                         "or its RAS thread stopped mid-report)");
    }
    return Status::Ok();
  });
}

}  // namespace nccl_triage::ras
