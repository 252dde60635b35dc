// A healthy 32-node demo cluster with per-rail IB probes on all eight rails: no rail may fail,
// no fault may be localised, and every rail of every node must be published as passing. The
// fixture nodes are DGX A100s (mlx5_0..mlx5_7, one GPU per HCA switch), the probes the fake
// NCCL's, so a false rail fault here is the coordinator's or the agents' (rail pairing, the GPU
// and NCCL_IB_HCA a rail selects, judging or publishing), not the fabric's.
#include <gtest/gtest.h>

#include <algorithm>
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

// A rail probe as node `index`'s agent recorded it: from its start to its end in seconds on the
// wall clock (recorded when the probe returned, lasting the child's wall time: within the time
// the agent held the rail's GPU).
struct RailInterval {
  int rail = -1;
  double start = 0;
  double end = 0;
  ProbeOutcome outcome = ProbeOutcome::kNotRun;
};

std::vector<RailInterval> RailIntervals(const AgentStateView& view) {
  std::vector<RailInterval> out;
  for (const auto& [key, rec] : view.rail_probes) {
    const double end = static_cast<double>(rec->recorded_at_unix_ms) / 1000;
    out.push_back({rec->rail, end - rec->result.duration_seconds, end, rec->result.outcome});
  }
  std::sort(out.begin(), out.end(),
            [](const RailInterval& a, const RailInterval& b) { return a.start < b.start; });
  return out;
}

// One pair, one sweep, every IB port carrying 0.5 Mb/s: a 64 KiB probe takes a second or more, far
// longer than starting its children, so rails that ran together overlap in time.
DemoOptions SlowFabricPair(const std::string& what, int parallel_rails) {
  DemoOptions o = TestOptions(2, what);
  o.rails = true;
  o.rounds = 1;
  o.parallel_rails = parallel_rails;
  o.ib_data_gbps = 0.0005;
  return o;
}

TEST(DemoClusterRails, APairsEightRailsRunSideBySideEachOnItsOwnGpu) {
  TestCluster t(SlowFabricPair("rails-parallel", 8));
  Status started = t.cluster.Start();
  ASSERT_TRUE(started.ok()) << started.message() << "\n" << t.log_text.str();
  auto run = t.cluster.Run();
  ASSERT_TRUE(run.ok()) << run.status().message() << "\n" << t.log_text.str();
  EXPECT_TRUE(run->faults.empty()) << nlohmann::json(ToJson(*run)).dump(2);
  for (int node = 0; node < 2; ++node) {
    const std::vector<RailInterval> rails = RailIntervals(t.cluster.NodeState(node));
    ASSERT_EQ(rails.size(), static_cast<size_t>(kRails)) << t.log_text.str();
    double last_start = 0, first_end = rails.front().end;
    for (const auto& r : rails) {
      EXPECT_EQ(r.outcome, ProbeOutcome::kPass) << "rail " << r.rail;
      EXPECT_GT(r.end - r.start, 0.5) << "rail " << r.rail << ": the slow fabric makes it last";
      last_start = std::max(last_start, r.start);
      first_end = std::min(first_end, r.end);
    }
    EXPECT_LT(last_start, first_end)
        << "node-" << node << ": the last rail started " << last_start - first_end
        << " s after the first one ended: the eight did not all run at once";
  }
}

TEST(DemoClusterRails, WithParallelRailsOneTheRailsRunOneAfterTheOther) {
  DemoOptions o = SlowFabricPair("rails-sequential", 1);
  o.rail_list = "0,3,5";
  TestCluster t(std::move(o));
  Status started = t.cluster.Start();
  ASSERT_TRUE(started.ok()) << started.message() << "\n" << t.log_text.str();
  auto run = t.cluster.Run();
  ASSERT_TRUE(run.ok()) << run.status().message() << "\n" << t.log_text.str();
  const std::vector<RailInterval> rails = RailIntervals(t.cluster.NodeState(0));
  ASSERT_EQ(rails.size(), 3u) << t.log_text.str();
  for (size_t i = 1; i < rails.size(); ++i) {
    // The end is recorded in whole milliseconds: a rail that started right after the one before
    // may seem to start up to a millisecond early.
    EXPECT_GE(rails[i].start + 0.002, rails[i - 1].end)
        << "rail " << rails[i].rail << " started " << (rails[i - 1].end - rails[i].start) * 1000
        << " ms before rail " << rails[i - 1].rail << " ended";
  }
}

}  // namespace
}  // namespace nccl_triage
