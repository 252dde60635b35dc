// The coordinator's status view built from hand-made parts, its /status JSON, and its HTTP
// endpoints served from callbacks (no gRPC stream, no sweep thread).
#include "coordinator/status_view.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <nlohmann/json.hpp>

#include "exporter/http_server.h"

namespace nccl_triage {
namespace {

NodeInfo Node(const std::string& name, int passed) {
  NodeInfo n;
  n.name = name;
  n.arch = "x86_64";
  n.checks_passed = passed;
  return n;
}

PairOutcome Pair(const std::string& a, const std::string& b, PairStatus status) {
  PairOutcome p;
  p.pair = NodePair(a, b);
  p.round = 1;
  p.judgement.status = status;
  p.judgement.verdict.basis = Basis::kProbes;
  p.judgement.verdict.fault_class =
      status == PairStatus::kPass ? FaultClass::kHealthy : FaultClass::kIbResource;
  return p;
}

struct Parts {
  Parts() : verdicts(2) {
    for (const auto& n : {Node("node-a", 5), Node("node-b", 5), Node("node-c", 0)}) {
      known[n.name] = n;
    }
    peers["node-a"] = "ipv4:10.0.0.1:5000";
    SweepResult r;
    r.number = 1;
    r.rounds = 1;
    r.nodes["node-a"].state = NodeState::kGood;
    r.nodes["node-b"].state = NodeState::kGood;
    r.pairs.push_back(Pair("node-a", "node-b", PairStatus::kPass));
    r.pairs.push_back(Pair("node-b", "node-c", PairStatus::kFail));
    verdicts.Apply(r, known);
  }
  CoordinatorView View(bool with_pairs) const {
    return BuildCoordinatorView({.known = known,
                                 .peers = peers,
                                 .connected = [](const std::string& n) { return n == "node-a"; },
                                 .verdicts = verdicts,
                                 .schedule = schedule,
                                 .sweeps_done = 1,
                                 .last_sweep_rounds = 1},
                                with_pairs);
  }
  std::map<std::string, NodeInfo> known;
  std::map<std::string, std::string> peers;
  ClusterVerdicts verdicts;
  CoverageSchedule schedule;
};

TEST(CoordinatorView, ANodeWithoutAPublishedVerdictShowsWhatItsChecksSay) {
  Parts p;
  CoordinatorView v = p.View(true);
  ASSERT_EQ(v.nodes.count("node-c"), 1u);
  EXPECT_EQ(v.nodes.at("node-c").fault_class, FaultClass::kUnknown) << "nothing passed there";
  EXPECT_EQ(v.nodes.at("node-c").reason, "not probed yet");
  EXPECT_EQ(v.nodes.at("node-a").fault_class, FaultClass::kHealthy);
  EXPECT_EQ(v.nodes.at("node-a").basis, Basis::kProbes);
  ASSERT_EQ(v.agents.size(), 3u);
  EXPECT_TRUE(v.agents[0].connected);
  EXPECT_EQ(v.agents[0].peer, "ipv4:10.0.0.1:5000");
  EXPECT_FALSE(v.agents[1].connected);
}

TEST(CoordinatorView, WithoutPairsKeepsTheirCountOnly) {
  Parts p;
  EXPECT_EQ(p.View(true).pairs.size(), 2u);
  CoordinatorView v = p.View(false);
  EXPECT_TRUE(v.pairs.empty());
  EXPECT_EQ(v.pairs_concluded, 2u);
}

TEST(CoordinatorStatusJson, CountsHealthyPairsAndListsOnlyTheOthers) {
  Parts p;
  nlohmann::json j = ToJson(p.View(true));
  EXPECT_EQ(j["pairs_concluded"], 2);
  ASSERT_EQ(j["pairs"].size(), 1u);
  EXPECT_EQ(j["pairs"][0]["a"], "node-b");
  EXPECT_EQ(j["pairs"][0]["b"], "node-c");
  EXPECT_EQ(j["pairs"][0]["class"], "ib_resource");
  EXPECT_EQ(j["nodes"].size(), 3u);
  EXPECT_EQ(j["hold_down"], 2);
  EXPECT_EQ(j["sweeps_done"], 1);
}

TEST(CoordinatorEndpoints, ServeLivenessReadinessMetricsStatusAndSweepRequests) {
  Parts p;
  std::atomic<bool> ready{false};
  std::atomic<int> requested{0};
  HttpServer http;
  AddCoordinatorEndpoints(
      http, {.ready = [&] { return ready.load(); },
             .metrics = [] { return std::string("nccl_triage_x 1\n"); },
             .view = [&] { return p.View(true); },
             .request_sweep = [&] { return uint64_t(++requested + 6); },
             .sweep_token_matches = [](std::string_view token) { return token == "sweep-token"; }});
  auto port = http.Start("127.0.0.1", 0);
  ASSERT_TRUE(port.ok()) << port.status().message();
  httplib::Client client("127.0.0.1", *port);
  EXPECT_EQ(client.Get("/livez")->status, 200);
  EXPECT_EQ(client.Get("/readyz")->status, 503);
  ready = true;
  EXPECT_EQ(client.Get("/readyz")->status, 200);
  EXPECT_EQ(client.Get("/metrics")->body, "nccl_triage_x 1\n");
  auto status = client.Get("/status");
  ASSERT_TRUE(status);
  EXPECT_EQ(nlohmann::json::parse(status->body)["pairs"].size(), 1u);
  // POST /sweep only with the coordinator's bearer token; a refused one requests nothing.
  auto refused = client.Post("/sweep", "", "application/json");
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 401);
  EXPECT_EQ(requested.load(), 0);
  auto sweep = client.Post("/sweep", httplib::Headers{{"Authorization", "Bearer sweep-token"}}, "",
                           "application/json");
  ASSERT_TRUE(sweep);
  EXPECT_EQ(sweep->status, 202);
  EXPECT_EQ(nlohmann::json::parse(sweep->body)["sweep"], 7);
  EXPECT_EQ(requested.load(), 1);
  http.Stop();
}

}  // namespace
}  // namespace nccl_triage
