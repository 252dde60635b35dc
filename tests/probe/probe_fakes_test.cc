// The runner and the child end to end, with the fake libcuda/libnccl: real child processes, real
// TCP between the ranks, the fault knobs of the fake NCCL (NCCL_FAKE_FAULTS, allow-listed through
// ProbeConfig::env_allowlist like any other variable), and the deadlines.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <sstream>
#include <stop_token>
#include <thread>

#include "core/decision.h"
#include "probe/intra_node.h"
#include "probe/pair_local.h"
#include "probe/runner.h"

namespace nccl_triage {
namespace {

using ::testing::AnyOf;
using ::testing::HasSubstr;
using Clock = std::chrono::steady_clock;

struct Fakes {
  std::string nccl = FAKE_NCCL_DIR;
  std::string cuda = FAKE_CUDA_DIR;
};

ProbeRunner MakeRunner(const std::string& faults, const std::string& fixture = "",
                       int timeout_seconds = 20, const std::string& nccl_dir = FAKE_NCCL_DIR,
                       std::optional<std::string> ib_hca = std::nullopt) {
  ProbeConfig c;
  c.nccl_library_paths = {nccl_dir};
  c.cuda_library_paths = {FAKE_CUDA_DIR};
  c.size_bytes = 256 << 10;
  c.iterations = 3;
  c.warmup_iterations = 1;
  c.timeout_seconds = timeout_seconds;
  c.socket_ifname = "lo";
  c.ib_hca = ib_hca;
  c.env_allowlist = {"NCCL_FAKE_FAULTS", "NCCL_FAKE_ROOT"};
  ProbeRunnerOptions o;
  o.child_exe = PROBE_CHILD_EXE;
  o.root = NCCL_TRIAGE_FIXTURE_DIR "/dgx-a100";
  static int counter = 0;
  o.work_dir = (std::filesystem::temp_directory_path() /
                ("probe-fakes-" + std::to_string(getpid()) + "-" + std::to_string(counter++)))
                   .string();
  o.default_library_search = false;
  o.parent_env = {{"PATH", "/usr/bin:/bin"},
                  {"NCCL_FAKE_FAULTS", faults},
                  {"UNRELATED", "must not reach the child"}};
  if (!fixture.empty()) {
    o.parent_env["NCCL_FAKE_ROOT"] = NCCL_TRIAGE_FIXTURE_DIR "/" + fixture;
  }
  return ProbeRunner(c, o);
}

// Records what RunPairLocal tells its observer, and feeds a TerminalProgress as a terminal would.
class RecordingObserver final : public PairLocalObserver {
 public:
  explicit RecordingObserver(PairLocalObserver& next) : next_(next) {}
  void ModeStarted(ProbeMode mode, int index, int count, int timeout) override {
    events.push_back("start " + std::string(ToString(mode)) + " " + std::to_string(index) + "/" +
                     std::to_string(count) + " limit " + std::to_string(timeout));
    next_.ModeStarted(mode, index, count, timeout);
  }
  void ModeFinished(const PairLocalRow& row, double seconds) override {
    events.push_back("done " + std::string(ToString(row.mode)) + " " +
                     std::string(ToString(row.merged.outcome)));
    next_.ModeFinished(row, seconds);
  }
  std::vector<std::string> events;

