// Benchmark: `nccl-triage triage` of a large dead job against the fake Kubernetes API over HTTPS
// (tests/support/fake_api_server.h, in this process).
//
// The job has --pods pods on as many nodes, each with a --lines-line log generated line by line
// (never held whole): NCCL INFO set-up lines of a 2.21 run over IB, then training-step output,
// then the end: one pod fails ibv_reg_mr first, every other pod loses its connection to it a
// little later, and each prints a PyTorch back-trace. The triage runs as a user runs it (the two
// executables, a kubeconfig); the bench reports wall time, the peak RSS of each process of the
// triage (sampled from /proc VmHWM, and wait4's maximum), the bytes the API served, and checks the
// answer: a fast wrong incident does not count.
//
//   build/bench_triage [--pods N] [--lines N] [--runs N] [--keep] [--show] [--binary PATH]
//                      [-- extra triage flags]
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "exporter/tls_test_cert.h"
#include "support/fake_api_server.h"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using nccl_triage::testing::FakeApiServer;
using nccl_triage::testing::FakeLog;
using nlohmann::json;

constexpr int64_t kT0 = int64_t{1739265240} * 1'000'000'000;
constexpr int64_t kStep = 10'000'000;  // 10 ms between lines

std::string Ip(int i) {
  return "10.2." + std::to_string(i / 250) + "." + std::to_string(i % 250 + 1);
}
std::string Pod(int i) { return "bench-worker-" + std::to_string(i); }

// Line `i` of pod `p`'s log; `fail` is the pod whose HCA registration fails first.
std::string Line(int p, size_t i, size_t lines, int fail) {
  char buf[320];
  const std::string host = Pod(p);
  const int pid = 4000 + p;
  if (i < 400) {
    switch (i % 8) {
      case 0:
        std::snprintf(buf, sizeof(buf), "%s:%d:%d [0] NCCL INFO NCCL version 2.21.5+cuda12.4",
                      host.c_str(), pid, pid);
        break;
      case 1:
        std::snprintf(buf, sizeof(buf), "%s:%d:%d [0] NCCL INFO Using network IB", host.c_str(),
                      pid, pid);
        break;
      case 2:
        std::snprintf(buf, sizeof(buf),
                      "%s:%d:%d [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB "
                      "eth0:%s<0>",
                      host.c_str(), pid, pid, Ip(p).c_str());
        break;
      default:
        std::snprintf(buf, sizeof(buf),
                      "%s:%d:%d [0] NCCL INFO Channel %02zu/0 : %d[0] -> %d[0] [send] via "
                      "NET/IB/%zu/GDRDMA",
                      host.c_str(), pid, pid, i % 32, p, p + 1, i % 8);
    }
    return buf;
  }
  const size_t end = lines > 300 ? lines - 300 : lines;
  if (i < end) {
    // Integers only: this runs in the bench's process, beside what it measures.
    std::string s = "[rank" + std::to_string(p) + "]:[step " + std::to_string(i) + "] loss=2." +
                    std::to_string(1000 + i % 997) +
                    " lr=3.0e-04 tokens/s=" + std::to_string(180000 + i % 5000) + " grad_norm=1." +
                    std::to_string(100 + i % 313) + " mem=61.2GiB";
    return s;
  }
  const size_t k = i - end;
  if (p == fail && k == 0) {
    std::snprintf(buf, sizeof(buf),
                  "%s:%d:%d [0] misc/ibvwrap.cc:262 NCCL WARN Call to ibv_reg_mr failed with "
                  "error Cannot allocate memory",
                  host.c_str(), pid, pid);
  } else if (p != fail && k == 50) {
    std::snprintf(buf, sizeof(buf),
                  "%s:%d:%d [0] misc/socket.cc:538 NCCL WARN socketProgress: Connection closed by "
                  "remote peer %s<52187>",
                  host.c_str(), pid, pid, Ip(fail).c_str());
  } else if (k % 3 == 1) {
    std::snprintf(buf, sizeof(buf), "%s:%d:%d [0] NCCL INFO transport/net.cc:%zu -> %d",
                  host.c_str(), pid, pid, 600 + k, p == fail ? 2 : 6);
  } else {
    std::snprintf(buf, sizeof(buf),
                  "[rank%d]:   File \"/opt/train/train.py\", line %zu, in train_step", p, 100 + k);
  }
  return buf;
}

