// Pure parts of the probe: version decoding, library search order, the child's environment, the
// default-route parser, unique-id relay encoding, argument parsing, and result typing.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "probe/child.h"
#include "probe/environment.h"
#include "probe/intra_node.h"
#include "probe/libraries.h"
#include "probe/pair_local.h"
#include "probe/runner.h"

namespace nccl_triage {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

std::string TempDir(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() /
             ("probe-unit-" + name + "-" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

TEST(DecodeNcclVersion, ReadsBothEncodings) {
  EXPECT_EQ(DecodeNcclVersion(2804), "2.8.4");
  EXPECT_EQ(DecodeNcclVersion(20906), "2.9.6");
  EXPECT_EQ(DecodeNcclVersion(21212), "2.12.12");
  EXPECT_EQ(DecodeNcclVersion(22809), "2.28.9");
}

TEST(LibraryCandidates, ConfiguredFirstThenSonameThenPipWheelUnderRoot) {
  std::string root = TempDir("libs");
  std::string wheel = root + "/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib";
  std::filesystem::create_directories(wheel);
  std::ofstream(wheel + "/libnccl.so.2") << "";
  std::string configured_dir = root + "/mine";
  std::filesystem::create_directories(configured_dir);
  LibrarySearch s{{configured_dir, "/explicit/libnccl.so.2"}, true, root};
  auto c = LibraryCandidates(s, kNcclSoname);
  ASSERT_GE(c.size(), 4u);
  EXPECT_EQ(c[0], configured_dir + "/libnccl.so.2");
  EXPECT_EQ(c[1], "/explicit/libnccl.so.2");
  EXPECT_EQ(c[2], "libnccl.so.2");
  EXPECT_THAT(c, Contains(wheel + "/libnccl.so.2"));
}

TEST(LibraryCandidates, OnlyConfiguredWhenDefaultSearchIsOff) {
  LibrarySearch s{{"/x/libcuda.so.1"}, false, "/"};
  EXPECT_THAT(LibraryCandidates(s, kCudaSoname), ElementsAre("/x/libcuda.so.1"));
}

TEST(LoadLibrary, MissingLibraryNamesWhatWasTried) {
  LibrarySearch s{{"/nonexistent/libnccl.so.2"}, false, "/"};
  auto lib = LoadLibrary(s, kNcclSoname);
  ASSERT_FALSE(lib.ok());
  EXPECT_THAT(lib.status().message(), HasSubstr("/nonexistent/libnccl.so.2"));
}

TEST(ModeEnvironment, SocketForcesSocketsAndDisablesIb) {
  ProbeEnvOptions o;
  o.mode = ProbeMode::kSocket;
  o.log_path = "/tmp/x.log";
  o.socket_ifname = "eth0";
  o.ib_hca = "mlx5_0";  // ignored in socket mode
  auto env = ModeEnvironment(o);
  EXPECT_THAT(env, Contains(std::pair<std::string, std::string>("NCCL_NET", "Socket")));
  EXPECT_THAT(env, Contains(std::pair<std::string, std::string>("NCCL_IB_DISABLE", "1")));
  EXPECT_THAT(env, Contains(std::pair<std::string, std::string>("NCCL_SOCKET_IFNAME", "eth0")));
  EXPECT_THAT(env, Contains(std::pair<std::string, std::string>("NCCL_NVLS_ENABLE", "0")));
  EXPECT_THAT(env, Contains(std::pair<std::string, std::string>("NCCL_DEBUG_FILE", "/tmp/x.log")));
  EXPECT_THAT(env, Contains(std::pair<std::string, std::string>("NCCL_ALGO", "Ring")));
  for (auto& [k, v] : env) EXPECT_NE(k, "NCCL_IB_HCA");
}

TEST(ModeEnvironment, IbForcesTheIbNetAndTheConfiguredHca) {
  ProbeEnvOptions o;
  o.mode = ProbeMode::kIb;
  o.ib_hca = "=mlx5_3";
  o.hostid = "h1";
  auto env = ModeEnvironment(o);
  EXPECT_THAT(env, Contains(std::pair<std::string, std::string>("NCCL_NET", "IB")));
  EXPECT_THAT(env, Contains(std::pair<std::string, std::string>("NCCL_IB_HCA", "=mlx5_3")));
  EXPECT_THAT(env, Contains(std::pair<std::string, std::string>("NCCL_HOSTID", "h1")));
}

TEST(ModeEnvironment, IntraNodeLeavesTheNetworkToNcclAndSetsOnlyItsVariant) {
  ProbeEnvOptions o;
  o.mode = ProbeMode::kIntraNode;
  o.ib_hca = "=mlx5_3";  // not the intra-node probe's business
  auto plain = ModeEnvironment(o);
  for (auto& [k, v] : plain) {
    EXPECT_NE(k, "NCCL_NET");
    EXPECT_NE(k, "NCCL_IB_DISABLE");
    EXPECT_NE(k, "NCCL_IB_HCA");
    EXPECT_NE(k, "NCCL_HOSTID");
    EXPECT_NE(k, "NCCL_P2P_LEVEL");
    EXPECT_NE(k, "NCCL_SHM_DISABLE");
  }
  o.p2p_level = "LOC";
  o.shm_disable = true;
  auto variant = ModeEnvironment(o);
  EXPECT_THAT(variant, Contains(std::pair<std::string, std::string>("NCCL_P2P_LEVEL", "LOC")));
  EXPECT_THAT(variant, Contains(std::pair<std::string, std::string>("NCCL_SHM_DISABLE", "1")));
}

TEST(BuildChildEnvironment, StartsFromScratchAndTheModeWinsOverTheAllowList) {
  std::map<std::string, std::string> parent = {
      {"PATH", "/usr/bin"},          {"HOME", "/root"},     {"NCCL_NET", "Socket"},
      {"NCCL_IB_TIMEOUT", "22"},     {"SECRET_TOKEN", "x"}, {"LD_LIBRARY_PATH", "/opt/lib"},
      {"NCCL_SOCKET_NTHREADS", "4"},
  };
  ProbeEnvOptions o;
  o.mode = ProbeMode::kIb;
  auto env = BuildChildEnvironment(o, parent, {"NCCL_IB_TIMEOUT", "NCCL_NET", "ABSENT"});
  EXPECT_THAT(env, Contains("PATH=/usr/bin"));
  EXPECT_THAT(env, Contains("LD_LIBRARY_PATH=/opt/lib"));
  EXPECT_THAT(env, Contains("NCCL_IB_TIMEOUT=22"));
  EXPECT_THAT(env, Contains("NCCL_NET=IB"));  // not the allow-listed parent value
  EXPECT_THAT(env, Not(Contains("HOME=/root")));
  EXPECT_THAT(env, Not(Contains("SECRET_TOKEN=x")));
  EXPECT_THAT(env, Not(Contains("NCCL_SOCKET_NTHREADS=4")));
}

// The loader refuses other names; a command-line --env-allow must not pass them either.
TEST(BuildChildEnvironment, PassesOnlyNcclNamesOfTheAllowList) {
  std::map<std::string, std::string> parent = {{"AWS_SECRET_ACCESS_KEY", "hunter2"},
                                               {"LD_PRELOAD", "/tmp/evil.so"},
                                               {"NCCL_IB_TIMEOUT", "22"}};
  auto env = BuildChildEnvironment(ProbeEnvOptions{}, parent,
                                   {"AWS_SECRET_ACCESS_KEY", "LD_PRELOAD", "NCCL_IB_TIMEOUT"});
  EXPECT_THAT(env, Contains("NCCL_IB_TIMEOUT=22"));
  EXPECT_THAT(env, Not(Contains("AWS_SECRET_ACCESS_KEY=hunter2")));
  EXPECT_THAT(env, Not(Contains("LD_PRELOAD=/tmp/evil.so")));
}

// NCCL_TRIAGE_TOKEN is NCCL_* by its letters and passed the allow-list into the probe child.
TEST(BuildChildEnvironment, NeverPassesTheAgentsTokenEvenWhenAllowListed) {
  std::map<std::string, std::string> parent = {{"NCCL_TRIAGE_TOKEN", "s3cret"},
                                               {"NCCL_IB_TIMEOUT", "22"}};
  auto env =
      BuildChildEnvironment(ProbeEnvOptions{}, parent, {"NCCL_TRIAGE_TOKEN", "NCCL_IB_TIMEOUT"});
  EXPECT_THAT(env, Contains("NCCL_IB_TIMEOUT=22"));
  EXPECT_THAT(env, Not(Contains("NCCL_TRIAGE_TOKEN=s3cret")));
}

// The agent used a fixed $TMPDIR/nccl-triage-probes: another user could make it first, and the
// root probe child wrote into a folder someone else owned. A private fresh folder now, and a
// work directory that others can write to (or that is not a writable directory) is refused.
TEST(PrepareWorkDir, RefusesADirectoryOthersCanWriteToAFileAndAnUnwritablePlace) {
  auto made = MakePrivateWorkDir({{"TMPDIR", std::filesystem::temp_directory_path().string()}});
  ASSERT_TRUE(made.ok()) << made.status().message();
  const std::string dir = *made;
  struct stat st {};
  ASSERT_EQ(::stat(dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_TRUE(PrepareWorkDir(dir).ok());
  EXPECT_NE(*MakePrivateWorkDir({}), dir);

  ::chmod(dir.c_str(), 0777);
  Status shared = PrepareWorkDir(dir);
  EXPECT_FALSE(shared.ok());
  EXPECT_THAT(shared.message(), HasSubstr("writable by other users"));
  if (::geteuid() == 0) {  // only root can give a folder away
    ::chmod(dir.c_str(), 0700);
    ASSERT_EQ(::chown(dir.c_str(), 65534, 65534), 0);
    EXPECT_THAT(PrepareWorkDir(dir).message(), HasSubstr("belongs to uid 65534"));
  }
  std::filesystem::remove_all(dir);

  const std::string file = dir + "-file";
  std::ofstream(file) << "x";
  EXPECT_THAT(PrepareWorkDir(file).message(), HasSubstr("is not a directory"));
  std::filesystem::remove(file);
  // /proc: a directory of root's that not even root can create a file in.
  if (::geteuid() == 0) {
    EXPECT_THAT(PrepareWorkDir("/proc").message(), HasSubstr("not writable"));
  }
}

TEST(DefaultRouteInterface, PicksTheLowestMetricDefaultRouteThatIsUp) {
  const char* route =
      "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"
      "eth1\t000A0A0A\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n"
      "eth9\t00000000\t010200C0\t0002\t0\t0\t0\t00000000\t0\t0\t0\n"  // not up
      "ens5\t00000000\t010200C0\t0003\t0\t0\t200\t00000000\t0\t0\t0\n"
      "eth0\t00000000\t010200C0\t0003\t0\t0\t100\t00000000\t0\t0\t0\n";
  EXPECT_EQ(DefaultRouteInterface(route), "eth0");
  EXPECT_EQ(DefaultRouteInterface("Iface\tDestination\n"), std::nullopt);
  EXPECT_EQ(DefaultRouteInterface("garbage\n\x01\x02 zz\n"), std::nullopt);
}

TEST(UniqueId, RoundTripsThroughTheRelayLine) {
  abi::ncclUniqueId id{};
  for (int i = 0; i < abi::kNcclUniqueIdBytes; ++i) id.internal[i] = static_cast<char>(i * 7);
  std::string hex = EncodeUniqueId(id);
  EXPECT_EQ(hex.size(), 256u);
  auto back = DecodeUniqueId(std::string(kUniqueIdLinePrefix) + hex);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(std::memcmp(back->internal, id.internal, sizeof(id.internal)), 0);
  EXPECT_FALSE(DecodeUniqueId(hex.substr(2)).has_value());
  EXPECT_FALSE(DecodeUniqueId(std::string(256, 'z')).has_value());
}

TEST(ParseChildArgs, RejectsARankOutsideTheCommunicator) {
  EXPECT_FALSE(ParseChildArgs({"--mode", "ib", "--rank", "2", "--nranks", "2"}).ok());
  EXPECT_FALSE(ParseChildArgs({"--mode", "tcp"}).ok());
  auto ok = ParseChildArgs({"--mode", "ib", "--rank", "1", "--size", "1M", "--nccl-lib", "/a"});
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->mode, ProbeMode::kIb);
  EXPECT_EQ(ok->size_bytes, 1u << 20);
  EXPECT_THAT(ok->nccl_library_paths, ElementsAre("/a"));
}

ProbeRequest Req(ProbeMode mode = ProbeMode::kSocket, int rank = 0) {
  ProbeRequest r;
  r.mode = mode;
  r.rank = rank;
  r.peer = "local";
  return r;
}

std::string ResultLine(ProbeOutcome outcome, ProbeMode mode = ProbeMode::kSocket) {
  ProbeResult r;
  r.mode = mode;
  r.outcome = outcome;
  r.detail = "verified 4 elements";
  r.data_verified = outcome == ProbeOutcome::kPass;
  r.busbw_bytes_per_second = 1e9;
  return ToJson(r).dump();
}

Classification Transports(std::vector<std::string> t) {
  Classification c;
  c.fault_class = FaultClass::kHealthy;
  c.transports = std::move(t);
  return c;
}

TEST(InterpretChild, ASignalIsACrashWithItsName) {
  SubprocessResult p;
  p.kind = ExitKind::kSignaled;
  p.signal = SIGSEGV;
  auto r = InterpretChild(Req(), p, std::nullopt, 10, "/x.log");
  EXPECT_EQ(r.outcome, ProbeOutcome::kCrashed);
  EXPECT_THAT(r.detail, HasSubstr("SIGSEGV"));
}

TEST(InterpretChild, TheDeadlineIsATimeout) {
  SubprocessResult p;
  p.kind = ExitKind::kTimedOut;
  auto r = InterpretChild(Req(), p, std::nullopt, 7, "/x.log");
  EXPECT_EQ(r.outcome, ProbeOutcome::kTimeout);
  EXPECT_THAT(r.detail, HasSubstr("7 s"));
}

TEST(InterpretChild, NoJsonIsAGarbageResultNotAnError) {
  SubprocessResult p;
  p.kind = ExitKind::kExited;
  p.out = "\x01\x02 not json {\"outcome\": \n";
  auto r = InterpretChild(Req(), p, std::nullopt, 10, "/x.log");
  EXPECT_EQ(r.outcome, ProbeOutcome::kFail);
  EXPECT_THAT(r.detail, HasSubstr("garbage result"));
}

TEST(InterpretChild, ASpawnFailureIsUnavailable) {
  SubprocessResult p;
  p.kind = ExitKind::kSpawnFailed;
  p.error = "No such file or directory";
  EXPECT_EQ(InterpretChild(Req(), p, std::nullopt, 10, "").outcome, ProbeOutcome::kUnavailable);
}

TEST(ParseChildOutput, TakesTheLastJsonResultLine) {
  std::string out = "NCCL_TRIAGE_UNIQUE_ID abcd\nnoise {\n" + ResultLine(ProbeOutcome::kFail) +
                    "\n{\"not\":\"a result\"}\n" + ResultLine(ProbeOutcome::kPass) + "\n";
  auto r = ParseChildOutput(out);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->outcome, ProbeOutcome::kPass);
}

TEST(ApplyLogRules, APassKeepsOnlyWhatNcclsDiagnosticsFound) {
  SubprocessResult p;
  p.kind = ExitKind::kExited;
  p.out = ResultLine(ProbeOutcome::kPass, ProbeMode::kIb) + "\n";
  Classification log = Transports({"NET/IB"});
  ClassifiedCause diag, warn;
  diag.cause = "ib.nic_mismatch";
  diag.diagnostics = true;
  warn.cause = "ib.verbs_call";  // a WARN of the run that NCCL recovered from: not kept
  log.causes = {diag, warn};
  auto r = InterpretChild(Req(ProbeMode::kIb), p, log, 10, "/x.log");
  EXPECT_EQ(r.outcome, ProbeOutcome::kPass);
  ASSERT_TRUE(r.classification.has_value());
  ASSERT_EQ(r.classification->causes.size(), 1u);
  EXPECT_EQ(r.classification->causes.front().cause, "ib.nic_mismatch");
  // Without a diagnostics cause a pass carries no classification, as before.
  log.causes = {warn};
  EXPECT_FALSE(InterpretChild(Req(ProbeMode::kIb), p, log, 10, "/x.log").classification);
}

TEST(WantsNcclDiagnostics, OnlyForNccl231AndNewerAndNotOverAnExplicitSetting) {
  EXPECT_TRUE(WantsNcclDiagnostics(true, 23100, nullptr));
  EXPECT_TRUE(WantsNcclDiagnostics(true, 23206, nullptr));
  EXPECT_FALSE(WantsNcclDiagnostics(true, 22809, nullptr));  // 2.28.9 has no report
  EXPECT_FALSE(WantsNcclDiagnostics(true, 0, nullptr));      // version unknown
  EXPECT_FALSE(WantsNcclDiagnostics(false, 23206, nullptr));
  EXPECT_FALSE(WantsNcclDiagnostics(true, 23206, "0"));  // probe.env_allowlist passed it on
}

TEST(ParseChildArgs, ReadsTheDiagnosticsSwitch) {
  auto o = ParseChildArgs({"--mode", "ib", "--nccl-diagnostics"});
  ASSERT_TRUE(o.ok()) << o.status().message();
  EXPECT_TRUE(o->nccl_diagnostics);
  EXPECT_FALSE(ParseChildArgs({"--mode", "ib"})->nccl_diagnostics);
}

TEST(ApplyLogRules, AnIbProbeThatRanOverSocketsFailsWithProbeTransport) {
  SubprocessResult p;
  p.kind = ExitKind::kExited;
  p.out = ResultLine(ProbeOutcome::kPass, ProbeMode::kIb) + "\n";
  auto r = InterpretChild(Req(ProbeMode::kIb), p, Transports({"NET/Socket"}), 10, "/x.log");
  EXPECT_EQ(r.outcome, ProbeOutcome::kFail);
  EXPECT_EQ(r.transport, "NET/Socket");
  ASSERT_TRUE(r.classification.has_value());
  EXPECT_EQ(r.classification->causes.front().cause, "probe.transport");
  EXPECT_EQ(r.classification->fault_class, FaultClass::kIbResource);
}

TEST(ApplyLogRules, APassNeedsAChannelLineToConfirmTheTransport) {
  SubprocessResult p;
  p.kind = ExitKind::kExited;
  p.out = ResultLine(ProbeOutcome::kPass) + "\n";
  EXPECT_EQ(InterpretChild(Req(), p, std::nullopt, 10, "/x.log").outcome, ProbeOutcome::kFail);
  auto ok = InterpretChild(Req(), p, Transports({"NET/Socket"}), 10, "/x.log");
  EXPECT_EQ(ok.outcome, ProbeOutcome::kPass);
  EXPECT_FALSE(ok.classification.has_value());
}

TEST(ApplyLogRules, TheIntraNodeProbeReportsTheP2PKindNcclChoseInFull) {
  SubprocessResult p;
  p.kind = ExitKind::kExited;
  p.out = ResultLine(ProbeOutcome::kPass, ProbeMode::kIntraNode) + "\n";
  Classification log = Transports({"SHM", "P2P"});
  log.local_transports = {"SHM/direct/direct", "P2P/CUMEM/read"};
  auto r = InterpretChild(Req(ProbeMode::kIntraNode), p, log, 10, "/x.log");
  EXPECT_EQ(r.outcome, ProbeOutcome::kPass);
  EXPECT_EQ(r.transport, "P2P/CUMEM/read");
  // One rank connects nothing: no channel line is no failure here.
  auto alone = InterpretChild(Req(ProbeMode::kIntraNode), p, Transports({}), 10, "/x.log");
  EXPECT_EQ(alone.outcome, ProbeOutcome::kPass);
  EXPECT_EQ(alone.transport, "");
}

IntraNodeRun VariantRun(size_t variant_index, ProbeOutcome outcome, std::string transport = "") {
  std::vector<IntraNodeRun> runs;
  IntraNodeRun run;
  for (size_t i = 0; i <= variant_index; ++i) {
    auto v = NextIntraVariant(runs, 2);
    if (!v) break;
    run.variant = *v;
    IntraNodeRun failed;
    failed.variant = *v;
    failed.merged.outcome = ProbeOutcome::kFail;
    runs.push_back(failed);
  }
  run.merged.outcome = outcome;
  run.merged.transport = std::move(transport);
  run.merged.detail = outcome == ProbeOutcome::kPass ? "verified" : "ncclAllReduce: timeout";
  return run;
}

TEST(NextIntraVariant, DefaultThenWithoutP2PThenWithoutShmThenWithoutBothThenStop) {
  std::vector<IntraNodeRun> runs;
  std::vector<std::string> names;
  while (auto v = NextIntraVariant(runs, 2)) {
    names.push_back(v->name + "|" + v->EnvText());
    IntraNodeRun r;
    r.variant = *v;
    r.merged.outcome = ProbeOutcome::kTimeout;
    runs.push_back(r);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"default|", "p2p-off|NCCL_P2P_LEVEL=LOC",
                                             "shm-off|NCCL_SHM_DISABLE=1",
                                             "p2p-shm-off|NCCL_P2P_LEVEL=LOC NCCL_SHM_DISABLE=1"}));
  // A pass, one GPU, or a default that could not run stops at once.
  std::vector<IntraNodeRun> passed = {VariantRun(0, ProbeOutcome::kPass, "P2P/CUMEM")};
  EXPECT_FALSE(NextIntraVariant(passed, 2).has_value());
  std::vector<IntraNodeRun> failed = {VariantRun(0, ProbeOutcome::kFail)};
  EXPECT_FALSE(NextIntraVariant(failed, 1).has_value());
  std::vector<IntraNodeRun> unavailable = {VariantRun(0, ProbeOutcome::kUnavailable)};
  EXPECT_FALSE(NextIntraVariant(unavailable, 2).has_value());
}

TEST(JudgeIntraNode, NamesThePathByTheVariantThatPassed) {
  const std::vector<std::string> gpus = {"0000:07:00.0", "0000:0f:00.0"};
  Finding p2p = JudgeIntraNode(
      {VariantRun(0, ProbeOutcome::kTimeout), VariantRun(1, ProbeOutcome::kPass, "SHM")}, gpus);
  EXPECT_EQ(p2p.status, CheckStatus::kFail);
  EXPECT_THAT(p2p.message, HasSubstr("P2P between the GPUs is broken"));
  Finding shm =
      JudgeIntraNode({VariantRun(0, ProbeOutcome::kFail), VariantRun(1, ProbeOutcome::kFail),
                      VariantRun(2, ProbeOutcome::kPass, "P2P/IPC")},
                     gpus);
  EXPECT_THAT(shm.message, HasSubstr("SHM between the ranks is broken"));
  Finding both = JudgeIntraNode(
      {VariantRun(0, ProbeOutcome::kFail), VariantRun(1, ProbeOutcome::kFail),
       VariantRun(2, ProbeOutcome::kFail), VariantRun(3, ProbeOutcome::kPass, "NET/Socket")},
      gpus);
  EXPECT_THAT(both.message, HasSubstr("P2P and SHM are both broken"));
  Finding none =
      JudgeIntraNode({VariantRun(0, ProbeOutcome::kCrashed), VariantRun(1, ProbeOutcome::kFail),
                      VariantRun(2, ProbeOutcome::kFail), VariantRun(3, ProbeOutcome::kFail)},
                     gpus);
  EXPECT_EQ(none.status, CheckStatus::kFail);
  EXPECT_THAT(none.message, HasSubstr("with P2P and SHM disabled"));
  EXPECT_EQ(none.evidence.size(), 5u);  // the GPUs, then one line per run
}

TEST(JudgeIntraNode, NothingRunIsASkipWithTheReasonNotAFailure) {
  Finding none = JudgeIntraNode({}, {});
  EXPECT_EQ(none.status, CheckStatus::kSkip);
  EXPECT_EQ(none.message, "no idle GPU to probe");
  IntraNodeRun missing;
  missing.merged.outcome = ProbeOutcome::kUnavailable;
  missing.merged.detail = "libnccl.so.2 not found";
  Finding skip = JudgeIntraNode({missing}, {"0000:07:00.0"});
  EXPECT_EQ(skip.status, CheckStatus::kSkip);
  EXPECT_THAT(skip.message, HasSubstr("libnccl.so.2 not found"));
  EXPECT_EQ(ExitCodeFor(skip), 3);
}

TEST(ExpectedLocalBandwidth, TheSlowerRankSumOfItsPortsOrTheBestPortWhenUnknown) {
  const std::map<std::string, double> rates = {
      {"mlx5_0:1", 200}, {"mlx5_1:1", 200}, {"mlx5_2:1", 100}};
  PairLocalRow row;
  row.mode = ProbeMode::kIb;
  row.ranks.resize(2);
  row.ranks[0].ib_ports = {"mlx5_0:1", "mlx5_1:1"};
  row.ranks[1].rank = 1;
  row.ranks[1].ib_ports = {"mlx5_2:1"};
  for (auto& r : row.ranks) r.gdrdma = true;
  auto e = ExpectedLocalBandwidth(row, rates);
  ASSERT_TRUE(e.has_value());
  EXPECT_DOUBLE_EQ(e->bytes_per_second, 100e9 / 8);
  EXPECT_EQ(e->basis, "rank 1: mlx5_2:1 100 Gb/s; GPUDirect RDMA assumed and used");

  row.ranks[0].ib_ports = {};
  row.ranks[1].ib_ports = {"mlx5_9:1"};  // not a port of this node
  row.ranks[1].gdrdma = false;
  e = ExpectedLocalBandwidth(row, rates);
  ASSERT_TRUE(e.has_value());
  EXPECT_DOUBLE_EQ(e->bytes_per_second, 200e9 / 8);
  EXPECT_THAT(e->basis, HasSubstr("best port 200 Gb/s (ports used not known)"));
  EXPECT_THAT(e->basis, HasSubstr("not used (no /GDRDMA channel)"));

  EXPECT_FALSE(ExpectedLocalBandwidth(row, {}).has_value());
}

TEST(DecidePairLocal, ComparesALargeEnoughIbProbeWithThePortsAndNotASmallOne) {
  PairLocalRow row;
  row.mode = ProbeMode::kIb;
  row.merged.outcome = ProbeOutcome::kPass;
  row.merged.transport = "NET/IB";
  row.merged.busbw_bytes_per_second = 5e9;
  row.merged.size_bytes = 64ull << 20;
  row.ranks = {row.merged, row.merged};
  for (auto& r : row.ranks) r.ib_ports = {"mlx5_0:1"};
  const std::map<std::string, double> rates = {{"mlx5_0:1", 200}};
  auto slow = DecidePairLocal({row}, {}, 0.5, rates);
  EXPECT_EQ(slow.fault_class, FaultClass::kIbResource);
  EXPECT_EQ(slow.causes, (std::vector<std::string>{"ib.bandwidth"}));
  EXPECT_THAT(slow.reason, HasSubstr("mlx5_0:1 200 Gb/s"));
  EXPECT_EQ(DecidePairLocal({row}, {}, 0.5).fault_class, FaultClass::kHealthy);  // no rates
  row.merged.size_bytes = 1 << 20;
  EXPECT_EQ(DecidePairLocal({row}, {}, 0.5, rates).fault_class, FaultClass::kHealthy);
}

TEST(ApplyLogRules, WrongDataIsProbeData) {
  ProbeResult r;
  r.outcome = ProbeOutcome::kFail;
  r.mismatches = 3;
  r.detail = "all-reduce returned wrong data";
  ApplyLogRules(r, Transports({"NET/Socket"}));
  ASSERT_TRUE(r.classification.has_value());
  EXPECT_EQ(r.classification->causes.front().cause, "probe.data");
}

TEST(ExitCodeFor, HealthyZeroFaultOneUnknownThree) {
  PairVerdict v;
  v.basis = Basis::kProbes;
  v.fault_class = FaultClass::kHealthy;
  EXPECT_EQ(ExitCodeFor(v), 0);
  v.fault_class = FaultClass::kIbResource;
  EXPECT_EQ(ExitCodeFor(v), 1);
  v.fault_class = FaultClass::kArchitecture;
  EXPECT_EQ(ExitCodeFor(v), 1);
  v.fault_class = FaultClass::kUnknown;
  EXPECT_EQ(ExitCodeFor(v), 3);
}

// With no NCCL (or no CUDA) on the node both probes were unavailable, the verdict came from the
// node checks alone, and `probe --pair-local` said healthy with exit 0; the README promises 3.
TEST(ExitCodeFor, HealthyOnlyByTheNodeChecksIsNothingToConclude) {
  PairVerdict v;
  v.fault_class = FaultClass::kHealthy;
  v.basis = Basis::kChecks;
  EXPECT_EQ(ExitCodeFor(v), 3);
  v.fault_class = FaultClass::kIbResource;
  EXPECT_EQ(ExitCodeFor(v), 1);
}

}  // namespace
}  // namespace nccl_triage

