#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <nlohmann/json.hpp>
#include <thread>

#include "base/log.h"
#include "exporter/agent_http.h"
#include "live_util.h"
#include "test_state.h"

namespace nccl_triage {
namespace {

using namespace std::chrono_literals;
using testing::ConnectFrom;
using testing::SendAll;
using testing::WaitFor;

TEST(ParseListenAddress, AcceptsHostPortForms) {
  auto a = ParseListenAddress("0.0.0.0:9500");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->first, "0.0.0.0");
  EXPECT_EQ(a->second, 9500);
  EXPECT_EQ(ParseListenAddress("[::1]:0")->first, "::1");
  EXPECT_EQ(ParseListenAddress(":9500")->first, "0.0.0.0");
  EXPECT_FALSE(ParseListenAddress("9500").ok());
  EXPECT_FALSE(ParseListenAddress("host:99999").ok());
  EXPECT_FALSE(ParseListenAddress("host:abc").ok());
}

// An Xid line quotes the process name, which any process sets: `name=\xff\xfe` in a finding made
// nlohmann's dump() throw, and GET /status answered 500 for as long as the line stayed in the
// window (24 h).
TEST(AgentHttp, StatusOfAFindingWithANonUtf8ProcessNameIsValidJson) {
  AgentState state("gpu-node-1", "0.1.0", 0);
  AgentMetrics metrics(state, "0.1.0");
  HttpServer server;
  InstallAgentEndpoints(server, state, metrics);
  auto port = server.Start("127.0.0.1", 0);
  ASSERT_TRUE(port.ok()) << port.status().message();
  Finding xid = testing::TestFinding("kernel.xid", FaultClass::kUnknown, CheckStatus::kWarn);
  xid.message = "GPU 0000:44:00: Xid 31 x1";
  xid.evidence.push_back(
      {"kernel log", "NVRM: Xid (PCI:0000:44:00): 31, pid=1, name=\xff\xfe, Ch 8", "dev/kmsg"});
  testing::FillCycle(state, testing::TestSnapshot(2), {xid}, 1000);
  httplib::Client client("127.0.0.1", *port);
  auto s = client.Get("/status");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->status, 200);
  auto j = nlohmann::json::parse(s->body, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << s->body.substr(0, 300);
  EXPECT_NE(s->body.find("name=\xEF\xBF\xBD\xEF\xBF\xBD, Ch 8"), std::string::npos);
  server.Stop();
}

TEST(AgentHttp, LivezAlwaysReadyzAfterTheFirstCycleMetricsAndStatus) {
  AgentState state("gpu-node-1", "0.1.0", 0);
  AgentMetrics metrics(state, "0.1.0");
  HttpServer server;
  InstallAgentEndpoints(server, state, metrics);
  auto port = server.Start("127.0.0.1", 0);
  ASSERT_TRUE(port.ok()) << port.status().message();
  httplib::Client client("127.0.0.1", *port);
  EXPECT_EQ(client.Get("/livez")->status, 200);
  EXPECT_EQ(client.Get("/readyz")->status, 503);

  testing::FillCycle(
      state, testing::TestSnapshot(2),
      {testing::TestFinding("ib.port_state", FaultClass::kIbResource, CheckStatus::kFail)}, 1000);
  testing::FillPeers(state, 2, 2000);
  ProbeResult rail;
  rail.peer = "gpu-node-100";
  rail.mode = ProbeMode::kIb;
  rail.outcome = ProbeOutcome::kFail;
  state.RecordProbe(rail, 2500, 1, "=mlx5_1:1");
  EXPECT_EQ(client.Get("/readyz")->status, 200);
  auto m = client.Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->status, 200);
  EXPECT_NE(m->get_header_value("Content-Type").find("version=0.0.4"), std::string::npos);
  EXPECT_NE(m->body.find("nccl_triage_node_verdict{basis=\"checks\",class=\"ib_resource\"} 1"),
            std::string::npos)
      << m->body;
  auto s = client.Get("/status");
  ASSERT_TRUE(s);
  auto j = nlohmann::json::parse(s->body);
  EXPECT_EQ(j["schema"], kAgentStatusSchema);
  EXPECT_EQ(j["verdict"]["class"], "ib_resource");
  EXPECT_EQ(j["report"]["causes"][0], "ib.port_state");
  EXPECT_EQ(j["probes"].size(), 4u);  // the rail's failure does not replace the pair's ib row
  ASSERT_EQ(j["rail_probes"].size(), 1u);
  EXPECT_EQ(j["rail_probes"][0]["rail"], 1);
  EXPECT_EQ(j["rail_probes"][0]["ib_hca"], "=mlx5_1:1");
  EXPECT_EQ(j["rail_probes"][0]["outcome"], "fail");
  EXPECT_EQ(j["pairs"].size(), 2u);
  EXPECT_EQ(j["snapshot"]["memlock_limit_bytes"], 65536.0);
  // The rail table: one row per HCA port, the polling port named with its rail.
  ASSERT_EQ(j["rails"].size(), 2u);
  EXPECT_EQ(j["rails"][1]["rail"], 1);
  EXPECT_EQ(j["rails"][1]["device"], "mlx5_1");
  EXPECT_EQ(j["rails"][1]["state"], "DOWN");
  EXPECT_EQ(j["rails"][1]["active"], false);
  EXPECT_EQ(j["rails"][0]["rate_gbps"], 200.0);
  EXPECT_EQ(client.Get("/nope")->status, 404);
  server.Stop();
}