 private:
  PairLocalObserver& next_;
};

TEST(PairLocalProgress, EachModeShowsARunningLineThenItsOutcomeOnATerminal) {
  std::ostringstream terminal;
  TerminalProgress progress(terminal, /*enabled=*/true, std::chrono::milliseconds(20));
  RecordingObserver observer(progress);
  // The socket probe hangs for a while (the peer never connects) so that the line ticks.
  auto report = RunPairLocal(MakeRunner("no_connect@1", "", 2),
                             {ProbeMode::kSocket, ProbeMode::kIb}, {}, "", &observer);
  ASSERT_EQ(report.rows.size(), 2u);
  EXPECT_THAT(observer.events,
              ::testing::ElementsAre("start socket 1/2 limit 2", "done socket timeout",
                                     "start ib 2/2 limit 2", ::testing::StartsWith("done ib ")));
  const std::string text = terminal.str();
  EXPECT_THAT(text, HasSubstr("\rsocket probe (1/2): 2 ranks running, 0 s (limit 2 s)\x1b[K"));
  EXPECT_THAT(text, HasSubstr("s (limit 2 s)\x1b[K\rsocket probe (1/2): timeout in "));
  EXPECT_THAT(text, HasSubstr("\rib probe (2/2): "));
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 2) << text;
}

TEST(PairLocalProgress, NothingIsWrittenWhenTheStreamIsNotATerminal) {
  std::ostringstream pipe;
  TerminalProgress progress(pipe, /*enabled=*/false, std::chrono::milliseconds(5));
  auto report = RunPairLocal(MakeRunner(""), {ProbeMode::kSocket}, {}, "", &progress);
  ASSERT_EQ(report.rows.size(), 1u);
  EXPECT_EQ(pipe.str(), "");
}

TEST(PairLocalProgress, DoneTextNamesTheOutcomeTheTimeAndTheCauses) {
  PairLocalRow row;
  row.mode = ProbeMode::kIb;
  row.merged.outcome = ProbeOutcome::kFail;
  row.merged.classification = Classification{};
  row.merged.classification->causes.push_back({});
  row.merged.classification->causes.back().cause = "ib.port_state";
  EXPECT_EQ(ProgressDoneText(row, 2, 2, 12.34), "ib probe (2/2): fail in 12.3 s (ib.port_state)");
  EXPECT_EQ(ProgressRunningText(ProbeMode::kSocket, 1, 2, 14, 120),
            "socket probe (1/2): 2 ranks running, 14 s (limit 120 s)");
}

TEST(ProbeWithFakes, SocketPairPassesWithVerifiedDataAndABandwidth) {
  auto ranks = MakeRunner("").RunLocalRanks(ProbeMode::kSocket);
  ASSERT_EQ(ranks.size(), 2u);
  for (const auto& r : ranks) {
    EXPECT_EQ(r.outcome, ProbeOutcome::kPass) << r.detail;
    EXPECT_TRUE(r.data_verified);
    EXPECT_EQ(r.mismatches, 0u);
    EXPECT_EQ(r.transport, "NET/Socket");
    EXPECT_GT(r.busbw_bytes_per_second, 0);
    EXPECT_NEAR(r.busbw_bytes_per_second, r.algbw_bytes_per_second,
                1e-6 * r.algbw_bytes_per_second);
    EXPECT_EQ(r.nccl_version, "2.28.9");
    EXPECT_EQ(r.cuda_driver_version, 13000);
    EXPECT_GT(r.startup_seconds, 0);
    EXPECT_THAT(r.nccl_library, HasSubstr("libnccl.so.2"));
  }
}

TEST(ProbeWithFakes, OnlyAllowListedVariablesReachTheChild) {
  // The fake NCCL's duplicate-GPU check fails if both ranks share a host hash: the pair passing
  // shows the per-rank NCCL_HOSTID arrived; the fault knob below arriving shows the allow-list
  // works; UNRELATED is checked through the environment the runner builds.
  auto runner = MakeRunner("");
  ProbeRequest req;
  auto env = runner.ChildEnvironment(req, "/tmp/x.log");
  for (const auto& e : env) EXPECT_THAT(e, ::testing::Not(HasSubstr("UNRELATED")));
  EXPECT_THAT(env, ::testing::Contains("NCCL_FAKE_FAULTS="));
}

TEST(ProbeWithFakes, IbPairOnAHealthyNodeRunsViaNetIb) {
  auto ranks = MakeRunner("", "dgx-a100").RunLocalRanks(ProbeMode::kIb);
  for (const auto& r : ranks) {
    EXPECT_EQ(r.outcome, ProbeOutcome::kPass) << r.detail;
    EXPECT_EQ(r.transport, "NET/IB");
    EXPECT_EQ(r.gpu_name, "NVIDIA A100-SXM4-80GB");
  }
}

TEST(ProbeWithFakes, IbProbeThatFallsBackToSocketsFailsWithProbeTransport) {
  auto ranks = MakeRunner("ignore_net").RunLocalRanks(ProbeMode::kIb);
  auto row = MergeRankResults(ranks);
  EXPECT_EQ(row.outcome, ProbeOutcome::kFail);
  EXPECT_EQ(row.transport, "NET/Socket");
  ASSERT_TRUE(row.classification.has_value());
  ASSERT_FALSE(row.classification->causes.empty());
  EXPECT_EQ(row.classification->causes.front().cause, "probe.transport");
}

TEST(ProbeWithFakes, HungNcclIsKilledWithItsWholeGroupWithinTheDeadline) {
  auto start = Clock::now();
  auto ranks = MakeRunner("hang_hard@1", "", 2).RunLocalRanks(ProbeMode::kSocket);
  auto took = Clock::now() - start;
  EXPECT_LT(took, std::chrono::milliseconds(4500));
  EXPECT_EQ(ranks[1].outcome, ProbeOutcome::kTimeout);
  EXPECT_THAT(ranks[1].detail, HasSubstr("process group was killed"));
  // Rank 0 waits for its peer in a non-blocking init, aborts at its own deadline and reports.
  EXPECT_EQ(ranks[0].outcome, ProbeOutcome::kTimeout);
  EXPECT_THAT(ranks[0].detail, HasSubstr("communicator aborted"));
}

TEST(ProbeWithFakes, PeerThatNeverConnectsIsATimeoutWithinTheDeadline) {
  auto start = Clock::now();
  auto ranks = MakeRunner("no_connect@1", "", 3).RunLocalRanks(ProbeMode::kSocket);
  EXPECT_LT(Clock::now() - start, std::chrono::milliseconds(5000));
  auto row = MergeRankResults(ranks);
  EXPECT_EQ(row.outcome, ProbeOutcome::kTimeout);
  PairLocalRow socket{ProbeMode::kSocket, row, ranks};
  auto v = DecidePairLocal({socket}, {}, 0.5);
  EXPECT_EQ(v.fault_class, FaultClass::kArchitecture);
}

// A garbage line where the unique id should be was reported as a timeout ("no unique id from rank
// 0 on fd 3 before the deadline"), which the decision table reads as a fabric that does not
// answer. It is a malformed relay line, and says so at once.
TEST(ProbeWithFakes, AGarbageUniqueIdLineIsMalformedNotATimeout) {
  ProbeRunner runner = MakeRunner("", "", 20);
  ProbeRequest req;
  req.mode = ProbeMode::kSocket;
  req.rank = 1;
  req.nranks = 2;
  req.peer = "local";
  auto start = Clock::now();
  auto kid = runner.Start(req);
  ASSERT_TRUE(kid.ok()) << kid.status().message();
  ASSERT_TRUE((*kid)->process().WriteStdin("NCCLID this is not an id\n").ok());
  ProbeResult r = (*kid)->Finish();
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(10));
  EXPECT_EQ(r.outcome, ProbeOutcome::kFail) << r.detail;
  EXPECT_THAT(r.detail, HasSubstr("malformed unique id line"));
  EXPECT_THAT(r.detail, HasSubstr("this is not an id"));
}

