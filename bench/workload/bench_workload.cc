// Benchmark: one workload pass on a busy GPU node. The fixture generator writes a DGX A100 root
// with 2,000 ordinary processes (fds on /dev/null, pipes, sockets, log files) and 8 GPU pods (one
// training process each, one GPU each; two of them misconfigured) into a temporary directory.
// Measured: the scan alone and the whole pass (scan, judge every container with the catalogue's
// checks, publish the findings into an AgentState; no API). Prints the median, p95 and worst
// wall time, the /proc files read per pass and the most reads of any one file, and checks the
// verdicts so that a fast wrong answer does not count.
//
//   build/bench_workload [--runs N] [--ranks R] [--keep DIR]
//     R GPU processes per pod (default 1); --keep writes the fixture to DIR once and reuses it
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/log.h"
#include "host/gatherer.h"
#include "state/agent_state.h"
#include "support/fixture/fixture.h"
#include "support/fixture/workload_fixture.h"
#include "workload/monitor.h"

namespace {

using namespace nccl_triage;

constexpr int kPods = 8;
constexpr int kOtherProcesses = 2000;

std::string Uid(int n) {
  char buf[40];
  std::snprintf(buf, sizeof(buf), "5d1e7a90-3c4b-4f2e-8a61-%012d", n);
  return buf;
}

std::string Cid(int n) {
  std::string id;
  uint32_t x = static_cast<uint32_t>(n + 7) * 2654435761u;
  for (int i = 0; i < 8; ++i) {
    char buf[9];
    std::snprintf(buf, sizeof(buf), "%08x", x);
    id += buf;
    x = x * 1664525u + 1013904223u;
  }
  return id;
}

double CpuMs() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

struct Stats {
  double median = 0, p95 = 0, max = 0;
};

Stats Summarise(std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  return {ms[ms.size() / 2], ms[std::min(ms.size() - 1, ms.size() * 95 / 100)], ms.back()};
}

}  // namespace