namespace nccl_triage {
namespace {

// Logs the probe wrote on an H200 with NCCL 2.28.9 (tests/gpu/run-gpu.sh): the non-blocking init
// reports the forced-IB failure through the async path (group.cc ... [Async thread]).
TEST(ClassifyLogFile, ReadsTheRealProbeLogsOfNccl2289) {
  std::string dir = NCCL_TRIAGE_SOURCE_DIR "/tests/probe/testdata/";
  auto socket = ClassifyLogFile(dir + "h200-nccl-2.28.9-socket-rank0.log");
  ASSERT_TRUE(socket.has_value());
  EXPECT_THAT(socket->transports, ElementsAre("NET/Socket"));
  auto ib = ClassifyLogFile(dir + "h200-nccl-2.28.9-ib-rank0.log");
  ASSERT_TRUE(ib.has_value());
  EXPECT_EQ(ib->fault_class, FaultClass::kIbResource);
  ASSERT_FALSE(ib->causes.empty());
  EXPECT_EQ(ib->causes.front().cause, "ib.hca_present");
  EXPECT_FALSE(ClassifyLogFile(dir + "absent.log").has_value());
}

// NCCL 2.32 prints its diagnostics report (NCCL_RUN_DIAGNOSTICS=1) on the child's own output,
// not into NCCL_DEBUG_FILE: the probe reads those lines too, and nothing else of that output.
TEST(ClassifyLogFile, ReadsNcclsDiagnosticsReportFromTheChildsOutput) {
  const std::string log = std::string(NCCL_TRIAGE_SOURCE_DIR) +
                          "/tests/probe/testdata/h200-nccl-2.28.9-socket-rank0.log";
  const std::string output =
      "vm:809 NCCL DIAG === NCCL Diagnostics ===\n"
      "vm:809 NCCL DIAG [FAIL] p2p: only 52/56 GPU-to-GPU peer accesses passed verification\n"
      "{\"outcome\": \"pass\", \"detail\": \"vm:1 NCCL DIAG [FAIL] not a line of NCCL\"}\n";
  auto with = ClassifyLogFile(log, output);
  ASSERT_TRUE(with.has_value());
  EXPECT_TRUE(std::any_of(with->causes.begin(), with->causes.end(),
                          [](const ClassifiedCause& c) { return c.diagnostics; }))
      << with->reason;
  auto without = ClassifyLogFile(log, "some text on stdout\n{\"outcome\": \"pass\"}\n");
  ASSERT_TRUE(without.has_value());
  EXPECT_TRUE(std::none_of(without->causes.begin(), without->causes.end(),
                           [](const ClassifiedCause& c) { return c.diagnostics; }));
}

}  // namespace
}  // namespace nccl_triage