TEST(ProbeWithFakes, CrashIsCrashedAndItsPeerIsStoppedSoonAfter) {
  auto start = Clock::now();
  auto ranks = MakeRunner("crash_init@0").RunLocalRanks(ProbeMode::kSocket);
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(8));  // not the 20 s deadline
  EXPECT_EQ(ranks[1].outcome, ProbeOutcome::kFail);
  // Either the runner stopped rank 1, or rank 1 saw its peer's socket close first and failed by
  // itself, as NCCL does ("remote process exited or there was a network error"): a race of a
  // few milliseconds that both orders of events win on a loaded machine.
  EXPECT_THAT(ranks[1].detail,
              AnyOf(HasSubstr("stopped: rank 0"), HasSubstr("remote process exited")));
  EXPECT_EQ(ranks[0].outcome, ProbeOutcome::kCrashed);
  EXPECT_THAT(ranks[0].detail, HasSubstr("SIGSEGV"));
  EXPECT_EQ(MergeRankResults(ranks).outcome, ProbeOutcome::kCrashed);
}

TEST(ProbeWithFakes, GarbageOnStdoutIsAFailedProbe) {
  auto ranks = MakeRunner("garbage@1").RunLocalRanks(ProbeMode::kSocket);
  EXPECT_EQ(ranks[1].outcome, ProbeOutcome::kFail);
  EXPECT_THAT(ranks[1].detail, HasSubstr("garbage result"));
}

