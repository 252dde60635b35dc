// `nccl-triage-demo` (`make demo`), built with the tests (it needs their fakes and fixtures): a
// coordinator and N agents on this machine over loopback gRPC, each agent with a generated fixture
// root and the fake libcuda/libnccl of the build, faults injected only into those roots. It sweeps
// until every pair has been probed (or --rounds sweeps), then prints per node and per pair the
// class, basis and causes, and the faults it localised. With --serve the agents' and the
// coordinator's metrics endpoints, and the coordinator's gRPC port (its token in a file of the
// work folder), stay up until Ctrl-C.
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

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
    "    link:I-J:pkey_mismatch|cable\n"
    "    rail:I:K:mr_register|port_down|rate   (rail K of node I; turns on the per-rail probes;\n"
    "                                         rate: 64 MiB probes judged for bandwidth)\n"
    "  Without --fault: node:2:port_down and link:4-6:cable. --rounds N stops after N sweeps\n"
    "  (default: when every pair is covered and every fault confirmed). --rails probes every\n"
    "  rail of each pair after its IB probe (probe.rails all; on with any rail fault). --serve\n"
    "  keeps the metrics endpoints up until Ctrl-C and prints their URLs.\n";

}  // namespace

int RunDemo(CliContext& ctx) {
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
  if (specs.empty() && !no_faults) specs = {"node:2:port_down", "link:4-6:cable"};
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
  std::ostream& progress = json ? ctx.err : ctx.out;
  options.progress = [&progress](const std::string& line) { progress << line << std::endl; };

  // The agents and the coordinator log to stderr only with --verbose: the demo's output is the
  // report.
  std::ostringstream quiet;
  Logger log(verbose ? ctx.err : static_cast<std::ostream&>(quiet), LogLevel::kInfo);

  // Ctrl-C must reach sigwait below, not kill the process with the probes half-way.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigset_t old;
  pthread_sigmask(SIG_BLOCK, &set, &old);

  int rc = 0;
  {
    DemoCluster cluster(options, log);
    progress << "starting a coordinator and " << options.nodes << " agents (fixture roots in "
             << work_dir << ")" << std::endl;
    Status s = cluster.Start();
    if (!s.ok()) {
      ctx.err << "nccl-triage-demo: " << s.message() << "\n";
      rc = 2;
    } else {
      auto report = cluster.Run();
      if (!report.ok()) {
        ctx.err << "nccl-triage-demo: " << report.status().message() << "\n";
        rc = 2;
      } else if (json) {
        ctx.out << ToJson(*report).dump(2) << "\n";
      } else {
        ctx.out << "\n";
        PrintDemoTable(*report, ctx.out);
      }
      if (rc == 0 && options.serve_http) {
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
        progress << std::flush;
        int sig = 0;
        sigwait(&set, &sig);
        progress << "stopping\n";
      }
    }
    cluster.Stop();
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (temp_dir) {
    std::error_code ec;
    std::filesystem::remove_all(work_dir, ec);
  }
  return rc;
}

}  // namespace nccl_triage

int main(int argc, char** argv) {
  nccl_triage::CliContext ctx{
      {argv + 1, argv + argc}, std::cout, std::cerr, nccl_triage::SelfExe(argv[0])};
  return nccl_triage::RunDemo(ctx);
}