// /status says whether the probes can run and why not, with the same reason as the metric
// nccl_triage_probe_available{reason} and the catalogue's remedy (the runbook of the alert
// NcclTriageProbesUnavailable reads both).
TEST(AgentHttp, StatusSaysWhyTheProbesCannotRunAsTheMetricDoes) {
  AgentState state("gpu-node-1", "0.1.0", 0);
  AgentMetrics metrics(state, "0.1.0");
  auto first = AgentStatusJson(state.View())["probe_availability"];
  EXPECT_EQ(first["available"], false);
  EXPECT_EQ(first["reason"], "pending");  // before the start-up library check
  EXPECT_EQ(first["updated_at"], "");

  ProbeResult r;
  r.outcome = ProbeOutcome::kUnavailable;
  r.unavailable_cause = "probe.no_gpu";
  r.detail = "cuInit: CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)";
  r.nccl_version = "2.21.5";
  state.SetProbeAvailability(*AvailabilityFromProbe(r, 5000));
  auto a = AgentStatusJson(state.View())["probe_availability"];
  EXPECT_EQ(a["available"], false);
  EXPECT_EQ(a["reason"], "no_gpu");
  EXPECT_EQ(a["cause"], "probe.no_gpu");
  EXPECT_EQ(a["detail"], r.detail);
  EXPECT_EQ(a["nccl_version"], "2.21.5");
  EXPECT_EQ(a["updated_at"], FormatRfc3339(5000));
  const std::string remedy = a["remedy"];
  for (const char* word : {"runtime class", "NVIDIA_VISIBLE_DEVICES", "device plugin"}) {
    EXPECT_NE(remedy.find(word), std::string::npos) << word << " not in: " << remedy;
  }
  EXPECT_NE(metrics.Scrape().find("nccl_triage_probe_available{reason=\"no_gpu\"} 0"),
            std::string::npos);

  r.unavailable_cause = "probe.no_nccl";
  r.detail = "no libnccl.so.2 in /opt/nccl/lib, /usr/lib/x86_64-linux-gnu";
  state.SetProbeAvailability(*AvailabilityFromProbe(r, 6000));
  a = AgentStatusJson(state.View())["probe_availability"];
  EXPECT_EQ(a["reason"], "no_nccl");
  EXPECT_NE(a["detail"].get<std::string>().find("/opt/nccl/lib"), std::string::npos);
  EXPECT_NE(metrics.Scrape().find("nccl_triage_probe_available{reason=\"no_nccl\"} 0"),
            std::string::npos);

  ProbeResult ok;
  ok.outcome = ProbeOutcome::kPass;
  ok.nccl_version = "2.21.5";
  ok.nccl_library = "/opt/nccl/lib/libnccl.so.2";
  ok.gpu_name = "NVIDIA H100 80GB HBM3";
  state.SetProbeAvailability(*AvailabilityFromProbe(ok, 7000));
  a = AgentStatusJson(state.View())["probe_availability"];
  EXPECT_EQ(a["available"], true);
  EXPECT_EQ(a["reason"], "ok");
  EXPECT_EQ(a["remedy"], "");
  EXPECT_EQ(a["detail"], "NCCL 2.21.5 from /opt/nccl/lib/libnccl.so.2 on NVIDIA H100 80GB HBM3");
  EXPECT_NE(metrics.Scrape().find("nccl_triage_probe_available{reason=\"ok\"} 1"),
            std::string::npos);
}