TEST(ProbeWithFakes, FloodedStdoutIsBoundedAndSaysSo) {
  auto ranks = MakeRunner("flood_stdout@0").RunLocalRanks(ProbeMode::kSocket);
  EXPECT_EQ(ranks[0].outcome, ProbeOutcome::kFail);
  EXPECT_THAT(ranks[0].detail, HasSubstr("bytes dropped"));
}

TEST(ProbeWithFakes, MissingLibraryIsUnavailable) {
  auto ranks = MakeRunner("", "", 20, "/nonexistent/nccl").RunLocalRanks(ProbeMode::kSocket);
  EXPECT_EQ(ranks[0].outcome, ProbeOutcome::kUnavailable);
  EXPECT_THAT(ranks[0].detail, HasSubstr("libnccl.so.2 not found"));
  EXPECT_EQ(MergeRankResults(ranks).outcome, ProbeOutcome::kUnavailable);
}

TEST(ProbeWithFakes, NoGpuIsUnavailableNotAFault) {
  auto ranks = MakeRunner("no_gpu").RunLocalRanks(ProbeMode::kSocket);
  EXPECT_EQ(ranks[0].outcome, ProbeOutcome::kUnavailable);
  EXPECT_EQ(ranks[0].cuda_result, 100);
}

TEST(ProbeWithFakes, NoGpuNamesItsCauseAndWhereToLook) {
  auto ranks = MakeRunner("no_gpu").RunLocalRanks(ProbeMode::kSocket);
  EXPECT_EQ(ranks[0].unavailable_cause, "probe.no_gpu");
  EXPECT_THAT(ranks[0].detail, HasSubstr("CUDA_ERROR_NO_DEVICE"));
  EXPECT_THAT(ranks[0].detail, HasSubstr("NVIDIA_VISIBLE_DEVICES"));
  ASSERT_TRUE(ranks[0].classification.has_value());  // what the coordinator receives
  ASSERT_FALSE(ranks[0].classification->causes.empty());
  EXPECT_EQ(ranks[0].classification->causes[0].cause, "probe.no_gpu");
  // And the pair's verdict names it.
  ProbeResult merged = MergeRankResults(ranks);
  DecisionInputs in;
  in.socket = merged.outcome;
  in.socket_result = &merged;
  EXPECT_EQ(Decide(in).causes, (std::vector<std::string>{"probe.no_gpu"}));
}

TEST(ProbeWithFakes, TheStubDriverIsNoCudaNotNoGpu) {
  ProbeResult r = MakeRunner("stub_driver").CheckLibraries();
  EXPECT_EQ(r.outcome, ProbeOutcome::kUnavailable);
  EXPECT_EQ(r.unavailable_cause, "probe.no_cuda");
  EXPECT_THAT(r.detail, HasSubstr("CUDA_ERROR_STUB_LIBRARY"));
  EXPECT_THAT(r.detail, HasSubstr("did not mount the driver"));
}

