// The two attacks on the HTTP port of issue 16, measured against the real executables: the agent
// (`nccl-triage-server agent --standalone` on the DGX A100 fixture) and the coordinator
// (`nccl-triage-server coordinator`, HTTP on its own port).
//
//   Header flood: --floods connections (default 4) each send one request head of --lines header
//   lines (default 1,000,000, 57 bytes each: 57 MB) as fast as the server takes them. Reports
//   the process's resident memory before, its peak (VmHWM) and after, and how many bytes each
//   flooder got into the socket before the server closed on it.
//   Slowloris: --slow connections (default 8, two client addresses) each send a request line and
//   then one header line every --trickle seconds (default 3) for --seconds (default 15), opening
//   a new connection whenever the server closes one, while
//   /livez is asked every 250 ms on a fresh connection. Reports /livez answers, failures and
//   their latency (median, max).
//
//   build/bench_exporter_hostile [--target agent|coordinator|both] [--floods N] [--lines N]
//                                [--slow N] [--trickle S] [--seconds S]
//
// Exit 0 when the figures stay within what the README promises (peak growth under 64 MiB, every
// /livez answered 200 within 1 s), 1 otherwise, 2 when a process did not start.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <mutex>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A field of /proc/<pid>/status in KiB ("VmRSS", "VmHWM"); -1 when the process is gone.
long StatusKiB(pid_t pid, const char* field) {
  std::istringstream in(ReadText("/proc/" + std::to_string(pid) + "/status"));
  std::string line;
  const std::string key = std::string(field) + ":";
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) == 0) return std::stol(line.substr(key.size()));
  }
  return -1;
}

double MiB(long kib) { return static_cast<double>(kib) / 1024.0; }

// A TCP connection to 127.0.0.1:port from the loopback address `source`; -1 on failure.
int Connect(int port, const char* source, int timeout_seconds) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  timeval tv{timeout_seconds, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  sockaddr_in from{}, to{};
  from.sin_family = to.sin_family = AF_INET;
  ::inet_pton(AF_INET, source, &from.sin_addr);
  to.sin_port = htons(static_cast<uint16_t>(port));
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof(from)) != 0 ||
      ::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof(to)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Bytes of `data` the socket took before an error.
size_t Send(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::send(fd, data.data() + done, data.size() - done, MSG_NOSIGNAL);
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  return done;
}

// GET `path` on a fresh connection: the status code (0 when there was no answer within 5 s).
int Get(int port, const std::string& path) {
  int fd = Connect(port, "127.0.0.1", 5);
  if (fd < 0) return 0;
  const std::string request =
      "GET " + path + " HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n";
  int status = 0;
  if (Send(fd, request) == request.size()) {
    char buf[512];
    ssize_t n = ::recv(fd, buf, sizeof buf - 1, 0);
    if (n > 12) {
      buf[n] = '\0';
      if (std::strncmp(buf, "HTTP/1.1 ", 9) == 0) status = std::atoi(buf + 9);
    }
  }
  ::close(fd);
  return status;
}

struct Server {
  pid_t pid = -1;
  int port = 0;
};

// Starts `argv` with its output in `log`, and learns its HTTP port from the line `port_re`
// matches (waits up to 20 s, then for /livez).
Server Start(const std::vector<std::string>& argv, const std::string& log,
             const std::regex& port_re) {
  Server s;
  s.pid = fork();
  if (s.pid == 0) {
    int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    _exit(127);
  }
  const auto until = Clock::now() + 20s;
  while (Clock::now() < until && s.port == 0) {
    std::smatch m;
    const std::string text = ReadText(log);
    if (std::regex_search(text, m, port_re)) s.port = std::stoi(m[1]);
    if (::waitpid(s.pid, nullptr, WNOHANG) == s.pid) return {-1, 0};
    std::this_thread::sleep_for(50ms);
  }
  while (s.port != 0 && Clock::now() < until && Get(s.port, "/livez") != 200) {
    std::this_thread::sleep_for(50ms);
  }
  return s;
}

