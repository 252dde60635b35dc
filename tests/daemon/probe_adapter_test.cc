// The agent's probe function over the real runner and the fake libcuda/libnccl: rank 0 hands its
// unique id up through the assignment, rank 1 receives it as the coordinator would relay it, and
// a cancelled probe is killed at once and reads not_run.
#include "daemon/probe_adapter.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <future>
#include <thread>

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
  o.root = NCCL_TRIAGE_SOURCE_DIR "/tests/fixtures/dgx-a100";
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
