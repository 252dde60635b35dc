// The attack set, run against the real executables over loopback only (127.0.0.0/8): the agent
// (`nccl-triage-server agent --standalone` on the DGX A100 fixture) for the HTTP attacks and the
// coordinator (`nccl-triage-server coordinator`) for the gRPC one. Per attack it prints what the
// server held, what it refused, its resident memory (before, peak, after) and the latency of
// /livez, asked every 250 ms on a fresh connection from an address no attacker uses (as the
// kubelet's probe comes from the node's own address).
//
//   slowloris     --slow-addresses (64) source addresses 127.0.1.x, --per-address (8)
//                 connections each, every connection a request line then one header line a
//                 second, reopened whenever the server closes it, for --seconds (20)
//   keep-alive    --requests (10,000) GET /metrics one after another on one connection
//   header flood  one request head of --flood-mb (50) MB of header lines
//   idle          --idle (10,000) connections that send nothing, from 250 addresses 127.0.2.x,
//                 held for --seconds
//   grpc silent   --grpc (30,000) TCP connections to the coordinator's gRPC port that send
//                 nothing, from 127.0.3.x-127.0.9.x, held for --seconds; opened by --workers (3)
//                 child processes, so that no process needs more than 10,000 descriptors
//
//   build/bench_attacks [--only NAME] [--seconds S] [--slow-addresses N] [--per-address N]
//                       [--requests N] [--flood-mb N] [--idle N] [--grpc N] [--workers N]
//
// Exit 0 when every attack was held (/livez answered 200 within 1 s throughout, every keep-alive
// request answered, the flood cut, RSS growth under 64 MiB for the agent and 256 MiB for the
// coordinator), 1 otherwise, 2 when a process did not start.
#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "exporter/live_util.h"

namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;
using namespace nccl_triage::testing;

constexpr const char* kProbeSource = "127.0.0.250";  // the kubelet's stand-in

double MiB(long kib) { return static_cast<double>(kib) / 1024.0; }

// How many descriptors the process holds (its connections, on a server under attack).
long Descriptors(pid_t pid) {
  long n = 0;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    ++n;
  }
  return n;
}

struct Options {
  std::string only;
  int seconds = 20;
  int slow_addresses = 64;
  int per_address = 8;
  int requests = 10'000;
  int flood_mb = 50;
  int idle = 10'000;
  int grpc = 30'000;
  int workers = 3;
};

// /livez from the probe address; status (0: no answer) and milliseconds.
std::pair<int, double> Livez(int port) {
  const auto t0 = Clock::now();
  int status = 0;
  int fd = ConnectFrom(port, kProbeSource, 2);
  if (fd >= 0) {
    std::string reply;
    if (SendAll(fd, "GET /livez HTTP/1.1\r\nHost: kubelet\r\nConnection: close\r\n\r\n")) {
      char buf[512];
      for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) {
        reply.append(buf, static_cast<size_t>(n));
      }
    }
    ::close(fd);
    if (reply.rfind("HTTP/1.1 ", 0) == 0 && reply.size() >= 12) status = std::stoi(reply.substr(9, 3));
  }
  return {status, std::chrono::duration<double, std::milli>(Clock::now() - t0).count()};
}

// Asks /livez every 250 ms and watches the server's RSS until stopped.
class Watch {
 public:
  explicit Watch(const ServerProcess& s)
      : pid_(s.pid()), port_(s.port), rss_before_(ProcStatusKiB(s.pid(), "VmRSS")) {
    peak_ = rss_before_;
    thread_ = std::jthread([this, port = s.port](std::stop_token st) {
      while (!st.stop_requested()) {
        auto [status, ms] = Livez(port);
        peak_ = std::max(peak_.load(), ProcStatusKiB(pid_, "VmRSS"));
        fds_peak_ = std::max(fds_peak_.load(), Descriptors(pid_));
        Record(status, ms);
        for (int i = 0; i < 25 && !st.stop_requested(); ++i) std::this_thread::sleep_for(10ms);
      }
    });
  }
  // Stops, prints the /livez and RSS line, and says whether /livez held and RSS grew less than
  // `rss_limit_mib`.
  bool Report(double rss_limit_mib) {
    thread_ = {};
    // One more at the end, so that a short attack is judged too.
    {
      auto [status, ms] = Livez(port_);
      Record(status, ms);
    }
    const long after = ProcStatusKiB(pid_, "VmRSS");
    if (!why_.empty()) why_ += ")";
    std::sort(ok_.begin(), ok_.end());
    const double median = ok_.empty() ? 0 : ok_[ok_.size() / 2];
    const double worst = ok_.empty() ? 0 : ok_.back();
    std::printf("  /livez: %zu answered 200 within 1 s, %d not%s; latency median %.1f ms, max %.1f ms\n",
                ok_.size(), failed_, why_.c_str(), median, worst);
    std::printf("  RSS %.1f MiB before, peak %.1f MiB, %.1f MiB after; at most %ld descriptors\n",
                MiB(rss_before_), MiB(peak_), MiB(after), fds_peak_.load());
    return failed_ == 0 && !ok_.empty() && MiB(peak_ - rss_before_) < rss_limit_mib;
  }

