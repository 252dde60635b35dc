// End to end through the demo cluster: real gRPC between an in-process coordinator and agents,
// fixture roots per node, probe children loading the fake NCCL/CUDA, faults injected only into
// the roots. Each fault kind must be localised exactly once, to the right node or link.
#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "cluster_test_util.h"
#include "core/decision.h"
#include "exporter/annotations.h"

namespace nccl_triage {
namespace {

using testing_util::TestCluster;
using testing_util::TestOptions;

DemoReport RunCluster(DemoOptions options) {
  TestCluster t(std::move(options));
  Status s = t.cluster.Start();
  EXPECT_TRUE(s.ok()) << s.message() << "\n" << t.log_text.str();
  if (!s.ok()) return {};
  auto report = t.cluster.Run();
  EXPECT_TRUE(report.ok()) << report.status().message() << "\n" << t.log_text.str();
  return report.ok() ? *report : DemoReport{};
}

// `o` with the fault `spec` injected (a spec that does not parse fails the test).
DemoOptions WithFault(DemoOptions o, const std::string& spec) {
  auto f = ParseDemoFault(spec, o.nodes);
  EXPECT_TRUE(f.ok()) << f.status().message();
  if (f.ok()) o.faults.push_back(*f);
  return o;
}

DemoReport RunWithFault(int nodes, const std::string& spec) {
  return RunCluster(WithFault(TestOptions(nodes, "fault"), spec));
}

TEST(DemoCluster, HealthyClusterIsHealthyFromProbesWithNoFault) {
  DemoReport r = RunCluster(TestOptions(4, "healthy"));
  EXPECT_EQ(r.pairs_covered, 6u);
  EXPECT_TRUE(r.faults.empty());
  ASSERT_EQ(r.node_results.size(), 4u);
  for (const auto& n : r.node_results) {
    EXPECT_EQ(n.fault_class, FaultClass::kHealthy) << n.name << ": " << n.reason;
    EXPECT_EQ(n.basis, Basis::kProbes) << n.name;
  }
  for (const auto& p : r.pairs) {
    EXPECT_EQ(p.socket, ProbeOutcome::kPass);
    EXPECT_EQ(p.ib, ProbeOutcome::kPass);
  }
}

// Real agents: node-1's probes find no NCCL (its library check at start says so in the hello).
// The coordinator never pairs it, shows why, and never calls it healthy; the others are probed.
TEST(DemoCluster, ANodeWithoutNcclIsNeverPairedAndNeverHealthy) {
  DemoOptions o = WithFault(TestOptions(4, "no-nccl"), "node:1:no_nccl");
  o.rounds = 3;  // every pair of the three others, twice over
  DemoReport r = RunCluster(std::move(o));
  ASSERT_EQ(r.node_results.size(), 4u);
  for (const auto& n : r.node_results) {
    if (n.index == 1) {
      EXPECT_EQ(n.probes, "no_nccl");
      EXPECT_EQ(n.fault_class, FaultClass::kUnknown) << n.reason;
      EXPECT_EQ(n.basis, Basis::kChecks);
      ASSERT_FALSE(n.causes.empty());
      EXPECT_EQ(n.causes[0], "probe.no_nccl");
      EXPECT_NE(n.reason.find("probes cannot run on this node (no_nccl"), std::string::npos)
          << n.reason;
    } else {
      EXPECT_EQ(n.probes, "ok") << n.name;
      EXPECT_EQ(n.fault_class, FaultClass::kHealthy) << n.name << ": " << n.reason;
      EXPECT_EQ(n.basis, Basis::kProbes) << n.name;
    }
  }
  int probed = 0;
  for (const auto& p : r.pairs) {
    if (p.basis != Basis::kProbes) {
      // Never probed: a pair with node-1 is predicted unknown, not healthy, and says why.
      if (p.a == 1 || p.b == 1) {
        EXPECT_EQ(p.fault_class, FaultClass::kUnknown) << p.a << "-" << p.b;
        EXPECT_EQ(p.causes, std::vector<std::string>{"probe.no_nccl"}) << p.a << "-" << p.b;
      }
      continue;
    }
    ++probed;
    EXPECT_TRUE(p.a != 1 && p.b != 1) << "node-1 was probed with node-" << (p.a == 1 ? p.b : p.a);
  }
  EXPECT_EQ(probed, 3);
  EXPECT_TRUE(r.faults.empty()) << nlohmann::json(ToJson(r)).dump(2);
  std::ostringstream table;
  PrintDemoTable(r, table);
  EXPECT_NE(table.str().find("node-1    unknown       checks  no_nccl   probe.no_nccl"),
            std::string::npos)
      << table.str();
}

struct NodeCase {
  const char* kind;
  FaultClass fault_class;
  const char* cause;
  Basis basis;
};

class NodeFaultKind : public ::testing::TestWithParam<NodeCase> {};

TEST_P(NodeFaultKind, IsLocalisedToItsNodeExactlyOnce) {
  const NodeCase& c = GetParam();
  DemoReport r = RunWithFault(4, std::string("node:2:") + c.kind);
  ASSERT_EQ(r.faults.size(), 1u) << nlohmann::json(ToJson(r)).dump(2);
  const DemoLocalised& f = r.faults[0];
  EXPECT_EQ(f.kind, FaultKind::kNode);
  EXPECT_EQ(f.nodes, std::vector<int>{2});
  EXPECT_EQ(f.fault_class, c.fault_class);
  EXPECT_EQ(f.cause, c.cause);
  EXPECT_EQ(f.basis, c.basis);
  EXPECT_TRUE(f.confirmed);
  for (const auto& n : r.node_results) {
    if (n.index == 2) {
      EXPECT_EQ(n.fault_class, c.fault_class);
    } else {
      EXPECT_EQ(n.fault_class, FaultClass::kHealthy) << n.name << ": " << n.reason;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    EveryKind, NodeFaultKind,
    ::testing::Values(
        NodeCase{"port_down", FaultClass::kIbResource, "ib.port_state", Basis::kProbes},
        NodeCase{"sm_offline", FaultClass::kIbResource, "ib.port_state", Basis::kProbes},
        NodeCase{"memlock", FaultClass::kIbResource, "limits.memlock", Basis::kProbes},
        NodeCase{"no_rdma_devices", FaultClass::kIbResource, "container.rdma_devices",
                 Basis::kProbes},
        NodeCase{"nccl_version", FaultClass::kArchitecture, "versions.mismatch", Basis::kProbes},
        // Two ranks over the network do not exercise these: the node's checks localise them.
        NodeCase{"rate_degraded", FaultClass::kIbResource, "ib.port_rate", Basis::kChecks},
        NodeCase{"shm_small", FaultClass::kArchitecture, "shm.size", Basis::kChecks}),
    [](const auto& info) { return std::string(info.param.kind); });

struct LinkCase {
  const char* kind;
  const char* cause;
};

class LinkFaultKind : public ::testing::TestWithParam<LinkCase> {};

TEST_P(LinkFaultKind, IsLocalisedToItsPairNotToEitherNode) {
  const LinkCase& c = GetParam();
  DemoReport r = RunWithFault(4, std::string("link:1-3:") + c.kind);
  ASSERT_EQ(r.faults.size(), 1u) << nlohmann::json(ToJson(r)).dump(2);
  const DemoLocalised& f = r.faults[0];
  EXPECT_EQ(f.kind, FaultKind::kLink);
  EXPECT_EQ(f.nodes, (std::vector<int>{1, 3}));
  EXPECT_EQ(f.fault_class, FaultClass::kIbResource);
  EXPECT_EQ(f.cause, c.cause);
  for (const auto& n : r.node_results) {
    EXPECT_EQ(n.fault_class, FaultClass::kHealthy) << n.name << ": " << n.reason;
  }
  for (const auto& p : r.pairs) {
    const bool faulty = p.a == 1 && p.b == 3;
    EXPECT_EQ(p.socket, ProbeOutcome::kPass);
    EXPECT_EQ(p.ib, faulty ? ProbeOutcome::kFail : ProbeOutcome::kPass) << p.a << "-" << p.b;
  }
}

INSTANTIATE_TEST_SUITE_P(EveryKind, LinkFaultKind,
                         ::testing::Values(LinkCase{"pkey_mismatch", "pair.pkey_partition"},
                                           LinkCase{"cable", "ib.fabric"}),
                         [](const auto& info) { return std::string(info.param.kind); });

TEST(DemoCluster, DefaultDemoReportsEachInjectedFaultOnce) {
  DemoOptions o = TestOptions(8, "default");
  o.hold_down = 2;
  for (const char* spec : {"node:2:port_down", "link:4-6:cable"}) {
    o.faults.push_back(*ParseDemoFault(spec, 8));
  }
  DemoReport r = RunCluster(std::move(o));
  EXPECT_EQ(r.pairs_covered, 28u);
  ASSERT_EQ(r.faults.size(), 2u) << nlohmann::json(ToJson(r)).dump(2);
  EXPECT_EQ(r.faults[0].kind, FaultKind::kNode);
  EXPECT_EQ(r.faults[0].nodes, std::vector<int>{2});
  EXPECT_TRUE(r.faults[0].confirmed);
  EXPECT_EQ(r.faults[1].kind, FaultKind::kLink);
  EXPECT_EQ(r.faults[1].nodes, (std::vector<int>{4, 6}));
  EXPECT_TRUE(r.faults[1].confirmed);
  auto j = ToJson(r);
  for (const char* key : {"nodes", "pairs", "faults"}) EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_EQ(j["pairs"].size(), 28u);
  EXPECT_EQ(j["faults"][1]["kind"], "link");
}

TEST(DemoFaultSpec, ParsesNodeAndLinkSpecsAndRejectsTheRest) {
  auto n = ParseDemoFault("node:3:memlock", 8);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n->kind, FaultKind::kNode);
  EXPECT_EQ(n->a, 3);
  auto l = ParseDemoFault("link:6-2:cable", 8);
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->a, 2);
  EXPECT_EQ(l->b, 6);
  for (const char* bad : {"node:8:memlock", "node:1:melted", "link:2-2:cable", "link:1:cable",
                          "rack:1:x", "node:-1:memlock", "node:1", "", "link:1-2:port_down"}) {
    EXPECT_FALSE(ParseDemoFault(bad, 8).ok()) << bad;
  }
}

// `nccl-triage-demo --nodes 4` failed on its own default (link:4-6 names nodes 4 has not).
TEST(DemoFaultSpec, DefaultFaultsFitEveryNodeCount) {
  for (int nodes = 2; nodes <= 256; ++nodes) {
    const auto specs = DefaultDemoFaults(nodes);
    ASSERT_FALSE(specs.empty()) << nodes;
    for (const auto& spec : specs) {
      auto f = ParseDemoFault(spec, nodes);
      EXPECT_TRUE(f.ok()) << nodes << " nodes: " << f.status().message();
    }
  }
  EXPECT_EQ(DefaultDemoFaults(8), (std::vector<std::string>{"node:2:port_down", "link:4-6:cable"}));
}

// The one fault of a run with a rail fault on `node`: that node, confirmed, `cause` first, its
// verdict naming `rail_text`; every other node healthy.
void ExpectOnlyRailFaultOf(const DemoReport& r, int node, const std::string& cause,
                           const std::string& rail_text) {
  ASSERT_EQ(r.faults.size(), 1u) << nlohmann::json(ToJson(r)).dump(2);
  EXPECT_EQ(r.faults[0].kind, FaultKind::kNode);
  EXPECT_EQ(r.faults[0].nodes, std::vector<int>{node});
  EXPECT_EQ(r.faults[0].fault_class, FaultClass::kIbResource);
  EXPECT_EQ(r.faults[0].cause, cause);
  EXPECT_TRUE(r.faults[0].confirmed);
  for (const auto& n : r.node_results) {
    if (n.index == node) {
      EXPECT_EQ(n.fault_class, FaultClass::kIbResource);
      EXPECT_NE(n.reason.find(rail_text), std::string::npos) << n.reason;
    } else {
      EXPECT_EQ(n.fault_class, FaultClass::kHealthy) << n.name << ": " << n.reason;
    }
  }
  // The pairs' own IB probes (mlx5_0) pass: only the rail's probes see the fault.
  for (const auto& p : r.pairs) EXPECT_EQ(p.ib, ProbeOutcome::kPass) << p.a << "-" << p.b;
}

TEST(DemoCluster, RailWhoseMemoryRegistrationFailsIsNamedInItsNodesVerdict) {
  // mlx5_5 of node 2 fails ibv_reg_mr; sysfs shows it healthy and the pairs' IB probe (mlx5_0)
  // passes: only the probes on rail 5 see it, and the coordinator names the node and the rail.
  DemoOptions o = WithFault(TestOptions(4, "rail-fault"), "rail:2:5:mr_register");
  TestCluster t(std::move(o));
  Status started = t.cluster.Start();
  ASSERT_TRUE(started.ok()) << started.message() << "\n" << t.log_text.str();
  auto run = t.cluster.Run();
  ASSERT_TRUE(run.ok()) << run.status().message() << "\n" << t.log_text.str();
  ExpectOnlyRailFaultOf(*run, 2, "ib.mr_register", "rail 5 (mlx5_5/1)");
  // The last sweep's per-rail series: node-2's rail 5 failed with every peer, the others passed.
  const std::string m = t.cluster.coordinator().MetricsText();
  const std::string labels = "{device=\"mlx5_5\",node=\"node-2\",port=\"1\",rail=\"5\"}";
  EXPECT_NE(m.find("nccl_triage_rail_probe_success" + labels + " 0"), std::string::npos) << m;
  EXPECT_EQ(m.find("nccl_triage_rail_probe_failures" + labels + " 0"), std::string::npos) << m;
  EXPECT_NE(m.find("nccl_triage_rail_probe_success{device=\"mlx5_5\",node=\"node-1\",port=\"1\","
                   "rail=\"5\"} 1"),
            std::string::npos)
      << m;
}

TEST(DemoCluster, HealthyClusterWithRailProbesHasNoRailFault) {
  DemoOptions o = TestOptions(4, "rails-healthy");
  o.rails = true;
  DemoReport r = RunCluster(std::move(o));
  EXPECT_TRUE(r.faults.empty()) << nlohmann::json(ToJson(r)).dump(2);
  for (const auto& n : r.node_results) {
    EXPECT_EQ(n.fault_class, FaultClass::kHealthy) << n.name << ": " << n.reason;
  }
}

// The pod annotations of node `index` once its agent has the coordinator's fault verdict (it
// arrives over the agent's stream after the sweep).
DesiredAnnotations AnnotationsOnceFaulty(const DemoCluster& cluster, int index) {
  for (int i = 0; i < 100; ++i) {
    AgentStateView v = cluster.NodeState(index);
    const NodeVerdict verdict = v.Verdict();
    if (verdict.basis == Basis::kProbes && verdict.fault_class != FaultClass::kHealthy &&
        verdict.fault_class != FaultClass::kUnknown) {
      return AnnotationsFor(v);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return AnnotationsFor(cluster.NodeState(index));
}

TEST(DemoCluster, RateDegradedRailIsNamedInStatusMetricsAndAnnotation) {
  // mlx5_3 of node 2 says 1X SDR in sysfs like every port, but its data path carries a
  // sixteenth: NCCL passes on rail 3, with every peer below the demo's floor (an eighth of the
  // rail's port rate). The probes are 64 MiB
  // (kDemoBandwidthProbeBytes), so the coordinator judges busbw; rail 2 is the healthy reference.
  DemoOptions o = WithFault(TestOptions(4, "rail-rate"), "rail:2:3:rate");
  o.rail_list = "2,3";
  TestCluster t(std::move(o));
  Status started = t.cluster.Start();
  ASSERT_TRUE(started.ok()) << started.message() << "\n" << t.log_text.str();
  auto run = t.cluster.Run();
  ASSERT_TRUE(run.ok()) << run.status().message() << "\n" << t.log_text.str();
  // /status: the node's verdict names the rail and says rate-degraded.
  ExpectOnlyRailFaultOf(*run, 2, "ib.bandwidth", "rail 3 (mlx5_3/1) is rate-degraded");
  // Metrics: the rail failed with every peer, the node's fault is ib.bandwidth.
  const std::string m = t.cluster.coordinator().MetricsText();
  EXPECT_NE(m.find("nccl_triage_rail_probe_success{device=\"mlx5_3\",node=\"node-2\",port=\"1\","
                   "rail=\"3\"} 0"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("nccl_triage_rail_probe_success{device=\"mlx5_2\",node=\"node-2\",port=\"1\","
                   "rail=\"2\"} 1"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("nccl_triage_coordinator_fault{cause=\"ib.bandwidth\",class=\"ib_resource\","
                   "kind=\"node\",node=\"node-2\",peer=\"\"} 1"),
            std::string::npos)
      << m;
  // probes_total: each pair IB phase once under mode="ib", its two rail phases under "ib_rail"
  // (the slow rail's NCCL runs pass: its outcome is pass, the verdict is the rate's).
  const auto count = [&](const std::string& series) {
    const size_t at = m.find(series);
    return at == std::string::npos ? -1.0 : std::stod(m.substr(at + series.size()));
  };
  const double ib = count("nccl_triage_coordinator_probes_total{mode=\"ib\",outcome=\"pass\"} ");
  EXPECT_GT(ib, 0) << m;
  EXPECT_EQ(count("nccl_triage_coordinator_probes_total{mode=\"ib_rail\",outcome=\"pass\"} "),
            2 * ib)
      << m;
  // The verdict annotations of node 2's agent.
  DesiredAnnotations a = AnnotationsOnceFaulty(t.cluster, 2);
  EXPECT_EQ(a.values[std::string(kAnnotationVerdict)], "ib_resource");
  EXPECT_EQ(a.values[std::string(kAnnotationCauses)].rfind("ib.bandwidth", 0), 0u)
      << a.values[std::string(kAnnotationCauses)];
  EXPECT_NE(a.values[std::string(kAnnotationReport)].find("rail 3 (mlx5_3/1) is rate-degraded"),
            std::string::npos)
      << a.values[std::string(kAnnotationReport)];
}

TEST(DemoCluster, ASlowRailIsNotJudgedByProbesBelowTheBandwidthBound) {
  // The same slow rail, probed with 64 KiB: latency-bound, so busbw says nothing and no rail,
  // node or pair may be called degraded. The fake still paces rail 3 at a sixteenth of its rate,
  // so its busbw is below the floor at any size: judged, it would be a fault.
  DemoOptions o = WithFault(TestOptions(4, "rail-rate-small"), "rail:2:3:rate");
  o.rail_list = "2,3";
  o.probe_size_bytes = 64 << 10;
  DemoReport r = RunCluster(std::move(o));
  EXPECT_TRUE(r.faults.empty()) << nlohmann::json(ToJson(r)).dump(2);
  EXPECT_EQ(r.pairs_covered, 6u);
  for (const auto& n : r.node_results) {
    EXPECT_EQ(n.fault_class, FaultClass::kHealthy) << n.name << ": " << n.reason;
  }
}

TEST(DemoCluster, HealthyRailsJudgedForBandwidthHaveNoRateFault) {
  DemoOptions o = TestOptions(4, "rails-bandwidth");
  o.rails = true;
  o.rail_list = "2,3";
  o.probe_size_bytes = kDemoBandwidthProbeBytes;
  DemoReport r = RunCluster(std::move(o));
  EXPECT_TRUE(r.faults.empty()) << nlohmann::json(ToJson(r)).dump(2);
  for (const auto& n : r.node_results) {
    EXPECT_EQ(n.fault_class, FaultClass::kHealthy) << n.name << ": " << n.reason;
    EXPECT_EQ(n.basis, Basis::kProbes) << n.name;
  }
}

TEST(DemoFaultSpec, ParsesRailSpecs) {
  auto f = ParseDemoFault("rail:3:5:mr_register", 8);
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_EQ(f->kind, FaultKind::kNode);
  EXPECT_EQ(f->a, 3);
  EXPECT_EQ(f->rail, 5);
  EXPECT_EQ(f->what, "mr_register");
  auto rate = ParseDemoFault("rail:1:7:rate", 8);
  ASSERT_TRUE(rate.ok()) << rate.status().message();
  EXPECT_EQ(rate->rail, 7);
  EXPECT_EQ(rate->what, "rate");
  for (const char* bad : {"rail:3:8:mr_register", "rail:3:mr_register", "rail:8:1:port_down",
                          "rail:1:1:cable", "rail:1:-1:port_down", "rail:1:1:"}) {
    EXPECT_FALSE(ParseDemoFault(bad, 8).ok()) << bad;
  }
}

}  // namespace
}  // namespace nccl_triage
