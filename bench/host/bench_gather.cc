// Benchmark: how long one snapshot takes, on a fixture root (a DGX H100 written by the fixture
// generator into a temporary directory: 8 HCAs, 8 GPUs) and on this machine's "/" (live facts
// included). Prints the median and the worst wall time over several runs, the number of files
// read, and checks a few values so that a fast wrong answer does not count.
//
//   build/bench_gather [--runs N] [--root DIR]
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "host/gatherer.h"
#include "support/fixture/fixture.h"

namespace {

struct Result {
  double median_ms = 0;
  double max_ms = 0;
  size_t files = 0;
};

Result Run(const std::string& root, int runs, const nccl_triage::NodeSnapshot** keep,
           std::vector<nccl_triage::NodeSnapshot>& store) {
  std::vector<double> ms;
  for (int i = 0; i < runs; ++i) {
    nccl_triage::GatherOptions o;
    o.root = root;
    auto start = std::chrono::steady_clock::now();
    auto s = nccl_triage::GatherSnapshot(o);
    auto end = std::chrono::steady_clock::now();
    if (!s.ok()) {
      std::fprintf(stderr, "bench_gather: %s\n", s.status().message().c_str());
      std::exit(1);
    }
    ms.push_back(std::chrono::duration<double, std::milli>(end - start).count());
    store.push_back(std::move(s).value());
  }
  std::sort(ms.begin(), ms.end());
  *keep = &store.back();
  return {ms[ms.size() / 2], ms.back(), store.back().files_read.size()};
}

}  // namespace

int main(int argc, char** argv) {
  int runs = 21;
  std::string live_root = "/";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--runs" && i + 1 < argc) {
      runs = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--root" && i + 1 < argc) {
      live_root = argv[++i];
    } else {
      std::fprintf(stderr, "usage: bench_gather [--runs N] [--root DIR]\n");
      return 2;
    }
  }
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("bench-gather-" + std::to_string(::getpid()));
  auto spec = nccl_triage::FixturePreset("dgx-h100");
  if (!spec.ok() || !nccl_triage::WriteFixture(*spec, dir.string()).ok()) {
    std::fprintf(stderr, "bench_gather: cannot write the fixture\n");
    return 1;
  }
  std::vector<nccl_triage::NodeSnapshot> store;
  store.reserve(static_cast<size_t>(runs) * 2);
  const nccl_triage::NodeSnapshot* fixture = nullptr;
  const nccl_triage::NodeSnapshot* live = nullptr;
  Result f = Run(dir.string(), runs, &fixture, store);
  Result l = Run(live_root, runs, &live, store);
  fs::remove_all(dir);

  // A fast wrong answer does not count.
  if (fixture->ib_devices.size() != 8 || !fixture->ib_devices[7].ports.at(0).rate_gbps.ok() ||
      *fixture->ib_devices[7].ports[0].rate_gbps.value != 400.0 || fixture->gpus.size() != 8) {
    std::fprintf(stderr, "bench_gather: the fixture snapshot is wrong\n");
    return 1;
  }
  std::printf(
      "snapshot of a DGX H100 fixture (8 HCAs, 8 GPUs): median %.2f ms, max %.2f ms, "
      "%zu files, %d runs\n",
      f.median_ms, f.max_ms, f.files, runs);
  std::printf(
      "snapshot of %s (live, %zu IB devices, %s): median %.2f ms, max %.2f ms, %zu files, "
      "%d runs\n",
      live_root.c_str(), live->ib_devices.size(),
      live->live.verbs_error.empty() ? "verbs ok" : live->live.verbs_error.c_str(), l.median_ms,
      l.max_ms, l.files, runs);
  return 0;
}
