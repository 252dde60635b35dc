// `nccl-triage probe --pair-local` through the real binary, with the fake libcuda/libnccl driven
// by fixture roots of real machines: the verdict of the decision table and its causes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "probe/subprocess.h"

namespace nccl_triage {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;

struct CliRun {
  int exit_code = -1;
  std::string out;
  std::string err;
  nlohmann::json json;
};

CliRun RunCli(const std::string& fixture, std::vector<std::string> extra,
              const std::string& faults = "", const std::string& command = "--pair-local") {
  SubprocessOptions o;
  std::string root = NCCL_TRIAGE_FIXTURE_DIR "/" + fixture;
  o.argv = {NCCL_TRIAGE_BINARY_DIR "/nccl-triage",
            "probe",
            command,
            "--format",
            "json",
            "--size",
            "256K",
            "--iters",
            "3",
            "--warmup",
            "1",
            "--timeout",
            "20",
            "--socket-ifname",
            "lo",
            "--nccl-lib",
            FAKE_NCCL_DIR,
            "--cuda-lib",
            FAKE_CUDA_DIR,
            "--only-configured-libs",
            "--env-allow",
            "NCCL_FAKE_ROOT",
            "--env-allow",
            "NCCL_FAKE_FAULTS",
            "--root",
            root};
  o.argv.insert(o.argv.end(), extra.begin(), extra.end());
  o.env = {"PATH=/usr/bin:/bin", "NCCL_FAKE_ROOT=" + root,
           "TMPDIR=" + std::filesystem::temp_directory_path().string()};
  if (!faults.empty()) o.env.push_back("NCCL_FAKE_FAULTS=" + faults);
  o.timeout = std::chrono::seconds(60);
  auto r = RunSubprocess(o);
  CliRun run;
  run.exit_code = r.kind == ExitKind::kExited ? r.exit_code : -1;
  run.out = r.out;
  run.err = r.err;
  try {
    run.json = nlohmann::json::parse(r.out);
  } catch (const std::exception&) {
  }
  return run;
}

std::vector<std::string> Causes(const CliRun& r) {
  std::vector<std::string> out;
  for (const auto& c : r.json["verdict"]["causes"]) out.push_back(c["cause"]);
  return out;
}

CliRun RunIntraCli(std::vector<std::string> extra, const std::string& faults = "") {
  std::vector<std::string> args = {"--timeout", "5"};
  args.insert(args.end(), extra.begin(), extra.end());
  return RunCli("dgx-a100", args, faults, "--intra-node");
}

TEST(ProbeIntraNodeCli, TwoGpusByIndexPassViaP2PAndExitZero) {
  auto r = RunIntraCli({"--gpus", "0,1"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.json["schema"], "nccl-triage/probe-intra/v1");
  EXPECT_EQ(r.json["gpus"], (nlohmann::json{"0000:07:00.0", "0000:0f:00.0"}));
  EXPECT_EQ(r.json["finding"]["check"], "probe.intra_node");
  EXPECT_EQ(r.json["finding"]["status"], "pass");
  EXPECT_EQ(r.json["runs"][0]["result"]["transport"], "P2P/CUMEM");
  EXPECT_EQ(r.json["runs"][0]["ranks"][1]["gpu_bus_id"], "0000:0f:00.0");
}

TEST(ProbeIntraNodeCli, BrokenP2PExitsOneAndTheTableNamesP2P) {
  auto r = RunIntraCli({"--gpus", "0000:87:00.0,0000:90:00.0", "--format", "table"}, "p2p_hang");
  ASSERT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("probe.intra_node: fail"));
  EXPECT_THAT(r.out, HasSubstr("P2P between the GPUs is broken"));
  EXPECT_THAT(r.out, HasSubstr("p2p-off"));
}

TEST(ProbeIntraNodeCli, BadGpuListsAndMixedModesAreUsageErrors) {
  for (std::vector<std::string> bad : {std::vector<std::string>{"--gpus", "8"},
                                       {"--gpus", "0,0"},
                                       {"--gpus", "0000:aa:00.0"},
                                       {"--gpus", "0,"},
                                       {"--mode", "ib"},
                                       {"--pair-local"}}) {
    auto r = RunIntraCli(bad);
    EXPECT_EQ(r.exit_code, 2) << bad[0] << " " << r.out << r.err;
    EXPECT_THAT(r.err, HasSubstr("nccl-triage probe: "));
  }
}

TEST(ProbePairLocalCli, HealthyDgxA100IsHealthyAndExitsZero) {
  auto r = RunCli("dgx-a100", {});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.json["schema"], "nccl-triage/probe-pair/v1");
  EXPECT_EQ(r.json["verdict"]["class"], "healthy");
  EXPECT_EQ(r.json["rows"][0]["result"]["transport"], "NET/Socket");
  EXPECT_EQ(r.json["rows"][1]["result"]["transport"], "NET/IB");
  EXPECT_EQ(r.json["rows"][1]["result"]["data_verified"], true);
}

