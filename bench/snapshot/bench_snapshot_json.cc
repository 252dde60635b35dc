// Benchmark: the node snapshot's JSON round trip, as `check --dump-snapshot` and
// `check --from-snapshot` do it, on a DGX H100 fixture snapshot (8 HCAs, 8 GPUs). Times ToJson +
// DumpJson (write) and json::parse + SnapshotFromJson (read) separately; prints the median and
// the worst of several runs, each run the mean of a batch. Checks the round trip gives back the
// snapshot, so that a fast wrong answer does not count.
//
//   build/bench_snapshot_json [--runs N] [--batch M]
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/json_text.h"
#include "core/snapshot_json.h"
#include "host/gatherer.h"
#include "support/fixture/fixture.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Stats {
  double median_us = 0;
  double max_us = 0;
};

Stats Summarise(std::vector<double> us) {
  std::sort(us.begin(), us.end());
  return {us[us.size() / 2], us.back()};
}

}  // namespace

int main(int argc, char** argv) {
  int runs = 21;
  int batch = 50;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--runs" && i + 1 < argc) {
      runs = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--batch" && i + 1 < argc) {
      batch = std::max(1, std::atoi(argv[++i]));
    } else {
      std::fprintf(stderr, "usage: bench_snapshot_json [--runs N] [--batch M]\n");
      return 2;
    }
  }
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("bench-snapjson-" + std::to_string(::getpid()));
  auto spec = nccl_triage::FixturePreset("dgx-h100");
  if (!spec.ok() || !nccl_triage::WriteFixture(*spec, dir.string()).ok()) {
    std::fprintf(stderr, "bench_snapshot_json: cannot write the fixture\n");
    return 1;
  }
  nccl_triage::GatherOptions o;
  o.root = dir.string();
  auto snap = nccl_triage::GatherSnapshot(o);
  fs::remove_all(dir);
  if (!snap.ok()) {
    std::fprintf(stderr, "bench_snapshot_json: %s\n", snap.status().message().c_str());
    return 1;
  }
  const nccl_triage::NodeSnapshot& s = *snap;

  std::vector<double> write_us, read_us;
  std::string text;
  for (int r = 0; r < runs; ++r) {
    auto start = Clock::now();
    for (int b = 0; b < batch; ++b) text = nccl_triage::DumpJson(nccl_triage::ToJson(s), 2);
    auto mid = Clock::now();
    nccl_triage::StatusOr<nccl_triage::NodeSnapshot> back = nccl_triage::NotFound("not run");
    for (int b = 0; b < batch; ++b) back = nccl_triage::SnapshotFromJson(nlohmann::json::parse(text));
    auto end = Clock::now();
    if (!back.ok() || !(*back == s)) {
      std::fprintf(stderr, "bench_snapshot_json: the round trip lost something\n");
      return 1;
    }
    write_us.push_back(std::chrono::duration<double, std::micro>(mid - start).count() / batch);
    read_us.push_back(std::chrono::duration<double, std::micro>(end - mid).count() / batch);
  }
  const Stats w = Summarise(write_us);
  const Stats rd = Summarise(read_us);
  std::printf(
      "snapshot JSON of a DGX H100 fixture (%zu bytes): write median %.1f us, max %.1f us; "
      "read median %.1f us, max %.1f us (%d runs of %d)\n",
      text.size(), w.median_us, w.max_us, rd.median_us, rd.max_us, runs, batch);
  return 0;
}
