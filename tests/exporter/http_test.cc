#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <nlohmann/json.hpp>

#include "exporter/agent_http.h"
#include "test_state.h"

namespace nccl_triage {
namespace {

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
  EXPECT_EQ(j["probes"].size(), 4u);
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

// Sends `request` on a fresh connection and returns what comes back before the server closes
// it or `seconds` pass (the client never closes its side first).
std::string RawExchange(int port, const std::string& request, int seconds) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  timeval tv{seconds, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string reply;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      ::send(fd, request.data(), request.size(), 0) == static_cast<ssize_t>(request.size())) {
    char buf[4096];
    for (ssize_t n; (n = ::recv(fd, buf, sizeof(buf), 0)) > 0;) {
      reply.append(buf, static_cast<size_t>(n));
      if (reply.find("\r\n\r\n") != std::string::npos && reply.find("done") != std::string::npos) {
        break;
      }
    }
  }
  ::close(fd);
  return reply;
}

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

  // Too large: 413, the handler is not called.
  seen = "unset";
  res = client.Post("/sweep", std::string((1 << 20) + 1, 'x'), "text/plain");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 413);
  EXPECT_EQ(seen, "unset");
}

TEST(HttpServer, AnAddressInUseIsAnError) {
  HttpServer a, b;
  auto port = a.Start("127.0.0.1", 0);
  ASSERT_TRUE(port.ok());
  EXPECT_FALSE(b.Start("127.0.0.1", *port).ok());
}

}  // namespace
}  // namespace nccl_triage