 private:
  void Record(int status, double ms) {
    if (status == 200 && ms < 1000) {
      ok_.push_back(ms);
      return;
    }
    ++failed_;
    why_ += std::string(why_.empty() ? " (" : ", ") +
            (status == 0 ? "no answer" : std::to_string(status)) + " after " +
            std::to_string(static_cast<int>(ms)) + " ms";
  }

  pid_t pid_;
  int port_;
  long rss_before_;
  std::atomic<long> peak_{0};
  std::atomic<long> fds_peak_{0};
  std::vector<double> ok_;
  int failed_ = 0;
  std::string why_;
  std::jthread thread_;
};

// A non-blocking connection from `source`; -1 when the socket could not be made.
int ConnectNonBlocking(int port, const std::string& source) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return -1;
  sockaddr_in from{}, to{};
  from.sin_family = to.sin_family = AF_INET;
  ::inet_pton(AF_INET, source.c_str(), &from.sin_addr);
  to.sin_port = htons(static_cast<uint16_t>(port));
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof from) != 0 ||
      (::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) != 0 && errno != EINPROGRESS)) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Whether the server closed `fd` (end of stream or reset); data that arrived is dropped.
bool Closed(int fd) {
  char buf[4096];
  for (;;) {
    ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n > 0) continue;
    return n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK);
  }
}

// Whether the connection of `fd` is established (its non-blocking connect finished).
bool Established(int fd) {
  pollfd p{fd, POLLOUT, 0};
  int err = 0;
  socklen_t len = sizeof err;
  return ::poll(&p, 1, 0) == 1 && ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 &&
         err == 0;
}

// Established and not closed by the server.
size_t CountOpen(const std::vector<int>& fds) {
  return static_cast<size_t>(std::count_if(fds.begin(), fds.end(), [](int fd) {
    return fd >= 0 && Established(fd) && !Closed(fd);
  }));
}

bool Slowloris(const ServerProcess& s, const Options& o) {
  std::printf("slowloris: %d addresses x %d connections, a header line a second, %d s\n",
              o.slow_addresses, o.per_address, o.seconds);
  Watch watch(s);
  const size_t n = static_cast<size_t>(o.slow_addresses * o.per_address);
  std::vector<int> fds(n, -1);
  std::vector<std::string> sources(n);
  for (size_t i = 0; i < n; ++i) {
    sources[i] = "127.0.1." + std::to_string(1 + i / static_cast<size_t>(o.per_address));
  }
  size_t opened = 0;
  long lines = 0;
  const auto until = Clock::now() + std::chrono::seconds(o.seconds);
  while (Clock::now() < until) {
    for (size_t i = 0; i < n; ++i) {
      if (fds[i] >= 0 && Closed(fds[i])) {
        ::close(fds[i]);
        fds[i] = -1;
      }
      if (fds[i] < 0) {
        fds[i] = ConnectNonBlocking(s.port, sources[i]);
        if (fds[i] < 0) continue;
        ++opened;
        ::send(fds[i], "GET /status HTTP/1.1\r\n", 22, MSG_NOSIGNAL);
        continue;
      }
      const std::string line = "X-Slow-" + std::to_string(lines++) + ": 1\r\n";
      ::send(fds[i], line.data(), line.size(), MSG_NOSIGNAL);
    }
    std::this_thread::sleep_for(1s);
  }
  const size_t held = CountOpen(fds);
  for (int fd : fds) {
    if (fd >= 0) ::close(fd);
  }
  std::printf("  %zu connections opened in all (the server cut the rest); %zu open at the end\n",
              opened, held);
  return watch.Report(64);
}

bool KeepAlive(const ServerProcess& s, const Options& o) {
  std::printf("keep-alive: %d requests for /metrics on one connection\n", o.requests);
  Watch watch(s);
  int fd = ConnectFrom(s.port, "127.0.0.2", 10);
  int answered = 0;
  std::string pending;
  char buf[65536];
  const auto t0 = Clock::now();
  for (int i = 0; fd >= 0 && i < o.requests; ++i) {
    if (!SendAll(fd, "GET /metrics HTTP/1.1\r\nHost: bench\r\n\r\n")) break;
    size_t end = std::string::npos, length = 0;
    while (true) {
      end = pending.find("\r\n\r\n");
      if (end != std::string::npos) {
        std::smatch m;
        const std::string head = pending.substr(0, end);
        static const std::regex kLength("Content-Length: ([0-9]+)", std::regex::icase);
        if (std::regex_search(head, m, kLength)) length = std::stoul(m[1]);
        if (pending.size() >= end + 4 + length) break;
      }
      ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) break;
      pending.append(buf, static_cast<size_t>(n));
    }
    if (end == std::string::npos || pending.size() < end + 4 + length ||
        pending.rfind("HTTP/1.1 200", 0) != 0) {
      break;
    }
    pending.erase(0, end + 4 + length);
    ++answered;
  }
  if (fd >= 0) ::close(fd);
  const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
  std::printf("  %d of %d answered 200 on the one connection in %.2f s\n", answered, o.requests,
              wall);
  return watch.Report(64) && answered == o.requests;
}

