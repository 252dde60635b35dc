// `nccl-triage-demo` (`make demo`), built with the tests (it needs their fakes and fixtures): a
// coordinator and N agents on this machine over loopback gRPC, each agent with a generated fixture
// root and the fake libcuda/libnccl of the build, faults injected only into those roots. It sweeps
// until every pair has been probed (or --rounds sweeps), then prints per node and per pair the
// class, basis and causes, and the faults it localised. With --serve the agents' and the
// coordinator's metrics endpoints, and the coordinator's gRPC port (its token in a file of the
// work folder), stay up until Ctrl-C.
//
// Ctrl-C or SIGTERM, at any point: the agents stop (their probes' process groups are killed), the
// coordinator stops and the work folder it made goes, within kStopWithin; then the demo ends by
// that signal (while serving, the documented way to end it, with status 0).
#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <stop_token>
#include <thread>

#include "base/cli.h"
#include "base/flags.h"
#include "base/log.h"
#include "support/demo_cluster.h"

namespace nccl_triage {
namespace {

constexpr const char* kUsage =
    "usage: nccl-triage-demo [--nodes N] [--fault SPEC]... [--no-faults] [--format table|json]\n"
    "                        [--rounds N] [--rails] [--serve] [--work-dir DIR] [--verbose]\n"
    "  A coordinator and N agents (default 8) on this machine over real gRPC, each with a fixture\n"
    "  root of its own and the fake NCCL/CUDA libraries; faults go into the roots only.\n"
    "  SPEC (0-based node indices):\n"
    "    node:I:port_down|sm_offline|memlock|no_rdma_devices|rate_degraded|shm_small|nccl_version\n"
    "           |no_nccl\n"
    "    link:I-J:pkey_mismatch|cable\n"
    "    rail:I:K:mr_register|port_down|rate   (rail K of node I; turns on the per-rail probes;\n"
    "                                         rate: 64 MiB probes judged for bandwidth,\n"
    "                                         a pair's rails one after the other)\n"
    "  Without --fault: node:2:port_down and link:4-6:cable (4-6 nodes: node:1:port_down and a\n"
    "  cable between the last two; 2-3 nodes: the last node's port). --rounds N stops after N\n"
    "  sweeps\n"
    "  (default: when every pair is covered and every fault confirmed). --rails probes every\n"
    "  rail of each pair after its IB probe (probe.rails all; on with any rail fault). --serve\n"
    "  keeps the metrics endpoints up until Ctrl-C and prints their URLs. Ctrl-C or SIGTERM stops\n"
    "  the demo within 2 s at any point, its probe children and work folder with it.\n";

// How long a stop may take, from the signal to the end of the process; the hard way (below)
// starts after kHardStopAfter, leaving the rest for the kills and the folder.
constexpr auto kStopWithin = std::chrono::seconds(2);
constexpr auto kHardStopAfter = std::chrono::milliseconds(1000);
static_assert(kHardStopAfter < kStopWithin);

// SIGINT and SIGTERM, taken by a thread of their own. They are blocked in every thread (the
// constructor runs before any other thread starts), so no probe child is half-way killed by a
// signal handler. The first signal asks the demo to stop (token()) and arms a deadline; when the
// demo has not finished its cleanup (Finish) by then, or a second signal comes, the thread does
// the cleanup the hard way — SIGKILL to the process group of every child (each probe child leads
// one), the work folder removed — and ends the process itself. Thread-safe.
class SignalStop {
 public:
  SignalStop() {
    sigemptyset(&set_);
    sigaddset(&set_, SIGINT);
    sigaddset(&set_, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set_, &old_);
    thread_ = std::jthread([this](std::stop_token st) { Loop(st); });
  }
  ~SignalStop() {
    thread_.request_stop();
    if (thread_.joinable()) thread_.join();
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  SignalStop(const SignalStop&) = delete;
  SignalStop& operator=(const SignalStop&) = delete;

  std::stop_token token() const { return source_.get_token(); }
  // The folder the hard way removes (the demo's own; empty: none).
  void SetWorkDir(std::string dir) {
    std::lock_guard lock(mu_);
    work_dir_ = std::move(dir);
  }
  // While serving, a signal is how the demo ends: with status 0.
  void SetServing(bool serving) {
    std::lock_guard lock(mu_);
    serving_ = serving;
  }
  // Blocks until a signal has come.
  void Wait() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [this] { return signal_ != 0; });
  }
  // The cleanup is done: no deadline, no thread, the old mask. After a signal the demo ends by it
  // (its default action, as a shell expects of an interrupted command) unless it was serving;
  // otherwise returns rc.
  int Finish(int rc) {
    {
      std::lock_guard lock(mu_);
      finished_ = true;
    }
    thread_.request_stop();
    thread_.join();
    int sig = 0;
    bool serving = false;
    {
      std::lock_guard lock(mu_);
      sig = signal_;
      serving = serving_;
    }
    std::cout.flush();
    std::cerr.flush();
    if (sig != 0 && !serving) EndBy(sig);
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
    return rc;
  }

