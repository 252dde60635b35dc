// Scrape cost of a busy agent: the DGX H100 fixture (8 HCAs) judged by every check, plus 64 peers
// with a socket and an IB probe result each and a pair verdict each. Measures GET /metrics end
// to end over loopback (keep-alive client) and, separately, refresh+serialise and the
// serialisation alone.
//
//   build/bench_exporter_scrape [--runs N]
#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "checks/check.h"
#include "core/report.h"
#include "exporter/agent_http.h"
#include "exporter/metrics.h"
#include "host/gatherer.h"
#include "state/agent_state.h"

namespace nt = nccl_triage;
using Clock = std::chrono::steady_clock;

namespace {

struct Stats {
  double median_ms, p99_ms, max_ms;
};

template <typename F>
Stats Measure(int runs, F&& f) {
  std::vector<double> ms;
  for (int i = 0; i < runs; ++i) {
    auto t0 = Clock::now();
    f();
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return {ms[ms.size() / 2], ms[std::min(ms.size() - 1, ms.size() * 99 / 100)], ms.back()};
}

}  // namespace

int main(int argc, char** argv) {
  int runs = 1000;
  std::string fixture = std::string(NCCL_TRIAGE_FIXTURE_DIR) + "/dgx-h100";
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--runs") && i + 1 < argc) runs = std::atoi(argv[++i]);
    if (!std::strcmp(argv[i], "--root") && i + 1 < argc) fixture = argv[++i];
  }
  nt::GatherOptions gather;
  gather.root = fixture;
  auto snapshot = nt::GatherSnapshot(gather);
  if (!snapshot.ok()) {
    std::fprintf(stderr, "gather %s: %s\n", fixture.c_str(), snapshot.status().message().c_str());
    return 2;
  }
  const nt::CheckRegistry registry = nt::BuiltinCheckRegistry();
  nt::Config config;
  auto findings = registry.Run(*snapshot, config, nt::CheckContext{});
  int64_t now_ms = 1'700'000'000'000;
  nt::AgentState state(snapshot->node, "bench", now_ms);
  state.SetCycle(
      std::make_shared<nt::NodeReport>(nt::MakeReport(snapshot->node, findings, now_ms)),
      std::make_shared<const nt::NodeSnapshot>(*snapshot),
      std::make_shared<const nt::SnapshotSummary>(nt::Summarize(*snapshot, config.expect)), now_ms,
      now_ms + 20, "");
  constexpr int kPeers = 64;
  for (int i = 0; i < kPeers; ++i) {
    std::string peer = "gpu-node-" + std::to_string(100 + i);
    for (auto mode : {nt::ProbeMode::kSocket, nt::ProbeMode::kIb}) {
      nt::ProbeResult r;
      r.peer = peer;
      r.mode = mode;
      r.outcome = nt::ProbeOutcome::kPass;
      r.busbw_bytes_per_second = mode == nt::ProbeMode::kIb ? 45e9 : 2.2e9;
      r.duration_seconds = 5.5;
      r.nccl_version = "2.28.9";
      state.RecordProbe(r, now_ms);
    }
    nt::PairVerdict v;
    v.fault_class = nt::FaultClass::kHealthy;
    v.basis = nt::Basis::kProbes;
    state.SetPairVerdict(peer, v, now_ms);
  }

  nt::AgentMetrics metrics(state, "bench");
  nt::HttpServer server;
  nt::InstallAgentEndpoints(server, state, metrics);
  auto port = server.Start("127.0.0.1", 0);
  if (!port.ok()) return 2;
  httplib::Client client("127.0.0.1", *port);
  client.set_keep_alive(true);
  size_t bytes = 0, series = 0;
  auto get = [&] {
    auto res = client.Get("/metrics");
    if (!res || res->status != 200) std::abort();
    bytes = res->body.size();
  };
  // Steady state (the usual case: several scrapes per check cycle), then a state change before
  // every scrape (every series refreshed and serialised again).
  auto http = Measure(runs, get);
  bool flip = false;
  auto http_changed = Measure(runs, [&] {
    state.SetCoordinatorStatus((flip = !flip) ? "a" : "b");
    get();
  });
  std::string text = metrics.Scrape();
  for (char c : text) series += c == '\n';
  auto refresh = Measure(runs, [&] {
    state.SetCoordinatorStatus((flip = !flip) ? "a" : "b");
    (void)metrics.Scrape();
  });
  auto serialise = Measure(runs, [&] { (void)metrics.SerializeOnly(); });
  server.Stop();

  std::printf("fixture %s: %zu ports, %zu findings, %d peers x 2 modes\n", fixture.c_str(),
              nt::Summarize(*snapshot, config.expect).ports.size(), findings.size(), kPeers);
  std::printf("exposition: %zu bytes, %zu lines\n", bytes, series);
  std::printf(
      "GET /metrics over loopback, state unchanged: median %.3f ms, p99 %.3f ms (%d runs)\n",
      http.median_ms, http.p99_ms, runs);
  std::printf(
      "GET /metrics over loopback, state changed:   median %.3f ms, p99 %.3f ms (%d runs)\n",
      http_changed.median_ms, http_changed.p99_ms, runs);
  std::printf("refresh + serialise:        median %.3f ms, p99 %.3f ms\n", refresh.median_ms,
              refresh.p99_ms);
  std::printf("serialise alone:            median %.3f ms, p99 %.3f ms\n", serialise.median_ms,
              serialise.p99_ms);
  return http_changed.median_ms <= 5.0 ? 0 : 1;
}
