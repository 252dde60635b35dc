#include "daemon/agent.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <sstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <thread>

#include "support/fake_clock.h"

namespace nccl_triage {
namespace {

using namespace std::chrono_literals;

NodeSnapshot Snapshot(uint64_t symbol_errors) {
  NodeSnapshot s;
  s.node = "gpu-node-1";
  IbDevice d{.name = "mlx5_0"};
  IbPort p;
  p.num = 1;
  p.state.value = "4: ACTIVE";
  p.counters["symbol_error"] = symbol_errors;
  d.ports.push_back(p);
  s.ib_devices.push_back(d);
  return s;
}

Finding Fail(std::string check, FaultClass c) {
  return Finding{std::move(check), c, CheckStatus::kFail, "bad", {}, ""};
}

struct RecordingSink : StateSink {
  std::vector<AgentStateView> views;
  void OnState(const AgentStateView& v) override { views.push_back(v); }
};

class AgentTest : public ::testing::Test {
 protected:
  FakeClock clock_;
  std::ostringstream log_text_;
  Logger log_{log_text_};
  AgentState state_{"gpu-node-1", "test", clock_.NowUnixMs()};

  // An agent on a healthy node whose checks find nothing, for the probe tests.
  std::unique_ptr<Agent> ProbingAgent() { return HealthyAgent(AgentOptions{}, clock_); }
  // The same on the real clock, cycling every 20 ms, for the tests that run its loop and link.
  std::unique_ptr<Agent> LoopingAgent() { return HealthyAgent({.interval = 20ms}, real_clock_); }

