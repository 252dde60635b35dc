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

}  // namespace
}  // namespace nccl_triage
