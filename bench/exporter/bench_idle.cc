// Idle cost of the real agent: `nccl-triage-server agent --standalone` on the DGX H100 fixture (8
// HCAs) with agent.interval_seconds 1, for --seconds (default 20). Samples the process's CPU time
// (/proc/<pid>/stat utime+stime) and resident memory (/proc/<pid>/status VmRSS) once a second,
// after the first cycle finished.
//
//   build/bench_exporter_idle [--seconds N] [--interval S] [--root DIR]
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

long Ticks(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), {});
  size_t close = text.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream rest(text.substr(close + 2));
  std::string field;
  long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14) utime = std::stol(field);
    if (i == 15) stime = std::stol(field);
  }
  return utime + stime;
}

long RssKiB(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

}  // namespace

int main(int argc, char** argv) {
  int seconds = 20, interval = 1;
  std::string root = std::string(NCCL_TRIAGE_FIXTURE_DIR) + "/dgx-h100";
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--seconds") && i + 1 < argc) seconds = std::atoi(argv[++i]);
    if (!std::strcmp(argv[i], "--interval") && i + 1 < argc) interval = std::atoi(argv[++i]);
    if (!std::strcmp(argv[i], "--root") && i + 1 < argc) root = argv[++i];
  }
  char dir_template[] = "/tmp/nccl-triage-bench-XXXXXX";
  std::string dir = mkdtemp(dir_template);
  std::string config = dir + "/config.yaml";
  std::ofstream(config) << "agent:\n  interval_seconds: " << interval << "\n";
  std::string binary = std::string(NCCL_TRIAGE_BINARY_DIR) + "/nccl-triage-server";
  pid_t pid = fork();
  if (pid == 0) {
    freopen("/dev/null", "w", stderr);
    execl(binary.c_str(), binary.c_str(), "agent", "--standalone", "--config", config.c_str(),
          "--root", root.c_str(), "--listen", "127.0.0.1:0", static_cast<char*>(nullptr));
    _exit(127);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // first cycle done
  long hz = sysconf(_SC_CLK_TCK);
  long start_ticks = Ticks(pid);
  auto start = std::chrono::steady_clock::now();
  long max_rss = 0, last_rss = 0;
  std::vector<long> rss;
  for (int s = 0; s < seconds; ++s) {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    last_rss = RssKiB(pid);
    if (last_rss < 0) {
      std::fprintf(stderr, "the agent exited\n");
      return 2;
    }
    max_rss = std::max(max_rss, last_rss);
  }
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  long ticks = Ticks(pid) - start_ticks;
  kill(pid, SIGTERM);
  int status = 0;
  waitpid(pid, &status, 0);
  std::remove(config.c_str());
  rmdir(dir.c_str());
  double cpu_pct = 100.0 * static_cast<double>(ticks) / static_cast<double>(hz) / wall;
  std::printf("agent on %s, interval %d s, %.1f s sampled (%d cycles)\n", root.c_str(), interval,
              wall, static_cast<int>(wall / interval));
  std::printf("CPU: %.2f %% of one core (%ld ticks at %ld Hz)\n", cpu_pct, ticks, hz);
  std::printf("RSS: max %.1f MiB, last %.1f MiB\n", static_cast<double>(max_rss) / 1024,
              static_cast<double>(last_rss) / 1024);
  std::printf("clean exit on SIGTERM: %s\n",
              WIFEXITED(status) && WEXITSTATUS(status) == 0 ? "yes" : "no");
  return cpu_pct <= 1.0 && max_rss <= 30 * 1024 ? 0 : 1;
}
