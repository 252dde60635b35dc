// Benchmark: the classifier's line rate on the inputs that matter, each beside `grep -c` on the
// same file. Every shape is streamed from a file; the bench prints the median wall time and the
// process CPU time (on shared cores the wall time measures the neighbours too) as MB/s,
// grep's time, the peak RSS before and after classifying, and checks the verdict, so a fast wrong
// answer does not count (exit 1).
//
//   info           a 200,000-line NCCL_DEBUG=INFO log of 64 interleaved ranks, 5 % training
//                  output, one ibv_reg_mr failure and the peers that lose it
//   repeated-warn  1,000,000 WARN lines: eight failures repeated by 64 ranks
//   distinct-warn  1,000,000 WARN lines, no two alike (addresses, ports, sizes, counters)
//   qp-gid         1,000,000 distinct QP transition timeouts with GIDs, and GID INFO lines
//   big            the info log's shape grown to 1 GB (--gb N): memory must stay flat
//
//   build/bench_classify [--shape all|info|repeated-warn|distinct-warn|qp-gid|big] [--runs N]
//                        [--lines N] [--ranks N] [--gb N] [--keep DIR]
#include <sys/resource.h>
#include <unistd.h>

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "classify/classifier.h"

namespace {

struct Options {
  std::string shape = "all";
  size_t lines = 0;  // 0: the shape's default
  int ranks = 64;
  int runs = 5;
  double gb = 1.0;
  std::string keep;  // keep the generated logs in this folder
};

// CPU time of this process: on shared cores, wall time measures the neighbours too.
double CpuMs() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) / 1e6;
}

double PeakRssMiB() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

// The prefix of a WARN line of rank r (64 ranks on 8 hosts).
std::string WarnPrefix(unsigned r) {
  return "[2025-02-11 09:14:07] gpu-node" + std::to_string(r / 8) + ":" +
         std::to_string(41000 + r) + ":" + std::to_string(41060 + r) + " [" +
         std::to_string(r % 8) + "] ";
}

// `lines` WARN lines from 64 ranks: the failures a broken job repeats (a memory registration,
// a peer that closed the connection, the proxy wrapper, an unmatched WARN, a failed system call,
// a CUDA error, a 2.24+ QP transition failure with its GIDs), the same eight texts over and over.
void GenerateRepeatedWarn(std::ofstream& out, size_t lines) {
  std::mt19937 rng(11);
  const char* kWarn[] = {
      "misc/ibvwrap.cc:262 NCCL WARN Call to ibv_reg_mr failed with error Cannot allocate memory",
      "misc/socket.cc:538 NCCL WARN socketProgress: Connection closed by remote peer "
      "gpu-node05<52187>",
      "proxy.cc:1519 NCCL WARN [Proxy Service 3] Failed to execute operation Connect from rank 1, "
      "retcode 2",
      "transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer 10.0.0.2<46761> with "
      "error 12, opcode 0, len 0, vendor err 129",
      "graph/search.cc:890 NCCL WARN Could not find a path for pattern 4, falling back to simple "
      "order",
      "misc/socket.cc:100 NCCL WARN Call to getsockname failed : Bad file descriptor",
      "enqueue.cc:43 NCCL WARN Cuda failure 'out of memory'",
      "misc/ibvwrap.cc:262 NCCL WARN Call to ibv_modify_qp failed with 110 Connection timed out, "
      "on dev mlx5_3:1, curr state INIT, next state RTR, local GID index 3, local GID "
      "::ffff:10.1.3.7, remote GID ::ffff:10.1.5.9",
  };
  for (size_t i = 0; i < lines; ++i) {
    out << WarnPrefix(rng() % 64) << kWarn[rng() % std::size(kWarn)] << '\n';
  }
}

