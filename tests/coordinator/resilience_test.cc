// Failures of the machinery itself, with real probe children: the coordinator restarting in the
// middle of a sweep, and an agent going away while its probe hangs. Nothing may stay assigned or
// running past a deadline.
#include <dirent.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "base/files.h"
#include "cluster_test_util.h"

namespace nccl_triage {
namespace {

using namespace std::chrono_literals;
using testing_util::TestCluster;
using testing_util::TestOptions;

// Probe children (`... probe --child ...`) of this process still alive: pid -> seconds alive.
std::map<std::string, double> ProbeChildren() {
  std::map<std::string, double> out;
  DIR* d = opendir("/proc");
  if (d == nullptr) return out;
  const std::string me = std::to_string(getpid());
  const long ticks = sysconf(_SC_CLK_TCK);
  auto uptime = ReadWholeFile("/proc/uptime", "uptime");
  const double now = uptime.ok() ? std::strtod(uptime->c_str(), nullptr) : 0;
  while (dirent* e = readdir(d)) {
    std::string pid = e->d_name;
    if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) continue;
    // A child may exit between the listing and these reads (ESRCH): it is then not counted.
    auto stat = ReadWholeFile("/proc/" + pid + "/stat", "stat");
    if (!stat.ok()) continue;
    const std::string line = stat->substr(0, stat->find('\n'));
    auto close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 2));
    std::string state, ppid, field;
    rest >> state >> ppid;
    if (ppid != me || state == "Z") continue;
    // Field 22 of stat, the start time in clock ticks since boot: fields 5 to 21 skipped.
    for (int i = 5; i <= 21; ++i) rest >> field;
    double started = 0;
    rest >> started;
    auto args = ReadWholeFile("/proc/" + pid + "/cmdline", "cmdline");
    if (args.ok() && args->find("--child") != std::string::npos) {
      out[pid] = ticks > 0 ? now - started / static_cast<double>(ticks) : 0;
    }
  }
  closedir(d);
  return out;
}

int LiveProbeChildren() { return static_cast<int>(ProbeChildren().size()); }

bool WaitUntil(const std::function<bool()>& pred, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(20ms);
  }
  return pred();
}

TEST(CoordinatorRestart, MidSweepAgentsReconnectOrphanedProbesStopAndTheNextSweepCompletes) {
  DemoOptions o = TestOptions(4, "restart");
  o.probe_timeout_seconds = 2;
  o.node_env[0] = {{"NCCL_FAKE_FAULTS", "hang_allreduce"}};  // node-0's probes hang
  TestCluster t(std::move(o));
  ASSERT_TRUE(t.cluster.Start().ok()) << t.log_text.str();
  t.cluster.coordinator().RequestSweep();
  ASSERT_TRUE(WaitUntil([&] { return LiveProbeChildren() > 0; }, 10s)) << "no probe started";
  ASSERT_GT(t.cluster.coordinator().OutstandingProbes(), 0u);

  ASSERT_TRUE(t.cluster.RestartCoordinator().ok()) << t.log_text.str();
  EXPECT_TRUE(t.cluster.coordinator().WaitForAgents(4, 10s)) << t.log_text.str();
  // The sessions cancelled the probes nobody would collect: no child outlives the old stream.
  EXPECT_TRUE(WaitUntil([] { return LiveProbeChildren() == 0; }, 5s))
      << LiveProbeChildren() << " probe children left";

  // The new coordinator's sweep completes: node-0's probes end at their deadline (timeout), and
  // nothing stays assigned.
  uint64_t n = t.cluster.coordinator().RequestSweep();
  ASSERT_TRUE(t.cluster.coordinator().WaitForSweep(n, 60s)) << t.log_text.str();
  EXPECT_EQ(t.cluster.coordinator().OutstandingProbes(), 0u);
  auto view = t.cluster.coordinator().View();
  EXPECT_FALSE(view.pairs.empty());
  for (const auto& p : view.pairs) {
    if (p.pair.Has("node-0")) {
      // Its rank hung until the deadline: the root of the pair's failure is that timeout.
      EXPECT_EQ(p.judgement.socket, ProbeOutcome::kTimeout) << ToString(p.pair);
      EXPECT_EQ(p.judgement.verdict.fault_class, FaultClass::kArchitecture);
    } else {
      EXPECT_EQ(p.judgement.status, PairStatus::kPass) << ToString(p.pair);
    }
  }
}