 private:
  std::unique_ptr<Agent> HealthyAgent(AgentOptions options, Clock& clock) {
    return std::make_unique<Agent>(
        std::move(options), []() -> StatusOr<NodeSnapshot> { return Snapshot(0); },
        [](const NodeSnapshot&, const NodeSnapshot*) { return std::vector<Finding>{}; }, state_,
        clock, log_);
  }
  SystemClock real_clock_;
};

TEST_F(AgentTest, CycleStoresReportSummaryAndPassesThePreviousSnapshotToTheChecks) {
  uint64_t errors = 0;
  std::vector<std::optional<uint64_t>> seen_previous;
  Agent agent(
      {.interval = 10s}, [&]() -> StatusOr<NodeSnapshot> { return Snapshot(errors += 5); },
      [&](const NodeSnapshot& now, const NodeSnapshot* prev) {
        seen_previous.push_back(
            prev ? std::optional(prev->ib_devices[0].ports[0].counters.at("symbol_error"))
                 : std::nullopt);
        (void)now;
        return std::vector<Finding>{Fail("ib.port_errors", FaultClass::kIbResource)};
      },
      state_, clock_, log_);
  RecordingSink sink;
  agent.AddSink(&sink);
  agent.RunCycle();
  agent.RunCycle();
  ASSERT_EQ(seen_previous.size(), 2u);
  EXPECT_FALSE(seen_previous[0]);
  EXPECT_EQ(seen_previous[1], 5u);
  AgentStateView v = state_.View();
  EXPECT_TRUE(v.ready);
  EXPECT_EQ(v.cycle.cycles, 2u);
  EXPECT_EQ(v.report->node, "gpu-node-1");
  EXPECT_EQ(v.report->fault_class, FaultClass::kIbResource);
  EXPECT_EQ(v.summary->ports[0].error_counters.at("symbol_error"), 10u);
  EXPECT_EQ(sink.views.size(), 2u);
}

TEST_F(AgentTest, AGatherThatThrowsCostsOneCycleNotTheProcess) {
  int calls = 0;
  Agent agent(
      {.node = "override"},
      [&]() -> StatusOr<NodeSnapshot> {
        if (++calls == 1) throw std::runtime_error("mlx5_0: device vanished");
        return Snapshot(0);
      },
      [](const NodeSnapshot&, const NodeSnapshot*) {
        return std::vector<Finding>{
            Finding{"ib.port_state", FaultClass::kIbResource, CheckStatus::kPass, "", {}, ""}};
      },
      state_, clock_, log_);
  auto first = agent.RunCycle();
  EXPECT_EQ(first->fault_class, FaultClass::kUnknown);
  EXPECT_EQ(first->node, "override");
  EXPECT_TRUE(state_.Ready());
  EXPECT_NE(state_.View().cycle.last_error.find("device vanished"), std::string::npos);
  EXPECT_NE(log_text_.str().find("WARN agent: cycle failed"), std::string::npos);
  auto second = agent.RunCycle();
  EXPECT_EQ(second->fault_class, FaultClass::kHealthy);
  EXPECT_EQ(state_.View().cycle.last_error, "");
}

TEST_F(AgentTest, AGatherErrorStatusAndAThrowingCheckBothGiveUnknown) {
  Agent bad_root(
      {}, []() -> StatusOr<NodeSnapshot> { return NotFound("root /nope: no such directory"); },
      [](const NodeSnapshot&, const NodeSnapshot*) { return std::vector<Finding>{}; }, state_,
      clock_, log_);
  EXPECT_EQ(bad_root.RunCycle()->fault_class, FaultClass::kUnknown);
  EXPECT_NE(state_.View().cycle.last_error.find("no such directory"), std::string::npos);
  Agent bad_check(
      {}, []() -> StatusOr<NodeSnapshot> { return Snapshot(0); },
      [](const NodeSnapshot&, const NodeSnapshot*) -> std::vector<Finding> {
        throw std::logic_error("check bug");
      },
      state_, clock_, log_);
  EXPECT_EQ(bad_check.RunCycle()->fault_class, FaultClass::kUnknown);
  EXPECT_NE(state_.View().cycle.last_error.find("checks: check bug"), std::string::npos);
}

TEST_F(AgentTest, RunCyclesEveryIntervalOnTheInjectedClockUntilStopped) {
  std::stop_source stop;
  int cycles = 0;
  Agent agent(
      {.interval = 30s},
      [&]() -> StatusOr<NodeSnapshot> {
        if (++cycles == 4) stop.request_stop();
        return Snapshot(0);
      },
      [](const NodeSnapshot&, const NodeSnapshot*) { return std::vector<Finding>{}; }, state_,
      clock_, log_);
  agent.Run(stop.get_token());
  EXPECT_EQ(cycles, 4);
  auto sleeps = clock_.Sleeps();
  ASSERT_EQ(sleeps.size(), 4u);  // the last sleep returns at once because of the stop
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(sleeps[i], Clock::Duration(30s));
}

TEST_F(AgentTest, ASlowCycleDoesNotMakeTheLoopCatchUp) {
  std::stop_source stop;
  int cycles = 0;
  Agent agent(
      {.interval = 10s},
      [&]() -> StatusOr<NodeSnapshot> {
        if (++cycles == 1) clock_.Advance(25s);  // one cycle took longer than two intervals
        if (cycles == 3) stop.request_stop();
        return Snapshot(0);
      },
      [](const NodeSnapshot&, const NodeSnapshot*) { return std::vector<Finding>{}; }, state_,
      clock_, log_);
  agent.Run(stop.get_token());
  auto sleeps = clock_.Sleeps();
  ASSERT_GE(sleeps.size(), 2u);
  EXPECT_EQ(sleeps[0], Clock::Duration(10s));
}

class FakeLink : public CoordinatorLink {
 public:
  std::atomic<bool> ran{false};
  void Run(AgentServices& services, std::stop_token stop) override {
    services.WaitForCycle(0, stop);
    ProbeAssignment a;
    a.peer = "gpu-node-2";
    a.mode = ProbeMode::kIb;
    ProbeResult r = services.RunProbe(a, stop);
    PairVerdict v;
    v.fault_class =
        r.outcome == ProbeOutcome::kPass ? FaultClass::kHealthy : FaultClass::kIbResource;
    v.basis = Basis::kProbes;
    services.SetPairVerdict(a.peer, v);
    services.SetNodeVerdict(NodeVerdict{v.fault_class, Basis::kProbes, {"ib.port_state"}, "x"});
    services.SetCoordinatorStatus("connected");
    ran = true;
    while (!stop.stop_requested()) std::this_thread::sleep_for(1ms);
  }
};

// Runs `agent` with a FakeLink until the link's probe is done (at most 2 s), then `meanwhile`,
// then stops it; true when the link ran.
bool RunWithFakeLink(Agent& agent, const std::function<void()>& meanwhile = {}) {
  auto link = std::make_unique<FakeLink>();
  FakeLink* raw = link.get();
  agent.SetCoordinatorLink(std::move(link));
  std::stop_source stop;
  std::thread loop([&] { agent.Run(stop.get_token()); });
  for (int i = 0; i < 2000 && !raw->ran; ++i) std::this_thread::sleep_for(1ms);
  if (meanwhile) meanwhile();
  stop.request_stop();
  loop.join();
  return raw->ran;
}

TEST_F(AgentTest, TheCoordinatorLinkRunsProbesAndSetsVerdictsThroughServices) {
  auto looping = LoopingAgent();
  Agent& agent = *looping;
  agent.SetProbeRunner([](const ProbeAssignment& a, std::stop_token) {
    ProbeResult r;
    r.outcome = ProbeOutcome::kFail;
    r.detail = "ibv_reg_mr failed";
    r.duration_seconds = 1.5;
    r.peer = "ignored: the agent fills peer and mode from the assignment";
    (void)a;
    return r;
  });
  ASSERT_TRUE(RunWithFakeLink(agent));
  AgentStateView v = state_.View();
  ASSERT_EQ(v.probes.size(), 1u);
  auto rec = v.probes.at({"gpu-node-2", ProbeMode::kIb});
  EXPECT_EQ(rec->result.outcome, ProbeOutcome::kFail);
  EXPECT_DOUBLE_EQ(rec->result.duration_seconds, 1.5);
  EXPECT_EQ(v.pairs.at("gpu-node-2")->verdict.fault_class, FaultClass::kIbResource);
  EXPECT_EQ(v.Verdict().basis, Basis::kProbes);
  EXPECT_EQ(v.coordinator_status, "connected");
}

TEST_F(AgentTest, TheIntraNodeProbeRunsOnceBeforeThePairingAndItsFindingJoinsTheReport) {
  auto looping = LoopingAgent();
  Agent& agent = *looping;
  std::atomic<int> intra_runs{0};
  std::atomic<int> probes_before_intra{0};
  std::atomic<int> probes{0};
  agent.SetProbeRunner([&](const ProbeAssignment&, std::stop_token) {
    ++probes;
    ProbeResult r;
    r.outcome = ProbeOutcome::kPass;
    return r;
  });
  agent.SetIntraNodeProbe([&](const NodeSnapshot& s, std::stop_token) {
    if (probes > 0) ++probes_before_intra;
    ++intra_runs;
    EXPECT_EQ(s.node, "gpu-node-1");  // the first cycle's snapshot
    Finding f = Fail("probe.intra_node", FaultClass::kArchitecture);
    f.message = "P2P between the GPUs is broken";
    return f;
  });
  ASSERT_TRUE(RunWithFakeLink(agent, [this] {
    const uint64_t seen = state_.View().cycle.cycles;
    for (int i = 0; i < 2000 && state_.View().cycle.cycles < seen + 2; ++i) {
      std::this_thread::sleep_for(1ms);
    }
  }));
  EXPECT_EQ(intra_runs.load(), 1);
  EXPECT_EQ(probes_before_intra.load(), 0);
  auto report = state_.View().report;
  ASSERT_TRUE(report);
  ASSERT_EQ(report->findings.size(), 1u);
  EXPECT_EQ(report->findings[0].check, "probe.intra_node");
  EXPECT_EQ(report->fault_class, FaultClass::kArchitecture);
}

TEST_F(AgentTest, TheLibraryCheckSetsAvailabilityAndABlindNodeCarriesTheCauseAsAFinding) {
  auto looping = LoopingAgent();
  Agent& agent = *looping;
  auto blind = [] {
    ProbeResult r;
    r.outcome = ProbeOutcome::kUnavailable;
    r.unavailable_cause = "probe.no_gpu";
    r.detail = "cuInit: CUDA_ERROR_NO_DEVICE (100)";
    return r;
  };
  agent.SetLibraryCheck(blind);
  agent.SetProbeRunner([&](const ProbeAssignment&, std::stop_token) { return blind(); });
  EXPECT_EQ(state_.View().probe_availability.reason, "pending");
  ASSERT_TRUE(RunWithFakeLink(agent, [this] {
    for (int i = 0; i < 30000; ++i) {  // generous: CI machines are loaded
      auto report = state_.View().report;
      if (report && !report->findings.empty()) return;
      std::this_thread::sleep_for(1ms);
    }
  }));
  EXPECT_EQ(state_.View().probe_availability.reason, "no_gpu");
  auto report = state_.View().report;
  ASSERT_TRUE(report);
  ASSERT_EQ(report->findings.size(), 1u);
  EXPECT_EQ(report->findings[0].check, "probe.no_gpu");
  EXPECT_EQ(report->findings[0].status, CheckStatus::kWarn);
  EXPECT_NE(log_text_.str().find("probes cannot run (no_gpu)"), std::string::npos);
}

// The coordinator sends no probe to a node whose probes cannot run, so no probe result would say
// they came back: the agent checks its libraries again after each cycle while they cannot run,
// logs the change once, and stops checking once they can.
TEST_F(AgentTest, ABlindNodeChecksItsLibrariesAgainUntilTheProbesCanRun) {
  auto looping = LoopingAgent();
  Agent& agent = *looping;
  std::atomic<int> checks{0};
  agent.SetLibraryCheck([&] {
    ProbeResult r;
    if (++checks < 4) {
      r.outcome = ProbeOutcome::kUnavailable;
      r.unavailable_cause = "probe.no_nccl";
      r.detail = "libnccl.so.2: not found";
    } else {  // NCCL appeared on the host path
      r.outcome = ProbeOutcome::kPass;
      r.nccl_version = "2.28.9";
    }
    return r;
  });
  agent.SetProbeRunner([&](const ProbeAssignment&, std::stop_token) {  // the link's one probe
    ProbeResult r;  // sees what the check sees at that moment
    if (checks < 4) {
      r.outcome = ProbeOutcome::kUnavailable;
      r.unavailable_cause = "probe.no_nccl";
      r.detail = "libnccl.so.2: not found";
    } else {
      r.outcome = ProbeOutcome::kPass;
      r.nccl_version = "2.28.9";
    }
    return r;
  });
  ASSERT_TRUE(RunWithFakeLink(agent, [this] {
    for (int i = 0; i < 30000 && !state_.View().probe_availability.available(); ++i) {
      std::this_thread::sleep_for(1ms);
    }
    const uint64_t seen = state_.View().cycle.cycles;
    for (int i = 0; i < 2000 && state_.View().cycle.cycles < seen + 3; ++i) {
      std::this_thread::sleep_for(1ms);
    }
  }));
  EXPECT_TRUE(state_.View().probe_availability.available());
  EXPECT_EQ(state_.View().probe_availability.nccl_version, "2.28.9");
  EXPECT_EQ(checks.load(), 4) << "checked again while blind, no more once available";
  const std::string log = log_text_.str();
  const auto first = log.find("probes cannot run (no_nccl)");
  ASSERT_NE(first, std::string::npos) << log;
  EXPECT_EQ(log.find("probes cannot run (no_nccl)", first + 1), std::string::npos)
      << "logged once, not at every check\n"
      << log;
  EXPECT_NE(log.find("probes can run: NCCL 2.28.9"), std::string::npos) << log;
}

TEST_F(AgentTest, TheCycleSummaryNamesThePoolWhoseExpectJudgedTheNode) {
  auto agent = ProbingAgent();
  state_.SetPool("h100-ndr");
  agent->RunCycle();
  auto summary = state_.View().summary;
  ASSERT_TRUE(summary);
  EXPECT_EQ(summary->pool, "h100-ndr");
  EXPECT_EQ(ToJson(*summary)["pool"], "h100-ndr");  // /status "snapshot"
}

TEST_F(AgentTest, AProbeThatRanMakesTheProbesAvailable) {
  auto agent = ProbingAgent();
  agent->SetProbeRunner([](const ProbeAssignment&, std::stop_token) {
    ProbeResult r;
    r.outcome = ProbeOutcome::kFail;  // it loaded NCCL and found its GPU: available
    r.nccl_version = "2.21.5";
    return r;
  });
  std::stop_source stop;
  agent->RunProbe({.peer = "n2", .mode = ProbeMode::kIb}, stop.get_token());
  EXPECT_TRUE(state_.View().probe_availability.available());
  EXPECT_EQ(state_.View().probe_availability.nccl_version, "2.21.5");
}

TEST_F(AgentTest, WithoutAProbeRunnerAProbeIsUnavailableNotAFailure) {
  auto agent = ProbingAgent();
  std::stop_source stop;
  ProbeResult r = agent->RunProbe({.peer = "n2", .mode = ProbeMode::kSocket}, stop.get_token());
  EXPECT_EQ(r.outcome, ProbeOutcome::kUnavailable);
  EXPECT_EQ(r.peer, "n2");
  EXPECT_EQ(state_.View().probes.size(), 1u);
}

TEST_F(AgentTest, ARailsProbeIsRecordedAsThatRailNotAsThePairsIbProbe) {
  auto agent = ProbingAgent();
  std::stop_source stop;
  ProbeAssignment rail5{.peer = "n2", .mode = ProbeMode::kIb};
  rail5.ib_hca = "=mlx5_5:1";
  rail5.rail = 5;
  (void)agent->RunProbe(rail5, stop.get_token());
  AgentStateView v = state_.View();
  EXPECT_TRUE(v.probes.empty());
  ASSERT_EQ(v.rail_probes.size(), 1u);
  EXPECT_EQ(v.rail_probes.at({"n2", 5})->ib_hca, "=mlx5_5:1");
}

TEST_F(AgentTest, ProbesOnDifferentGpusRunAtOnceAndOneOnAGpuAProbeHoldsIsRefused) {
  std::mutex mu;
  std::condition_variable cv;
  int running = 0, max_running = 0;
  bool release = false;
  auto agent = ProbingAgent();
  agent->SetProbeRunner([&](const ProbeAssignment&, std::stop_token) {
    std::unique_lock lock(mu);
    max_running = std::max(max_running, ++running);
    cv.notify_all();
    cv.wait_for(lock, 10s, [&] { return release; });
    --running;
    return ProbeResult{.outcome = ProbeOutcome::kPass};
  });
  std::vector<std::jthread> threads;
  for (const std::string gpu : {"0000:0a:00.0", "0000:0b:00.0"}) {
    threads.emplace_back([agent = agent.get(), gpu] {
      std::stop_source s;
      agent->RunProbe({.peer = "n-" + gpu.substr(5, 2), .mode = ProbeMode::kIb, .gpu_bus_id = gpu},
                      s.get_token());
    });
  }
  {
    std::unique_lock lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, 10s, [&] { return running == 2; })) << "both run at once";
  }
  std::stop_source s;
  ProbeResult same = agent->RunProbe(
      {.peer = "n9", .mode = ProbeMode::kIb, .gpu_bus_id = "0000:0a:00.0"}, s.get_token());
  EXPECT_EQ(same.outcome, ProbeOutcome::kNotRun);
  EXPECT_EQ(same.detail, "skipped: GPU 0000:0a:00.0 runs another probe");
  ProbeResult any = agent->RunProbe({.peer = "n9"}, s.get_token());
  EXPECT_EQ(any.outcome, ProbeOutcome::kNotRun) << "a probe naming no GPU may use any of them";
  EXPECT_EQ(any.detail, "skipped: another probe of this agent is running");
  {
    std::lock_guard lock(mu);
    release = true;
  }
  cv.notify_all();
  threads.clear();
  EXPECT_EQ(max_running, 2);
  EXPECT_EQ(state_.View().probes.size(), 2u) << "a refusal is not recorded over a real result";
  EXPECT_EQ(agent->RunProbe({.peer = "n9"}, s.get_token()).outcome, ProbeOutcome::kPass)
      << "the GPUs are free again";
}