bool HeaderFlood(const ServerProcess& s, const Options& o) {
  std::printf("header flood: one request head of %d MB\n", o.flood_mb);
  Watch watch(s);
  int fd = ConnectFrom(s.port, "127.0.0.3", 30);
  const std::string chunk = HeaderFloodChunk();
  size_t sent = 0;
  const size_t total = static_cast<size_t>(o.flood_mb) * 1'000'000;
  if (fd >= 0 && SendAll(fd, "GET /status HTTP/1.1\r\nHost: bench\r\n")) {
    while (sent < total && SendAll(fd, chunk)) sent += chunk.size();
  }
  std::string reply;
  char buf[512];
  ssize_t n = fd >= 0 ? ::recv(fd, buf, sizeof buf, MSG_DONTWAIT) : -1;
  if (n > 0) reply.assign(buf, static_cast<size_t>(std::min<ssize_t>(n, 40)));
  if (fd >= 0) ::close(fd);
  reply = reply.substr(0, reply.find('\r'));
  std::printf("  %.1f MB taken before the server closed; its answer: %s\n",
              static_cast<double>(sent) / 1e6, reply.empty() ? "(none read)" : reply.c_str());
  return watch.Report(64) && sent < total;
}

bool Idle(const ServerProcess& s, const Options& o) {
  std::printf("idle: %d connections that send nothing, %d s\n", o.idle, o.seconds);
  Watch watch(s);
  std::vector<int> fds;
  fds.reserve(static_cast<size_t>(o.idle));
  for (int i = 0; i < o.idle; ++i) {
    fds.push_back(ConnectNonBlocking(s.port, "127.0.2." + std::to_string(1 + i % 250)));
  }
  std::this_thread::sleep_for(1s);
  const size_t at_1s = CountOpen(fds);
  std::this_thread::sleep_for(std::chrono::seconds(std::max(o.seconds - 1, 1)));
  const size_t at_end = CountOpen(fds);
  const size_t made = static_cast<size_t>(std::count_if(fds.begin(), fds.end(),
                                                        [](int fd) { return fd >= 0; }));
  for (int fd : fds) {
    if (fd >= 0) ::close(fd);
  }
  std::printf("  %zu made; established and open after 1 s: %zu, after %d s: %zu\n", made, at_1s,
              o.seconds, at_end);
  return watch.Report(64);
}

// One worker of the gRPC flood: opens `count` silent connections from `first_source` on, holds
// them `seconds`, and writes "made closed_at_1s open_at_end" to `out`.
void GrpcWorker(int port, int count, int first_source, int seconds, int out) {
  std::vector<int> fds;
  fds.reserve(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) {
    const int a = first_source + i / 250;
    fds.push_back(ConnectNonBlocking(port, "127.0." + std::to_string(a) + "." +
                                               std::to_string(1 + i % 250)));
  }
  std::this_thread::sleep_for(1s);
  const size_t open_1s = CountOpen(fds);
  std::this_thread::sleep_for(std::chrono::seconds(std::max(seconds - 1, 1)));
  const size_t open_end = CountOpen(fds);
  const size_t made =
      static_cast<size_t>(std::count_if(fds.begin(), fds.end(), [](int fd) { return fd >= 0; }));
  const std::string line = std::to_string(made) + " " + std::to_string(open_1s) + " " +
                           std::to_string(open_end) + "\n";
  [[maybe_unused]] ssize_t n = ::write(out, line.data(), line.size());
  for (int fd : fds) {
    if (fd >= 0) ::close(fd);
  }
}