// `lines` WARN lines no two alike: a dying job's flood, where addresses, ports, sizes, buffer
// pointers and counters differ on every line (peer closes, completion errors, proxy wrappers,
// failed sends, CUDA errors, unmatched WARNs).
void GenerateDistinctWarn(std::ofstream& out, size_t lines) {
  std::mt19937 rng(13);
  char buf[512];
  for (size_t i = 0; i < lines; ++i) {
    const unsigned r = rng() % 64;
    const unsigned a = rng();
    switch (i % 6) {
      case 0:
        std::snprintf(buf, sizeof buf,
                      "misc/socket.cc:538 NCCL WARN socketProgress: Connection closed by remote "
                      "peer gpu-node%02u<%u>",
                      a % 97, 40000 + static_cast<unsigned>(i % 20000));
        break;
      case 1:
        std::snprintf(buf, sizeof buf,
                      "transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer "
                      "10.%u.%u.%u<%u> with error 12, opcode %u, len %zu, vendor err 129",
                      a % 256, (a >> 8) % 256, (a >> 16) % 256, 30000 + (a >> 20) % 30000, a % 3,
                      i);
        break;
      case 2:
        std::snprintf(buf, sizeof buf,
                      "proxy.cc:1519 NCCL WARN [Proxy Service %zu] Failed to execute operation "
                      "Connect from rank %u, retcode 2",
                      i, a % 4096);
        break;
      case 3:
        std::snprintf(buf, sizeof buf,
                      "misc/socket.cc:%zu NCCL WARN Call to send to 10.%u.%u.%u<%u> failed : "
                      "Broken pipe",
                      100 + i % 900, a % 256, (a >> 8) % 256, (a >> 16) % 256, 30000 + a % 30000);
        break;
      case 4:
        std::snprintf(buf, sizeof buf,
                      "enqueue.cc:%zu NCCL WARN Cuda failure 'out of memory' allocating %zu bytes "
                      "at 0x%08x",
                      40 + i % 60, (i + 1) * 4096, a);
        break;
      default:
        std::snprintf(buf, sizeof buf,
                      "graph/search.cc:890 NCCL WARN Could not find a path for pattern %zu, "
                      "falling back to simple order (channel %u, bw %u.%u)",
                      i, a % 32, a % 400, a % 10);
        break;
    }
    out << WarnPrefix(r) << buf << '\n';
  }
}

// `lines` distinct QP transition timeouts with GIDs (NCCL 2.24+ prints both ends) and the GID
// INFO lines of the connections: every line another device, GID index and address pair.
void GenerateQpGid(std::ofstream& out, size_t lines) {
  std::mt19937 rng(17);
  char buf[512];
  for (size_t i = 0; i < lines; ++i) {
    const unsigned a = rng();
    const unsigned b = rng();
    if (i % 4 == 3) {
      std::snprintf(buf, sizeof buf,
                    "NCCL INFO NET/IB: IbDev %u Port 1 qpn %u mtu 5 GID %u (0/%08X%08X) "
                    "fifoRkey=0x%x fifoLkey=0x%x",
                    a % 8, b % 100000, a % 4, a, b, b >> 3, a >> 5);
    } else {
      std::snprintf(buf, sizeof buf,
                    "misc/ibvwrap.cc:262 NCCL WARN Call to ibv_modify_qp failed with 110 "
                    "Connection timed out, on dev mlx5_%u:1, curr state INIT, next state RTR, "
                    "local GID index %u, local GID ::ffff:10.%u.%u.%u, remote GID "
                    "::ffff:10.%u.%u.%u",
                    a % 8, a % 4, a % 256, (a >> 8) % 256, (a >> 16) % 256, b % 256,
                    (b >> 8) % 256, (b >> 16) % 256);
    }
    out << WarnPrefix(b % 64) << buf << '\n';
  }
}