// Hold-down lives in the coordinator's memory; the agents keep the verdicts they were pushed and
// give them to the next coordinator, which must hold the same confirmed faults at once (no alert
// clears and fires again sweeps later) and keep them through the next sweep.
TEST(CoordinatorRestart, ConfirmedFaultsAreHeldAcrossARestartWithoutASweep) {
  DemoOptions o = TestOptions(4, "holddown");
  o.hold_down = 2;
  for (const char* spec : {"node:0:port_down", "link:1-3:cable"}) {
    auto f = ParseDemoFault(spec, 4);
    ASSERT_TRUE(f.ok()) << f.status().message();
    o.faults.push_back(*f);
  }
  TestCluster t(std::move(o));
  ASSERT_TRUE(t.cluster.Start().ok()) << t.log_text.str();
  ASSERT_TRUE(t.cluster.Run().ok()) << t.log_text.str();
  auto confirmed = [](const CoordinatorView& v) {
    std::set<std::string> out;
    for (const auto& f : v.faults) {
      if (f.confirmed) out.insert(std::string(ToString(f.fault.kind)) + ":" + f.fault.nodes[0]);
    }
    return out;
  };
  const std::set<std::string> before = confirmed(t.cluster.coordinator().View());
  ASSERT_EQ(before, (std::set<std::string>{"link:node-1", "node:node-0"})) << t.log_text.str();

  ASSERT_TRUE(t.cluster.RestartCoordinator().ok()) << t.log_text.str();
  ASSERT_TRUE(t.cluster.coordinator().WaitForAgents(4, 10s)) << t.log_text.str();
  ASSERT_TRUE(WaitUntil([&] { return confirmed(t.cluster.coordinator().View()) == before; }, 5s))
      << "the new coordinator lost the confirmed faults";
  CoordinatorView view = t.cluster.coordinator().View();
  EXPECT_EQ(view.sweeps_done, 0u) << "held without a sweep";
  ASSERT_TRUE(view.nodes.count("node-0"));
  EXPECT_TRUE(view.nodes.at("node-0").confirmed_fault);
  const std::string metrics = t.cluster.coordinator().MetricsText();
  EXPECT_NE(metrics.find("kind=\"node\",node=\"node-0\""), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("kind=\"link\",node=\"node-1\",peer=\"node-3\""), std::string::npos)
      << metrics;

  // The next sweep sees both faults again: still confirmed, not re-confirmed from zero.
  uint64_t n = t.cluster.coordinator().RequestSweep();
  ASSERT_TRUE(t.cluster.coordinator().WaitForSweep(n, 60s)) << t.log_text.str();
  EXPECT_EQ(confirmed(t.cluster.coordinator().View()), before);
}

TEST(AgentLoss, MidProbeTheLostPairIsInconclusiveAndThePeersChildStopsAtOnce) {
  DemoOptions o = TestOptions(4, "loss");
  o.probe_timeout_seconds = 60;  // far away: the peer must be stopped long before
  o.node_env[1] = {{"NCCL_FAKE_FAULTS", "hang_allreduce"}};
  TestCluster t(std::move(o));
  ASSERT_TRUE(t.cluster.Start().ok()) << t.log_text.str();
  const auto start = std::chrono::steady_clock::now();
  uint64_t n = t.cluster.coordinator().RequestSweep();
  // Node-1 and its partner hang in the all-reduce: the two children that stay. (The other pair
  // passes, its children come and go, in milliseconds when the machine is idle but not always.)
  std::set<std::string> hung;
  ASSERT_TRUE(WaitUntil(
      [&] {
        hung.clear();
        for (const auto& [pid, age] : ProbeChildren()) {
          if (age >= 3) hung.insert(pid);
        }
        return hung.size() == 2;
      },
      20s))
      << LiveProbeChildren() << " children, " << hung.size() << " of them alive for 3 s";

  t.cluster.StopNode(1);  // node-1 goes away mid-probe
  auto hung_alive = [&] {
    const auto now = ProbeChildren();
    return std::any_of(hung.begin(), hung.end(), [&](const auto& pid) { return now.count(pid); });
  };
  EXPECT_TRUE(WaitUntil([&] { return !hung_alive(); }, 5s))
      << "the peer's probe child was not stopped";
  EXPECT_TRUE(WaitUntil([] { return LiveProbeChildren() == 0; }, 20s)) << "probe children left";
  ASSERT_TRUE(t.cluster.coordinator().WaitForSweep(n, 20s)) << t.log_text.str();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 30s);  // the probe timeout is 60 s
  EXPECT_EQ(t.cluster.coordinator().OutstandingProbes(), 0u);
  auto view = t.cluster.coordinator().View();
  bool saw_lost_pair = false;
  for (const auto& p : view.pairs) {
    if (p.pair.Has("node-1")) {
      saw_lost_pair = true;
      EXPECT_EQ(p.judgement.status, PairStatus::kInconclusive);
      EXPECT_NE(p.judgement.verdict.reason.find("node-1 disconnected"), std::string::npos)
          << p.judgement.verdict.reason;
    }
  }
  EXPECT_TRUE(saw_lost_pair);
  EXPECT_TRUE(view.faults.empty()) << "a lost agent is not a fault";
  // Its peer was re-paired with a reference and passed.
  EXPECT_EQ(view.nodes.count("node-1") ? view.nodes.at("node-1").state : NodeState::kUntested,
            NodeState::kInconclusive);
}

}  // namespace
}  // namespace nccl_triage
