// Benchmark: `nccl-triage check` on the DGX A100 fixture (8 HCAs, 8 GPUs), as a user runs it.
//
// Runs the binary as a child N times and reports the median and worst wall time and the peak RSS
// (getrusage of the children, i.e. wait4's ru_maxrss). Then, in-process, splits one run into
// gathering and judging, and verifies that the gatherer read no file twice and that the verdict
// is the expected one, so that a fast wrong answer does not count.
//
//   build/bench_check [--runs N] [--root DIR] [--binary PATH]
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "checks/check.h"
#include "core/report.h"
#include "host/gatherer.h"

namespace {

using Clock = std::chrono::steady_clock;

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Runs `argv` with stdout and stderr on /dev/null; returns the exit code, raises `max_rss_kib` to
// the child's peak RSS and sets `cpu_ms` to its user + system time (both from wait4's rusage).
int RunChild(const std::vector<std::string>& argv, long& max_rss_kib, double& cpu_ms) {
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    FILE* null = std::fopen("/dev/null", "w");
    if (null != nullptr) {
      dup2(fileno(null), STDOUT_FILENO);
      dup2(fileno(null), STDERR_FILENO);
    }
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  int status = 0;
  rusage usage{};
  if (wait4(pid, &status, 0, &usage) != pid) return -1;
  max_rss_kib = std::max(max_rss_kib, usage.ru_maxrss);
  auto ms = [](const timeval& t) { return static_cast<double>(t.tv_sec) * 1e3 + t.tv_usec / 1e3; };
  cpu_ms = ms(usage.ru_utime) + ms(usage.ru_stime);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

int main(int argc, char** argv) {
  int runs = 31;
  std::string root = std::string(NCCL_TRIAGE_FIXTURE_DIR) + "/dgx-a100";
  std::string binary = std::string(NCCL_TRIAGE_BINARY_DIR) + "/nccl-triage";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--runs" && i + 1 < argc) {
      runs = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--root" && i + 1 < argc) {
      root = argv[++i];
    } else if (a == "--binary" && i + 1 < argc) {
      binary = argv[++i];
    } else {
      std::fprintf(stderr, "usage: bench_check [--runs N] [--root DIR] [--binary PATH]\n");
      return 2;
    }
  }

  // 1. The command as a user runs it: process start, gather, judge, JSON out.
  const std::vector<std::string> cmd = {binary, "check", "--root", root, "--format", "json"};
  std::vector<double> wall, cpu;
  long max_rss_kib = 0;
  double cpu_ms = 0;
  RunChild(cmd, max_rss_kib, cpu_ms);  // warm the page cache once
  max_rss_kib = 0;
  for (int i = 0; i < runs; ++i) {
    const auto start = Clock::now();
    const int rc = RunChild(cmd, max_rss_kib, cpu_ms);
    wall.push_back(Ms(Clock::now() - start));
    cpu.push_back(cpu_ms);
    if (rc != 0) {
      std::fprintf(stderr, "bench_check: '%s check --root %s' exited %d (expected 0)\n",
                   binary.c_str(), root.c_str(), rc);
      return 1;
    }
  }

  // 2. In-process split: gather vs judge, and the files-read-once property.
  std::vector<double> gather_ms, judge_ms;
  const nccl_triage::CheckRegistry registry = nccl_triage::BuiltinCheckRegistry();
  nccl_triage::NodeSnapshot snapshot;
  for (int i = 0; i < runs; ++i) {
    nccl_triage::GatherOptions o;
    o.root = root;
    const auto t0 = Clock::now();
    auto s = nccl_triage::GatherSnapshot(o);
    const auto t1 = Clock::now();
    if (!s.ok()) {
      std::fprintf(stderr, "bench_check: %s\n", s.status().message().c_str());
      return 1;
    }
    auto findings = registry.Run(*s, nccl_triage::Config{}, {});
    auto report = nccl_triage::MakeReport(s->node, std::move(findings), 0);
    const auto t2 = Clock::now();
    gather_ms.push_back(Ms(t1 - t0));
    judge_ms.push_back(Ms(t2 - t1));
    if (report.fault_class != nccl_triage::FaultClass::kHealthy) {
      std::fprintf(stderr, "bench_check: expected a healthy verdict on %s\n", root.c_str());
      return 1;
    }
    snapshot = std::move(*s);
  }
  int most_reads = 0;
  std::string most_read;
  for (const auto& [file, count] : snapshot.files_read) {
    if (count > most_reads) {
      most_reads = count;
      most_read = file;
    }
  }

  std::printf("check on %s (%d runs)\n", root.c_str(), runs);
  std::printf("  wall time (child process):  median %.1f ms, max %.1f ms\n", Median(wall),
              *std::max_element(wall.begin(), wall.end()));
  std::printf("  CPU time (child process):   median %.1f ms (user + system)\n", Median(cpu));
  std::printf("  peak RSS (child process):   %.1f MiB\n",
              static_cast<double>(max_rss_kib) / 1024.0);

  // The floor under those figures: the same binary doing nothing but printing its version
  // (dynamic loading of its libraries and their initialisers).
  std::vector<double> base_wall, base_cpu;
  long base_rss_kib = 0;
  for (int i = 0; i < runs; ++i) {
    const auto start = Clock::now();
    RunChild({binary, "--version"}, base_rss_kib, cpu_ms);
    base_wall.push_back(Ms(Clock::now() - start));
    base_cpu.push_back(cpu_ms);
  }
  std::printf(
      "  baseline `--version`:       wall median %.1f ms, CPU median %.1f ms, RSS %.1f MiB\n",
      Median(base_wall), Median(base_cpu), static_cast<double>(base_rss_kib) / 1024.0);
  std::printf("  in-process gather:          median %.2f ms\n", Median(gather_ms));
  std::printf("  in-process checks + report: median %.3f ms\n", Median(judge_ms));
  std::printf("  files read:                 %zu, each at most %d time(s)%s\n",
              snapshot.files_read.size(), most_reads,
              most_reads > 1 ? (" (" + most_read + " more than once)").c_str() : "");
  return most_reads > 1 ? 1 : 0;
}
