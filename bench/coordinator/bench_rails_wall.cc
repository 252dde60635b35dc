// Wall time of per-rail IB probes, one after the other against side by side: the demo cluster (a
// coordinator and N agents in this process over loopback gRPC, the probes real child processes
// with the fake NCCL) on a fabric slowed so that each probe lasts about as long as a real 64 MiB
// one, one sweep with every rail of every pair probed after its IB probe, for each value of
// probe.parallel_rails. The fixture nodes are DGX A100s (8 HCAs, each on its own GPU's PCIe
// switch), so all eight rails of a pair may run at once.
//
//   bench_rails_wall [--nodes 2,8] [--parallel 1,8] [--gbps 0.0005] [--runs 1]
//
// Prints per run the sweep's wall time (socket, IB and rail phases of every pair; the pairs of a
// round run at the same time), the rail probes recorded and their mean duration. The rail stage
// of a pair costs about `rails / parallel` probe durations.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "base/log.h"
#include "support/demo_cluster.h"

namespace {

std::vector<double> NumberList(const std::string& text) {
  std::vector<double> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    char* end = nullptr;
    const double v = std::strtod(item.c_str(), &end);
    if (item.empty() || *end != '\0' || v <= 0) return {};
    out.push_back(v);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace nccl_triage;
  std::vector<double> nodes = {2, 8}, parallel = {1, 8};
  double gbps = 0.0005;
  int runs = 1;
  for (int i = 1; i < argc; i += 2) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) {
      std::cerr << "bench_rails_wall: " << flag << " needs a value\n";
      return 2;
    }
    const std::string value = argv[i + 1];
    if (flag == "--nodes") {
      nodes = NumberList(value);
    } else if (flag == "--parallel") {
      parallel = NumberList(value);
    } else if (flag == "--gbps") {
      gbps = std::atof(value.c_str());
    } else if (flag == "--runs") {
      runs = std::atoi(value.c_str());
    } else {
      std::cerr << "bench_rails_wall: unknown flag " << flag << "\n";
      return 2;
    }
  }
  if (nodes.empty() || parallel.empty() || gbps <= 0 || runs < 1) {
    std::cerr << "usage: bench_rails_wall [--nodes 2,8] [--parallel 1,8] [--gbps 0.0005] "
                 "[--runs 1]\n";
    return 2;
  }
  std::printf("%6s %9s %5s %10s %12s %14s\n", "nodes", "parallel", "run", "sweep s", "rail probes",
              "mean probe s");
  int failures = 0;
  for (double n : nodes) {
    for (double p : parallel) {
      for (int run = 1; run <= runs; ++run) {
        DemoOptions o;
        o.nodes = static_cast<int>(n);
        o.probe_exe = NCCL_TRIAGE_BINARY_DIR "/nccl-triage";
        o.fakes_dir = FAKES_DIR;
        o.work_dir = (std::filesystem::temp_directory_path() /
                      ("bench-rails-wall-" + std::to_string(getpid()) + "-" +
                       std::to_string(static_cast<int>(n)) + "-" +
                       std::to_string(static_cast<int>(p)) + "-" + std::to_string(run)))
                         .string();
        o.rails = true;
        o.rounds = 1;
        o.hold_down = 1;
        o.parallel_rails = static_cast<int>(p);
        o.ib_data_gbps = gbps;
        o.probe_timeout_seconds = 60;
        std::ostringstream log_text;
        Logger log(log_text, LogLevel::kWarn);
        double seconds = 0;
        size_t rail_probes = 0;
        double probe_seconds = 0;
        {
          DemoCluster cluster(o, log);
          Status started = cluster.Start();
          if (!started.ok()) {
            std::cerr << "bench_rails_wall: " << started.message() << "\n";
            return 1;
          }
          const auto t0 = std::chrono::steady_clock::now();
          auto report = cluster.Run();
          seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
          if (!report.ok() || !report->faults.empty()) {
            ++failures;
            std::cerr << "bench_rails_wall: the sweep "
                      << (report.ok() ? "reported a fault" : report.status().message()) << "\n";
          }
          for (int i = 0; i < o.nodes; ++i) {
            for (const auto& [key, rec] : cluster.NodeState(i).rail_probes) {
              ++rail_probes;
              probe_seconds += rec->result.duration_seconds;
              if (rec->result.outcome != ProbeOutcome::kPass) ++failures;
            }
          }
          cluster.Stop();
        }
        std::filesystem::remove_all(o.work_dir);
        std::printf("%6d %9d %5d %10.2f %12zu %14.2f\n", o.nodes, o.parallel_rails, run, seconds,
                    rail_probes, rail_probes > 0 ? probe_seconds / rail_probes : 0.0);
        std::fflush(stdout);
      }
    }
  }
  if (failures > 0)
    std::cerr << "bench_rails_wall: " << failures << " failed probe(s) or sweep(s)\n";
  return failures > 0 ? 1 : 0;
}