TEST(HttpServer, AHandlerThatThrowsAnswers500AndTheServerKeepsServing) {
  HttpServer server;
  server.Get("/boom", [](const HttpRequest&) -> HttpReply { throw std::runtime_error("x"); });
  server.Get("/ok", [](const HttpRequest&) { return HttpReply{200, "text/plain", "fine"}; });
  auto port = server.Start("127.0.0.1", 0);
  ASSERT_TRUE(port.ok());
  httplib::Client client("127.0.0.1", *port);
  EXPECT_EQ(client.Get("/boom")->status, 500);
  EXPECT_EQ(client.Get("/ok")->body, "fine");
}

// Everything the server sends until it closes or the socket's timeout passes.
std::string ReadUntilClose(int fd) {
  std::string reply;
  char buf[4096];
  for (ssize_t n; (n = ::recv(fd, buf, sizeof(buf), 0)) > 0;)
    reply.append(buf, static_cast<size_t>(n));
  return reply;
}

// Sends `request` on a fresh connection and returns what comes back before the server closes
// it or `seconds` pass (the client never closes its side first).
std::string RawExchange(int port, const std::string& request, int seconds,
                        const char* source = "127.0.0.1") {
  int fd = ConnectFrom(port, source, seconds);
  std::string reply;
  if (fd >= 0 && SendAll(fd, request)) {
    char buf[4096];
    for (ssize_t n; (n = ::recv(fd, buf, sizeof(buf), 0)) > 0;) {
      reply.append(buf, static_cast<size_t>(n));
      if (reply.find("\r\n\r\n") != std::string::npos && reply.find("done") != std::string::npos) {
        break;
      }
    }
  }
  if (fd >= 0) ::close(fd);
  return reply;
}

// GET `path` on a fresh connection from `source`: the status code, 0 when nothing came back in
// `seconds`.
int StatusOf(int port, const std::string& path, const char* source = "127.0.0.1", int seconds = 2) {
  int fd = ConnectFrom(port, source, seconds);
  if (fd < 0) return 0;
  std::string reply;
  if (SendAll(fd, "GET " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")) {
    reply = ReadUntilClose(fd);
  }
  ::close(fd);
  if (reply.rfind("HTTP/1.1 ", 0) != 0 || reply.size() < 12) return 0;
  return std::stoi(reply.substr(9, 3));
}

// A slowloris: a connection that sends a request line and then one header line
// every `every`, never finishing the head.
class SlowClient {
 public:
  SlowClient(int port, const char* source, std::chrono::milliseconds every)
      : fd_(ConnectFrom(port, source, 1)) {
    if (fd_ < 0) return;
    SendAll(fd_, "GET /status HTTP/1.1\r\n");
    thread_ = std::jthread([this, every](std::stop_token st) {
      for (int i = 0; !st.stop_requested(); ++i) {
        if (!SendAll(fd_, "X-Slow-" + std::to_string(i) + ": 1\r\n")) break;
        for (auto t = every; t.count() > 0 && !st.stop_requested(); t -= 10ms) {
          std::this_thread::sleep_for(10ms);
        }
      }
    });
  }
  ~SlowClient() {
    thread_ = {};
    if (fd_ >= 0) ::close(fd_);
  }
  bool connected() const { return fd_ >= 0; }
  // What the server said before closing (the 408 of a total deadline), "" while still open.
  std::string Reply() const {
    std::string r;
    char buf[512];
    ssize_t n = ::recv(fd_, buf, sizeof(buf), MSG_DONTWAIT);
    if (n > 0) r.assign(buf, static_cast<size_t>(n));
    return r;
  }

 private:
  int fd_;
  std::jthread thread_;
};

TEST(HttpServer, APostWithoutLengthHasNoBodyAndIsAnsweredAtOnce) {
  HttpServer server;
  std::string seen = "unset";
  server.Post("/sweep", [&](const HttpRequest& r) {
    seen = r.body;
    return HttpReply{202, "text/plain", "done"};
  });
  auto port = server.Start("127.0.0.1", 0);
  ASSERT_TRUE(port.ok());
  // What `curl -X POST URL` sends: no Content-Length, no body, the connection kept open.
  const auto start = std::chrono::steady_clock::now();
  std::string reply = RawExchange(
      *port, "POST /sweep HTTP/1.1\r\nHost: x\r\nUser-Agent: curl/7.88.1\r\nAccept: */*\r\n\r\n",
      4);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2)) << reply;
  EXPECT_EQ(reply.rfind("HTTP/1.1 202", 0), 0u) << reply;
  EXPECT_EQ(seen, "");

  // With a body it still arrives whole, and a keep-alive connection stays usable.
  httplib::Client client("127.0.0.1", *port);
  auto res = client.Post("/sweep", "{\"reason\":\"manual\"}", "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 202);
  EXPECT_EQ(seen, "{\"reason\":\"manual\"}");
  res = client.Post("/sweep", "", "text/plain");
  ASSERT_TRUE(res);
  EXPECT_EQ(seen, "");

  // Too large: 413 as soon as the head says so, before the body is sent; the handler is not
  // called.
  seen = "unset";
  std::string big = RawExchange(*port,
                                "POST /sweep HTTP/1.1\r\nHost: x\r\nContent-Length: " +
                                    std::to_string((1 << 20) + 1) + "\r\n\r\n",
                                4);
  EXPECT_EQ(big.rfind("HTTP/1.1 413", 0), 0u) << big;
  EXPECT_EQ(seen, "unset");
}

