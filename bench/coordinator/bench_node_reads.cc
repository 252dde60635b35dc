// Benchmark: what the coordinator's remediation reads of the nodes, per sweep, with a paged list
// of every node after every sweep (the remediator without a node cache, as before) and with the
// node cache kept by a watch (as the coordinator runs it now), against the fake Kubernetes API
// over HTTPS in this process (tests/support/fake_api_server.h), with the real client.
//
// --nodes nodes shaped like the kwok GPU nodes of bench/k8s/fleet.sh (labels, the kwok taint,
// capacity, five conditions and the agents' NcclFabricReady, nodeInfo); --steps remediation steps
// in dry-run with no fault (what a sweep costs when nothing is wrong); between two steps, the
// nodes that change in a sweep interval when every node's agent sends its condition heartbeat
// every 5 minutes (--nodes * --sweep-seconds / 300 of them, round robin). Counts the node
// requests the server answered (LIST pages, WATCH requests, GETs) and the bytes of their bodies
// and event lines, then gives the steady rate per 100 nodes at --sweep-seconds between sweeps;
// the watch's own rate is its timeoutSeconds (one request per 300 s) plus the hourly resync list.
//
//   build/bench/coordinator/bench_node_reads [--nodes 4096] [--steps 10] [--sweep-seconds 60]
#include <unistd.h>

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

#include "base/clock.h"
#include "base/log.h"
#include "coordinator/remediator.h"
#include "exporter/tls_test_cert.h"
#include "kube/kube_client.h"
#include "kube/node_cache.h"
#include "support/fake_api_server.h"

namespace {

namespace fs = std::filesystem;
using nccl_triage::testing::FakeApiServer;
using nlohmann::json;

std::string Rfc3339(int64_t s) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "2026-12-07T%02lld:%02lld:%02lldZ", (s / 3600) % 24LL,
                (s / 60) % 60LL, s % 60LL);
  return buf;
}

json Condition(const std::string& type, const std::string& status, const std::string& reason,
               int64_t at) {
  return {{"type", type},
          {"status", status},
          {"reason", reason},
          {"message", "kwok: " + reason},
          {"lastHeartbeatTime", Rfc3339(at)},
          {"lastTransitionTime", Rfc3339(0)}};
}

json KwokNode(int i) {
  const bool a100 = i % 2;
  const std::string name = "gpu-" + std::to_string(i);
  json conditions = json::array();
  for (const char* t : {"MemoryPressure", "DiskPressure", "PIDPressure", "NetworkUnavailable"}) {
    conditions.push_back(Condition(t, "False", std::string("KubeletHas") + t, 0));
  }
  conditions.push_back(Condition("Ready", "True", "KubeletReady", 0));
  conditions.push_back(Condition("NcclFabricReady", "True", "AllChecksPassed", 0));
  json resources = {{"cpu", "96"}, {"memory", "1Ti"}, {"pods", "110"}, {"nvidia.com/gpu", "8"}};
  return {
      {"apiVersion", "v1"},
      {"kind", "Node"},
      {"metadata",
       {{"name", name},
        {"uid", "6f1c0d6e-0000-4000-8000-" + std::to_string(100000000000 + i)},
        {"creationTimestamp", Rfc3339(0)},
        {"annotations",
         {{"kwok.x-k8s.io/node", "fake"}, {"node.alpha.kubernetes.io/ttl", "0"}}},
        {"labels",
         {{"type", "kwok"},
          {"kubernetes.io/hostname", name},
          {"kubernetes.io/os", "linux"},
          {"kubernetes.io/arch", "amd64"},
          {"nvidia.com/gpu.present", "true"},
          {"node.kubernetes.io/instance-type", a100 ? "p4d.24xlarge" : "p5.48xlarge"},
          {"pool", a100 ? "a100" : "h100"}}}}},
      {"spec",
       {{"taints", json::array({{{"key", "kwok.x-k8s.io/node"},
                                 {"value", "fake"},
                                 {"effect", "NoSchedule"}}})}}},
      {"status",
       {{"capacity", resources},
        {"allocatable", resources},
        {"conditions", conditions},
        {"addresses", json::array({{{"type", "InternalIP"}, {"address", "10.0.0.1"}}})},
        {"daemonEndpoints", {{"kubeletEndpoint", {{"Port", 10250}}}}},
        {"nodeInfo",
         {{"machineID", ""},
          {"systemUUID", ""},
          {"bootID", ""},
          {"kernelVersion", ""},
          {"osImage", ""},
          {"containerRuntimeVersion", ""},
          {"kubeletVersion", "fake"},
          {"kubeProxyVersion", "fake"},
          {"operatingSystem", "linux"},
          {"architecture", "amd64"}}},
        {"phase", "Running"}}}};
}