TEST(ProbeWithFakes, MissingNcclNamesProbeNoNccl) {
  auto ranks = MakeRunner("", "", 20, "/nonexistent/nccl").RunLocalRanks(ProbeMode::kSocket);
  EXPECT_EQ(ranks[0].unavailable_cause, "probe.no_nccl");
}

TEST(ProbeWithFakes, TheLibraryCheckLoadsNcclAndCountsTheGpusWithoutACollective) {
  ProbeResult r = MakeRunner("").CheckLibraries();
  EXPECT_EQ(r.outcome, ProbeOutcome::kPass) << r.detail;
  EXPECT_FALSE(r.nccl_version.empty());
  EXPECT_THAT(r.nccl_library, HasSubstr("libnccl.so.2"));
  EXPECT_THAT(r.detail, HasSubstr("CUDA device(s)"));
  EXPECT_TRUE(r.transport.empty());  // no communicator, no channel
}

TEST(ProbeWithFakes, TheLibraryCheckReportsNcclsVersionEvenWithoutTheDriver) {
  ProbeConfig c = MakeRunner("").config();
  c.cuda_library_paths = {"/nonexistent/cuda"};
  ProbeRunner runner(c, MakeRunner("").options());
  ProbeResult r = runner.CheckLibraries();
  EXPECT_EQ(r.outcome, ProbeOutcome::kUnavailable);
  EXPECT_EQ(r.unavailable_cause, "probe.no_cuda");
  EXPECT_THAT(r.detail, HasSubstr("libcuda.so.1 not found"));
  EXPECT_FALSE(r.nccl_version.empty());
}

TEST(ProbeWithFakes, TheLibraryCheckSaysWhyProbesCannotRun) {
  EXPECT_EQ(MakeRunner("no_gpu").CheckLibraries().unavailable_cause, "probe.no_gpu");
  EXPECT_EQ(MakeRunner("", "", 20, "/nonexistent/nccl").CheckLibraries().unavailable_cause,
            "probe.no_nccl");
}

TEST(ProbeWithFakes, PeerDyingMidCollectiveIsCrashedAndItsPeerSaysRemoteError) {
  auto ranks = MakeRunner("die_allreduce@1").RunLocalRanks(ProbeMode::kSocket);
  EXPECT_EQ(ranks[1].outcome, ProbeOutcome::kCrashed);
  EXPECT_THAT(ranks[1].detail, HasSubstr("SIGKILL"));
  EXPECT_EQ(ranks[0].outcome, ProbeOutcome::kFail);
  EXPECT_EQ(ranks[0].nccl_result, 6);
  ASSERT_TRUE(ranks[0].classification.has_value());
  ASSERT_FALSE(ranks[0].classification->causes.empty()) << ranks[0].detail;
  EXPECT_EQ(ranks[0].classification->causes.front().cause, "peer.exited");
  EXPECT_EQ(MergeRankResults(ranks).outcome, ProbeOutcome::kCrashed);
}

TEST(ProbeWithFakes, WrongDataFromThePeerFailsWithProbeData) {
  auto ranks = MakeRunner("wrong_data@1").RunLocalRanks(ProbeMode::kSocket);
  for (const auto& r : ranks) {
    EXPECT_EQ(r.outcome, ProbeOutcome::kFail);
    EXPECT_FALSE(r.data_verified);
    EXPECT_EQ(r.mismatches, 1u);
    ASSERT_TRUE(r.classification.has_value());
    ASSERT_FALSE(r.classification->causes.empty());
    EXPECT_EQ(r.classification->causes.front().cause, "probe.data");
  }
}

TEST(ProbeWithFakes, OldNcclWithoutInitRankConfigUsesTheBlockingPath) {
  auto ranks = MakeRunner("", "", 20, FAKE_NCCL_OLD_DIR).RunLocalRanks(ProbeMode::kSocket);
  for (const auto& r : ranks) {
    EXPECT_EQ(r.outcome, ProbeOutcome::kPass) << r.detail;
    EXPECT_EQ(r.nccl_version, "2.12.12");
    EXPECT_THAT(r.detail, HasSubstr("blocking ncclCommInitRank"));
    EXPECT_EQ(r.last_error, "");
  }
}