// 32 MiB is the size from which busbw is compared with the ports (kBandwidthBoundBytes): mlx5_3:1
// negotiated 200 Gb/s, 25 GB/s expected. The fake times the all-reduces on its device clock, by
// its model of the port (CUDA events), so the healthy port shows its rate whatever the load on
// the host, and passes.
TEST(ProbePairLocalCli, TheIbBusbwIsTheModelledRateOfThePortUsedNotTheHostsClock) {
  auto r = RunCli("dgx-a100",
                  {"--mode", "ib", "--ib-hca", "=mlx5_3:1", "--size", "32M", "--iters", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.json["rows"][0]["result"]["outcome"], "pass");
  EXPECT_EQ(r.json["expected_ib"]["busbw_bytes_per_second"], 25e9);
  EXPECT_THAT(r.json["expected_ib"]["basis"].get<std::string>(), HasSubstr("mlx5_3:1 200 Gb/s"));
  EXPECT_NEAR(r.json["rows"][0]["result"]["busbw_bytes_per_second"].get<double>(), 25e9, 0.1e9)
      << r.out;
  EXPECT_EQ(r.json["verdict"]["class"], "healthy");
  EXPECT_EQ(r.json["verdict"]["degraded"], false);

  // Below the size bound the probe measures latency: no expectation, no bandwidth verdict.
  auto small = RunCli("dgx-a100", {"--mode", "ib", "--ib-hca", "=mlx5_3:1"});
  EXPECT_EQ(small.exit_code, 0) << small.out << small.err;
  EXPECT_TRUE(small.json["expected_ib"].is_null());
  EXPECT_EQ(small.json["verdict"]["class"], "healthy");
}

TEST(ProbePairLocalCli, PortDownOnTheProbedRailIsIbResource) {
  // mlx5_3's port is down; the other seven would carry NCCL, so the probe pins the rail.
  auto r = RunCli("port-down", {"--ib-hca", "=mlx5_3"});
  ASSERT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_EQ(r.json["verdict"]["class"], "ib_resource");
  EXPECT_EQ(r.json["rows"][0]["result"]["outcome"], "pass");
  EXPECT_EQ(r.json["rows"][1]["result"]["outcome"], "fail");
  // Every HCA is present (the node's ib.hca_present passes): the log's `Failed to initialize any
  // NET plugin` does not make it a cause; the port's state does.
  auto causes = Causes(r);
  EXPECT_THAT(causes, Contains("ib.port_state")) << r.out;
  EXPECT_THAT(causes, Not(Contains("ib.hca_present"))) << r.out;
}

// rail-faults: mlx5_5 fails memory registration, which sysfs cannot show; NCCL meets it only when
// NCCL_IB_HCA lets it use that HCA.
TEST(ProbePairLocalCli, AnHcaWhoseRegistrationFailsFailsOnlySelectionsThatIncludeIt) {
  auto bad = RunCli("rail-faults", {"--ib-hca", "=mlx5_5:1"});
  ASSERT_EQ(bad.exit_code, 1) << bad.out << bad.err;
  EXPECT_EQ(bad.json["verdict"]["class"], "ib_resource");
  EXPECT_EQ(bad.json["rows"][0]["result"]["outcome"], "pass");
  EXPECT_EQ(bad.json["rows"][1]["result"]["outcome"], "fail");
  EXPECT_THAT(bad.json["rows"][1]["result"]["last_error"].get<std::string>(),
              HasSubstr("ibv_reg_mr failed with error Input/output error"));

  // Several HCAs: NCCL spreads its channels over all of them, so the bad one is in use.
  auto with = RunCli("rail-faults", {"--ib-hca", "mlx5_4,mlx5_5"});
  EXPECT_EQ(with.exit_code, 1) << with.out << with.err;

  // A good rail passes (the verdict still names mlx5_2's rate, a failing node check).
  auto good = RunCli("rail-faults", {"--ib-hca", "=mlx5_4:1"});
  EXPECT_EQ(good.json["rows"][1]["result"]["outcome"], "pass") << good.out << good.err;
  EXPECT_EQ(good.json["rows"][1]["result"]["transport"], "NET/IB");
}

TEST(ProbePairLocalCli, AnIbHcaPortThatDoesNotExistFindsNoDevice) {
  // mlx5_4 has only port 1: "=mlx5_4:2" filters every port out, as NCCL's matchIfList does.
  auto r = RunCli("dgx-a100", {"--ib-hca", "=mlx5_4:2"});
  ASSERT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_EQ(r.json["rows"][1]["result"]["outcome"], "fail");
  EXPECT_THAT(r.json["rows"][1]["result"]["last_error"].get<std::string>(),
              HasSubstr("Failed to initialize any NET plugin"));
}

TEST(ProbePairLocalCli, ProbesPassingOnAnotherRailDoNotHideAFailingPortCheck) {
  // Unpinned, NCCL uses the seven active ports and both probes pass; mlx5_3 is still down.
  auto r = RunCli("port-down", {});
  ASSERT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_EQ(r.json["rows"][0]["result"]["outcome"], "pass");
  EXPECT_EQ(r.json["rows"][1]["result"]["outcome"], "pass");
  EXPECT_EQ(r.json["verdict"]["class"], "ib_resource");
  EXPECT_EQ(r.json["verdict"]["basis"], "probes");
  EXPECT_THAT(r.json["verdict"]["reason"].get<std::string>(),
              HasSubstr("probes pass, node checks fail"));
  EXPECT_THAT(Causes(r), Contains("ib.port_state"));
  EXPECT_THAT(r.json["failing_checks"], Contains("ib.port_state"));

  auto table = RunCli("port-down", {"--format", "table"});
  EXPECT_EQ(table.exit_code, 1);
  EXPECT_THAT(table.out, HasSubstr("probes pass, node checks fail"));
  EXPECT_THAT(table.out, HasSubstr("ib.port_state"));
}

TEST(ProbePairLocalCli, GdrdmaChannelsWithPeermemLoadedGiveNoWarning) {
  auto r = RunCli("dgx-a100", {});  // nvidia_peermem is loaded there
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.json["rows"][1]["result"]["gdrdma"], true);
  EXPECT_EQ(r.json["rows"][1]["result"]["ib_ports"], nlohmann::json::array({"mlx5_0:1"}));
  EXPECT_TRUE(r.json["warnings"].empty()) << r.out;
}