 private:
  void Loop(const std::stop_token& st) {
    std::optional<std::chrono::steady_clock::time_point> deadline;
    while (!st.stop_requested()) {
      timespec slice{0, 50'000'000};
      const int sig = sigtimedwait(&set_, nullptr, &slice);
      std::unique_lock lock(mu_);
      if (sig > 0 && signal_ == 0) {
        signal_ = sig;
        deadline = std::chrono::steady_clock::now() + kHardStopAfter;
        lock.unlock();
        source_.request_stop();
        cv_.notify_all();
        continue;
      }
      if (finished_) continue;
      if ((sig > 0) || (deadline && std::chrono::steady_clock::now() >= *deadline)) {
        HardStop(signal_);
      }
    }
  }

  // Called with mu_ held; never returns.
  [[noreturn]] void HardStop(int sig) {
    KillChildren();
    if (!work_dir_.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(work_dir_, ec);
      if (ec) std::filesystem::remove_all(work_dir_, ec);  // entries the main thread took first
    }
    constexpr char kLine[] = "nccl-triage-demo: stopped the hard way (children killed)\n";
    (void)!write(STDERR_FILENO, kLine, sizeof(kLine) - 1);
    if (serving_) _exit(0);
    EndBy(sig);
  }

  // SIGKILL to every child of this process and to its process group (a probe child and what it
  // started), found in /proc.
  static void KillChildren() {
    const pid_t self = getpid();
    const pid_t own_group = getpgrp();
    DIR* proc = opendir("/proc");
    if (proc == nullptr) return;
    while (dirent* e = readdir(proc)) {
      char* end = nullptr;
      const long pid = std::strtol(e->d_name, &end, 10);
      if (pid <= 0 || *end != '\0') continue;
      std::ifstream in("/proc/" + std::string(e->d_name) + "/stat");
      std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      const auto paren = stat.rfind(')');  // the name may hold spaces and parentheses
      if (paren == std::string::npos) continue;
      std::istringstream fields(stat.substr(paren + 1));
      std::string state;
      long ppid = 0;
      long pgrp = 0;
      if (!(fields >> state >> ppid >> pgrp) || ppid != self) continue;
      if (pgrp > 0 && pgrp != own_group) kill(static_cast<pid_t>(-pgrp), SIGKILL);
      kill(static_cast<pid_t>(pid), SIGKILL);
    }
    closedir(proc);
  }

  [[noreturn]] void EndBy(int sig) {
    signal(sig, SIG_DFL);
    sigset_t just;
    sigemptyset(&just);
    sigaddset(&just, sig);
    pthread_sigmask(SIG_UNBLOCK, &just, nullptr);
    raise(sig);
    _exit(128 + sig);
  }

  sigset_t set_{};
  sigset_t old_{};
  std::stop_source source_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::string work_dir_;
  bool serving_ = false;
  bool finished_ = false;
  int signal_ = 0;
  std::jthread thread_;  // last: started once the rest is in place
};

}  // namespace