struct Counts {
  size_t lists = 0;    // GET /api/v1/nodes pages
  size_t watches = 0;  // GET /api/v1/nodes?watch=1
  size_t gets = 0;     // GET /api/v1/nodes/<name>
  uint64_t bytes = 0;
};

Counts Now(const FakeApiServer& server) {
  Counts c;
  for (const auto& call : server.Calls()) {
    if (call.method != "GET") continue;
    if (call.path == "/api/v1/nodes") {
      (call.query.find("watch=1") != std::string::npos ? c.watches : c.lists)++;
    } else if (call.path.rfind("/api/v1/nodes/", 0) == 0) {
      ++c.gets;
    }
  }
  c.bytes = server.node_bytes_served();
  return c;
}

Counts Minus(const Counts& a, const Counts& b) {
  return {a.lists - b.lists, a.watches - b.watches, a.gets - b.gets, a.bytes - b.bytes};
}

int Arg(int argc, char** argv, const std::string& name, int fallback) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (argv[i] == name) return std::atoi(argv[i + 1]);
  }
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace nccl_triage;
  const int nodes = Arg(argc, argv, "--nodes", 4096);
  const int steps = Arg(argc, argv, "--steps", 10);
  const int sweep_seconds = Arg(argc, argv, "--sweep-seconds", 60);
  const int changes = std::max(1, nodes * sweep_seconds / 300);

  const fs::path dir = fs::temp_directory_path() / ("bench_node_reads_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const testing::TestCert cert = testing::MakeSelfSignedCert(dir.string());
  auto server = std::make_unique<FakeApiServer>(
      FakeApiServer::Options{cert.cert_path, cert.key_path, "tok", "", 0});
  for (int i = 0; i < nodes; ++i) server->AddNode(KwokNode(i));
  const size_t node_bytes = KwokNode(0).dump().size();

  auto client = [&] {
    ApiAccess a;
    a.host = "127.0.0.1";
    a.port = server->port();
    std::ifstream in(cert.cert_path);
    std::stringstream pem;
    pem << in.rdbuf();
    a.ca_pem = pem.str();
    a.token = "tok";
    auto c = InClusterKubeClient::Connect(a, KubeTimeouts{});
    if (!c.ok()) {
      std::fprintf(stderr, "bench_node_reads: %s\n", c.status().message().c_str());
      std::exit(1);
    }
    return std::move(c).value();
  };
  std::ostringstream sink;
  Logger log(sink);
  SystemClock clock;
  RemediatorOptions options;
  options.policy = {.mode = RemediationMode::kDryRun, .max_nodes = 2, .max_percent = 10,
                    .healthy_ms = 3'600'000};
  options.pool_label = "pool";

  int next_change = 0;
  auto heartbeat = [&] {
    for (int k = 0; k < changes; ++k, ++next_change) {
      server->ChangeNode("gpu-" + std::to_string(next_change % nodes), [&](json& n) {
        n["status"]["conditions"][5]["lastHeartbeatTime"] = Rfc3339(next_change);
      });
    }
  };

  std::printf("%d nodes of %zu bytes (JSON), %d steps, %d node changes between steps (a "
              "heartbeat per node every 300 s at a sweep every %d s)\n",
              nodes, node_bytes, steps, changes, sweep_seconds);
  // Before: a paged list of every node in each step.
  Counts listing;
  {
    const Counts start = Now(*server);
    for (int s = 0; s < steps; ++s) {
      heartbeat();
      // A client per step: the fake server closes a connection idle for 5 s, as the changes of
      // a long interval may keep it (the remediator has nothing to remember in dry-run here).
      auto kube = client();
      Remediator r(*kube, options, log, clock);
      RemediationStatus st = r.Step({});
      if (!st.list_error.empty() || st.nodes_seen != nodes) {
        std::fprintf(stderr, "bench_node_reads: list step: %s (%d nodes)\n",
                     st.list_error.c_str(), st.nodes_seen);
        return 1;
      }
    }
    listing = Minus(Now(*server), start);
  }
  // Now: the node cache, started as the coordinator starts it, its watch open throughout.
  Counts watching, first;
  {
    auto kube = client();
    auto watch_kube = client();
    NodeCacheOptions o = RemediationNodeFields("pool");
    NodeCache cache(*watch_kube, o, log, clock);
    Remediator r(*kube, options, log, clock, &cache);
    const Counts start = Now(*server);
    cache.Start();
    std::vector<CachedNode> got;
    std::string error;
    if (!cache.Nodes(&got, &error, std::chrono::seconds(120))) {
      std::fprintf(stderr, "bench_node_reads: cache: %s\n", error.c_str());
      return 1;
    }
    first = Minus(Now(*server), start);
    const Counts after_list = Now(*server);
    uint64_t events = cache.stats().events;
    for (int s = 0; s < steps; ++s) {
      heartbeat();
      events += changes;
      // The step comes a sweep interval later: the watch has delivered the changes by then.
      while (cache.stats().events < events) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      RemediationStatus st = r.Step({});
      if (!st.list_error.empty() || st.nodes_seen != nodes) {
        std::fprintf(stderr, "bench_node_reads: cache step: %s\n", st.list_error.c_str());
        return 1;
      }
    }
    watching = Minus(Now(*server), after_list);
    cache.Stop();
  }
  server.reset();
  fs::remove_all(dir);

  const double per_step_list = static_cast<double>(listing.lists) / steps;
  const double list_bytes_step = static_cast<double>(listing.bytes) / steps;
  std::printf("list per step:  %zu LIST pages, %zu GETs in %d steps: %.1f requests and %.0f bytes "
              "per step\n",
              listing.lists, listing.gets, steps, per_step_list + listing.gets / double(steps),
              list_bytes_step);
  std::printf("watch (cache):  first list %zu LIST pages, %llu bytes; then %zu LIST, %zu WATCH, "
              "%zu GETs in %d steps, %llu bytes of events (%.0f per step)\n",
              first.lists, static_cast<unsigned long long>(first.bytes),
              watching.lists, watching.watches, watching.gets, steps,
              static_cast<unsigned long long>(watching.bytes),
              static_cast<double>(watching.bytes) / steps);
  // Steady rates at one sweep every sweep_seconds: before, the pages of every step; now, one
  // watch request per 300 s (its timeoutSeconds) and the list of the hourly resync.
  const double per100 = 100.0 / nodes;
  const double before_rps = per_step_list / sweep_seconds;
  const double now_rps = 1.0 / 300 + static_cast<double>(first.lists) / 3600;
  const double before_bpm = list_bytes_step * 60 / sweep_seconds;
  const double now_bpm = static_cast<double>(watching.bytes) / steps * 60 / sweep_seconds +
                         static_cast<double>(first.bytes) / 60;
  std::printf("steady, a sweep every %d s: before %.4f req/s (%.4f per 100 nodes), %.0f bytes/min; "
              "now %.4f req/s (%.5f per 100 nodes), %.0f bytes/min (events %.0f + hourly list "
              "%.0f)\n",
              sweep_seconds, before_rps, before_rps * per100, before_bpm, now_rps,
              now_rps * per100, now_bpm,
              static_cast<double>(watching.bytes) / steps * 60 / sweep_seconds,
              static_cast<double>(first.bytes) / 60);
  return 0;
}