void Stop(Server& s) {
  if (s.pid <= 0) return;
  ::kill(s.pid, SIGTERM);
  const auto until = Clock::now() + 10s;
  while (Clock::now() < until && ::waitpid(s.pid, nullptr, WNOHANG) != s.pid) {
    std::this_thread::sleep_for(50ms);
  }
  if (::kill(s.pid, 0) == 0) {
    ::kill(s.pid, SIGKILL);
    ::waitpid(s.pid, nullptr, 0);
  }
  s.pid = -1;
}

struct Options {
  std::string target = "both";
  int floods = 4;
  long lines = 1'000'000;
  int slow = 8;
  int trickle = 3;
  int seconds = 15;
};

// The header flood; true when the peak stayed within 64 MiB of the start.
bool Flood(const std::string& name, const Server& s, const Options& o) {
  const long before = StatusKiB(s.pid, "VmRSS");
  const long hwm_before = StatusKiB(s.pid, "VmHWM");
  std::vector<size_t> taken(static_cast<size_t>(o.floods), 0);
  const auto start = Clock::now();
  {
    std::vector<std::jthread> threads;
    for (int f = 0; f < o.floods; ++f) {
      threads.emplace_back([&, f] {
        int fd = Connect(s.port, "127.0.0.2", 30);
        if (fd < 0) return;
        // 1,000 lines a chunk: "X-Flood-NNNNNN: " and 40 bytes of value, 57 bytes a line.
        std::string chunk;
        char line[80];
        for (int i = 0; i < 1000; ++i) {
          std::snprintf(line, sizeof line, "X-Flood-%06d: %s\r\n", i,
                        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
          chunk += line;
        }
        const std::string head = "GET /status HTTP/1.1\r\nHost: bench\r\n";
        size_t sent = Send(fd, head);
        for (long i = 0; sent > 0 && i < o.lines / 1000; ++i) {
          const size_t n = Send(fd, chunk);
          sent += n;
          if (n < chunk.size()) break;
        }
        taken[static_cast<size_t>(f)] = sent;
        ::close(fd);
      });
    }
  }
  const double wall = std::chrono::duration<double>(Clock::now() - start).count();
  std::this_thread::sleep_for(500ms);
  const long after = StatusKiB(s.pid, "VmRSS");
  const long hwm = StatusKiB(s.pid, "VmHWM");
  const int status = Get(s.port, "/livez");
  std::printf("%s header flood: %d x %ld lines (%.0f MB each) in %.2f s\n", name.c_str(), o.floods,
              o.lines, static_cast<double>(o.lines) * 57 / 1e6, wall);
  std::string accepted;
  for (size_t t : taken) accepted += " " + std::to_string(t / 1000) + " kB";
  std::printf("  bytes each flooder got in before the server closed:%s\n", accepted.c_str());
  std::printf("  RSS %.1f MiB before, %.1f MiB after; peak %.1f MiB (%.1f before the flood)\n",
              MiB(before), MiB(after), MiB(hwm), MiB(hwm_before));
  std::printf("  /livez afterwards: %d\n", status);
  return after > 0 && hwm - before < 64 * 1024 && status == 200;
}

// The slowloris; true when every /livez was answered 200 within 1 s.
bool Slowloris(const std::string& name, const Server& s, const Options& o) {
  std::atomic<bool> stop{false};
  std::atomic<int> connections{0};
  std::vector<std::jthread> slow;
  for (int i = 0; i < o.slow; ++i) {
    // A closed connection is opened again at once, as a real slowloris does.
    slow.emplace_back([&, i] {
      while (!stop) {
        int fd = Connect(s.port, i % 2 ? "127.0.0.3" : "127.0.0.4", 5);
        if (fd < 0) {
          std::this_thread::sleep_for(100ms);
          continue;
        }
        bool open = Send(fd, "GET /status HTTP/1.1\r\n") > 0;
        ++connections;
        for (int k = 0; open && !stop; ++k) {
          for (int w = 0; w < o.trickle * 10 && !stop; ++w) std::this_thread::sleep_for(100ms);
          const std::string line = "X-Slow-" + std::to_string(k) + ": 1\r\n";
          open = Send(fd, line) == line.size();
        }
        ::close(fd);
      }
    });
  }
  std::this_thread::sleep_for(300ms);
  std::vector<double> ms;
  int failures = 0;
  const auto until = Clock::now() + std::chrono::seconds(o.seconds);
  while (Clock::now() < until) {
    const auto t0 = Clock::now();
    const int status = Get(s.port, "/livez");
    const double took = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    if (status == 200) {
      ms.push_back(took);
    } else {
      ++failures;
    }
    std::this_thread::sleep_for(250ms);
  }
  stop = true;
  slow.clear();
  std::sort(ms.begin(), ms.end());
  const double median = ms.empty() ? 0 : ms[ms.size() / 2];
  const double worst = ms.empty() ? 0 : ms.back();
  std::printf(
      "%s slowloris: %d slow clients trickling a header line every %d s for %d s (%d "
      "connections: closed ones are opened again)\n",
      name.c_str(), o.slow, o.trickle, o.seconds, connections.load());
  std::printf("  /livez: %zu answered 200, %d failed; latency median %.2f ms, max %.2f ms\n",
              ms.size(), failures, median, worst);
  return failures == 0 && worst < 1000;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const char* value = argv[i + 1];
    if (flag == "--target") {
      o.target = value;
    } else if (flag == "--floods") {
      o.floods = std::max(1, std::atoi(value));
    } else if (flag == "--lines") {
      o.lines = std::max(1000L, std::atol(value));
    } else if (flag == "--slow") {
      o.slow = std::max(0, std::atoi(value));
    } else if (flag == "--trickle") {
      o.trickle = std::max(1, std::atoi(value));
    } else if (flag == "--seconds") {
      o.seconds = std::max(1, std::atoi(value));
    } else {
      std::fprintf(stderr, "bench_exporter_hostile: unknown flag %s\n", argv[i]);
      return 2;
    }
  }
  if (o.target != "agent" && o.target != "coordinator" && o.target != "both") {
    std::fprintf(stderr, "bench_exporter_hostile: --target is agent, coordinator or both\n");
    return 2;
  }
  char dir_template[] = "/tmp/nccl-triage-bench-XXXXXX";
  const std::string dir = ::mkdtemp(dir_template);
  const std::string binary = std::string(NCCL_TRIAGE_BINARY_DIR) + "/nccl-triage-server";
  bool ok = true;
  for (const std::string name : {"agent", "coordinator"}) {
    if (o.target != "both" && o.target != name) continue;
    const std::string log = dir + "/" + name + ".log";
    Server s = name == "agent"
                   ? Start({binary, "agent", "--standalone", "--root",
                            std::string(NCCL_TRIAGE_SOURCE_DIR) + "/tests/fixtures/dgx-a100",
                            "--listen", "127.0.0.1:0"},
                           log, std::regex("serving .* on 127\\.0\\.0\\.1:([0-9]+)"))
                   : Start({binary, "coordinator", "--listen", "127.0.0.1:0", "--http-listen",
                            "127.0.0.1:0"},
                           log, std::regex("HTTP on port ([0-9]+)"));
    if (s.pid <= 0 || s.port == 0) {
      std::fprintf(stderr, "the %s did not start:\n%s\n", name.c_str(), ReadText(log).c_str());
      Stop(s);
      return 2;
    }
    ok = Flood(name, s, o) && ok;
    ok = Slowloris(name, s, o) && ok;
    Stop(s);
    std::remove(log.c_str());
  }
  ::rmdir(dir.c_str());
  return ok ? 0 : 1;
}