// Four connections that trickle header lines held all four workers of the old
// server, and /livez (the kubelet's liveness probe) timed out. Reading happens on one thread now,
// so neither the probe from another address nor an ordinary request waits for them.
TEST(HttpServer, SlowClientsDoNotStarveLivezOrOtherRequests) {
  AgentState state("gpu-node-1", "0.1.0", 0);
  AgentMetrics metrics(state, "0.1.0");
  HttpServer server;  // four workers, as the agent runs it
  InstallAgentEndpoints(server, state, metrics);
  auto port = server.Start("127.0.0.1", 0);
  ASSERT_TRUE(port.ok());
  std::vector<std::unique_ptr<SlowClient>> slow;
  for (int i = 0; i < 6; ++i) {
    slow.push_back(std::make_unique<SlowClient>(*port, "127.0.0.1", 300ms));
    ASSERT_TRUE(slow.back()->connected());
  }
  std::this_thread::sleep_for(200ms);
  for (int round = 0; round < 3; ++round) {
    const auto start = std::chrono::steady_clock::now();
    EXPECT_EQ(StatusOf(*port, "/livez", "127.0.0.2"), 200);
    EXPECT_EQ(StatusOf(*port, "/metrics", "127.0.0.1"), 200);
    // Well under the 2 s in which a starved probe would time out, with room for a loaded CI.
    EXPECT_LT(std::chrono::steady_clock::now() - start, 1500ms);
    std::this_thread::sleep_for(300ms);
  }
}

// A client that never finishes its request is cut at the total deadline even though each of its
// reads arrives well within any per-read timeout.
TEST(HttpServer, ARequestThatDoesNotArriveWholeInTimeIsAnswered408AndClosed) {
  HttpServerOptions options;
  options.request_timeout = 600ms;
  HttpServer server(nullptr, options);
  server.Get("/status", [](const HttpRequest&) { return HttpReply{200, "text/plain", "s"}; });
  auto port = server.Start("127.0.0.1", 0);
  ASSERT_TRUE(port.ok());
  SlowClient slow(*port, "127.0.0.1", 100ms);
  ASSERT_TRUE(slow.connected());
  std::string reply;
  const auto start = std::chrono::steady_clock::now();
  while (reply.empty() && std::chrono::steady_clock::now() - start < 3s) {
    std::this_thread::sleep_for(50ms);
    reply = slow.Reply();
  }
  EXPECT_EQ(reply.rfind("HTTP/1.1 408", 0), 0u) << reply;
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1500ms);
  EXPECT_EQ(server.counters().timed_out, 1u);
  EXPECT_EQ(server.counters().requests, 0u);
}