int main(int argc, char** argv) {
  int runs = 51;
  int ranks = 1;
  std::string keep;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--runs" && i + 1 < argc) {
      runs = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--keep" && i + 1 < argc) {
      keep = argv[++i];
    } else if (a == "--ranks" && i + 1 < argc) {
      ranks = std::clamp(std::atoi(argv[++i]), 1, 8);
    } else {
      std::fprintf(stderr, "usage: bench_workload [--runs N] [--ranks R] [--keep DIR]\n");
      return 2;
    }
  }

  std::string tmpl = keep;
  if (tmpl.empty()) {
    tmpl = (std::filesystem::temp_directory_path() / "bench-workload-XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) return 1;
  }
  const std::string root = tmpl + "/root";
  const bool reuse = !keep.empty() && std::filesystem::exists(root);
  if (!reuse) {
    FixtureSpec spec = DgxA100Spec();
    for (int i = 0; i < kOtherProcesses; ++i) {
      FixtureHolder h;
      h.pid = 10000 + i;
      h.comm = "worker";
      h.fds = {"/dev/null",
               "/dev/null",
               "/dev/null",
               "pipe:[" + std::to_string(700000 + i) + "]",
               "socket:[" + std::to_string(800000 + i) + "]",
               "anon_inode:[eventpoll]",
               "/var/log/app-" + std::to_string(i % 50) + ".log"};
      spec.holders.push_back(std::move(h));
    }
    if (Status s = WriteFixture(spec, root); !s.ok()) {
      std::fprintf(stderr, "bench_workload: %s\n", s.message().c_str());
      return 1;
    }
    std::vector<FixtureWorkloadProcess> gpu;
    for (int pod = 0; pod < kPods; ++pod) {
      for (int r = 0; r < ranks; ++r) {
        FixtureWorkloadProcess p;
        p.pid = 50000 + pod * 10 + r;
        p.cgroup = KubepodsCgroup(Uid(pod), Cid(pod), pod % 2 == 0);
        p.fds = {"/dev/null",       "/dev/nvidiactl",
                 "/dev/nvidia-uvm", "/dev/nvidia" + std::to_string((pod + r) % 8),
                 "socket:[1]",      "/dev/infiniband/uverbs" + std::to_string(pod)};
        for (int k = 0; k < 8; ++k) p.dev_infiniband.push_back("uverbs" + std::to_string(k));
        p.environ = {{"PATH", "/usr/bin"},
                     {"HOME", "/root"},
                     {"NCCL_DEBUG", "WARN"},
                     {"LOCAL_RANK", std::to_string(r)}};
        p.nccl_library = "/usr/lib/x86_64-linux-gnu/libnccl.so.2.28.9";
        if (pod == 3) p.memlock = {{false, 65536}, {false, 65536}};
        if (pod == 5) p.shm_bytes = 64ull << 20;
        if (pod == 3) p.cap_eff = 0x00000000a80425fbull;
        gpu.push_back(std::move(p));
      }
    }
    if (Status s = WriteWorkloadProcesses(gpu, root); !s.ok()) {
      std::fprintf(stderr, "bench_workload: %s\n", s.message().c_str());
      return 1;
    }
  }

  GatherOptions go;
  go.root = root;
  auto host = GatherSnapshot(go);
  if (!host.ok()) {
    std::fprintf(stderr, "bench_workload: %s\n", host.status().message().c_str());
    return 1;
  }

  AgentState state("bench", "bench", 0);
  SystemClock clock;
  std::ostringstream sink;
  Logger log(sink, LogLevel::kInfo);
  workload::WorkloadMonitorOptions o;
  o.scanner.root = root;
  workload::WorkloadMonitor monitor(o, &state, nullptr, nullptr, clock, log);
  workload::WorkloadScanner scanner(o.scanner);

  std::vector<double> scan_ms, pass_ms, pass_cpu_ms;
  size_t files = 0;
  int max_reads = 0;
  bool ok = true;
  for (int i = 0; i < runs; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    workload::ScanResult scan = scanner.Scan();
    auto t1 = std::chrono::steady_clock::now();
    const double cpu0 = CpuMs();
    workload::WorkloadPass pass = monitor.RunPass(*host);
    pass_cpu_ms.push_back(CpuMs() - cpu0);
    auto t2 = std::chrono::steady_clock::now();
    scan_ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    pass_ms.push_back(std::chrono::duration<double, std::milli>(t2 - t1).count());
    files = pass.scan.files_read.size();
    for (const auto& [path, n] : pass.scan.files_read) max_reads = std::max(max_reads, n);
    // A fast wrong answer does not count: 8 containers, pods 3 and 5 failing, the rest healthy.
    int failing = 0;
    for (const auto& c : pass.containers) failing += c.verdict == FaultClass::kArchitecture;
    if (pass.containers.size() != kPods || failing != 2 ||
        pass.scan.processes_scanned < kOtherProcesses + kPods * ranks) {
      ok = false;
    }
  }
  std::error_code ec;
  if (keep.empty()) std::filesystem::remove_all(tmpl, ec);

  Stats scan = Summarise(scan_ms), pass = Summarise(pass_ms), cpu = Summarise(pass_cpu_ms);
  std::printf("workload pass: %d GPU pods (%d GPU process(es) each), %d other processes, %d runs\n",
              kPods, ranks, kOtherProcesses, runs);
  std::printf("  scan only   median %.2f ms  p95 %.2f ms  max %.2f ms\n", scan.median, scan.p95,
              scan.max);
  std::printf("  whole pass  median %.2f ms  p95 %.2f ms  max %.2f ms  (budget 50 ms)\n",
              pass.median, pass.p95, pass.max);
  std::printf("  whole pass  CPU time (user+sys) median %.2f ms  max %.2f ms\n", cpu.median,
              cpu.max);
  std::printf("  files read per pass: %zu, most reads of one file: %d (budget 1)\n", files,
              max_reads);
  if (!ok) {
    std::fprintf(stderr, "bench_workload: wrong verdicts (expected 8 containers, 2 failing)\n");
    return 1;
  }
  return (pass.median <= 50.0 && max_reads <= 1) ? 0 : 1;
}