TEST(ProbeWithFakes, OldNcclForcedOntoAMissingIbSaysNetworkNotFound) {
  auto ranks = MakeRunner("", "", 20, FAKE_NCCL_OLD_DIR).RunLocalRanks(ProbeMode::kIb);
  auto row = MergeRankResults(ranks);
  EXPECT_EQ(row.outcome, ProbeOutcome::kFail);
  EXPECT_EQ(row.nccl_result, 5);
  ASSERT_TRUE(row.classification.has_value());
  ASSERT_FALSE(row.classification->causes.empty());
  EXPECT_EQ(row.classification->causes.front().cause, "ib.hca_present");
}

// ---------------------------------------------------------------- intra-node probe
// dgx-a100's fixture lists eight GPUs; the fake libcuda shows them, each rank takes one by bus id.

const std::vector<std::string> kTwoA100s = {"0000:07:00.0", "0000:0f:00.0"};

TEST(IntraNodeWithFakes, TwoGpusTalkViaP2PCumemWithABusBandwidth) {
  auto report = RunIntraNode(MakeRunner("", "dgx-a100"), kTwoA100s, "test");
  ASSERT_EQ(report.runs.size(), 1u);  // the default passed: no variant needed
  const auto& run = report.runs[0];
  ASSERT_EQ(run.ranks.size(), 2u);
  for (size_t i = 0; i < run.ranks.size(); ++i) {
    const auto& r = run.ranks[i];
    EXPECT_EQ(r.outcome, ProbeOutcome::kPass) << r.detail;
    EXPECT_EQ(r.mode, ProbeMode::kIntraNode);
    EXPECT_EQ(r.nranks, 2);
    EXPECT_EQ(r.gpu_bus_id, kTwoA100s[i]);
    EXPECT_EQ(r.transport, "P2P/CUMEM");
    EXPECT_TRUE(r.data_verified);
    EXPECT_GT(r.busbw_bytes_per_second, 0);
  }
  EXPECT_EQ(report.finding.check, "probe.intra_node");
  EXPECT_EQ(report.finding.status, CheckStatus::kPass) << report.finding.message;
  EXPECT_THAT(report.finding.message, HasSubstr("2 GPUs: all-reduce busbw"));
  EXPECT_THAT(report.finding.message, HasSubstr("via P2P/CUMEM"));
}

TEST(IntraNodeWithFakes, OneGpuRunsAOneRankCommunicatorWithNothingToConnect) {
  auto report = RunIntraNode(MakeRunner("", "dgx-a100"), {"0000:47:00.0"}, "test");
  ASSERT_EQ(report.runs.size(), 1u);
  const auto& r = report.runs[0].merged;
  EXPECT_EQ(r.outcome, ProbeOutcome::kPass) << r.detail;
  EXPECT_EQ(r.nranks, 1);
  EXPECT_EQ(r.gpu_bus_id, "0000:47:00.0");
  EXPECT_EQ(r.transport, "");  // one rank: no channel is connected
  EXPECT_EQ(r.busbw_bytes_per_second, 0);
  EXPECT_GT(r.algbw_bytes_per_second, 0);
  EXPECT_EQ(report.finding.status, CheckStatus::kPass);
  EXPECT_THAT(report.finding.message, HasSubstr("one GPU (0000:47:00.0)"));
}