// Serves /livez (a health route) and /status on a free port.
StatusOr<int> StartWithLivezAndStatus(HttpServer& server) {
  server.GetHealth("/livez", [](const HttpRequest&) { return HttpReply{200, "text/plain", "ok"}; });
  server.Get("/status", [](const HttpRequest&) { return HttpReply{200, "text/plain", "s"}; });
  return server.Start("127.0.0.1", 0);
}

// Connections beyond the per-address cap of the general pool go to the health reserve, where only
// the health paths are served; beyond its cap too they are refused at once. Other addresses are
// still served, and the address is served again as soon as its connections close.
TEST(HttpServer, ConnectionsAboveThePerPeerCapsAreServedOnlyHealthThenRefused) {
  HttpServerOptions options;
  options.max_connections_per_peer = 3;
  options.health_connections_per_peer = 1;
  options.health_timeout = 60s;  // the held connection below keeps its place however slow the test
  HttpServer server(nullptr, options);
  auto port = StartWithLivezAndStatus(server);
  ASSERT_TRUE(port.ok());
  {
    std::vector<std::unique_ptr<SlowClient>> slow;
    for (int i = 0; i < 3; ++i) {
      slow.push_back(std::make_unique<SlowClient>(*port, "127.0.0.3", 1000ms));
    }
    ASSERT_TRUE(WaitFor([&] { return StatusOf(*port, "/livez", "127.0.0.3") == 200; }, 10s));
    EXPECT_GE(server.counters().reserved, 1u);
    // The general pool is full for the address: another path is refused, by the reserve or,
    // while the server has not yet seen the probe's connection close (its one place in the
    // reserve still taken), at the accept.
    EXPECT_EQ(StatusOf(*port, "/status", "127.0.0.3"), 503);
    EXPECT_GE(server.counters().reserved + server.counters().refused_peer, 2u);
    EXPECT_EQ(StatusOf(*port, "/status", "127.0.0.2"), 200);
    // A connection that sends nothing takes the reserve's one place for the address, once the
    // server has seen the earlier ones close (a connection refused meanwhile is tried again).
    int held = -1;
    ASSERT_TRUE(WaitFor(
        [&] {
          if (held >= 0) ::close(held);
          const uint64_t before = server.counters().reserved;
          held = ConnectFrom(*port, "127.0.0.3", 1);
          return held >= 0 && WaitFor([&] { return server.counters().reserved > before; }, 500ms);
        },
        10s));
    // One more that has sent nothing yet: refused at once (a probe whose request is already
    // there when it is accepted would still get a place).
    const uint64_t refused_before = server.counters().refused_peer;
    int extra = ConnectFrom(*port, "127.0.0.3", 2);
    ASSERT_GE(extra, 0);
    const std::string refused = ReadUntilClose(extra);
    ::close(extra);
    EXPECT_EQ(refused.rfind("HTTP/1.1 503", 0), 0u) << refused;
    EXPECT_GT(server.counters().refused_peer, refused_before);
    ::close(held);
  }
  ASSERT_TRUE(WaitFor([&] { return StatusOf(*port, "/status", "127.0.0.3") == 200; }, 10s));
}

