// The agent's probe function over the real runner and the fake libcuda/libnccl: rank 0 hands its
// unique id up through the assignment, rank 1 receives it as the coordinator would relay it, and
// a cancelled probe is killed at once and reads not_run.
#include "daemon/probe_adapter.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <future>
#include <thread>

#include "host/gatherer.h"

namespace nccl_triage {
namespace {

using namespace std::chrono_literals;

std::shared_ptr<const ProbeRunner> Runner(const std::string& hostid, const std::string& faults,
                                          int timeout_seconds = 20) {
  ProbeConfig c;
  c.nccl_library_paths = {FAKE_NCCL_DIR};
  c.cuda_library_paths = {FAKE_CUDA_DIR};
  c.size_bytes = 256 << 10;
  c.iterations = 3;
  c.warmup_iterations = 1;
  c.timeout_seconds = timeout_seconds;
  c.socket_ifname = "lo";
  // Two "nodes" on one machine: a different NCCL_HOSTID per rank, as the probe's local pair does.
  c.env_allowlist = {"NCCL_HOSTID", "NCCL_FAKE_FAULTS"};
  ProbeRunnerOptions o;
  o.child_exe = PROBE_CHILD_EXE;
  o.root = NCCL_TRIAGE_FIXTURE_DIR "/dgx-a100";
  o.work_dir = (std::filesystem::temp_directory_path() /
                ("probe-adapter-" + std::to_string(getpid()) + "-" + hostid))
                   .string();
  o.default_library_search = false;
  o.parent_env = {{"PATH", "/usr/bin:/bin"}, {"NCCL_HOSTID", hostid}, {"NCCL_FAKE_FAULTS", faults}};
  return std::make_shared<const ProbeRunner>(c, o);
}

TEST(RunnerProbeFn, TwoRanksMeetThroughTheRelayedUniqueId) {
  ProbeFn rank0 = MakeRunnerProbeFn(Runner("node-a", ""));
  ProbeFn rank1 = MakeRunnerProbeFn(Runner("node-b", ""));
  std::promise<std::string> relay;
  std::shared_future<std::string> relayed = relay.get_future().share();
  ProbeAssignment a0{.peer = "node-b", .mode = ProbeMode::kSocket, .rank = 0};
  a0.publish_unique_id = [&](const std::string& id) { relay.set_value(id); };
  ProbeAssignment a1{.peer = "node-a", .mode = ProbeMode::kSocket, .rank = 1};
  a1.await_unique_id = [&](std::stop_token) -> std::optional<std::string> {
    if (relayed.wait_for(20s) != std::future_status::ready) return std::nullopt;
    return relayed.get();
  };
  std::stop_source stop;
  auto f0 = std::async(std::launch::async, [&] { return rank0(a0, stop.get_token()); });
  auto f1 = std::async(std::launch::async, [&] { return rank1(a1, stop.get_token()); });
  ProbeResult r0 = f0.get(), r1 = f1.get();
  EXPECT_EQ(r0.outcome, ProbeOutcome::kPass) << r0.detail;
  EXPECT_EQ(r1.outcome, ProbeOutcome::kPass) << r1.detail;
  EXPECT_EQ(r1.transport, "NET/Socket");
  EXPECT_EQ(r0.peer, "node-b");
  EXPECT_GT(r1.busbw_bytes_per_second, 0);
}

TEST(RunnerProbeFn, NoRelayedIdMakesRankOneGiveUpInsteadOfHanging) {
  ProbeFn rank1 = MakeRunnerProbeFn(Runner("node-b", ""));
  ProbeAssignment a1{.peer = "node-a", .mode = ProbeMode::kIb, .rank = 1};
  a1.await_unique_id = [](std::stop_token) -> std::optional<std::string> { return std::nullopt; };
  std::stop_source stop;
  auto start = std::chrono::steady_clock::now();
  ProbeResult r = rank1(a1, stop.get_token());
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
  EXPECT_NE(r.outcome, ProbeOutcome::kPass);
}

TEST(RunnerProbeFn, CancelKillsTheChildAtOnceAndReadsNotRun) {
  ProbeFn rank0 = MakeRunnerProbeFn(Runner("node-a", "hang_hard@0", 30));
  ProbeAssignment a0{.peer = "node-b", .mode = ProbeMode::kSocket, .rank = 0};
  std::stop_source stop;
  std::thread canceller([&] {
    std::this_thread::sleep_for(500ms);
    stop.request_stop();
  });
  auto start = std::chrono::steady_clock::now();
  ProbeResult r = rank0(a0, stop.get_token());
  canceller.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  EXPECT_EQ(r.outcome, ProbeOutcome::kNotRun);
  EXPECT_EQ(r.detail, "cancelled");
}

// The dgx-a100 fixture's snapshot with the faked libraries' GPUs; `assigned` GPUs (by UUID)
// given to a training container by the kubelet.
NodeSnapshot DgxWithAssignedGpus(const std::vector<size_t>& assigned) {
  GatherOptions options;
  options.root = NCCL_TRIAGE_FIXTURE_DIR "/dgx-a100";
  auto s = GatherSnapshot(options);
  EXPECT_TRUE(s.ok()) << s.status().message();
  NodeSnapshot out = s.ok() ? *s : NodeSnapshot{};
  out.gpu_allocations.emplace();
  for (size_t i : assigned) {
    if (i < out.gpus.size())
      out.gpu_allocations->push_back({"ml/train-0/worker", "nvidia.com/gpu", out.gpus[i].uuid});
  }
  return out;
}

std::shared_ptr<const ProbeRunner> IntraRunner(const std::string& faults, int timeout_seconds) {
  auto base = Runner("intra", faults, timeout_seconds);
  ProbeRunnerOptions o = base->options();
  o.parent_env["NCCL_FAKE_ROOT"] = NCCL_TRIAGE_FIXTURE_DIR "/dgx-a100";
  ProbeConfig c = base->config();
  c.env_allowlist.push_back("NCCL_FAKE_ROOT");
  return std::make_shared<const ProbeRunner>(c, o);
}

// The kubelet gave GPUs 0-5 to a container whose job has not started: the intra-node probe runs
// on GPUs 6 and 7 only, and its evidence names the container.
TEST(IntraNodeFn, RunsOnTheGpusTheKubeletDidNotAssignAndSaysWhy) {
  NodeSnapshot s = DgxWithAssignedGpus({0, 1, 2, 3, 4, 5});
  ASSERT_EQ(s.gpus.size(), 8u);
  Finding f = MakeIntraNodeFn(IntraRunner("", 20), false)(s, {});
  EXPECT_EQ(f.check, "probe.intra_node");
  EXPECT_EQ(f.status, CheckStatus::kPass) << f.message;
  EXPECT_NE(f.message.find("2 GPUs"), std::string::npos) << f.message;
  std::string use;
  for (const auto& e : f.evidence) {
    if (e.key == "GPU use") use = e.value;
  }
  EXPECT_NE(use.find("2 of 8 GPUs idle"), std::string::npos) << use;
  EXPECT_NE(use.find("busy: assigned to ml/train-0/worker (nvidia.com/gpu)"), std::string::npos)
      << use;

  // Every GPU assigned: nothing to probe on, a skip, not a pass.
  s = DgxWithAssignedGpus({0, 1, 2, 3, 4, 5, 6, 7});
  f = MakeIntraNodeFn(IntraRunner("", 20), false)(s, {});
  EXPECT_EQ(f.status, CheckStatus::kSkip) << f.message;
}

// SIGTERM while the intra-node probe hangs in its all-reduce: the ranks die at once.
TEST(IntraNodeFn, AStopKillsAHungIntraNodeProbeAtOnce) {
  NodeSnapshot s = DgxWithAssignedGpus({});
  std::stop_source stop;
  std::thread stopper([&] {
    std::this_thread::sleep_for(500ms);
    stop.request_stop();
  });
  auto start = std::chrono::steady_clock::now();
  Finding f = MakeIntraNodeFn(IntraRunner("hang_allreduce", 30), false)(s, stop.get_token());
  stopper.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  EXPECT_NE(f.status, CheckStatus::kFail) << f.message;
}

TEST(RunnerProbeFn, AShorterDeadlineFromTheAssignmentIsHonoured) {
  ProbeFn rank0 = MakeRunnerProbeFn(Runner("node-a", "hang_hard@0", 60));
  ProbeAssignment a0{.peer = "node-b", .mode = ProbeMode::kSocket, .rank = 0, .timeout_seconds = 2};
  std::stop_source stop;
  auto start = std::chrono::steady_clock::now();
  ProbeResult r = rank0(a0, stop.get_token());
  EXPECT_LT(std::chrono::steady_clock::now() - start, 8s);
  EXPECT_EQ(r.outcome, ProbeOutcome::kTimeout) << r.detail;
}

}  // namespace
}  // namespace nccl_triage