struct Tree {
  std::map<pid_t, long> hwm_kib;  // every process of the triage seen, its peak RSS
};

long VmHwmKib(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::atol(line.c_str() + 6);
  }
  return 0;
}

void Sample(pid_t pid, Tree& t) {
  long hwm = VmHwmKib(pid);
  if (hwm > 0) t.hwm_kib[pid] = std::max(t.hwm_kib[pid], hwm);
  std::ifstream in("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/children");
  pid_t child;
  while (in >> child) Sample(child, t);
}

}  // namespace

int main(int argc, char** argv) {
  int pods = 512;
  size_t lines = 200000;
  int runs = 1;
  bool keep = false, show = false;
  std::string binary = std::string(NCCL_TRIAGE_BINARY_DIR) + "/nccl-triage";
  std::vector<std::string> extra;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--pods" && i + 1 < argc) {
      pods = std::max(2, std::atoi(argv[++i]));
    } else if (a == "--lines" && i + 1 < argc) {
      lines = std::max<size_t>(1000, std::strtoul(argv[++i], nullptr, 10));
    } else if (a == "--runs" && i + 1 < argc) {
      runs = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--binary" && i + 1 < argc) {
      binary = argv[++i];
    } else if (a == "--keep") {
      keep = true;
    } else if (a == "--show") {
      show = true;
    } else if (a == "--") {
      extra.assign(argv + i + 1, argv + argc);
      break;
    } else {
      std::fprintf(stderr,
                   "usage: bench_triage [--pods N] [--lines N] [--runs N] [--keep] [--show] "
                   "[--binary PATH] [-- triage flags]\n");
      return 2;
    }
  }
  const fs::path dir = fs::temp_directory_path() / ("bench_triage_" + std::to_string(getpid()));
  fs::create_directories(dir);
  const auto cert = nccl_triage::testing::MakeSelfSignedCert(dir.string());
  FakeApiServer::Options o{cert.cert_path, cert.key_path, "bench-token", "", kT0};
  FakeApiServer server(o);
  const int fail = pods * 3 / 7;
  for (int p = 0; p < pods; ++p) {
    server.AddPod(
        {{"metadata",
          {{"name", Pod(p)},
           {"namespace", "bench"},
           {"uid", "uid-" + std::to_string(p)},
           {"labels", {{"job-name", "bench"}, {"batch.kubernetes.io/job-name", "bench"}}},
           {"ownerReferences",
            {{{"apiVersion", "batch/v1"},
              {"kind", "Job"},
              {"name", "bench"},
              {"uid", "job-uid"},
              {"controller", true}}}}}},
         {"spec",
          {{"nodeName", "node-" + std::to_string(p)}, {"containers", {{{"name", "trainer"}}}}}},
         {"status",
          {{"phase", "Failed"},
           {"podIP", Ip(p)},
           {"containerStatuses",
            {{{"name", "trainer"},
              {"restartCount", 0},
              {"state", {{"terminated", {{"reason", "Error"}, {"exitCode", 1}}}}}}}}}}});
    FakeLog log;
    log.lines = lines;
    log.line = [p, lines, fail](size_t i) { return Line(p, i, lines, fail); };
    log.start_ns = kT0 + (p == fail ? 0 : 20'000'000);
    log.step_ns = kStep;
    server.SetLog("bench", Pod(p), "trainer", false, log);
  }
  std::string ca;
  {
    std::ifstream in(cert.cert_path);
    std::ostringstream s;
    s << in.rdbuf();
    ca = s.str();
  }
  const std::string kubeconfig = (dir / "kubeconfig").string();
  std::ofstream(kubeconfig) << nccl_triage::testing::KubeconfigFor(server.port(), ca, "bench-token",
                                                                   "bench");

  std::vector<double> walls, cpus;
  long max_parent = 0, max_fetch = 0, max_tree = 0;
  uint64_t served = 0;
  for (int run = 0; run < runs; ++run) {
    const uint64_t served_before = server.log_bytes_served();
    const std::string out_path = (dir / "out.txt").string();
    std::vector<std::string> args = {binary, "triage", "--job", "bench", "--no-probe"};
    if (!keep) args.push_back("--no-keep");
    if (!show) args.insert(args.end(), {"--format", "json"});
    args.insert(args.end(), extra.begin(), extra.end());
    const auto start = Clock::now();
    pid_t pid = fork();
    if (pid == 0) {
      FILE* out = std::fopen(out_path.c_str(), "w");
      if (out != nullptr) dup2(fileno(out), STDOUT_FILENO);
      setenv("KUBECONFIG", kubeconfig.c_str(), 1);
      std::vector<char*> cargs;
      for (auto& a : args) cargs.push_back(a.data());
      cargs.push_back(nullptr);
      execv(cargs[0], cargs.data());
      _exit(127);
    }
    Tree tree;
    int status = 0;
    rusage usage{};
    while (true) {
      Sample(pid, tree);
      pid_t w = wait4(pid, &status, WNOHANG, &usage);
      if (w == pid) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    const double wall = std::chrono::duration<double>(Clock::now() - start).count();
    walls.push_back(wall);
    auto secs = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
    cpus.push_back(secs(usage.ru_utime) + secs(usage.ru_stime));
    served = server.log_bytes_served() - served_before;
    long parent = tree.hwm_kib.count(pid) ? tree.hwm_kib[pid] : 0;
    long fetch = 0;
    for (const auto& [p, kib] : tree.hwm_kib) {
      if (p != pid) fetch = std::max(fetch, kib);
    }
    max_parent = std::max(max_parent, parent);
    max_fetch = std::max(max_fetch, fetch);
    max_tree = std::max(max_tree, usage.ru_maxrss);
    std::ifstream in(out_path);
    std::ostringstream text;
    text << in.rdbuf();
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    if (show) {
      std::fputs(text.str().c_str(), stdout);
      std::printf("(exit %d)\n", code);
      continue;
    }
    json j = json::parse(text.str(), nullptr, false);
    const bool right = code == 1 && j.is_object() && j["class"] == "ib_resource" &&
                       j["first_failure"]["pod"] == Pod(fail) &&
                       j["logs"].size() == static_cast<size_t>(pods);
    std::printf("run %d: %.2f s wall, %.2f s CPU in the triage's processes, exit %d, %s\n", run + 1,
                wall, cpus.back(), code, right ? "right answer" : "WRONG ANSWER");
    if (!right) {
      std::fprintf(stderr, "%s\n", text.str().substr(0, 2000).c_str());
      return 1;
    }
  }
  std::sort(walls.begin(), walls.end());
  std::printf(
      "triage of %d pods x %zu lines (%s): wall median %.2f s (min %.2f, max %.2f, %d runs); "
      "peak RSS nccl-triage %.1f MiB, nccl-triage-server triage-fetch %.1f MiB (wait4 max %.1f "
      "MiB); the API served %.0f MiB of logs per run\n",
      pods, lines, keep ? "kept: annotations and event" : "--no-keep", walls[walls.size() / 2],
      walls.front(), walls.back(), runs, max_parent / 1024.0, max_fetch / 1024.0, max_tree / 1024.0,
      static_cast<double>(served) / (1 << 20));
  fs::remove_all(dir);
  return 0;
}
