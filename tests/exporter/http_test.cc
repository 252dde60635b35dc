#include <gtest/gtest.h>
#include <httplib.h>

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

  testing::FillCycle(state, testing::TestSnapshot(2),
                     {testing::TestFinding("ib.port_state", FaultClass::kIbResource,
                                           CheckStatus::kFail)},
                     1000);
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

TEST(HttpServer, AnAddressInUseIsAnError) {
  HttpServer a, b;
  auto port = a.Start("127.0.0.1", 0);
  ASSERT_TRUE(port.ok());
  EXPECT_FALSE(b.Start("127.0.0.1", *port).ok());
}

}  // namespace
}  // namespace nccl_triage
