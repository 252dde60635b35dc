// A healthy 32-node demo cluster with per-rail IB probes on all eight rails: no rail may fail,
// no fault may be localised, and every rail of every node must be published as passing. The
// fixture nodes are DGX A100s (mlx5_0..mlx5_7, one GPU per HCA switch), the probes the fake
// NCCL's, so a false rail fault here is the coordinator's or the agents' (rail pairing, the GPU
// and NCCL_IB_HCA a rail selects, judging or publishing), not the fabric's.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "cluster_test_util.h"

namespace nccl_triage {
namespace {

using testing_util::TestCluster;
using testing_util::TestOptions;

constexpr int kNodes = 32;
constexpr int kRails = 8;
// Two sweeps: every rail of every node meets two different peers (the round-robin pairs each node
// with a new one per sweep), which is what LocaliseRails needs before it names a rail; each sweep
// is 16 pairs x (socket + IB + 8 rails) probes.
constexpr int kSweeps = 2;

struct RailSeries {
  std::string node;
  std::string rail;
  double value = 0;
};

// The nccl_triage_rail_probe_<name> series of a Prometheus text exposition.
std::vector<RailSeries> RailSeriesOf(const std::string& text, const std::string& name) {
  std::vector<RailSeries> out;
  const std::regex line("^nccl_triage_rail_probe_" + name + "\\{([^}]*)\\} (\\S+)$");
  const std::regex node_re("node=\"([^\"]*)\"");
  const std::regex rail_re("rail=\"([^\"]*)\"");
  std::istringstream in(text);
  std::string l;
  while (std::getline(in, l)) {
    std::smatch m;
    if (!std::regex_match(l, m, line)) continue;
    const std::string labels = m[1];
    RailSeries s;
    std::smatch lm;
    if (std::regex_search(labels, lm, node_re)) s.node = lm[1];
    if (std::regex_search(labels, lm, rail_re)) s.rail = lm[1];
    s.value = std::stod(m[2]);
    out.push_back(s);
  }
  return out;
}

TEST(DemoClusterRails, HealthyThirtyTwoNodesHaveNoFalseRailFault) {
  DemoOptions o = TestOptions(kNodes, "rails-32");
  o.rails = true;
  o.rounds = kSweeps;
  TestCluster t(std::move(o));
  Status started = t.cluster.Start();
  ASSERT_TRUE(started.ok()) << started.message() << "\n" << t.log_text.str();
  auto run = t.cluster.Run();
  ASSERT_TRUE(run.ok()) << run.status().message() << "\n" << t.log_text.str();
  const DemoReport& r = *run;
  EXPECT_EQ(r.sweeps, static_cast<uint64_t>(kSweeps));
  EXPECT_TRUE(r.faults.empty()) << nlohmann::json(ToJson(r)).dump(2);
  ASSERT_EQ(r.node_results.size(), static_cast<size_t>(kNodes));
  for (const auto& n : r.node_results) {
    EXPECT_EQ(n.fault_class, FaultClass::kHealthy) << n.name << ": " << n.reason;
    EXPECT_EQ(n.reason.find("rail "), std::string::npos) << n.name << ": " << n.reason;
  }
  // Every pair of the two sweeps (the others are listed as not run) passed both probes.
  size_t probed = 0;
  for (const auto& p : r.pairs) {
    if (p.socket == ProbeOutcome::kNotRun && p.ib == ProbeOutcome::kNotRun) continue;
    ++probed;
    EXPECT_EQ(p.socket, ProbeOutcome::kPass) << p.a << "-" << p.b;
    EXPECT_EQ(p.ib, ProbeOutcome::kPass) << p.a << "-" << p.b;
  }
  EXPECT_EQ(probed, static_cast<size_t>(kSweeps * kNodes / 2));
  EXPECT_EQ(r.pairs_covered, static_cast<uint64_t>(kSweeps * kNodes / 2));

  // The last sweep probed every rail of every node, and each passed with its peer.
  const std::string m = t.cluster.coordinator().MetricsText();
  const auto success = RailSeriesOf(m, "success");
  const auto failures = RailSeriesOf(m, "failures");
  EXPECT_EQ(success.size(), static_cast<size_t>(kNodes * kRails)) << m;
  EXPECT_EQ(failures.size(), static_cast<size_t>(kNodes * kRails)) << m;
  std::set<std::pair<std::string, std::string>> rails;
  for (const auto& s : success) {
    EXPECT_EQ(s.value, 1) << s.node << " rail " << s.rail;
    rails.emplace(s.node, s.rail);
  }
  EXPECT_EQ(rails.size(), static_cast<size_t>(kNodes * kRails));
  for (const auto& s : failures) EXPECT_EQ(s.value, 0) << s.node << " rail " << s.rail;
  EXPECT_EQ(m.find("nccl_triage_coordinator_fault{"), std::string::npos) << m;
}

}  // namespace
}  // namespace nccl_triage
