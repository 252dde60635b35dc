// The coordinator's metrics are its declared MetricSpec table (the documentation's coordinator
// table is generated from it): every family it serves is declared, with the declared type.
#include "coordinator/coordinator_metrics.h"

#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <string>

namespace nccl_triage {
namespace {

TEST(CoordinatorMetricSpecs, EveryServedFamilyIsDeclaredWithItsType) {
  std::map<std::string, std::string> declared;
  for (const MetricSpec& s : CoordinatorMetricSpecs()) {
    EXPECT_TRUE(declared.emplace(s.name, s.type).second) << "declared twice: " << s.name;
    EXPECT_FALSE(s.help.empty()) << s.name;
  }
  CoordinatorMetrics metrics;
  metrics.SetAgentsConnected(3);
  metrics.CountProbe("ib", "pass");
  metrics.ObserveSweep(1.5, 1000);
  metrics.SetCoverage(1, 3);
  metrics.SetUnprobedSweeps({{"node-a", 2}});
  metrics.CountIncident("ib_resource", "ib.port_state");
  std::istringstream text(metrics.Text());
  std::map<std::string, std::string> served;
  for (std::string line; std::getline(text, line);) {
    if (line.rfind("# TYPE ", 0) != 0) continue;
    std::istringstream fields(line.substr(7));
    std::string name, type;
    fields >> name >> type;
    served[name] = type;
  }
  for (const char* populated :
       {"nccl_triage_coordinator_agents_connected", "nccl_triage_coordinator_probes_total",
        "nccl_triage_coordinator_sweep_duration_seconds", "nccl_triage_coordinator_pairs_total",
        "nccl_triage_coordinator_node_unprobed_sweeps", "nccl_triage_incidents_total"}) {
    EXPECT_TRUE(served.count(populated)) << populated << " is not served";
  }
  for (const auto& [name, type] : served) {
    auto it = declared.find(name);
    ASSERT_NE(it, declared.end()) << name << " is served but not declared";
    EXPECT_EQ(type, it->second) << name;
  }
}

TrackedFault Confirmed(FaultKind kind, std::vector<std::string> nodes, std::string cause) {
  TrackedFault t;
  t.fault = {kind, std::move(nodes), FaultClass::kIbResource, {std::move(cause)}, "why"};
  t.confirmed = true;
  return t;
}

// The value of the one series of `family` whose labels include `match`, or "" when none.
std::string SeriesValue(const std::string& text, const std::string& family,
                        const std::string& match) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(family + "{", 0) == 0 && line.find(match) != std::string::npos) {
      return line.substr(line.rfind(' ') + 1);
    }
  }
  return "";
}

TEST(CoordinatorMetrics, AFaultsSinceIsWhenItWasFirstConfirmedAndGoesWithIt) {
  constexpr const char* kSince = "nccl_triage_fault_since_timestamp_seconds";
  CoordinatorMetrics metrics;
  const TrackedFault port = Confirmed(FaultKind::kNode, {"node-1"}, "ib.port_state");
  const TrackedFault link = Confirmed(FaultKind::kLink, {"node-2", "node-3"}, "ib.fabric");
  metrics.SetFaults({port}, 1'700'000'000'000);
  metrics.SetFaults({port, link}, 1'700'000'600'000);
  std::string text = metrics.Text();
  EXPECT_EQ(SeriesValue(text, kSince, "node=\"node-1\""), "1700000000");
  EXPECT_EQ(SeriesValue(text, kSince, "peer=\"node-3\""), "1700000600");
  // Cleared, then confirmed again: a new since.
  metrics.SetFaults({link}, 1'700'001'200'000);
  text = metrics.Text();
  EXPECT_EQ(SeriesValue(text, kSince, "node=\"node-1\""), "");
  metrics.SetFaults({port, link}, 1'700'001'800'000);
  text = metrics.Text();
  EXPECT_EQ(SeriesValue(text, kSince, "node=\"node-1\""), "1700001800");
  EXPECT_EQ(SeriesValue(text, kSince, "peer=\"node-3\""), "1700000600");
}

}  // namespace
}  // namespace nccl_triage
