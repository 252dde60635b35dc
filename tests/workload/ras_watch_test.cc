// The agent's RAS watch end to end: a workload pass on a fixture root whose GPU pod points
// NCCL_RAS_ADDR at the fake RAS port of tests/ras (the recorded NCCL 2.28.9 reports), the
// fake Kubernetes client and a fake clock. The queries are real connections; the interval and
// the cycle budget are judged by the fake clock only (no sleeps, no timing).
#include "workload/ras_watch.h"

#include <gtest/gtest.h>

#include <memory>
#include <sstream>

#include "exporter/metrics.h"
#include "ras/fake_ras_server.h"
#include "state/agent_state.h"
#include "support/fake_clock.h"
#include "support/fake_kube_client.h"
#include "workload/monitor.h"
#include "workload_test_util.h"

namespace nccl_triage::workload {
namespace {

using ras::testing::FakeMode;
using ras::testing::FakeRasServer;
using ras::testing::ReadTranscriptFile;
using testing::ContainerId;
using testing::GoodProcess;
using testing::PodJson;
using testing::PodListJson;
using testing::PodUid;
using testing::WorkloadRoot;

constexpr const char* kNode = "gpu-node-1";

FixtureWorkloadProcess RasProcess(int pid, int pod, const std::string& addr) {
  auto p = GoodProcess(pid, pod);
  p.environ.emplace_back("NCCL_RAS_ADDR", addr);
  return p;
}

struct Harness {
  WorkloadRoot root;
  FakeKubeClient kube;
  AgentState state{kNode, "test", 0};
  FakeClock clock;
  std::ostringstream log_text;
  Logger log{log_text, LogLevel::kDebug};
  std::unique_ptr<WorkloadMonitor> monitor;

  Harness(const std::vector<FixtureWorkloadProcess>& processes, int pods, RasConfig ras = {})
      : root(processes) {
    std::vector<nlohmann::json> list;
    for (int i = 1; i <= pods; ++i) {
      list.push_back(PodJson(PodUid(i), "ml", "train-" + std::to_string(i), "trainer",
                             ContainerId(i)));
    }
    kube.SetPods(PodListJson(std::move(list)));
    kube.SetNodes({{"items", {testing::NodeJson(kNode, {{"nvidia.com/gpu", "8"}})}}});
    WorkloadMonitorOptions o;
    o.node = kNode;
    o.scanner.root = root.root();
    o.config.ras = ras;
    o.config.ras.enabled = true;
    monitor = std::make_unique<WorkloadMonitor>(o, &state, &kube, nullptr, clock, log);
  }
  WorkloadPass Pass() { return monitor->RunPass(root.host); }
};

// Answers from a script and lets the fake clock run as a slow query would.
class ScriptedQuerier final : public RasQuerier {
 public:
  explicit ScriptedQuerier(FakeClock& clock) : clock_(clock) {}
  StatusOr<ras::RawReply> Query(const RasTarget& t, const ras::QueryOptions& o) override {
    asked.push_back(t.pod);
    deadlines.push_back(o.deadline);
    clock_.Advance(takes);
    return Status(StatusCode::kDeadlineExceeded, "timed out waiting for the status report");
  }
  StatusOr<ras::DiagnosticsReply> Diagnostics(const RasTarget&, const ras::QueryOptions&) override {
    return Status(StatusCode::kInternal, "not scripted");
  }
  std::vector<std::string> asked;
  std::vector<std::chrono::milliseconds> deadlines;
  std::chrono::milliseconds takes{0};

