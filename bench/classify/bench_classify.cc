// Benchmark: classify a 200,000-line NCCL_DEBUG=INFO log of 64 interleaved ranks with one
// failure, streamed from a file. Prints the median wall time over several runs and the peak RSS
// of the process (getrusage), and checks the verdict so a fast wrong answer does not count.
//
// With --warn-flood MIB it instead classifies a file of MIB MiB of repeated NCCL WARN lines (the
// same few failures printed over and over by every rank, as a looping job does) and prints the
// throughput in MB/s: the worst case for the classifier, since every line goes through the
// rule table.
//
//   build/bench/classify/bench_classify [--lines N] [--ranks N] [--runs N] [--keep FILE]
//   build/bench/classify/bench_classify --warn-flood 256 [--runs N]
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "classify/classifier.h"

namespace {

struct Options {
  size_t lines = 200000;
  int ranks = 64;
  int runs = 7;
  std::string keep;      // write the generated log here and keep it
  size_t flood_mib = 0;  // > 0: the WARN flood benchmark of this many MiB
};

double PeakRssMiB() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

// MiB of WARN lines from 64 ranks: the failures a broken job repeats (a memory registration,
// a peer that closed the connection, the proxy wrapper, an unmatched WARN, a failed system call,
// a CUDA error, a 2.24+ QP transition failure with its GIDs).
void GenerateWarnFlood(const std::string& path, size_t mib) {
  std::ofstream out(path);
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
  const size_t target = mib * 1024 * 1024;
  size_t bytes = 0;
  while (bytes < target) {
    unsigned r = rng() % 64;
    std::string line = "[2025-02-11 09:14:07] gpu-node" + std::to_string(r / 8) + ":" +
                       std::to_string(41000 + r) + ":" + std::to_string(41060 + r) + " [" +
                       std::to_string(r % 8) + "] " + kWarn[rng() % std::size(kWarn)];
    out << line << '\n';
    bytes += line.size() + 1;
  }
}

int RunWarnFlood(const Options& o, const std::string& path) {
  GenerateWarnFlood(path, o.flood_mib);
  const auto bytes = std::filesystem::file_size(path);
  std::vector<double> ms;
  nccl_triage::Classification last;
  for (int i = 0; i < o.runs; ++i) {
    std::ifstream in(path, std::ios::binary);
    auto t0 = std::chrono::steady_clock::now();
    last = nccl_triage::ClassifyLog(in);
    auto t1 = std::chrono::steady_clock::now();
    ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  if (o.keep.empty()) std::filesystem::remove(path);
  std::sort(ms.begin(), ms.end());
  const double median = ms[ms.size() / 2];
  const double mb = static_cast<double>(bytes) / 1e6;
  // With the fixed seed the first line is a QP/completion timeout: the earliest root wins.
  bool correct = last.fault_class == nccl_triage::FaultClass::kIbResource && !last.causes.empty() &&
                 last.causes[0].cause == "ib.fabric";
  std::printf("warn flood: %zu lines, %.1f MB, %d runs\n", last.lines, mb, o.runs);
  std::printf("warn flood: median %.0f ms (min %.0f, max %.0f), %.1f MB/s\n", median, ms.front(),
              ms.back(), mb / (median / 1000.0));
  std::printf("warn flood: peak RSS %.1f MiB\n", PeakRssMiB());
  std::printf("warn flood: verdict %s, top cause %s: %s\n",
              std::string(nccl_triage::ToString(last.fault_class)).c_str(),
              last.causes.empty() ? "-" : last.causes[0].cause.c_str(),
              correct ? "as expected" : "WRONG");
  return correct ? 0 : 1;
}

// Writes the log line by line, so generating it costs no memory either.
void GenerateLog(const std::string& path, const Options& o) {
  std::ofstream out(path);
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
  const size_t failure_at = o.lines * 3 / 4;
  const int failing_rank = 37;
  size_t written = 0;
  auto emit = [&](const std::string& s) {
    out << s << '\n';
    ++written;
  };
  for (int r = 0; r < o.ranks && written < o.lines; ++r) {
    emit(prefix(r) + "NCCL INFO Bootstrap : Using eth0:10.1." + std::to_string(r / 8) + "." +
         std::to_string(10 + r % 8) + "<0>");
    emit(prefix(r) +
         "NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [2]mlx5_2:1/IB "
         "[3]mlx5_3:1/IB ; OOB eth0:10.1.0.10<0>");
    emit(prefix(r) + "NCCL INFO Using network IB");
    if (r == 0) emit(prefix(r) + "NCCL INFO NCCL version 2.21.5+cuda12.4");
  }
  bool failed = false;
  while (written < o.lines) {
    int r = static_cast<int>(rng() % static_cast<unsigned>(o.ranks));
    if (!failed && written >= failure_at) {
      failed = true;
      emit("[2025-02-11 09:14:07] " + prefix(failing_rank, 59) +
           "misc/ibvwrap.cc:262 NCCL WARN Call to ibv_reg_mr failed with error Cannot allocate "
           "memory");
      emit(prefix(failing_rank, 59) + "NCCL INFO transport/net_ib.cc:692 -> 2");
      emit(prefix(failing_rank, 59) + "NCCL INFO transport/net.cc:684 -> 2");
      for (int p = 0; p < o.ranks; p += 3) {
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

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--lines") o.lines = std::strtoull(argv[i + 1], nullptr, 10);
    if (a == "--ranks") o.ranks = std::atoi(argv[i + 1]);
    if (a == "--runs") o.runs = std::atoi(argv[i + 1]);
    if (a == "--keep") o.keep = argv[i + 1];
    if (a == "--warn-flood") o.flood_mib = std::strtoull(argv[i + 1], nullptr, 10);
  }
  if (o.ranks < 40 || o.runs < 1 || o.lines < 1000) {
    std::fprintf(stderr, "bench_classify: need --ranks >= 40, --runs >= 1, --lines >= 1000\n");
    return 2;
  }
  std::string path = o.keep.empty() ? (std::filesystem::temp_directory_path() /
                                       ("nccl-triage-bench-" + std::to_string(getpid()) + ".log"))
                                          .string()
                                    : o.keep;
  if (o.flood_mib > 0) return RunWarnFlood(o, path);
  GenerateLog(path, o);
  const auto bytes = std::filesystem::file_size(path);
  const double rss_before = PeakRssMiB();

  std::vector<double> ms;
  nccl_triage::Classification last;
  for (int i = 0; i < o.runs; ++i) {
    std::ifstream in(path, std::ios::binary);
    auto t0 = std::chrono::steady_clock::now();
    last = nccl_triage::ClassifyLog(in);
    auto t1 = std::chrono::steady_clock::now();
    ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  if (o.keep.empty()) std::filesystem::remove(path);
  std::sort(ms.begin(), ms.end());
  const double median = ms[ms.size() / 2];

  bool correct = last.fault_class == nccl_triage::FaultClass::kIbResource && !last.causes.empty() &&
                 last.causes[0].cause == "limits.memlock" && !last.roots.empty() &&
                 last.roots[0].rank == "gpu-node04:41037";
  std::printf("classify: %zu lines, %.1f MiB, %d ranks, %d runs\n", last.lines,
              static_cast<double>(bytes) / (1024.0 * 1024.0), o.ranks, o.runs);
  std::printf("classify: median %.1f ms (min %.1f, max %.1f), %.2f M lines/s\n", median, ms.front(),
              ms.back(), static_cast<double>(last.lines) / median / 1000.0);
  std::printf("classify: peak RSS %.1f MiB (%.1f MiB before classifying)\n", PeakRssMiB(),
              rss_before);
  std::printf("classify: verdict %s, top cause %s, first failing rank %s: %s\n",
              std::string(nccl_triage::ToString(last.fault_class)).c_str(),
              last.causes.empty() ? "-" : last.causes[0].cause.c_str(),
              last.roots.empty() ? "-" : last.roots[0].rank.c_str(),
              correct ? "as expected" : "WRONG");
  return correct ? 0 : 1;
}