TEST(ProbePairLocalCli, NoGdrdmaAlthoughPeermemIsLoadedIsAWarningWithTheLogLines) {
  auto r = RunCli("dgx-a100", {}, "no_gdr");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;  // works, slower: the verdict stays healthy
  EXPECT_EQ(r.json["verdict"]["class"], "healthy");
  EXPECT_EQ(r.json["rows"][1]["result"]["gdrdma"], false);
  ASSERT_EQ(r.json["warnings"].size(), 1u) << r.out;
  const std::string w = r.json["warnings"][0];
  EXPECT_THAT(w, HasSubstr("without GPUDirect RDMA"));
  EXPECT_THAT(w, HasSubstr("NCCL_NET_GDR_LEVEL"));
  EXPECT_THAT(w, HasSubstr("ACS"));
  EXPECT_THAT(w, HasSubstr("NET/IB : Using [0]mlx5_0:1/IB"));
  EXPECT_THAT(w, HasSubstr("via NET/IB/0"));

  auto none = RunCli("no-peermem", {}, "");  // the module is missing: ib.peermem warns instead
  EXPECT_TRUE(none.json["warnings"].empty()) << none.out;
}

TEST(ProbePairLocalCli, Memlock64KiBIsIbResourceCausedByMemlock) {
  auto r = RunCli("memlock-64k", {});
  ASSERT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_EQ(r.json["verdict"]["class"], "ib_resource");
  EXPECT_EQ(Causes(r).front(), "limits.memlock");
  EXPECT_THAT(r.json["rows"][1]["result"]["last_error"].get<std::string>(),
              HasSubstr("ibv_reg_mr"));
}