// Slow clients from many addresses filled the one connection cap, which was checked before the
// path: /livez answered 503 and the kubelet restarted a healthy agent. Connections above the
// general pool go to the health reserve now, where a request for another path is cut at once.
TEST(HttpServer, LivezIsAnsweredWhileSlowClientsFromManyAddressesFillTheGeneralPool) {
  HttpServerOptions options;
  options.max_connections = 16;
  options.max_connections_per_peer = 2;
  options.health_connections = 4;
  HttpServer server(nullptr, options);
  auto port = StartWithLivezAndStatus(server);
  ASSERT_TRUE(port.ok());
  std::vector<std::unique_ptr<SlowClient>> slow;
  for (int a = 0; a < 16; ++a) {
    const std::string source = "127.0.1." + std::to_string(a + 1);
    for (int i = 0; i < 2; ++i) {
      slow.push_back(std::make_unique<SlowClient>(*port, source.c_str(), 300ms));
      ASSERT_TRUE(slow.back()->connected());
    }
  }
  ASSERT_TRUE(WaitFor(
      [&] { return server.counters().reserved + server.counters().refused_total >= 16; }, 5s));
  // Each round is a kubelet probe with failureThreshold 3: answered within three tries. (On a
  // starved machine the reserve may not yet have cut the slow clients' /status requests when a
  // probe arrives before its request bytes; the next try finds their places free. The kubelet
  // spaces its tries by periodSeconds: so do these, by a little, so that a starved server thread
  // gets to run between them.)
  auto livez_within_three_tries = [&] {
    for (int attempt = 0; attempt < 3; ++attempt) {
      if (attempt > 0) std::this_thread::sleep_for(100ms);
      if (StatusOf(*port, "/livez", "127.0.0.99") == 200) return true;
    }
    return false;
  };
  for (int round = 0; round < 3; ++round) {
    EXPECT_TRUE(livez_within_three_tries());
    EXPECT_EQ(StatusOf(*port, "/status", "127.0.0.99"), 503);
    std::this_thread::sleep_for(200ms);
  }
}

// Idle connections can fill the reserve too; a newcomer takes the place of the oldest one that
// has sent no request line, so a probe that asks at once is still answered.
TEST(HttpServer, IdleConnectionsFillingTheReserveGiveWayToAHealthProbe) {
  HttpServerOptions options;
  options.max_connections = 4;
  options.max_connections_per_peer = 4;
  options.health_connections = 2;
  HttpServer server(nullptr, options);
  server.GetHealth("/livez", [](const HttpRequest&) { return HttpReply{200, "text/plain", "ok"}; });
  auto port = server.Start("127.0.0.1", 0);
  ASSERT_TRUE(port.ok());
  std::vector<int> idle;
  for (int i = 0; i < 4; ++i) idle.push_back(ConnectFrom(*port, "127.0.0.5", 5));
  idle.push_back(ConnectFrom(*port, "127.0.0.6", 5));
  idle.push_back(ConnectFrom(*port, "127.0.0.7", 5));
  ASSERT_TRUE(WaitFor([&] { return server.counters().reserved >= 2; }, 2s));
  std::this_thread::sleep_for(200ms);  // past the reserve's grace
  EXPECT_EQ(StatusOf(*port, "/livez", "127.0.0.99"), 200);
  for (int fd : idle) ::close(fd);
}

// One request of a million header lines took the agent from 41 to 229 MB,
// because the old server stored every line before judging the request. The head is cut while it
// arrives now: the client learns 431 and the server stops reading long before the 53 MB are sent.
TEST(HttpServer, AHeaderFloodIsAnswered431AfterAFewKilobytes) {
  HttpServer server;
  server.Get("/status", [](const HttpRequest&) { return HttpReply{200, "text/plain", "s"}; });
  auto port = server.Start("127.0.0.1", 0);
  ASSERT_TRUE(port.ok());
  int fd = ConnectFrom(*port, "127.0.0.1", 5);
  ASSERT_GE(fd, 0);
  std::atomic<size_t> sent{0};
  std::jthread flood([&] {
    std::string chunk;
    for (int i = 0; i < 1000; ++i)
      chunk += "X-Flood-" + std::to_string(i) + ": aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n";
    if (!SendAll(fd, "GET /status HTTP/1.1\r\nHost: x\r\n")) return;
    for (int i = 0; i < 1000; ++i) {  // 1M header lines, 53 MB
      if (!SendAll(fd, chunk)) return;
      sent += chunk.size();
    }
  });
  std::string reply = ReadUntilClose(fd);
  flood.join();
  ::close(fd);
  EXPECT_EQ(reply.rfind("HTTP/1.1 431", 0), 0u) << reply.substr(0, 200);
  EXPECT_LT(sent.load(), 16u << 20) << "the server kept reading the flood";
  EXPECT_EQ(server.counters().requests, 0u);

  // Many short header lines within the byte cap: the count cap answers.
  std::string many = "GET /status HTTP/1.1\r\n";
  for (int i = 0; i < 65; ++i) many += "a" + std::to_string(i) + ": b\r\n";
  reply = RawExchange(*port, many + "\r\n", 2);
  EXPECT_EQ(reply.rfind("HTTP/1.1 431", 0), 0u) << reply;
  EXPECT_NE(reply.find("header fields"), std::string::npos) << reply;
}