// The coordinator ends a phase as soon as it cancels a rank, so the next assignment may come while
// the cancelled child is still being killed: it waits for that GPU instead of being refused.
TEST_F(AgentTest, AProbeWaitsForTheGpuOfACancelledProbeThatIsStillEnding) {
  std::atomic<bool> first_running{false}, first_stopped{false}, release{false};
  auto agent = ProbingAgent();
  auto wait_for = [](const std::atomic<bool>& flag) {
    for (int i = 0; i < 10'000 && !flag; ++i) std::this_thread::sleep_for(1ms);
    return flag.load();
  };
  agent->SetProbeRunner([&](const ProbeAssignment& a, std::stop_token stop) {
    if (a.peer == "n1") {
      first_running = true;
      while (!stop.stop_requested()) std::this_thread::sleep_for(1ms);
      first_stopped = true;
      while (!release) std::this_thread::sleep_for(1ms);  // its children still being killed
      return ProbeResult{.outcome = ProbeOutcome::kNotRun, .detail = "cancelled"};
    }
    return ProbeResult{.outcome = ProbeOutcome::kPass};
  });
  const ProbeAssignment first{.peer = "n1", .mode = ProbeMode::kIb, .gpu_bus_id = "0000:0a:00.0"};
  std::stop_source cancel_first;
  std::jthread running([&] { agent->RunProbe(first, cancel_first.get_token()); });
  ASSERT_TRUE(wait_for(first_running));
  cancel_first.request_stop();
  ASSERT_TRUE(wait_for(first_stopped));
  std::jthread freeing([&] {
    std::this_thread::sleep_for(200ms);
    release = true;
  });
  ProbeAssignment next = first;
  next.peer = "n2";
  std::stop_source s;
  const auto t0 = std::chrono::steady_clock::now();
  ProbeResult r = agent->RunProbe(next, s.get_token());
  EXPECT_EQ(r.outcome, ProbeOutcome::kPass) << r.detail;
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 150ms) << "it waited for the GPU";
  running.join();

  // A probe that is not being cancelled is not waited for.
  std::atomic<bool> live_running{false}, live_release{false};
  agent->SetProbeRunner([&](const ProbeAssignment&, std::stop_token) {
    live_running = true;
    while (!live_release) std::this_thread::sleep_for(1ms);
    return ProbeResult{.outcome = ProbeOutcome::kPass};
  });
  std::stop_source live_stop;
  std::jthread live([&] { agent->RunProbe(first, live_stop.get_token()); });
  ASSERT_TRUE(wait_for(live_running));
  r = agent->RunProbe(next, s.get_token());
  EXPECT_EQ(r.detail, "skipped: GPU 0000:0a:00.0 runs another probe");
  live_release = true;
}

}  // namespace
}  // namespace nccl_triage