TEST(IntraNodeWithFakes, HungP2PIsNamedAsP2PBecauseTheRunWithoutP2PPasses) {
  auto report = RunIntraNode(MakeRunner("p2p_hang", "dgx-a100", 4), kTwoA100s, "test");
  ASSERT_EQ(report.runs.size(), 2u);
  EXPECT_EQ(report.runs[0].merged.outcome, ProbeOutcome::kTimeout) << report.runs[0].merged.detail;
  EXPECT_EQ(report.runs[1].variant.name, "p2p-off");
  EXPECT_EQ(report.runs[1].merged.outcome, ProbeOutcome::kPass) << report.runs[1].merged.detail;
  EXPECT_EQ(report.runs[1].merged.transport, "SHM/direct/direct");
  EXPECT_EQ(report.finding.status, CheckStatus::kFail);
  EXPECT_EQ(report.finding.fault_class, FaultClass::kArchitecture);
  EXPECT_THAT(report.finding.message, HasSubstr("P2P between the GPUs is broken"));
  EXPECT_THAT(report.finding.message, HasSubstr("NCCL_P2P_LEVEL=LOC (via SHM/direct/direct)"));
}

// The agent stopping (SIGTERM) while its intra-node probe hangs: the ranks are killed at once,
// no further variant starts, and nothing is concluded from the cancelled run.
TEST(IntraNodeWithFakes, AStopDuringAHungRunKillsItsRanksAtOnceAndRunsNoOtherVariant) {
  std::stop_source stop;
  std::thread stopper([&stop] {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    stop.request_stop();
  });
  const auto started = std::chrono::steady_clock::now();
  auto report =
      RunIntraNode(MakeRunner("p2p_hang", "dgx-a100", 20), kTwoA100s, "test", stop.get_token());
  const auto took = std::chrono::steady_clock::now() - started;
  stopper.join();
  EXPECT_LT(took, std::chrono::seconds(5));  // not the 20 s limit, nor a second variant
  ASSERT_EQ(report.runs.size(), 1u);
  EXPECT_EQ(report.runs[0].merged.outcome, ProbeOutcome::kNotRun);
  for (const auto& r : report.runs[0].ranks) EXPECT_EQ(r.detail, "cancelled");
  EXPECT_NE(report.finding.status, CheckStatus::kFail) << report.finding.message;
  EXPECT_NE(report.finding.status, CheckStatus::kPass) << report.finding.message;
}

TEST(IntraNodeWithFakes, GpusWithoutPeerAccessPassOverShmWithAWarning) {
  auto report = RunIntraNode(MakeRunner("no_p2p", "dgx-a100"), kTwoA100s, "test");
  ASSERT_EQ(report.runs.size(), 1u);
  EXPECT_EQ(report.runs[0].merged.transport, "SHM/direct/direct");
  EXPECT_EQ(report.finding.status, CheckStatus::kWarn);
  EXPECT_THAT(report.finding.message, HasSubstr("not P2P"));
}

TEST(IntraNodeWithFakes, FullShmIsNamedAsShmWhenOnlyTheRunWithoutShmPasses) {
  auto report = RunIntraNode(MakeRunner("no_p2p,shm_full", "dgx-a100"), kTwoA100s, "test");
  ASSERT_EQ(report.runs.size(), 3u);
  EXPECT_EQ(report.runs[0].merged.outcome, ProbeOutcome::kFail);
  ASSERT_TRUE(report.runs[0].merged.classification.has_value());
  EXPECT_EQ(report.runs[0].merged.classification->causes.front().cause, "shm.size");
  EXPECT_EQ(report.runs[2].variant.name, "shm-off");
  EXPECT_EQ(report.runs[2].merged.transport, "NET/IB");  // no P2P, no SHM: the HCA in loopback
  EXPECT_EQ(report.finding.status, CheckStatus::kFail);
  EXPECT_THAT(report.finding.message, HasSubstr("SHM between the ranks is broken"));
}

TEST(IntraNodeWithFakes, TwoRanksOnOneGpuAreADuplicateAsInNccl) {
  auto report = RunIntraNode(MakeRunner("", "dgx-a100"), {"0000:07:00.0", "0000:07:00.0"}, "t");
  ASSERT_FALSE(report.runs.empty());
  EXPECT_EQ(report.runs[0].merged.outcome, ProbeOutcome::kFail);
  EXPECT_THAT(report.runs[0].merged.last_error, HasSubstr("Duplicate GPU detected"));
}

}  // namespace
}  // namespace nccl_triage