TEST(ProbePairLocalCli, PodWithoutDevInfinibandIsIbResourceCausedByPassthrough) {
  auto r = RunCli("no-dev-ib", {});
  ASSERT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_EQ(r.json["verdict"]["class"], "ib_resource");
  EXPECT_EQ(Causes(r).front(), "container.rdma_devices");
}

TEST(ProbePairLocalCli, TablePrintsBothRowsAndTheVerdict) {
  auto r = RunCli("memlock-64k", {"--format", "table"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.out, HasSubstr("socket  pass"));
  EXPECT_THAT(r.out, HasSubstr("ib      fail"));
  EXPECT_THAT(r.out, HasSubstr("verdict: ib_resource"));
  EXPECT_THAT(r.out, HasSubstr("limits.memlock"));
}

TEST(ProbePairLocalCli, TheConfigFileSetsTheRailTheLibrariesAndTheAllowList) {
  auto path = std::filesystem::temp_directory_path() /
              ("probe-cli-config-" + std::to_string(getpid()) + ".yaml");
  std::ofstream(path) << "probe:\n"
                      << "  ib_hca: \"=mlx5_3\"\n"
                      << "  nccl_library_paths: [\"" << FAKE_NCCL_DIR << "\"]\n"
                      << "  cuda_library_paths: [\"" << FAKE_CUDA_DIR << "\"]\n"
                      << "  env_allowlist: [NCCL_FAKE_ROOT]\n";
  SubprocessOptions o;
  std::string root = NCCL_TRIAGE_FIXTURE_DIR "/port-down";
  o.argv = {NCCL_TRIAGE_BINARY_DIR "/nccl-triage",
            "probe",
            "--pair-local",
            "--format",
            "json",
            "--size",
            "256K",
            "--socket-ifname",
            "lo",
            "--only-configured-libs",
            "--config",
            path.string(),
            "--root",
            root};
  o.env = {"PATH=/usr/bin:/bin", "NCCL_FAKE_ROOT=" + root,
           "TMPDIR=" + std::filesystem::temp_directory_path().string()};
  o.timeout = std::chrono::seconds(60);
  auto r = RunSubprocess(o);
  std::filesystem::remove(path);
  ASSERT_EQ(r.kind, ExitKind::kExited);
  ASSERT_EQ(r.exit_code, 1) << r.out << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["verdict"]["class"], "ib_resource");
  EXPECT_EQ(j["rows"][1]["result"]["outcome"], "fail");
}