 private:
  FakeClock& clock_;
};

TEST(RasWatch, PeriodicQuerySetsTheJobMetricsAndTheAnnotation) {
  FakeRasServer server(ReadTranscriptFile("nccl-2.28.9-3-stopped-5s-json.txt"));
  Harness h({RasProcess(4101, 1, server.addr())}, 1);
  WorkloadPass pass = h.Pass();
  ASSERT_EQ(pass.ras.asked.size(), 1u);
  EXPECT_EQ(pass.ras.asked[0].outcome, RasOutcome::kOk) << pass.ras.asked[0].error;
  EXPECT_EQ(server.connections(), 1);

  AgentStateView view = h.state.View();
  ASSERT_EQ(view.ras_jobs->size(), 1u);
  const RasJobStatus& job = view.ras_jobs->front();
  EXPECT_EQ(job.ns, "ml");
  EXPECT_EQ(job.pod, "train-1");
  EXPECT_EQ(job.state, "stuck");
  EXPECT_EQ(job.ranks_unresponsive, 1);
  EXPECT_EQ(job.ranks_dead, 0);
  EXPECT_EQ(view.ras_queries.at("ok"), 1u);

  const std::string annotation =
      h.kube.Annotations("ml", "train-1")[std::string(kRasAnnotationKey)];
  EXPECT_TRUE(annotation.starts_with("stuck: rank 1 of communicator b7bb7673efec257b"))
      << annotation;

  AgentMetrics metrics(h.state, "test");
  const std::string text = metrics.Scrape();
  EXPECT_NE(text.find("nccl_triage_job_ranks_unresponsive{namespace=\"ml\",pod=\"train-1\"} 1"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("nccl_triage_job_ranks_dead{namespace=\"ml\",pod=\"train-1\"} 0"),
            std::string::npos);
  EXPECT_NE(text.find("nccl_triage_job_ras_queries_total{outcome=\"ok\"} 1"), std::string::npos);
  EXPECT_NE(text.find("nccl_triage_job_ras_queries_total{outcome=\"timeout\"} 0"),
            std::string::npos);
}

TEST(RasWatch, AHealthyJobIsNotAnnotatedAndShowsNoLag) {
  FakeRasServer server(ReadTranscriptFile("nccl-2.28.9-1-healthy-json.txt"));
  Harness h({RasProcess(4101, 1, server.addr())}, 1);
  WorkloadPass pass = h.Pass();
  ASSERT_EQ(pass.ras.asked.size(), 1u);
  EXPECT_EQ(pass.ras.asked[0].judgement.state, "ok");
  EXPECT_EQ(h.kube.Annotations("ml", "train-1").count(std::string(kRasAnnotationKey)), 0u);
  EXPECT_EQ(h.state.View().ras_jobs->at(0).ranks_unresponsive, 0);
}

TEST(RasWatch, NoSecondQueryWithinTheInterval) {
  FakeRasServer server(ReadTranscriptFile("nccl-2.28.9-1-healthy-json.txt"));
  RasConfig ras;
  ras.interval_seconds = 120;
  Harness h({RasProcess(4101, 1, server.addr())}, 1, ras);
  h.Pass();
  h.clock.Advance(std::chrono::seconds(119));
  EXPECT_TRUE(h.Pass().ras.asked.empty());
  EXPECT_EQ(server.connections(), 1);
  h.clock.Advance(std::chrono::seconds(1));
  EXPECT_EQ(h.Pass().ras.asked.size(), 1u);
  EXPECT_EQ(server.connections(), 2);
}

TEST(RasWatch, AsksAtMostMaxPodsPerCycleTheLongestWaitingFirst) {
  RasConfig ras;
  ras.max_pods_per_cycle = 2;
  Harness h({RasProcess(4101, 1, "127.0.0.1:1"), RasProcess(4102, 2, "127.0.0.1:1"),
             RasProcess(4103, 3, "127.0.0.1:1")},
            3, ras);
  ScriptedQuerier q(h.clock);
  h.monitor->UseRasQuerier(q);
  WorkloadPass first = h.Pass();
  EXPECT_EQ(first.ras.asked.size(), 2u);
  EXPECT_EQ(first.ras.due_left, 1);
  WorkloadPass second = h.Pass();  // the third pod waited; the others are within the interval
  ASSERT_EQ(second.ras.asked.size(), 1u);
  EXPECT_EQ(q.asked, (std::vector<std::string>{"train-1", "train-2", "train-3"}));
}

TEST(RasWatch, NoQueryStartsOnceTheCycleBudgetIsSpent) {
  RasConfig ras;
  ras.max_pods_per_cycle = 10;
  ras.timeout_ms = 4000;
  ras.cycle_budget_ms = 6000;
  Harness h({RasProcess(4101, 1, "127.0.0.1:1"), RasProcess(4102, 2, "127.0.0.1:1"),
             RasProcess(4103, 3, "127.0.0.1:1")},
            3, ras);
  ScriptedQuerier q(h.clock);
  q.takes = std::chrono::milliseconds(4000);  // each query runs into its timeout
  h.monitor->UseRasQuerier(q);
  WorkloadPass pass = h.Pass();
  ASSERT_EQ(pass.ras.asked.size(), 2u);
  EXPECT_EQ(pass.ras.due_left, 1);
  // The second query got only what was left of the budget.
  EXPECT_EQ(q.deadlines, (std::vector<std::chrono::milliseconds>{
                             std::chrono::milliseconds(4000), std::chrono::milliseconds(2000)}));
  EXPECT_EQ(h.state.View().ras_queries.at("timeout"), 2u);
}

TEST(RasWatch, RefusalsTimeoutsAndGarbageAreOutcomesNotFailures) {
  FakeRasServer silent("", FakeMode::kSilent);
  FakeRasServer garbage("", FakeMode::kGarbage);
  RasConfig ras;
  ras.timeout_ms = 300;
  // Port 1 on loopback: nothing listens (refused).
  Harness h({RasProcess(4101, 1, "127.0.0.1:1"), RasProcess(4102, 2, silent.addr()),
             RasProcess(4103, 3, garbage.addr())},
            3, ras);
  WorkloadPass pass = h.Pass();
  ASSERT_EQ(pass.ras.asked.size(), 3u);
  EXPECT_EQ(pass.ras.asked[0].outcome, RasOutcome::kRefused) << pass.ras.asked[0].error;
  EXPECT_EQ(pass.ras.asked[1].outcome, RasOutcome::kTimeout) << pass.ras.asked[1].error;
  EXPECT_EQ(pass.ras.asked[2].outcome, RasOutcome::kProtocolError) << pass.ras.asked[2].error;
  AgentStateView view = h.state.View();
  EXPECT_TRUE(view.ras_jobs->empty());  // no answer: no job gauges
  EXPECT_EQ(view.ras_queries.at("refused"), 1u);
  EXPECT_EQ(view.ras_queries.at("timeout"), 1u);
  EXPECT_EQ(view.ras_queries.at("protocol_error"), 1u);
  for (int i = 1; i <= 3; ++i) {
    EXPECT_EQ(h.kube.Annotations("ml", "train-" + std::to_string(i))
                  .count(std::string(kRasAnnotationKey)),
              0u);
  }
}

TEST(RasWatch, PodsWithNcclOlderThan224OrRasDisabledAreNotAsked) {
  auto old = RasProcess(4101, 1, "127.0.0.1:1");
  old.nccl_library = "/usr/lib/x86_64-linux-gnu/libnccl.so.2.23.4";
  auto off = RasProcess(4102, 2, "127.0.0.1:1");
  off.environ.emplace_back("NCCL_RAS_ENABLE", "0");
  auto pip = RasProcess(4103, 3, "127.0.0.1:1");
  pip.nccl_library = "/opt/venv/lib/python3.11/site-packages/nvidia/nccl/lib/libnccl.so.2";
  Harness h({old, off, pip}, 3);
  ScriptedQuerier q(h.clock);
  h.monitor->UseRasQuerier(q);
  h.Pass();
  EXPECT_EQ(q.asked, (std::vector<std::string>{"train-3"}));
}

TEST(RasWatch, CollectiveLagIsTheSpreadOfOneCollectiveInOneCommunicator) {
  auto report = ras::ParseJsonReport(
      ras::testing::ParseTranscript(ReadTranscriptFile("nccl-2.28.9-2-lagging-json.txt")).body);
  ASSERT_TRUE(report.ok()) << report.status().message();
  EXPECT_GE(CountRanks(*report).lag, 1u);
}

TEST(RasWatch, AnnotationIsBoundedAndRemovedWhenOkAgain) {
  ras::Judgement j;
  j.state = "stuck";
  j.summary = std::string(1000, 'x');
  auto a = RasAnnotation(j);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->size(), kMaxRasAnnotationBytes);
  j.state = "ok";
  EXPECT_FALSE(RasAnnotation(j));
  auto change = RasAnnotationChange(std::nullopt, {{std::string(kRasAnnotationKey), "stuck: x"}});
  ASSERT_TRUE(change);
  EXPECT_FALSE(change->begin()->second.has_value());
  EXPECT_FALSE(RasAnnotationChange(std::nullopt, {}));
}

// ---- ras.diagnostics (NCCL 2.31+)

RasConfig WithDiagnostics() {
  RasConfig ras;
  ras.diagnostics = true;
  ras.interval_seconds = 60;
  ras.diagnostics_interval_seconds = 600;
  return ras;
}

TEST(RasWatch, DiagnosticsFindingsBecomeTheMetricAndTheAnnotation) {
  FakeRasServer server(ReadTranscriptFile("nccl-2.28.9-1-healthy-json.txt"));
  server.SetDiagnostics(ReadTranscriptFile("nccl-2.32.6-modelled-diag-env-ecc.txt"));
  Harness h({RasProcess(4101, 1, server.addr())}, 1, WithDiagnostics());
  WorkloadPass pass = h.Pass();
  ASSERT_EQ(pass.ras.asked.size(), 1u);
  const RasPodResult& r = pass.ras.asked[0];
  EXPECT_EQ(r.outcome, RasOutcome::kOk) << r.error;
  EXPECT_EQ(r.diagnostics, "ok") << r.diagnostics_error;
  EXPECT_EQ(server.connections(), 2);
  EXPECT_EQ(r.diagnostics_judgement.findings.size(), 3u);

  const RasJobStatus& job = h.state.View().ras_jobs->front();
  EXPECT_EQ(job.state, "ok");  // the status report's judgement is its own
  // Three findings, one of which names a fault (the ECC check): the gauge counts that one.
  EXPECT_EQ(job.diagnostics_findings, 1);
  EXPECT_EQ(job.diagnostics_causes, "gpu.health,nccl.env_mismatch");

  const auto annotations = h.kube.Annotations("ml", "train-1");
  EXPECT_EQ(annotations.count(std::string(kRasAnnotationKey)), 0u);
  const std::string diag = annotations.at(std::string(kRasDiagnosticsAnnotationKey));
  EXPECT_TRUE(diag.starts_with("findings: 3 finding(s): gpu.health, nccl.env_mismatch")) << diag;

  AgentMetrics metrics(h.state, "test");
  const std::string text = metrics.Scrape();
  EXPECT_NE(text.find("nccl_triage_job_diagnostics_findings{"
                      "causes=\"gpu.health,nccl.env_mismatch\","
                      "namespace=\"ml\",pod=\"train-1\"} 1"),
            std::string::npos)
      << text;
}

TEST(RasWatch, DiagnosticsAreAskedOncePerTheirOwnInterval) {
  FakeRasServer server(ReadTranscriptFile("nccl-2.28.9-1-healthy-json.txt"));
  server.SetDiagnostics(ReadTranscriptFile("nccl-2.32.6-modelled-diag-ok.txt"));
  Harness h({RasProcess(4101, 1, server.addr())}, 1, WithDiagnostics());
  EXPECT_EQ(h.Pass().ras.asked.at(0).diagnostics, "ok");
  EXPECT_EQ(h.state.View().ras_jobs->front().diagnostics_findings, 0);
  h.clock.Advance(std::chrono::seconds(60));
  const WorkloadPass second = h.Pass();
  ASSERT_EQ(second.ras.asked.size(), 1u);  // the status query is due, the diagnostics not
  EXPECT_EQ(second.ras.asked[0].diagnostics, "");
  EXPECT_EQ(server.connections(), 3);
  EXPECT_EQ(h.state.View().ras_jobs->front().diagnostics_findings, 0);  // kept
  h.clock.Advance(std::chrono::seconds(540));
  EXPECT_EQ(h.Pass().ras.asked.at(0).diagnostics, "ok");
  EXPECT_EQ(server.connections(), 5);
}

TEST(RasWatch, AnNcclBefore231IsNotAskedForDiagnosticsAgain) {
  FakeRasServer server(ReadTranscriptFile("nccl-2.28.9-1-healthy-json.txt"));
  Harness h({RasProcess(4101, 1, server.addr())}, 1, WithDiagnostics());
  EXPECT_EQ(h.Pass().ras.asked.at(0).diagnostics, "unsupported");
  EXPECT_EQ(h.state.View().ras_jobs->front().diagnostics_findings, -1);
  h.clock.Advance(std::chrono::seconds(3600));
  EXPECT_EQ(h.Pass().ras.asked.at(0).diagnostics, "");
  EXPECT_EQ(server.connections(), 3);  // status, diagnostics, status
  EXPECT_NE(h.log_text.str().find("this NCCL has no RAS diagnostics (2.31+)"), std::string::npos);
}

TEST(RasWatch, BusyDiagnosticsAreAskedAgainAtTheNextQuery) {
  FakeRasServer server(ReadTranscriptFile("nccl-2.28.9-1-healthy-json.txt"));
  server.SetDiagnostics(ReadTranscriptFile("nccl-2.32.6-3-diag-busy.txt"));
  Harness h({RasProcess(4101, 1, server.addr())}, 1, WithDiagnostics());
  EXPECT_EQ(h.Pass().ras.asked.at(0).diagnostics, "busy");
  h.clock.Advance(std::chrono::seconds(60));
  EXPECT_EQ(h.Pass().ras.asked.at(0).diagnostics, "busy");
  EXPECT_EQ(server.connections(), 4);
}

TEST(RasWatch, DiagnosticsAreOffByDefault) {
  FakeRasServer server(ReadTranscriptFile("nccl-2.28.9-1-healthy-json.txt"));
  server.SetDiagnostics(ReadTranscriptFile("nccl-2.32.6-modelled-diag-env-ecc.txt"));
  Harness h({RasProcess(4101, 1, server.addr())}, 1);
  EXPECT_EQ(h.Pass().ras.asked.at(0).diagnostics, "");
  EXPECT_EQ(server.connections(), 1);
  EXPECT_EQ(h.state.View().ras_jobs->front().diagnostics_findings, -1);
}

}  // namespace
}  // namespace nccl_triage::workload