// `lines` lines of a job's own output with no NCCL line: the framework's progress bars, loss
// dictionaries, warnings, a serving engine's request log, a transfer library's INFO, traceback
// frames; numbers differ on every line. The last line is an RDMA library's registration failure.
// Each line goes through the rules that read plain text (other layers, tracebacks, quotes).
void GenerateText(std::ofstream& out, size_t lines) {
  std::mt19937 rng(17);
  char buf[512];
  for (size_t i = 0; i + 1 < lines; ++i) {
    const unsigned a = rng();
    const unsigned b = rng();
    switch (i % 8) {
      case 0:
        std::snprintf(buf, sizeof buf,
                      "Epoch %u: %2u%%|#####     | %u/1000 [01:%02u<02:%02u, %u.%uit/s, "
                      "loss=%u.%03u, v_num=%u]",
                      a % 90, a % 100, a % 1000, b % 60, a % 60, b % 9, a % 10, b % 4, a % 1000,
                      b % 100);
        break;
      case 1:
        std::snprintf(buf, sizeof buf,
                      "INFO 12-07 10:%02u:%02u [engine.py:310] Added request chatcmpl-%08x%08x.",
                      a % 60, b % 60, a, b);
        break;
      case 2:
        std::snprintf(buf, sizeof buf,
                      "[rank%u]:[W1207 10:%02u:%02u.%06u %u ProcessGroupNCCL.cpp:4561] Warning: "
                      "TORCH_NCCL_AVOID_RECORD_STREAMS is the default now, this environment "
                      "variable is ignored",
                      a % 64, a % 60, b % 60, b % 1000000, a % 100000);
        break;
      case 3:
        std::snprintf(buf, sizeof buf,
                      "  File \"/usr/local/lib/python3.12/dist-packages/torch/nn/modules/"
                      "module.py\", line %u, in _call_impl",
                      1000 + a % 800);
        break;
      case 4:
        std::snprintf(buf, sizeof buf,
                      "{'loss': %u.%04u, 'grad_norm': %u.%03u, 'learning_rate': %ue-05, 'epoch': "
                      "%u.%02u}",
                      a % 4, b % 10000, a % 10, b % 1000, 1 + a % 9, b % 5, a % 100);
        break;
      case 5:
        std::snprintf(buf, sizeof buf,
                      "I1207 10:%02u:%02u.%06u %u rdma_endpoint.cpp:108] Connection has been "
                      "established",
                      a % 60, b % 60, b % 1000000, a % 200000);
        break;
      case 6:
        std::snprintf(buf, sizeof buf,
                      "2025-12-07 10:%02u:%02u,%03u - INFO - training.py:%u - step %u/%u done in "
                      "%u.%03us",
                      a % 60, b % 60, a % 1000, 100 + b % 400, a % 50000, 50000, b % 9, a % 1000);
        break;
      default:
        std::snprintf(buf, sizeof buf,
                      "WARNING:root:Skipping sample %u of shard %05u: sequence length %u exceeds "
                      "%u",
                      a, b % 4096, 4096 + a % 4096, 4096);
        break;
    }
    out << buf << '\n';
  }
  out << "  what():  ibv_reg_mr failed (errno 12) (Ib failure: Cannot allocate memory)\n";
}