// A configuration file with the probe keys `lines` (removed at the end of the test).
struct TempConfig {
  explicit TempConfig(const std::string& lines)
      : path(std::filesystem::temp_directory_path() /
             ("probe-cli-rails-" + std::to_string(getpid()) + "-" +
              ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".yaml")) {
    std::ofstream(path) << "probe:\n" << lines;
  }
  ~TempConfig() { std::filesystem::remove(path); }
  std::filesystem::path path;
};

// The fake NCCL moves data over TCP loopback, far below what a port carries; the bandwidth
// judgement is off so that the rails' verdicts are about their outcomes.
const char* kNoBandwidthFloor = "  busbw_min_fraction: 0\n";

TEST(ProbePairLocalRails, EachRailRunsOnItsOwnHcaAndGpuAndTheFailingRailIsNamed) {
  TempConfig config(std::string(kNoBandwidthFloor) + "  rails: all\n");
  auto r = RunCli("rail-faults", {"--config", config.path.string()});
  ASSERT_EQ(r.exit_code, 1) << r.out << r.err;
  ASSERT_EQ(r.json["rails"].size(), 8u) << r.out;
  EXPECT_EQ(r.json["rows"].size(), 1u);  // the socket row; IB ran per rail
  const auto& bad = r.json["rails"][5];
  EXPECT_EQ(bad["device"], "mlx5_5");
  EXPECT_EQ(bad["ib_hca"], "=mlx5_5:1");
  EXPECT_EQ(bad["outcome"], "fail");
  EXPECT_EQ(bad["verdict"]["class"], "ib_resource");
  EXPECT_THAT(bad["result"]["last_error"].get<std::string>(), HasSubstr("ibv_reg_mr"));
  // Its causes are its own: mlx5_2's slow port (ib.port_rate) does not explain mlx5_5.
  std::vector<std::string> causes;
  for (const auto& c : bad["verdict"]["causes"]) causes.push_back(c["cause"]);
  EXPECT_THAT(causes, Contains("ib.mr_register")) << bad.dump();
  EXPECT_THAT(causes, Not(Contains("ib.port_rate"))) << bad.dump();
  // Both ranks ran on GPU 5, found by its bus id.
  EXPECT_EQ(bad["gpu_bdf"], "0000:90:00.0");
  EXPECT_EQ(bad["result"]["gpu_bus_id"], "0000:90:00.0");
  for (int k : {0, 1, 2, 3, 4, 6, 7}) {
    EXPECT_EQ(r.json["rails"][k]["outcome"], "pass") << k << r.out;
    EXPECT_EQ(r.json["rails"][k]["result"]["transport"], "NET/IB") << k;
  }
  EXPECT_EQ(r.json["rails"][2]["expected_busbw_bytes_per_second"], 12.5e9);  // 100 Gb/s
  EXPECT_EQ(r.json["rails"][3]["expected_busbw_bytes_per_second"], 25e9);    // 200 Gb/s
  EXPECT_EQ(r.json["verdict"]["class"], "ib_resource");
  EXPECT_THAT(r.json["verdict"]["reason"].get<std::string>(),
              HasSubstr("rail 5 (mlx5_5/1, GPU 5): "));
}

