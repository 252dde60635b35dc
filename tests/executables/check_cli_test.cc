// `nccl-triage check` as a user runs it: the verdict on each fixture root, the JSON contract,
// snapshot round trips, the live run on this machine and the exit-2 contract for bad input.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include "support/text_file.h"
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

const std::string kBinary = std::string(NCCL_TRIAGE_BINARY_DIR) + "/nccl-triage";
const std::string kFixtures = std::string(NCCL_TRIAGE_FIXTURE_DIR) + "/";

struct Result {
  int exit_code = -1;
  std::string out;
  std::string err;
  double seconds = 0;
};


std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "/check_cli_" + std::to_string(getpid()) + "_" + name;
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

Result Check(const std::vector<std::string>& args) {
  const std::string out_path = TempPath("stdout"), err_path = TempPath("stderr");
  Result r;
  const auto start = std::chrono::steady_clock::now();
  pid_t pid = fork();
  if (pid == 0) {
    int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int in = open("/dev/null", O_RDONLY);
    dup2(out, STDOUT_FILENO);
    dup2(err, STDERR_FILENO);
    dup2(in, STDIN_FILENO);
    std::vector<std::string> argv = {kBinary, "check"};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<char*> cargs;
    for (auto& a : argv) cargs.push_back(a.data());
    cargs.push_back(nullptr);
    execv(cargs[0], cargs.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = nccl_triage::testing::ReadTextFile(out_path);
  r.err = nccl_triage::testing::ReadTextFile(err_path);
  std::remove(out_path.c_str());
  std::remove(err_path.c_str());
  return r;
}

nlohmann::json Json(const Result& r) {
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << r.out << r.err;
  return j;
}

std::set<std::string> WithStatus(const nlohmann::json& report, const std::string& status) {
  std::set<std::string> ids;
  for (const auto& f : report["findings"]) {
    if (f["status"] == status) ids.insert(f["check"].get<std::string>());
  }
  return ids;
}

std::string StatusOf(const nlohmann::json& report, const std::string& id) {
  for (const auto& f : report["findings"]) {
    if (f["check"] == id) return f["status"];
  }
  return "absent";
}

int Lines(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

struct FixtureCase {
  std::string fixture;
  std::string config;  // YAML, empty for none
  std::string klass;
  int exit_code;
  std::set<std::string> failing;  // exactly these checks fail
};

void PrintTo(const FixtureCase& c, std::ostream* os) { *os << c.fixture; }

class FixtureVerdict : public ::testing::TestWithParam<FixtureCase> {};

TEST_P(FixtureVerdict, ClassExitCodeAndFailingChecks) {
  const FixtureCase& c = GetParam();
  std::vector<std::string> args = {"--root", kFixtures + c.fixture, "--format", "json"};
  std::string config_path;
  if (!c.config.empty()) {
    config_path = TempPath(c.fixture + ".yaml");
    WriteFile(config_path, c.config);
    args.push_back("--config");
    args.push_back(config_path);
  }
  Result r = Check(args);
  if (!config_path.empty()) std::remove(config_path.c_str());
  EXPECT_EQ(r.exit_code, c.exit_code) << r.err;
  EXPECT_EQ(r.err, "");
  nlohmann::json j = Json(r);
  EXPECT_EQ(j["class"], c.klass);
  EXPECT_EQ(WithStatus(j, "fail"), c.failing) << r.out;
}

const std::string kPkeyConfig = "expect:\n  pkey: 0x0001\n";

INSTANTIATE_TEST_SUITE_P(
    Fixtures, FixtureVerdict,
    ::testing::Values(
        FixtureCase{"dgx-a100", "", "healthy", 0, {}},
        FixtureCase{"dgx-a100", kPkeyConfig, "healthy", 0, {}},
        FixtureCase{"dgx-h100", "", "healthy", 0, {}}, FixtureCase{"roce", "", "healthy", 0, {}},
        FixtureCase{"port-down", "", "ib_resource", 1, {"ib.port_state"}},
        FixtureCase{"port-polling", "", "ib_resource", 1, {"ib.port_state"}},
        FixtureCase{"sm-offline", "", "ib_resource", 1, {"ib.port_state", "ib.subnet_manager"}},
        FixtureCase{"rate-degraded", "", "ib_resource", 1, {"ib.port_rate"}},
        FixtureCase{"pkey-missing", kPkeyConfig, "ib_resource", 1, {"ib.pkey"}},
        FixtureCase{"memlock-64k", "", "architecture", 1, {"limits.memlock"}},
        FixtureCase{"memlock-8m", "", "architecture", 1, {"limits.memlock"}},
        FixtureCase{"no-dev-ib", "", "architecture", 1, {"container.rdma_devices"}},
        FixtureCase{"bridge-netns", "", "healthy", 0, {}},
        FixtureCase{"hca-no-driver", "", "ib_resource", 1, {"ib.hca_present"}},
        FixtureCase{"no-uverbs", "", "ib_resource", 1, {"ib.driver"}},
        FixtureCase{"shm-64m", "", "architecture", 1, {"shm.size"}},
        FixtureCase{"no-peermem", "", "healthy", 0, {}},
        FixtureCase{"cpu-only", "", "healthy", 0, {}}, FixtureCase{"ib-busy", "", "healthy", 0, {}},
        FixtureCase{"ofed-mixed", "", "architecture", 1, {"versions.ofed_kernel"}},
        FixtureCase{"rail-faults", "", "ib_resource", 1, {"ib.port_rate"}},
        FixtureCase{"gpu-shared", "", "healthy", 0, {}},
        FixtureCase{"gpu-pods", "", "healthy", 0, {}}),
    [](const auto& info) {
      std::string name = info.param.fixture + (info.param.config.empty() ? "" : "_configured");
      for (auto& ch : name) {
        if (ch == '-') ch = '_';
      }
      return name;
    });

TEST(CheckCli, JsonFollowsTheNodeReportContract) {
  Result r = Check({"--root", kFixtures + "port-down", "--format", "json"});
  nlohmann::json j = Json(r);
  EXPECT_EQ(j["schema"], "nccl-triage/node-report/v1");
  EXPECT_TRUE(j["node"].is_string());
  EXPECT_EQ(j["basis"], "checks");
  EXPECT_EQ(j["causes"], nlohmann::json::array({"ib.port_state"}));
  ASSERT_TRUE(j["findings"].is_array());
  for (const auto& f : j["findings"]) {
    for (const char* key : {"check", "class", "status", "message", "evidence", "remedy"}) {
      EXPECT_TRUE(f.contains(key)) << key << " in " << f.dump();
    }
    for (const auto& e : f["evidence"]) {
      EXPECT_TRUE(e.contains("value") && e.contains("source")) << e.dump();
    }
  }
}

TEST(CheckCli, ShowsTheRailTableInJsonAndTable) {
  Result r = Check({"--root", kFixtures + "port-down", "--format", "json"});
  nlohmann::json j = Json(r);
  ASSERT_EQ(j["rails"].size(), 8u) << r.out;
  const auto& rail3 = j["rails"][3];
  EXPECT_EQ(rail3["rail"], 3);
  EXPECT_EQ(rail3["device"], "mlx5_3");
  EXPECT_EQ(rail3["port"], 1);
  EXPECT_EQ(rail3["hca_bdf"], "0000:54:00.0");
  EXPECT_EQ(rail3["gpu"], 3);
  EXPECT_EQ(rail3["gpu_bdf"], "0000:4e:00.0");
  EXPECT_EQ(rail3["affinity"], "pcie_switch");
  EXPECT_EQ(rail3["numa_node"], 1);
  EXPECT_EQ(rail3["state"], "DOWN");
  EXPECT_EQ(rail3["active"], false);
  EXPECT_EQ(j["rails"][0]["rate_gbps"], 200.0);
  EXPECT_EQ(WithStatus(j, "warn"), (std::set<std::string>{"ib.port_errors", "ib.rail_topology"}));

  Result table = Check({"--root", kFixtures + "dgx-h100"});
  EXPECT_NE(table.out.find("\nrails\nrail  hca/port  pci           gpu             affinity     "
                           "numa  rate      state\n"),
            std::string::npos)
      << table.out;
  EXPECT_NE(table.out.find("7     mlx5_7/1  0000:dc:00.0  7 0000:df:00.0  pcie_switch  1     "
                           "400 Gb/s  ACTIVE\n"),
            std::string::npos)
      << table.out;
}

TEST(CheckCli, TablePutsTheVerdictFirstAndHasNoColourOffATerminal) {
  Result r = Check({"--root", kFixtures + "memlock-64k"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out.find("node "), 0u) << r.out;
  EXPECT_NE(r.out.substr(0, r.out.find('\n')).find("architecture"), std::string::npos);
  EXPECT_EQ(r.out.find('\033'), std::string::npos);
  // The failing check comes before the passing ones, with its remedy.
  const size_t fail = r.out.find("FAIL  limits.memlock");
  ASSERT_NE(fail, std::string::npos) << r.out;
  EXPECT_LT(fail, r.out.find("pass  "));
  EXPECT_NE(r.out.find("fix: Set memlock to unlimited"), std::string::npos);
}

TEST(CheckCli, DumpedSnapshotGivesTheSameReport) {
  for (const char* fixture : {"dgx-a100", "rate-degraded", "no-dev-ib", "roce"}) {
    const std::string snap = TempPath(std::string(fixture) + ".json");
    Result direct =
        Check({"--root", kFixtures + fixture, "--format", "json", "--dump-snapshot", snap});
    Result again = Check({"--from-snapshot", snap, "--format", "json"});
    std::remove(snap.c_str());
    EXPECT_EQ(direct.exit_code, again.exit_code) << fixture;
    nlohmann::json a = Json(direct), b = Json(again);
    a.erase("generated_at_unix_ms");
    b.erase("generated_at_unix_ms");
    EXPECT_EQ(a, b) << fixture;
  }
}

TEST(CheckCli, DumpSnapshotToStdoutWritesOnlyTheSnapshot) {
  Result r = Check({"--root", kFixtures + "dgx-a100", "--dump-snapshot", "-"});
  EXPECT_EQ(r.exit_code, 0);
  nlohmann::json j = Json(r);
  EXPECT_EQ(j["schema"], "nccl-triage/node-snapshot/v1");
}

TEST(CheckCli, PreviousSnapshotTurnsCountersIntoRates) {
  const std::string now_path = TempPath("now.json"), before_path = TempPath("before.json");
  Result r = Check({"--root", kFixtures + "rate-degraded", "--dump-snapshot", now_path});
  ASSERT_NE(r.exit_code, 2) << r.err;
  // An hour earlier, mlx5_6's symbol_error counter stood 1000 lower: 1000/h.
  nlohmann::json snap = nlohmann::json::parse(nccl_triage::testing::ReadTextFile(now_path));
  snap["taken_at_unix_ms"] = snap["taken_at_unix_ms"].get<int64_t>() - 3'600'000;
  bool changed = false;
  for (auto& dev : snap["ib_devices"]) {
    if (dev["name"] != "mlx5_6") continue;
    auto& counter = dev["ports"][0]["counters"]["symbol_error"];
    counter = counter.get<uint64_t>() - 1000;
    changed = true;
  }
  ASSERT_TRUE(changed) << "fixture layout changed: no mlx5_6 symbol_error";
  WriteFile(before_path, snap.dump());
  Result judged =
      Check({"--from-snapshot", now_path, "--previous-snapshot", before_path, "--format", "json"});
  std::remove(now_path.c_str());
  std::remove(before_path.c_str());
  nlohmann::json j = Json(judged);
  EXPECT_EQ(StatusOf(j, "ib.port_errors"), "fail") << judged.out;
}

// A previous snapshot newer than the current one was silently ignored (the counters then had no
// rate and nobody was told). Swapped files are a usage error now.
TEST(CheckCli, APreviousSnapshotNewerThanTheCurrentOneIsAUsageError) {
  const std::string now_path = TempPath("now2.json"), later_path = TempPath("later.json");
  Result r = Check({"--root", kFixtures + "dgx-a100", "--dump-snapshot", now_path});
  ASSERT_NE(r.exit_code, 2) << r.err;
  nlohmann::json snap = nlohmann::json::parse(nccl_triage::testing::ReadTextFile(now_path));
  snap["taken_at_unix_ms"] = snap["taken_at_unix_ms"].get<int64_t>() + 3'600'000;
  WriteFile(later_path, snap.dump());
  Result judged = Check({"--from-snapshot", now_path, "--previous-snapshot", later_path});
  std::remove(now_path.c_str());
  std::remove(later_path.c_str());
  EXPECT_EQ(judged.exit_code, 2) << judged.out;
  EXPECT_NE(judged.err.find("is not older than the current snapshot"), std::string::npos)
      << judged.err;
}

TEST(CheckCli, LiveRunOnThisMachineIsFastAndSkipsIbChecks) {
  Result r = Check({"--format", "json"});
  ASSERT_NE(r.exit_code, 2) << r.err;
  EXPECT_LT(r.seconds, 1.0);
  nlohmann::json j = Json(r);
  bool any_ib = false;
  for (const auto& f : j["findings"]) {
    const std::string id = f["check"];
    if (id.rfind("ib.", 0) != 0) continue;
    any_ib = true;
    EXPECT_NE(f["status"], "fail") << id << ": " << f["message"];
  }
  EXPECT_TRUE(any_ib);
}

TEST(CheckCli, DumpConfigPrintsEffectiveValuesThatLoadBack) {
  const std::string config = TempPath("dump.yaml");
  WriteFile(config, "expect:\n  hcas: 8\n");
  Result r = Check({"--config", config, "--dump-config"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("hcas: 8"), std::string::npos) << r.out;
  WriteFile(config, r.out);
  Result again = Check({"--config", config, "--dump-config"});
  std::remove(config.c_str());
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(again.out, r.out);
}

void ExpectUsageError(const std::vector<std::string>& args, const std::string& needle) {
  Result r = Check(args);
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_EQ(Lines(r.err), 1) << r.err;
  EXPECT_EQ(r.err.rfind("nccl-triage check: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
}

TEST(CheckCli, BadInputExitsTwoWithOneLine) {
  ExpectUsageError({"--root", "/nonexistent/root"}, "/nonexistent/root");
  ExpectUsageError({"--root", "/etc/hostname"}, "not a directory");
  ExpectUsageError({"--bogus"}, "unknown flag '--bogus'");
  ExpectUsageError({"--format", "xml"}, "--format: expects one of table, json (not 'xml')");
  ExpectUsageError({"--root"}, "--root needs a value");
  ExpectUsageError({"--config", "/nonexistent/config.yaml"}, "/nonexistent/config.yaml");
  ExpectUsageError({"--from-snapshot", "/nonexistent/snap.json"}, "cannot open the snapshot file");

  const std::string config = TempPath("bad.yaml");
  WriteFile(config, "expect:\n  hcas: [8\n");
  ExpectUsageError({"--config", config}, "invalid YAML");
  WriteFile(config, "expect:\n  hcas: 8\n  rates_gbps: 200\n");
  ExpectUsageError({"--config", config}, ":3: unknown key 'expect.rates_gbps'");
  WriteFile(config, "limits:\n  nofile_min: 1\n");
  ExpectUsageError({"--config", config}, ":1: unknown key 'limits'");
  WriteFile(config, "expect:\n  nofile_min: many\n");
  ExpectUsageError({"--config", config},
                   ":2: expect.nofile_min: expected a non-negative integer, got 'many'");
  WriteFile(config, "{ not json");
  ExpectUsageError({"--from-snapshot", config}, "is not valid JSON");
  WriteFile(config, "{\"schema\": \"something/else\"}");
  ExpectUsageError({"--from-snapshot", config}, "snapshot");
  std::remove(config.c_str());
}

// An empty root and a "{}" snapshot gave "unknown" with exit 0. Nothing could
// be read: exit 2 with one line that says so.
TEST(CheckCli, AnEmptyRootOrASnapshotWithoutSchemaIsExit2) {
  const std::string root = TempPath("empty-root");
  ASSERT_EQ(system(("mkdir -p '" + root + "'").c_str()), 0);
  Result r = Check({"--root", root, "--format", "json"});
  rmdir(root.c_str());
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_NE(r.err.find("nothing could be read"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;

  const std::string snapshot = TempPath("empty-snapshot.json");
  WriteFile(snapshot, "{}");
  r = Check({"--from-snapshot", snapshot});
  std::remove(snapshot.c_str());
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.err.find("no 'schema' field"), std::string::npos) << r.err;
}

TEST(CheckCli, HelpExitsZero) {
  Result r = Check({"--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("usage: nccl-triage check"), std::string::npos);
}

}  // namespace

namespace {

const std::string kKernelFixtures = std::string(NCCL_TRIAGE_SOURCE_DIR) + "/tests/kernel/fixtures/";

TEST(CheckCli, KernelLogWithAnXid79FailsAsAGpuFaultNotANetworkOne) {
  auto r = Check({"--root", kFixtures + "dgx-h100", "--kernel-log", kKernelFixtures + "xid79.dmesg",
                  "--format", "json"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  auto j = Json(r);
  EXPECT_EQ(j["class"], "unknown");  // not architecture, not ib_resource
  EXPECT_EQ(StatusOf(j, "kernel.gpu_off_bus"), "fail");
  EXPECT_TRUE(WithStatus(j, "fail").count("kernel.xid"));
  EXPECT_EQ(StatusOf(j, "kernel.link_flap"), "pass");
  for (const auto& f : j["findings"]) {
    if (f["check"] != "kernel.gpu_off_bus") continue;
    ASSERT_FALSE(f["evidence"].empty());
    EXPECT_EQ(f["evidence"][0]["source"], kKernelFixtures + "xid79.dmesg");  // the file read
  }
}

TEST(CheckCli, KernelLogWithAFlappingPortIsAnIbResourceFault) {
  auto r = Check({"--root", kFixtures + "dgx-h100", "--kernel-log",
                  kKernelFixtures + "mlx5_ports.journal", "--format", "json"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  auto j = Json(r);
  EXPECT_EQ(j["class"], "ib_resource");
  EXPECT_EQ(StatusOf(j, "kernel.link_flap"), "fail");  // mlx5_5/1 down 3 times (no times: 1 hour)
}

// A journal saved across a reboot counted the downs of the boot before it against this one.
TEST(CheckCli, KernelLogLinesOfAnEarlierBootAreNotCountedAndJsonSaysWhy) {
  const std::string path = ::testing::TempDir() + "two-boots.journal";
  {
    std::ofstream f(path, std::ios::binary);
    for (int i = 0; i < 3; ++i) {
      f << "Aug 29 19:00:0" << i
        << " gpu-1 kernel: mlx5_core 0000:17:00.0 mlx5_0: Port: 1 Link DOWN\n";
    }
    f << "-- Reboot --\nAug 29 20:01:00 gpu-1 kernel: Linux version 5.15.0\n";
  }
  auto r = Check({"--root", kFixtures + "dgx-h100", "--kernel-log", path, "--format", "json"});
  auto j = Json(r);
  EXPECT_EQ(StatusOf(j, "kernel.link_flap"), "pass") << r.out;
  bool said = false;
  for (const auto& f : j["findings"]) {
    if (f["check"] != "kernel.link_flap") continue;
    for (const auto& e : f["evidence"]) {
      said |= e["key"] == "kernel log events not counted" &&
              e["value"].get<std::string>().find("3 of an earlier boot") != std::string::npos;
    }
  }
  EXPECT_TRUE(said) << r.out;
}

// Each of these crashed `check`: SIGSEGV (std::regex on a 40 KB line), SIGABRT (nlohmann
// type_error 316 on a process name that is not UTF-8), or read Xid 2147483648 as 214748364.
TEST(CheckCli, HostileKernelLogLinesGiveValidJsonAndAnInvalidXidCode) {
  const std::string path = ::testing::TempDir() + "hostile-kernel.log";
  {
    std::ofstream f(path, std::ios::binary);
    f << "[1.0] NVRM: Xid (PCI:0000:44:00): 79, " << std::string(40'000, 'A') << "\n"
      << "[2.0] NVRM: Xid (PCI:0000:45:00): 31, pid=1, name=\xff\xfe, Ch 8\n"
      << "[3.0] NVRM: Xid (PCI:0000:46:00): 2147483648, x\n";
  }
  auto r = Check({"--root", kFixtures + "dgx-h100", "--kernel-log", path, "--format", "json"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  auto j = Json(r);
  EXPECT_EQ(StatusOf(j, "kernel.gpu_off_bus"), "fail");
  bool invalid_code = false;
  for (const auto& f : j["findings"]) {
    const std::string message = f["message"];
    EXPECT_EQ(message.find("Xid 214748364 "), std::string::npos) << message;
    invalid_code |= message.find("2147483648") != std::string::npos;
  }
  EXPECT_TRUE(invalid_code);
  EXPECT_NE(r.out.find("name=\xEF\xBF\xBD\xEF\xBF\xBD, Ch 8"), std::string::npos);
}

TEST(CheckCli, KernelLogThatCannotBeReadExitsTwoWithOneLine) {
  auto r = Check({"--root", kFixtures + "dgx-h100", "--kernel-log", "/nonexistent/dmesg"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(Lines(r.err), 1) << r.err;
}

TEST(CheckCli, WithoutKernelLogNoKernelFindingsAppear) {
  auto j = Json(Check({"--root", kFixtures + "dgx-h100", "--format", "json"}));
  EXPECT_EQ(StatusOf(j, "kernel.xid"), "absent");
}

}  // namespace