namespace nccl_triage {
namespace {

PairLocalRow Row(ProbeMode mode, ProbeOutcome outcome) {
  PairLocalRow row;
  row.mode = mode;
  row.merged.outcome = outcome;
  row.merged.detail = std::string(ToString(outcome));
  return row;
}

RailProbeRow RailRow(int index, FaultClass fault_class, std::string skipped = "") {
  RailProbeRow r;
  r.rail.index = index;
  r.rail.device = "mlx5_" + std::to_string(index);
  r.rail.port = 1;
  r.rail.gpu = index;
  r.skipped = std::move(skipped);
  r.row = Row(ProbeMode::kIb,
              fault_class == FaultClass::kHealthy ? ProbeOutcome::kPass : ProbeOutcome::kFail);
  r.verdict.fault_class = fault_class;
  r.verdict.basis = Basis::kProbes;
  r.verdict.reason = "socket pass, IB " + r.row.merged.detail;
  return r;
}

TEST(DecideRails, TheFirstFailingRailGivesTheVerdictAndIsNamed) {
  const PairLocalRow socket = Row(ProbeMode::kSocket, ProbeOutcome::kPass);
  std::vector<RailProbeRow> rails = {RailRow(0, FaultClass::kHealthy),
                                     RailRow(1, FaultClass::kHealthy, "gpu busy (pid 7 python3)"),
                                     RailRow(5, FaultClass::kIbResource)};
  PairVerdict v = DecideRails(&socket, rails, {}, 0.5);
  EXPECT_EQ(v.fault_class, FaultClass::kIbResource);
  EXPECT_EQ(v.reason.rfind("rail 5 (mlx5_5/1, GPU 5): ", 0), 0u) << v.reason;
}

TEST(DecideRails, EveryRailPassingIsHealthyUnlessANodeCheckFails) {
  const PairLocalRow socket = Row(ProbeMode::kSocket, ProbeOutcome::kPass);
  std::vector<RailProbeRow> rails = {RailRow(0, FaultClass::kHealthy),
                                     RailRow(1, FaultClass::kHealthy)};
  PairVerdict v = DecideRails(&socket, rails, {}, 0.5);
  EXPECT_EQ(v.fault_class, FaultClass::kHealthy);
  EXPECT_THAT(v.reason, HasSubstr("2 rail(s) probed, each passed"));
  Finding rate;
  rate.check = "ib.port_rate";
  rate.status = CheckStatus::kFail;
  v = DecideRails(&socket, rails, {rate}, 0.5);
  EXPECT_NE(v.fault_class, FaultClass::kHealthy);
  EXPECT_THAT(v.reason, HasSubstr("ib.port_rate failed"));
}

TEST(DecideRails, AFailedSocketProbeIsArchitectureWhateverTheRails) {
  const PairLocalRow socket = Row(ProbeMode::kSocket, ProbeOutcome::kFail);
  PairVerdict v = DecideRails(&socket, {RailRow(0, FaultClass::kIbResource)}, {}, 0.5);
  EXPECT_EQ(v.fault_class, FaultClass::kArchitecture);
}

TEST(DecideRails, EveryRailSkippedSaysSoAndConcludesNothingFromProbes) {
  const PairLocalRow socket = Row(ProbeMode::kSocket, ProbeOutcome::kPass);
  PairVerdict v =
      DecideRails(&socket, {RailRow(0, FaultClass::kHealthy, "gpu busy (pid 7 python3)")}, {}, 0.5);
  EXPECT_THAT(v.reason,
              HasSubstr("no rail probed (rail 0 (mlx5_0/1, GPU 0) skipped: gpu busy (pid 7 "
                        "python3))"));
}

TEST(DecideRails, ARailsVerdictLeavesOutFindingsAboutOtherPorts) {
  // Through RunPairLocal's rule: a finding naming mlx5_2/1 only is not a cause on mlx5_5.
  const PairLocalRow socket = Row(ProbeMode::kSocket, ProbeOutcome::kPass);
  Finding rate;
  rate.check = "ib.port_rate";
  rate.status = CheckStatus::kFail;
  rate.fault_class = FaultClass::kIbResource;
  rate.message = "mlx5_2/1 at 100 Gb/sec (2X HDR) vs 200 Gb/s";
  EXPECT_EQ(FindingsForRail({rate}, RailRow(5, FaultClass::kHealthy).rail).size(), 0u);
  EXPECT_EQ(FindingsForRail({rate}, RailRow(2, FaultClass::kHealthy).rail).size(), 1u);
  rate.message = "no port named";
  EXPECT_EQ(FindingsForRail({rate}, RailRow(5, FaultClass::kHealthy).rail).size(), 1u);
  EXPECT_EQ(PortsNamed("a/b mlx5_2/1, mlx5_10/2x 3/4 x1/22"),
            (std::vector<std::string>{"mlx5_2/1", "x1/22"}));
}

TEST(RailName, ARailTheNodeDoesNotListIsItsPort) {
  Rail r;
  r.index = -1;
  r.device = "mlx5_0";
  r.port = 1;
  EXPECT_EQ(RailName(r), "mlx5_0/1");
}

}  // namespace
}  // namespace nccl_triage