TEST(ProbePairLocalRails, ARailWhoseGpuIsBusyIsSkippedAndNeverUsed) {
  TempConfig config(kNoBandwidthFloor);
  // ib-busy: pid 31337 holds /dev/nvidia0, pid 31338 /dev/nvidia1.
  auto r = RunCli("ib-busy", {"--config", config.path.string(), "--rails", "0,1,2"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  ASSERT_EQ(r.json["rails"].size(), 3u);
  EXPECT_EQ(r.json["rails"][0]["outcome"], "skipped");
  EXPECT_EQ(r.json["rails"][0]["skipped"], "gpu busy (python3 pid 31337 holds /dev/nvidia0)");
  EXPECT_FALSE(r.json["rails"][0].contains("result"));
  EXPECT_EQ(r.json["rails"][1]["skipped"],
            "gpu busy (pt_main_thread pid 31338 holds /dev/nvidia1)");
  EXPECT_EQ(r.json["rails"][2]["outcome"], "pass");
  EXPECT_EQ(r.json["verdict"]["class"], "healthy");
}

TEST(ProbePairLocalRails, AnHcaTheNodeLacksFailsAsIbResourceNamingIt) {
  // As on a GPU machine without InfiniBand: the rail is probed and NCCL finds no device.
  auto r = RunCli("cpu-only", {"--rails", "mlx5_0"});
  ASSERT_EQ(r.exit_code, 1) << r.out << r.err;
  ASSERT_EQ(r.json["rails"].size(), 1u);
  EXPECT_EQ(r.json["rails"][0]["ib_hca"], "=mlx5_0:1");
  EXPECT_EQ(r.json["rails"][0]["outcome"], "fail");
  EXPECT_EQ(r.json["verdict"]["class"], "ib_resource");
  EXPECT_THAT(r.json["verdict"]["reason"].get<std::string>(), HasSubstr("mlx5_0/1"));
}

TEST(ProbePairLocalRails, ABadRailSelectionIsAUsageError) {
  EXPECT_EQ(RunCli("dgx-a100", {"--rails", "0"}).exit_code, 2);  // zero rails per sweep
  // A lone number is a count; a rail number is an item of a list.
  auto r = RunCli("dgx-a100", {"--rails", "3,9"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("this node has no rail 9"));
}

TEST(ProbePairLocalCli, ABadConfigFileIsAUsageError) {
  auto r = RunCli("dgx-a100", {"--config", "/nonexistent/nccl-triage.yaml"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("nccl-triage probe:"));
}

// A --work-dir naming a file said healthy with exit 0, and one the probes cannot write to gave
// `architecture`, blaming IB over sockets. Both are usage errors now, with one line.
TEST(ProbePairLocalCli, AWorkDirThatIsAFileOrUnwritableIsAUsageError) {
  const std::string file = std::filesystem::temp_directory_path() /
                           ("work-dir-file-" + std::to_string(::getpid()));
  std::ofstream(file) << "x";
  auto r = RunCli("dgx-a100", {"--work-dir", file});
  std::filesystem::remove(file);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("is not a directory"));
  if (::geteuid() == 0) {  // as another user, /proc is not even owned by them: refused as well
    r = RunCli("dgx-a100", {"--work-dir", "/proc"});
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_THAT(r.err, HasSubstr("--work-dir: work directory /proc"));
  }
}

// Without NCCL both probes are unavailable and only the node checks speak: nothing to conclude.
TEST(ProbePairLocalCli, NoNcclFoundIsNothingToConcludeAndExitsThree) {
  // RunCli always offers the fake NCCL: this run offers only a path where there is none.
  SubprocessOptions o;
  std::string root = NCCL_TRIAGE_FIXTURE_DIR "/dgx-a100";
  o.argv = {NCCL_TRIAGE_BINARY_DIR "/nccl-triage", "probe", "--pair-local", "--format", "json",
            "--timeout", "20", "--socket-ifname", "lo", "--nccl-lib", "/nonexistent/libnccl.so.2",
            "--cuda-lib", FAKE_CUDA_DIR, "--only-configured-libs", "--root", root};
  o.env = {"PATH=/usr/bin:/bin", "TMPDIR=" + std::filesystem::temp_directory_path().string()};
  o.timeout = std::chrono::seconds(60);
  auto run = RunSubprocess(o);
  EXPECT_EQ(run.exit_code, 3) << run.out << run.err;
  auto j = nlohmann::json::parse(run.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << run.out;
  EXPECT_EQ(j["verdict"]["basis"], "checks");
}

TEST(ProbePairLocalCli, UsageErrorsExitTwo) {
  EXPECT_EQ(RunCli("dgx-a100", {"--mode", "infiniband"}).exit_code, 2);
  EXPECT_EQ(RunCli("dgx-a100", {"--size", "lots"}).exit_code, 2);
}

}  // namespace
}  // namespace nccl_triage
