// The two attacks on the HTTP port (header flood, slowloris), measured against the real executables: the agent
// (`nccl-triage-server agent --standalone` on the DGX A100 fixture) and the coordinator
// (`nccl-triage-server coordinator`, HTTP on its own port).
//
//   Header flood: --floods connections (default 4) each send one request head of --lines header
//   lines (default 1,000,000, 57 bytes each: 57 MB) as fast as the server takes them. Reports
//   the process's resident memory before, its peak (VmHWM) and after, and how many bytes each
//   flooder got into the socket before the server closed on it.
//   Slowloris: --slow connections (default 8, two client addresses) each send a request line and
//   then one header line every --trickle seconds (default 3) for --seconds (default 15), opening
//   a new connection whenever the server closes one, while /livez is asked every 250 ms on a
//   fresh connection. Reports /livez answers, failures and their latency (median, max).
//
//   build/bench_exporter_hostile [--target agent|coordinator|both] [--floods N] [--lines N]
//                                [--slow N] [--trickle S] [--seconds S]
//
// Exit 0 when the figures stay within what the README promises (peak growth under 64 MiB, every
// /livez answered 200 within 1 s), 1 otherwise, 2 when a process did not start.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "exporter/live_util.h"

namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;
using namespace nccl_triage::testing;

double MiB(long kib) { return static_cast<double>(kib) / 1024.0; }

int Livez(int port) {
  auto r = HttpGet(port, "/livez");
  return r ? r->status : 0;
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
bool Flood(const std::string& name, const ServerProcess& s, const Options& o) {
  const long before = ProcStatusKiB(s.pid(), "VmRSS");
  const long hwm_before = ProcStatusKiB(s.pid(), "VmHWM");
  std::vector<size_t> taken(static_cast<size_t>(o.floods), 0);
  const auto start = Clock::now();
  {
    std::vector<std::jthread> threads;
    for (int f = 0; f < o.floods; ++f) {
      threads.emplace_back([&, f] {
        int fd = ConnectFrom(s.port, "127.0.0.2", 30);
        if (fd < 0) return;
        const std::string chunk = HeaderFloodChunk();
        size_t& sent = taken[static_cast<size_t>(f)];
        if (SendAll(fd, "GET /status HTTP/1.1\r\nHost: bench\r\n")) {
          for (long i = 0; i < o.lines / 1000 && SendAll(fd, chunk); ++i) sent += chunk.size();
        }
        ::close(fd);
      });
    }
  }
  const double wall = std::chrono::duration<double>(Clock::now() - start).count();
  std::this_thread::sleep_for(500ms);
  const long after = ProcStatusKiB(s.pid(), "VmRSS");
  const long hwm = ProcStatusKiB(s.pid(), "VmHWM");
  const int status = Livez(s.port);
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
bool Slowloris(const std::string& name, const ServerProcess& s, const Options& o) {
  std::atomic<bool> stop{false};
  std::atomic<int> connections{0};
  std::vector<std::jthread> slow;
  for (int i = 0; i < o.slow; ++i) {
    // A closed connection is opened again at once, as a real slowloris does.
    slow.emplace_back([&, i] {
      while (!stop) {
        int fd = ConnectFrom(s.port, i % 2 ? "127.0.0.3" : "127.0.0.4", 5);
        if (fd < 0) {
          std::this_thread::sleep_for(100ms);
          continue;
        }
        bool open = SendAll(fd, "GET /status HTTP/1.1\r\n");
        ++connections;
        for (int k = 0; open && !stop; ++k) {
          for (int w = 0; w < o.trickle * 10 && !stop; ++w) std::this_thread::sleep_for(100ms);
          open = SendAll(fd, "X-Slow-" + std::to_string(k) + ": 1\r\n");
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
    const int status = Livez(s.port);
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
  TempDir dir;
  bool ok = true;
  for (const std::string name : {"agent", "coordinator"}) {
    if (o.target != "both" && o.target != name) continue;
    const std::string log = dir.path() + "/" + name + ".log";
    ServerProcess s = name == "agent" ? StartServer({AgentBinary(), "agent", "--standalone", "--root",
                                        FixtureRoot("dgx-a100"), "--listen", "127.0.0.1:0"},
                                       log, std::regex("serving .* on 127\\.0\\.0\\.1:([0-9]+)"))
                               : StartServer({AgentBinary(), "coordinator", "--listen", "127.0.0.1:0",
                                        "--http-listen", "127.0.0.1:0"},
                                       log, std::regex("HTTP on port ([0-9]+)"));
    if (s.port == 0) {
      std::fprintf(stderr, "the %s did not start:\n%s\n", name.c_str(), ReadFile(log).c_str());
      return 2;
    }
    ok = Flood(name, s, o) && ok;
    ok = Slowloris(name, s, o) && ok;
    s.child->Stop(SIGTERM, 10s);
  }
  return ok ? 0 : 1;
}