// Health handlers have a thread of their own: with every worker inside a slow handler, /livez is
// still answered at once.
TEST(HttpServer, HealthHandlersAreNotQueuedBehindBusyWorkers) {
  HttpServer server(nullptr, 2);
  std::atomic<bool> release{false};
  server.Get("/slow", [&](const HttpRequest&) {
    while (!release) std::this_thread::sleep_for(5ms);
    return HttpReply{200, "text/plain", "slow"};
  });
  server.GetHealth("/livez", [](const HttpRequest&) { return HttpReply{200, "text/plain", "ok"}; });
  auto port = server.Start("127.0.0.1", 0);
  ASSERT_TRUE(port.ok());
  std::vector<std::jthread> busy;
  for (int i = 0; i < 3; ++i) busy.emplace_back([&] { StatusOf(*port, "/slow", "127.0.0.1", 5); });
  std::this_thread::sleep_for(100ms);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(StatusOf(*port, "/livez", "127.0.0.2"), 200);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 500ms);
  release = true;
}

TEST(HttpServer, KeepAliveServesSeveralRequestsOnOneConnection) {
  HttpServer server;
  std::atomic<int> calls{0};
  server.Get("/n", [&](const HttpRequest& r) {
    ++calls;
    return HttpReply{200, "text/plain", std::string(r.Header("x-n"))};
  });
  auto port = server.Start("127.0.0.1", 0);
  ASSERT_TRUE(port.ok());
  httplib::Client client("127.0.0.1", *port);
  client.set_keep_alive(true);
  for (int i = 0; i < 5; ++i) {
    auto res = client.Get("/n", httplib::Headers{{"X-N", std::to_string(i)}});
    ASSERT_TRUE(res);
    EXPECT_EQ(res->body, std::to_string(i));
  }
  EXPECT_EQ(calls, 5);
  // Two requests in one write (pipelining) are answered in order.
  std::string reply = RawExchange(*port,
                                  "GET /n HTTP/1.1\r\nX-N: a\r\n\r\n"
                                  "GET /n HTTP/1.1\r\nX-N: done\r\nConnection: close\r\n\r\n",
                                  2);
  EXPECT_LT(reply.find("\r\n\r\na"), reply.find("\r\n\r\ndone")) << reply;
  EXPECT_EQ(StatusOf(*port, "/nope"), 404);
}

// The old server closed a keep-alive connection after 100 requests although its 100th reply said
// keep-alive, so a client reusing the connection lost its next request.
TEST(HttpServer, AKeepAliveConnectionServesThousandsOfRequests) {
  HttpServer server;
  server.Get("/n", [](const HttpRequest&) { return HttpReply{200, "text/plain", "n"}; });
  auto port = server.Start("127.0.0.1", 0);
  ASSERT_TRUE(port.ok());
  int fd = ConnectFrom(*port, "127.0.0.1", 5);
  ASSERT_GE(fd, 0);
  int answered = 0;
  std::string pending;
  char buf[4096];
  for (int i = 0; i < 2000; ++i) {
    if (!SendAll(fd, "GET /n HTTP/1.1\r\nHost: x\r\n\r\n")) break;
    // One reply: its head and the one-byte body.
    size_t end;
    while ((end = pending.find("\r\n\r\n")) == std::string::npos || pending.size() < end + 5) {
      ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
      if (n <= 0) break;
      pending.append(buf, static_cast<size_t>(n));
    }
    if (end == std::string::npos || pending.size() < end + 5) break;
    if (pending.rfind("HTTP/1.1 200", 0) != 0) break;
    EXPECT_EQ(pending.find("Connection: close"), std::string::npos);
    pending.erase(0, end + 5);
    ++answered;
  }
  ::close(fd);
  EXPECT_EQ(answered, 2000);
}

TEST(HttpServer, AnAddressInUseIsAnError) {
  HttpServer a, b;
  auto port = a.Start("127.0.0.1", 0);
  ASSERT_TRUE(port.ok());
  EXPECT_FALSE(b.Start("127.0.0.1", *port).ok());
}

}  // namespace
}  // namespace nccl_triage
