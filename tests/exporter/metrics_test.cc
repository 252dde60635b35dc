#include "exporter/metrics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <stdexcept>

#include "base/utf8.h"
#include "test_state.h"

namespace nccl_triage {
namespace {

using testing::FillCycle;
using testing::FillPeers;
using testing::TestFinding;
using testing::TestSnapshot;

const prometheus::MetricFamily* Find(const std::vector<prometheus::MetricFamily>& fams,
                                     std::string_view name) {
  for (const auto& f : fams) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

std::string Label(const prometheus::ClientMetric& m, std::string_view name) {
  for (const auto& l : m.label) {
    if (l.name == name) return l.value;
  }
  return "<none>";
}

// Number of series of a family (prometheus-cpp leaves families without series out).
size_t Count(const std::vector<prometheus::MetricFamily>& fams, std::string_view name) {
  const auto* f = Find(fams, name);
  return f ? f->metric.size() : 0;
}

// The value of the series whose labels include all of `want`; NaN when there is none.
double Value(const std::vector<prometheus::MetricFamily>& fams, std::string_view name,
             std::map<std::string, std::string> want) {
  const auto* f = Find(fams, name);
  if (!f) return NAN;
  for (const auto& m : f->metric) {
    bool match = true;
    for (const auto& [k, v] : want) match &= Label(m, k) == v;
    if (match) return f->type == prometheus::MetricType::Counter ? m.counter.value : m.gauge.value;
  }
  return NAN;
}

class MetricsTest : public ::testing::Test {
 protected:
  AgentState state_{"gpu-node-1", "0.1.0", 0};
  AgentMetrics metrics_{state_, "0.1.0"};
};

TEST(MetricFamilySwitch, DisabledFamiliesAreNeitherCollectedNorServed) {
  AgentState state{"gpu-node-1", "0.1.0", 0};
  AgentMetrics metrics{
      state,
      "0.1.0",
      {"nccl_triage_ib_port_errors_total", "nccl_triage_probe_busbw_bytes_per_second"}};
  FillCycle(state, TestSnapshot(2),
            {TestFinding("ib.port_state", FaultClass::kIbResource, CheckStatus::kFail)}, 1000);
  FillPeers(state, 2, 2000);
  auto fams = metrics.Collect();
  EXPECT_EQ(Find(fams, "nccl_triage_ib_port_errors_total"), nullptr);
  EXPECT_EQ(Find(fams, "nccl_triage_probe_busbw_bytes_per_second"), nullptr);
  EXPECT_NE(Find(fams, "nccl_triage_ib_port_state"), nullptr);
  EXPECT_NE(Find(fams, "nccl_triage_probe_success"), nullptr);
  const std::string text = metrics.Scrape();
  EXPECT_EQ(text.find("nccl_triage_ib_port_errors_total"), std::string::npos);
  EXPECT_EQ(text.find("nccl_triage_probe_busbw_bytes_per_second"), std::string::npos);
  EXPECT_NE(text.find("nccl_triage_node_verdict"), std::string::npos);
}

TEST(MetricFamilySwitch, UnknownNamesAreReportedSoTheAgentCanRefuseThem) {
  const std::vector<std::string> ok = {"nccl_triage_ib_port_errors_total"};
  EXPECT_EQ(UnknownMetricFamilies(ok), "");
  const std::vector<std::string> bad = {"nccl_triage_ib_port_errors", "nccl_triage_node_verdict",
                                        "up"};
  EXPECT_EQ(UnknownMetricFamilies(bad), "nccl_triage_ib_port_errors, up");
}

TEST_F(MetricsTest, EveryContractFamilyIsExportedWithItsTypeOnceTheStateIsFull) {
  FillCycle(state_, TestSnapshot(2),
            {TestFinding("ib.port_state", FaultClass::kIbResource, CheckStatus::kFail)}, 1000);
  FillPeers(state_, 2, 2000);
  testing::FillRailProbes(state_, 2, 2000);
  state_.SetWorkloadFindings(
      {{"ns", "pod", "c",
        TestFinding("limits.memlock", FaultClass::kArchitecture, CheckStatus::kPass)}});
  state_.SetRasJobs({{"ns", "pod", "ok", 0, 0, 0, 3000, 0, ""}}, {{"ok", 1}});
  metrics_.SetKernelCounts([] { return kernel::KernelCounts{}; });
  auto fams = metrics_.Collect();
  for (const auto& spec : AgentMetricSpecs()) {
    const auto* f = Find(fams, spec.name);
    ASSERT_NE(f, nullptr) << spec.name;
    std::string type = f->type == prometheus::MetricType::Counter     ? "counter"
                       : f->type == prometheus::MetricType::Histogram ? "histogram"
                                                                      : "gauge";
    EXPECT_EQ(type, spec.type) << spec.name;
  }
  EXPECT_EQ(Value(fams, "nccl_triage_build_info", {{"version", "0.1.0"}}), 1);
}

TEST_F(MetricsTest, KernelCountersShowDownsPerPortAndXidsPerCode) {
  FillCycle(state_, TestSnapshot(2), {}, 1000);
  kernel::KernelCounts k;
  k.link_downs["mlx5_0/1"] = 3;
  k.xids[79] = 1;
  metrics_.SetKernelCounts([&k] { return k; });
  auto fams = metrics_.Collect();
  EXPECT_EQ(
      Value(fams, "nccl_triage_kernel_link_down_total", {{"device", "mlx5_0"}, {"port", "1"}}), 3);
  EXPECT_EQ(Value(fams, "nccl_triage_kernel_xid_total", {{"code", "79"}}), 1);
}

TEST_F(MetricsTest, KernelEventsPastTheKeyLimitAreCountedAsDroppedWithTheirReason) {
  FillCycle(state_, TestSnapshot(2), {}, 1000);
  kernel::KernelCounts k;
  for (int code = 0; code < 1000; ++code) {
    kernel::KernelEvent e;
    e.kind = kernel::EventKind::kXid;
    e.xid = code;
    k.Add(e);
  }
  kernel::KernelEvent invalid;
  invalid.kind = kernel::EventKind::kXid;
  invalid.xid = kernel::kInvalidXid;
  k.Add(invalid);
  metrics_.SetKernelCounts([&k] { return k; });
  auto fams = metrics_.Collect();
  EXPECT_EQ(Find(fams, "nccl_triage_kernel_xid_total")->metric.size(),
            kernel::KernelCounts::kMaxCountedKeys);
  EXPECT_EQ(Value(fams, "nccl_triage_kernel_events_dropped_total", {{"reason", "key_limit"}}),
            1000 - static_cast<double>(kernel::KernelCounts::kMaxCountedKeys));
  EXPECT_EQ(Value(fams, "nccl_triage_kernel_events_dropped_total", {{"reason", "invalid_code"}}),
            1);
}

// The text format is UTF-8: a device name that is not (a port key from the kernel log) is
// written with U+FFFD, in Collect() and in the scrape.
TEST_F(MetricsTest, ALabelValueThatIsNotUtf8IsWrittenWithReplacementCharacters) {
  FillCycle(state_, TestSnapshot(2), {}, 1000);
  kernel::KernelCounts k;
  k.link_downs["mlx\xff\xfe/1"] = 2;
  metrics_.SetKernelCounts([&k] { return k; });
  auto fams = metrics_.Collect();
  EXPECT_EQ(Value(fams, "nccl_triage_kernel_link_down_total",
                  {{"device", "mlx\xEF\xBF\xBD\xEF\xBF\xBD"}, {"port", "1"}}),
            2);
  const std::string text = metrics_.Scrape();
  EXPECT_TRUE(IsValidUtf8(text));
  EXPECT_NE(text.find("device=\"mlx\xEF\xBF\xBD\xEF\xBF\xBD\""), std::string::npos);
}

TEST_F(MetricsTest, KernelFamiliesAreAbsentWithoutAKernelLog) {
  FillCycle(state_, TestSnapshot(2), {}, 1000);
  EXPECT_EQ(Find(metrics_.Collect(), "nccl_triage_kernel_xid_total"), nullptr);
}

TEST_F(MetricsTest, VerdictIsOneHotOverEveryClassWithTheBasis) {
  FillCycle(state_, TestSnapshot(2),
            {TestFinding("limits.memlock", FaultClass::kArchitecture, CheckStatus::kFail)}, 1000);
  auto fams = metrics_.Collect();
  const auto* f = Find(fams, "nccl_triage_node_verdict");
  ASSERT_EQ(f->metric.size(), 4u);
  for (const auto& m : f->metric) {
    EXPECT_EQ(Label(m, "basis"), "checks");
    EXPECT_EQ(m.gauge.value, Label(m, "class") == "architecture" ? 1 : 0);
  }
  state_.SetProbeVerdict(NodeVerdict{FaultClass::kIbResource, Basis::kProbes, {}, ""});
  fams = metrics_.Collect();
  f = Find(fams, "nccl_triage_node_verdict");
  ASSERT_EQ(f->metric.size(), 4u);  // the checks-basis series are gone
  EXPECT_EQ(
      Value(fams, "nccl_triage_node_verdict", {{"class", "ib_resource"}, {"basis", "probes"}}), 1);
}

TEST_F(MetricsTest, CheckStatusIsOneHotPerCheckWithTheWorstFindingAndVanishedChecksGo) {
  FillCycle(state_, TestSnapshot(2),
            {TestFinding("ib.port_state", FaultClass::kIbResource, CheckStatus::kPass),
             TestFinding("ib.port_state", FaultClass::kIbResource, CheckStatus::kFail),
             TestFinding("shm.size", FaultClass::kArchitecture, CheckStatus::kWarn)},
            1000);
  auto fams = metrics_.Collect();
  EXPECT_EQ(Count(fams, "nccl_triage_check_status"), 8u);
  EXPECT_EQ(Value(fams, "nccl_triage_check_status",
                  {{"check", "ib.port_state"}, {"class", "ib_resource"}, {"status", "fail"}}),
            1);
  EXPECT_EQ(
      Value(fams, "nccl_triage_check_status", {{"check", "ib.port_state"}, {"status", "pass"}}), 0);
  FillCycle(state_, TestSnapshot(2),
            {TestFinding("shm.size", FaultClass::kArchitecture, CheckStatus::kPass)}, 2000);
  fams = metrics_.Collect();
  EXPECT_EQ(Count(fams, "nccl_triage_check_status"), 4u);
}

TEST_F(MetricsTest, PortsExportKernelStateNamesRatesAndSysfsCountersAndVanishedPortsGo) {
  FillCycle(state_, TestSnapshot(2), {}, 1000);
  auto fams = metrics_.Collect();
  // 5 contract states per port, one-hot.
  EXPECT_EQ(Count(fams, "nccl_triage_ib_port_state"), 10u);
  EXPECT_EQ(Value(fams, "nccl_triage_ib_port_state",
                  {{"device", "mlx5_0"}, {"port", "1"}, {"state", "ACTIVE"}}),
            1);
  EXPECT_EQ(Value(fams, "nccl_triage_ib_port_state",
                  {{"device", "mlx5_1"}, {"port", "1"}, {"state", "DOWN"}}),
            1);
  EXPECT_EQ(Value(fams, "nccl_triage_ib_port_state",
                  {{"device", "mlx5_1"}, {"port", "1"}, {"state", "ACTIVE"}}),
            0);
  EXPECT_EQ(Value(fams, "nccl_triage_ib_port_physical_state",
                  {{"device", "mlx5_1"}, {"state", "Polling"}}),
            1);
  EXPECT_EQ(Value(fams, "nccl_triage_ib_port_rate_bytes_per_second", {{"device", "mlx5_0"}}), 25e9);
  const auto* errors = Find(fams, "nccl_triage_ib_port_errors_total");
  ASSERT_NE(errors, nullptr);
  EXPECT_EQ(errors->type, prometheus::MetricType::Counter);
  EXPECT_EQ(errors->metric.size(), 4u);  // 2 error counters x 2 ports, no data counters
  EXPECT_EQ(Value(fams, "nccl_triage_ib_port_errors_total",
                  {{"device", "mlx5_0"}, {"counter", "symbol_error"}}),
            7);
  EXPECT_EQ(Value(fams, "nccl_triage_ib_expected_bytes_per_second", {}), 25e9);
  EXPECT_EQ(Value(fams, "nccl_triage_memlock_limit_bytes", {}), 65536);
  EXPECT_EQ(Value(fams, "nccl_triage_shm_size_bytes", {}), 64.0 * 1024 * 1024);

  FillCycle(state_, TestSnapshot(1), {}, 2000);
  fams = metrics_.Collect();
  EXPECT_EQ(Count(fams, "nccl_triage_ib_port_state"), 5u);
  EXPECT_EQ(Count(fams, "nccl_triage_ib_port_errors_total"), 2u);
  EXPECT_TRUE(
      std::isnan(Value(fams, "nccl_triage_ib_port_rate_bytes_per_second", {{"device", "mlx5_1"}})));
}

TEST_F(MetricsTest, AnUnknownKernelStateIsAddedAsItsOwnHotSeries) {
  NodeSnapshot s = TestSnapshot(1);
  s.ib_devices[0].ports[0].state.value = "0: NOP";
  FillCycle(state_, s, {}, 1000);
  auto fams = metrics_.Collect();
  EXPECT_EQ(Count(fams, "nccl_triage_ib_port_state"), 6u);
  EXPECT_EQ(Value(fams, "nccl_triage_ib_port_state", {{"state", "NOP"}}), 1);
}

TEST_F(MetricsTest, UnlimitedMemlockIsPlusInfInTheTextFormat) {
  NodeSnapshot s = TestSnapshot(1);
  s.memlock.value = LimitPair{{true, 0}, {true, 0}};
  FillCycle(state_, s, {}, 1000);
  std::string text = metrics_.Scrape();
  EXPECT_NE(text.find("nccl_triage_memlock_limit_bytes +Inf"), std::string::npos) << text;
}

TEST_F(MetricsTest, ProbesPairsAndDurationsFollowTheStateAndRemovedPeersVanish) {
  FillPeers(state_, 3, 5000);
  auto fams = metrics_.Collect();
  EXPECT_EQ(Count(fams, "nccl_triage_probe_success"), 6u);
  EXPECT_EQ(Value(fams, "nccl_triage_probe_success", {{"peer", "gpu-node-100"}, {"mode", "ib"}}),
            1);
  EXPECT_EQ(Value(fams, "nccl_triage_probe_busbw_bytes_per_second",
                  {{"peer", "gpu-node-100"}, {"mode", "ib"}}),
            23.5e9);
  EXPECT_EQ(Count(fams, "nccl_triage_pair_verdict"), 12u);
  EXPECT_EQ(
      Value(fams, "nccl_triage_pair_verdict", {{"peer", "gpu-node-101"}, {"class", "healthy"}}), 1);
  EXPECT_EQ(Value(fams, "nccl_triage_last_probe_timestamp_seconds", {}), 5);
  EXPECT_EQ(Value(fams, "nccl_triage_nccl_info", {{"version", "2.28.9"}}), 1);
  const auto* hist = Find(fams, "nccl_triage_probe_duration_seconds");
  for (const auto& m : hist->metric) EXPECT_EQ(m.histogram.sample_count, 3u);
  // A second scrape observes nothing new.
  fams = metrics_.Collect();
  for (const auto& m : Find(fams, "nccl_triage_probe_duration_seconds")->metric) {
    EXPECT_EQ(m.histogram.sample_count, 3u);
  }
  state_.RemovePeer("gpu-node-100");
  fams = metrics_.Collect();
  EXPECT_EQ(Count(fams, "nccl_triage_probe_success"), 4u);
  EXPECT_EQ(Count(fams, "nccl_triage_pair_verdict"), 8u);
}

TEST_F(MetricsTest, EachRailShowsItsLastProbeWhicheverPeerItWasWith) {
  FillCycle(state_, TestSnapshot(2), {}, 1000);
  auto rail_probe = [&](const std::string& peer, int rail, ProbeOutcome outcome, double busbw,
                        int64_t at_ms) {
    ProbeResult r;
    r.mode = ProbeMode::kIb;
    r.peer = peer;
    r.outcome = outcome;
    r.busbw_bytes_per_second = busbw;
    state_.RecordProbe(r, at_ms, rail, "=mlx5_" + std::to_string(rail) + ":1");
  };
  rail_probe("gpu-node-100", 0, ProbeOutcome::kPass, 20e9, 3000);
  rail_probe("gpu-node-101", 0, ProbeOutcome::kFail, 0, 2000);  // older: not rail 0's last
  rail_probe("gpu-node-101", 1, ProbeOutcome::kPass, 21e9, 3000);
  rail_probe("gpu-node-102", 1, ProbeOutcome::kFail, 0, 4000);
  auto fams = metrics_.Collect();
  EXPECT_EQ(Count(fams, "nccl_triage_rail_last_probe_success"), 2u) << "one series per rail";
  EXPECT_EQ(Value(fams, "nccl_triage_rail_last_probe_success",
                  {{"rail", "0"}, {"device", "mlx5_0"}, {"port", "1"}}),
            1);
  EXPECT_EQ(Value(fams, "nccl_triage_rail_last_probe_busbw_bytes_per_second", {{"rail", "0"}}),
            20e9);
  EXPECT_EQ(Value(fams, "nccl_triage_rail_last_probe_success",
                  {{"rail", "1"}, {"device", "mlx5_1"}, {"port", "1"}}),
            0);
  EXPECT_TRUE(std::isnan(Value(fams, "nccl_triage_probe_success", {{"mode", "ib"}})))
      << "a rail's probe is not the pair's IB probe";
  state_.RemovePeer("gpu-node-102");
  state_.RemovePeer("gpu-node-101");
  fams = metrics_.Collect();
  EXPECT_EQ(Count(fams, "nccl_triage_rail_last_probe_success"), 1u);
  EXPECT_EQ(Value(fams, "nccl_triage_rail_last_probe_success", {{"rail", "0"}}), 1);
}

TEST_F(MetricsTest, WorkloadChecksAreOneHotPerContainerAndCheck) {
  state_.SetWorkloadFindings(
      {{"team-a", "train-0", "pytorch",
        TestFinding("limits.memlock", FaultClass::kArchitecture, CheckStatus::kFail)}});
  auto fams = metrics_.Collect();
  EXPECT_EQ(Count(fams, "nccl_triage_workload_check_status"), 4u);
  EXPECT_EQ(Value(fams, "nccl_triage_workload_check_status",
                  {{"namespace", "team-a"}, {"pod", "train-0"}, {"status", "fail"}}),
            1);
  state_.SetWorkloadFindings({});
  fams = metrics_.Collect();
  EXPECT_EQ(Count(fams, "nccl_triage_workload_check_status"), 0u);
}

TEST_F(MetricsTest, ProbeAvailabilityIsOneSeriesWhoseReasonSaysWhyAndPoolLabelsTheNode) {
  auto fams = metrics_.Collect();
  EXPECT_EQ(Count(fams, "nccl_triage_probe_available"), 1u);
  EXPECT_EQ(Value(fams, "nccl_triage_probe_available", {{"reason", "pending"}}), 0);
  ProbeAvailability blind;
  blind.reason = "no_gpu";
  blind.cause = "probe.no_gpu";
  state_.SetProbeAvailability(blind);
  state_.SetPool("h100");
  fams = metrics_.Collect();
  EXPECT_EQ(Count(fams, "nccl_triage_probe_available"), 1u);  // the old reason is gone
  EXPECT_EQ(Value(fams, "nccl_triage_probe_available", {{"reason", "no_gpu"}, {"pool", "h100"}}),
            0);
  EXPECT_EQ(Value(fams, "nccl_triage_node_verdict", {{"class", "unknown"}, {"pool", "h100"}}), 1);
  ProbeAvailability ok;
  ok.reason = std::string(kProbesAvailable);
  state_.SetProbeAvailability(ok);
  fams = metrics_.Collect();
  EXPECT_EQ(Value(fams, "nccl_triage_probe_available", {{"reason", "ok"}}), 1);
}

TEST_F(MetricsTest, FreshnessAppearsOnlyAfterTheFirstCycle) {
  auto fams = metrics_.Collect();
  EXPECT_EQ(Count(fams, "nccl_triage_last_check_timestamp_seconds"), 0u);
  FillCycle(state_, TestSnapshot(1), {}, 1'700'000'000'000);
  fams = metrics_.Collect();
  EXPECT_EQ(Value(fams, "nccl_triage_last_check_timestamp_seconds", {}), 1'700'000'000.25);
}

TEST(MetricSpecs, AnUndeclaredNameIsAnErrorNotAnotherFamilysSpec) {
  const auto specs = AgentMetricSpecs();
  EXPECT_EQ(FindMetricSpec(specs, "nccl_triage_node_verdict").name, "nccl_triage_node_verdict");
  EXPECT_THROW(FindMetricSpec(specs, "nccl_triage_node_verdikt"), std::logic_error);
}

}  // namespace
}  // namespace nccl_triage