bool GrpcSilent(const ServerProcess& coordinator, int grpc_port, const Options& o) {
  std::printf("grpc silent: %d connections to the gRPC port that send nothing, %d s\n", o.grpc,
              o.seconds);
  Watch watch(coordinator);
  const int workers = std::max(1, o.workers);
  std::vector<pid_t> pids;
  std::vector<int> pipes;
  for (int w = 0; w < workers; ++w) {
    int p[2];
    if (::pipe(p) != 0) return false;
    const int count = o.grpc / workers + (w < o.grpc % workers ? 1 : 0);
    const int first = 3 + w * ((o.grpc / workers + 249) / 250 + 1);
    pid_t pid = ::fork();
    if (pid == 0) {
      ::close(p[0]);
      GrpcWorker(grpc_port, count, first, o.seconds, p[1]);
      ::_exit(0);
    }
    ::close(p[1]);
    pids.push_back(pid);
    pipes.push_back(p[0]);
  }
  size_t made = 0, open_1s = 0, open_end = 0;
  for (size_t w = 0; w < pids.size(); ++w) {
    ::waitpid(pids[w], nullptr, 0);
    char buf[128] = {};
    [[maybe_unused]] ssize_t n = ::read(pipes[w], buf, sizeof buf - 1);
    ::close(pipes[w]);
    size_t a = 0, b = 0, c = 0;
    if (std::sscanf(buf, "%zu %zu %zu", &a, &b, &c) == 3) {
      made += a;
      open_1s += b;
      open_end += c;
    }
  }
  std::printf(
      "  %zu made; established and open after 1 s: %zu (the others closed by the server or "
      "still queued by the kernel), after %d s: %zu\n",
      made, open_1s, o.seconds, open_end);
  return watch.Report(256);
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // progress as it happens, also into a file
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const std::string value = argv[i + 1];
    auto number = [&] { return std::max(1, std::atoi(value.c_str())); };
    if (flag == "--only") {
      o.only = value;
    } else if (flag == "--seconds") {
      o.seconds = number();
    } else if (flag == "--slow-addresses") {
      o.slow_addresses = std::min(250, number());
    } else if (flag == "--per-address") {
      o.per_address = number();
    } else if (flag == "--requests") {
      o.requests = number();
    } else if (flag == "--flood-mb") {
      o.flood_mb = number();
    } else if (flag == "--idle") {
      o.idle = number();
    } else if (flag == "--grpc") {
      o.grpc = number();
    } else if (flag == "--workers") {
      o.workers = number();
    } else {
      std::fprintf(stderr, "bench_attacks: unknown flag %s\n", argv[i]);
      return 2;
    }
  }
  // The servers inherit the limit: as many descriptors as this machine allows a process.
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) == 0) {
    rl.rlim_cur = rl.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &rl);
    std::printf("descriptors per process: %lu\n", static_cast<unsigned long>(rl.rlim_cur));
  }
  auto want = [&](const char* name) { return o.only.empty() || o.only == name; };
  TempDir dir;
  bool ok = true;
  if (want("slowloris") || want("keep-alive") || want("flood") || want("idle")) {
    const std::string log = dir.path() + "/agent.log";
    ServerProcess agent = StartServer({AgentBinary(), "agent", "--standalone", "--root",
                                       FixtureRoot("dgx-a100"), "--listen", "127.0.0.1:0"},
                                      log, std::regex("serving .* on 127\\.0\\.0\\.1:([0-9]+)"));
    if (agent.port == 0) {
      std::fprintf(stderr, "the agent did not start:\n%s\n", ReadFile(log).c_str());
      return 2;
    }
    std::printf("agent: pid %d, HTTP port %d\n", agent.pid(), agent.port);
    if (want("slowloris")) ok = Slowloris(agent, o) && ok;
    if (want("keep-alive")) ok = KeepAlive(agent, o) && ok;
    if (want("flood")) ok = HeaderFlood(agent, o) && ok;
    if (want("idle")) ok = Idle(agent, o) && ok;
    agent.child->Stop(SIGTERM, 10s);
  }
  if (want("grpc")) {
    const std::string log = dir.path() + "/coordinator.log";
    ServerProcess coordinator = StartServer(
        {AgentBinary(), "coordinator", "--listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0"},
        log, std::regex("HTTP on port ([0-9]+)"));
    std::smatch m;
    const std::string text = ReadFile(log);
    const int grpc_port = std::regex_search(text, m, std::regex("agents on port ([0-9]+)"))
                              ? std::stoi(m[1])
                              : 0;
    if (coordinator.port == 0 || grpc_port == 0) {
      std::fprintf(stderr, "the coordinator did not start:\n%s\n", text.c_str());
      return 2;
    }
    std::smatch cap;
    std::printf("coordinator: pid %d, gRPC port %d, HTTP port %d%s\n", coordinator.pid(),
                grpc_port, coordinator.port,
                std::regex_search(text, cap, std::regex("\\(at most [0-9]+ connections\\)"))
                    ? (" " + cap.str()).c_str()
                    : "");
    ok = GrpcSilent(coordinator, grpc_port, o) && ok;
    coordinator.child->Stop(SIGTERM, 10s);
  }
  std::printf("%s\n", ok ? "every attack held" : "some attack was not held");
  return ok ? 0 : 1;
}