// Writes the log line by line, so generating it costs no memory either.
void GenerateLog(std::ofstream& out, size_t lines, int ranks) {
  std::mt19937 rng(7);
  auto host = [](int r) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "gpu-node%02d", r / 8);
    return std::string(buf);
  };
  auto prefix = [&](int r, int tid_offset = 0) {
    int pid = 41000 + r;
    return host(r) + ":" + std::to_string(pid) + ":" + std::to_string(pid + tid_offset) + " [" +
           std::to_string(r % 8) + "] ";
  };
  const char* kInfo[] = {
      "NCCL INFO Channel 03/32 :    0   7   6   5   4   3   2   1   9  15  14  13  12  11  10   8",
      "NCCL INFO Connected to proxy localRank 3 -> connection 0x7f92f4000e10",
      "NCCL INFO P2P Chunksize set to 524288",
      "NCCL INFO Trees [0] 9/-1/-1->8->0 [1] -1/-1/-1->8->15 [2] 9/-1/-1->8->16",
      "NCCL INFO Channel 05/0 : 12[4] -> 13[5] via P2P/CUMEM/read",
      "NCCL INFO Channel 07/0 : 8[0] -> 16[0] [send] via NET/IB/2/GDRDMA",
      "NCCL INFO Channel 07/0 : 0[0] -> 8[0] [receive] via NET/IB/2/GDRDMA",
      "NCCL INFO NET/IB : GPU Direct RDMA Enabled for HCA 2 'mlx5_2'",
      "NCCL INFO threadThresholds 8/8/64 | 512/8/64 | 512 | 512",
      "NCCL INFO 32 coll channels, 32 collnet channels, 16 nvls channels, 32 p2p channels, 32 p2p "
      "channels per peer",
      "NCCL INFO New proxy send connection 51 from local rank 4, transport 2",
      "NCCL INFO ncclCommInitRank comm 0x55b94cb9ce80 rank 17 nranks 64 cudaDev 1 nvmlDev 1 busId "
      "2a000 commId 0x9032ed1218043e39 - Init COMPLETE",
  };
  const size_t failure_at = lines * 3 / 4;
  const int failing_rank = 37;
  size_t written = 0;
  auto emit = [&](const std::string& s) {
    out << s << '\n';
    ++written;
  };
  for (int r = 0; r < ranks && written < lines; ++r) {
    emit(prefix(r) + "NCCL INFO Bootstrap : Using eth0:10.1." + std::to_string(r / 8) + "." +
         std::to_string(10 + r % 8) + "<0>");
    emit(prefix(r) +
         "NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [2]mlx5_2:1/IB "
         "[3]mlx5_3:1/IB ; OOB eth0:10.1.0.10<0>");
    emit(prefix(r) + "NCCL INFO Using network IB");
    if (r == 0) emit(prefix(r) + "NCCL INFO NCCL version 2.21.5+cuda12.4");
  }
  bool failed = false;
  while (written < lines) {
    int r = static_cast<int>(rng() % static_cast<unsigned>(ranks));
    if (!failed && written >= failure_at) {
      failed = true;
      emit("[2025-02-11 09:14:07] " + prefix(failing_rank, 59) +
           "misc/ibvwrap.cc:262 NCCL WARN Call to ibv_reg_mr failed with error Cannot allocate "
           "memory");
      emit(prefix(failing_rank, 59) + "NCCL INFO transport/net_ib.cc:692 -> 2");
      emit(prefix(failing_rank, 59) + "NCCL INFO transport/net.cc:684 -> 2");
      for (int p = 0; p < ranks; p += 3) {
        if (p == failing_rank) continue;
        emit("[2025-02-11 09:14:08] " + prefix(p, 61) +
             "misc/socket.cc:538 NCCL WARN socketProgress: Connection closed by remote peer "
             "gpu-node04<52187>");
      }
      continue;
    }
    unsigned k = rng() % 100;
    if (k < 5) {
      emit("step " + std::to_string(written) + " loss 2.31 lr 0.0003 tokens/s 412345");
    } else {
      emit(prefix(r, static_cast<int>(rng() % 4) * 12) + kInfo[rng() % std::size(kInfo)]);
    }
  }
}

struct Shape {
  std::string name;
  size_t lines;
  std::function<void(std::ofstream&, size_t)> generate;
  std::string expect_class;
  std::string expect_cause;
};

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// `grep -c NCCL FILE`, its count read through a pipe: the floor of reading the file and scanning
// every line once. (With its output on /dev/null, GNU grep stops at the first match.)
double GrepMs(const std::string& path, int runs) {
  std::vector<double> ms;
  const std::string cmd = "grep -c NCCL '" + path + "'";
  for (int i = 0; i < runs; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    FILE* p = popen(cmd.c_str(), "r");
    if (p == nullptr) return -1;
    char count[64] = {};
    while (std::fgets(count, sizeof count, p) != nullptr) {
    }
    pclose(p);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                     .count());
  }
  return Median(ms);
}