int RunDemo(CliContext& ctx, SignalStop& signals) {
  DemoOptions options;
  std::vector<std::string> specs;
  bool no_faults = false;
  bool json = false;
  bool verbose = false;
  std::string work_dir;
  bool help = false;
  std::string format = "table";
  Status parsed = FlagParser()
                      .Switch({"--help", "-h"}, &help)
                      .Int({"--nodes"}, &options.nodes, 2, 256)
                      .Repeated({"--fault"}, &specs)
                      .Switch({"--no-faults"}, &no_faults)
                      .Choice({"--format"}, &format, {"table", "json"})
                      .Int({"--rounds"}, &options.rounds, 1, 1'000'000)
                      .Switch({"--rails"}, &options.rails)
                      .Switch({"--serve"}, &options.serve_http)
                      .String({"--work-dir"}, &work_dir)
                      .Switch({"--verbose"}, &verbose)
                      .Parse(ctx.args);
  if (!parsed.ok()) {
    ctx.err << "nccl-triage-demo: " << parsed.message() << "\n";
    return 2;
  }
  if (help) {
    ctx.out << kUsage;
    return 0;
  }
  json = format == "json";
  if (specs.empty() && !no_faults) specs = DefaultDemoFaults(options.nodes);
  for (const auto& s : specs) {
    auto f = ParseDemoFault(s, options.nodes);
    if (!f.ok()) {
      ctx.err << "nccl-triage-demo: " << f.status().message() << "\n";
      return 2;
    }
    options.faults.push_back(*f);
  }

  options.probe_exe = SiblingExe(ctx.self_exe, "nccl-triage");
  options.fakes_dir = FindFakesDir(ctx.self_exe);
  const bool temp_dir = work_dir.empty();
  if (temp_dir) {
    // Memory-backed when possible: the roots are thousands of small files written once.
    std::error_code ec;
    std::filesystem::path base =
        access("/dev/shm", W_OK) == 0 && std::filesystem::is_directory("/dev/shm", ec)
            ? std::filesystem::path("/dev/shm")
            : std::filesystem::temp_directory_path();
    work_dir = (base / ("nccl-triage-demo-" + std::to_string(getpid()))).string();
  }
  options.work_dir = work_dir;
  options.stop = signals.token();
  if (temp_dir) signals.SetWorkDir(work_dir);
  std::ostream& progress = json ? ctx.err : ctx.out;
  options.progress = [&progress](const std::string& line) { progress << line << std::endl; };

  // The agents and the coordinator log to stderr only with --verbose: the demo's output is the
  // report.
  std::ostringstream quiet;
  Logger log(verbose ? ctx.err : static_cast<std::ostream&>(quiet), LogLevel::kInfo);

  int rc = 0;
  {
    DemoCluster cluster(options, log);
    progress << "starting a coordinator and " << options.nodes << " agents (fixture roots in "
             << work_dir << ")" << std::endl;
    Status s = cluster.Start();
    if (cluster.stopped()) {
      progress << "stopping" << std::endl;
    } else if (!s.ok()) {
      ctx.err << "nccl-triage-demo: " << s.message() << "\n";
      rc = 2;
    } else {
      auto report = cluster.Run();
      if (cluster.stopped()) {
        progress << "stopping" << std::endl;
      } else if (!report.ok()) {
        ctx.err << "nccl-triage-demo: " << report.status().message() << "\n";
        rc = 2;
      } else if (json) {
        ctx.out << ToJson(*report).dump(2) << "\n";
      } else {
        ctx.out << "\n";
        PrintDemoTable(*report, ctx.out);
      }
      if (rc == 0 && options.serve_http && !cluster.stopped()) {
        // The coordinator's gRPC port and its token (a file only this user reads), so that
        // `nccl-triage triage --coordinator ... --token-file ...` can ask the demo for probes.
        const std::string token_file =
            (std::filesystem::path(work_dir) / "coordinator-token").string();
        if (std::ofstream(token_file) << cluster.token() << "\n") {
          std::filesystem::permissions(
              token_file, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
        }
        progress << "\nserving until Ctrl-C:\n";
        for (const auto& url : cluster.Urls()) progress << "  " << url << "\n";
        progress << "  coordinator-grpc  127.0.0.1:" << cluster.coordinator().grpc_port()
                 << "  --token-file " << token_file << "\n";
        signals.SetServing(true);
        progress << std::flush;
        signals.Wait();
        progress << "stopping" << std::endl;
      }
    }
    cluster.Stop();
  }
  if (temp_dir) {
    std::error_code ec;
    std::filesystem::remove_all(work_dir, ec);
  }
  return rc;
}

}  // namespace nccl_triage

int main(int argc, char** argv) {
  // First, before any thread: every thread then has SIGINT and SIGTERM blocked.
  nccl_triage::SignalStop signals;
  nccl_triage::CliContext ctx{
      {argv + 1, argv + argc}, std::cout, std::cerr, nccl_triage::SelfExe(argv[0])};
  return signals.Finish(nccl_triage::RunDemo(ctx, signals));
}