bool RunShape(const Options& o, const Shape& shape) {
  const std::filesystem::path dir =
      o.keep.empty() ? std::filesystem::temp_directory_path() : std::filesystem::path(o.keep);
  const std::string path =
      (dir / ("nccl-triage-bench-" + shape.name + "-" + std::to_string(getpid()) + ".log"))
          .string();
  {
    std::ofstream out(path);
    shape.generate(out, shape.lines);
  }
  const auto bytes = std::filesystem::file_size(path);
  const double rss_before = PeakRssMiB();
  std::vector<double> ms, cpu;
  nccl_triage::Classification last;
  for (int i = 0; i < o.runs; ++i) {
    std::ifstream in(path, std::ios::binary);
    auto t0 = std::chrono::steady_clock::now();
    const double c0 = CpuMs();
    last = nccl_triage::ClassifyLog(in);
    cpu.push_back(CpuMs() - c0);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                     .count());
  }
  const double rss_after = PeakRssMiB();
  const double grep_ms = GrepMs(path, o.runs);
  if (o.keep.empty()) std::filesystem::remove(path);
  const double median = Median(ms);
  const double cpu_median = Median(cpu);
  const double mb = static_cast<double>(bytes) / 1e6;
  const std::string got_class(nccl_triage::ToString(last.fault_class));
  const std::string got_cause = last.causes.empty() ? "-" : last.causes[0].cause;
  const bool correct = got_class == shape.expect_class && got_cause == shape.expect_cause;
  std::printf(
      "%-13s %9zu lines %7.1f MB | classify median %7.1f ms (min %.1f, max %.1f) %6.1f MB/s, "
      "CPU %7.1f ms %6.1f MB/s | grep -c %6.1f ms %7.1f MB/s (x%.1f) | peak RSS %.1f -> %.1f MiB "
      "| %s/%s %s\n",
      shape.name.c_str(), last.lines, mb, median, *std::min_element(ms.begin(), ms.end()),
      *std::max_element(ms.begin(), ms.end()), mb / (median / 1000.0), cpu_median,
      mb / (cpu_median / 1000.0), grep_ms,
      mb / (grep_ms / 1000.0), median / grep_ms, rss_before, rss_after, got_class.c_str(),
      got_cause.c_str(), correct ? "as expected" : "WRONG");
  std::fflush(stdout);
  return correct;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--shape") o.shape = argv[i + 1];
    if (a == "--lines") o.lines = std::strtoull(argv[i + 1], nullptr, 10);
    if (a == "--ranks") o.ranks = std::atoi(argv[i + 1]);
    if (a == "--runs") o.runs = std::atoi(argv[i + 1]);
    if (a == "--gb") o.gb = std::atof(argv[i + 1]);
    if (a == "--keep") o.keep = argv[i + 1];
  }
  if (o.ranks < 40 || o.runs < 1 || o.gb <= 0) {
    std::fprintf(stderr, "bench_classify: need --ranks >= 40, --runs >= 1, --gb > 0\n");
    return 2;
  }
  const int ranks = o.ranks;
  auto lines = [&](size_t d) { return o.lines > 0 ? o.lines : d; };
  const auto big_lines = static_cast<size_t>(o.gb * 1e9 / 95.0);  // info lines average 95 bytes
  auto info = [ranks](std::ofstream& out, size_t n) { GenerateLog(out, n, ranks); };
  const std::vector<Shape> shapes = {
      {"info", lines(200000), info, "ib_resource", "limits.memlock"},
      {"repeated-warn", lines(1000000), GenerateRepeatedWarn, "ib_resource", "ib.fabric"},
      {"distinct-warn", lines(1000000), GenerateDistinctWarn, "ib_resource", "ib.fabric"},
      {"qp-gid", lines(1000000), GenerateQpGid, "ib_resource", "ib.fabric"},
      {"text", lines(1000000), GenerateText, "ib_resource", "limits.memlock"},
      {"big", big_lines, info, "ib_resource", "limits.memlock"},
  };
  bool all_correct = true;
  bool any = false;
  for (const Shape& s : shapes) {
    if (o.shape != "all" && o.shape != s.name) continue;
    any = true;
    Options per = o;
    if (s.name == "big" && o.shape == "all") per.runs = 1;  // the memory is the point
    all_correct = RunShape(per, s) && all_correct;
  }
  if (!any) {
    std::fprintf(stderr, "bench_classify: unknown --shape %s\n", o.shape.c_str());
    return 2;
  }
  return all_correct ? 0 : 1;
}
