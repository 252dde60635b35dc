// The binary and its serving module (app/services.h): `check` runs without gRPC, HTTP or TLS
// libraries loaded; agent, coordinator, demo and `check --workloads` load nccl-triage-services.so
// from beside the binary or from ../lib/nccl-triage/; a missing, foreign or broken module is one
// line on stderr and exit 2, never a crash, and never stops `check` from working.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "probe/subprocess.h"

namespace nccl_triage {
namespace {

namespace fs = std::filesystem;

const std::string kBinary = std::string(NCCL_TRIAGE_BINARY_DIR) + "/nccl-triage";
const std::string kModule = std::string(NCCL_TRIAGE_BINARY_DIR) + "/nccl-triage-services.so";
const std::string kFixture = std::string(NCCL_TRIAGE_SOURCE_DIR) + "/tests/fixtures/dgx-a100";

SubprocessResult Exec(const std::string& binary, std::vector<std::string> args,
                      std::vector<std::string> env = {}) {
  SubprocessOptions o;
  o.argv = {binary};
  o.argv.insert(o.argv.end(), args.begin(), args.end());
  o.env = std::move(env);
  o.env.push_back("PATH=/usr/bin:/bin");
  o.timeout = std::chrono::seconds(60);
  return RunSubprocess(std::move(o));
}

int LineCount(const std::string& s) {
  return static_cast<int>(std::count(s.begin(), s.end(), '\n'));
}

// A directory of its own per test: a copy of the binary, with or without the module.
class Layout : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ("services_cli_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "bin");
    fs::copy_file(kBinary, Bin());
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Bin() const { return (dir_ / "bin" / "nccl-triage").string(); }

  fs::path dir_;
};

std::string Ldd(const std::string& path) {
  auto r = Exec("/usr/bin/ldd", {path});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.out;
}

TEST(ServicesSplit, BinaryLoadsNoServingLibraries) {
  const std::string libs = Ldd(kBinary);
  for (const char* heavy :
       {"libgrpc", "libprotobuf", "libssl", "libcrypto", "libprometheus", "httplib", "libabsl"}) {
    EXPECT_EQ(libs.find(heavy), std::string::npos) << heavy << " is linked into the binary:\n"
                                                   << libs;
  }
  EXPECT_NE(libs.find("libyaml-cpp"), std::string::npos) << libs;
  EXPECT_NE(libs.find("libibverbs"), std::string::npos) << libs;
  const std::string module = Ldd(kModule);
  EXPECT_NE(module.find("libgrpc++"), std::string::npos) << module;
  EXPECT_EQ(module.find("not found"), std::string::npos) << module;
}

TEST(ServicesSplit, ModuleExportsOnlyItsEntryPoint) {
  auto r = Exec("/usr/bin/nm", {"-D", "--defined-only", kModule});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> exported;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream f(line);
    std::string addr, type, name;
    f >> addr >> type >> name;
    if (type == "T" || type == "D" || type == "B" || type == "W" || type == "V") {
      exported.push_back(name);
    }
  }
  // Exported code or data other than the entry point would bind to the binary's copies of the
  // component libraries' symbols in some loaders; weak template instances of libstdc++ are fine.
  for (const auto& name : exported) {
    if (name == "ncclTriageServices") continue;
    EXPECT_EQ(name.find("nccl_triage"), std::string::npos) << name;
  }
  EXPECT_NE(std::find(exported.begin(), exported.end(), "ncclTriageServices"), exported.end());
}

TEST(ServicesSplit, ServingCommandsLoadTheModuleBesideTheBinary) {
  for (const char* cmd : {"agent", "coordinator", "demo"}) {
    auto r = Exec(kBinary, {cmd, "--help"});
    EXPECT_EQ(r.exit_code, 0) << cmd << ": " << r.err;
    EXPECT_NE(r.out.find(std::string("usage: nccl-triage ") + cmd), std::string::npos) << r.out;
  }
}

// The committed gpu-pods root through the real binary: the module judges the three pods.
TEST(ServicesSplit, CheckWorkloadsJudgesTheGpuPodsFixture) {
  const std::string root = std::string(NCCL_TRIAGE_SOURCE_DIR) + "/tests/fixtures/gpu-pods";
  auto r = Exec(kBinary, {"check", "--root", root, "--workloads", "--format", "json"});
  EXPECT_EQ(r.exit_code, 1) << r.err;  // two pods fail; the node itself is healthy
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out << r.err;
  EXPECT_EQ(j["class"], "healthy");
  std::map<int, std::string> verdict_by_pid;
  for (const auto& c : j["workloads"]["containers"]) {
    verdict_by_pid[c["pids"][0].get<int>()] =
        c["verdict"].get<std::string>() + " " + c["causes"].dump();
  }
  EXPECT_EQ(verdict_by_pid[41170], "healthy []");
  EXPECT_EQ(verdict_by_pid[41230], "architecture [\"container.ipc_lock\",\"limits.memlock\"]");
  EXPECT_EQ(verdict_by_pid[41290], "architecture [\"net.socket_ifname\"]");
}

TEST_F(Layout, CheckWorksWithoutTheModule) {
  auto r = Exec(Bin(), {"check", "--root", kFixture, "--format", "json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"class\": \"healthy\""), std::string::npos) << r.out;
  r = Exec(Bin(), {"classify-log", "--help"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST_F(Layout, MissingModuleIsOneLineAndExit2) {
  for (const char* cmd : {"agent", "coordinator", "demo"}) {
    auto r = Exec(Bin(), {cmd, "--help"});
    EXPECT_EQ(r.kind, ExitKind::kExited);
    EXPECT_EQ(r.exit_code, 2) << cmd;
    EXPECT_EQ(LineCount(r.err), 1) << r.err;
    EXPECT_NE(r.err.find(std::string("nccl-triage ") + cmd +
                         ": the serving module "
                         "nccl-triage-services.so is not installed"),
              std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find((dir_ / "lib" / "nccl-triage").string()), std::string::npos) << r.err;
  }
  auto r = Exec(Bin(), {"check", "--root", kFixture, "--workloads"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(LineCount(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("nccl-triage check: --workloads: the serving module"), std::string::npos)
      << r.err;
}

TEST_F(Layout, ModuleInLibDirIsFound) {
  fs::create_directories(dir_ / "lib" / "nccl-triage");
  fs::copy_file(kModule, dir_ / "lib" / "nccl-triage" / "nccl-triage-services.so");
  auto r = Exec(Bin(), {"coordinator", "--help"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = Exec(Bin(), {"check", "--root", kFixture, "--workloads", "--format", "json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"workloads\""), std::string::npos) << r.out;
}

TEST_F(Layout, BrokenOrForeignModuleIsOneLineAndExit2) {
  const std::string garbage = (dir_ / "garbage.so").string();
  std::ofstream(garbage) << "not an ELF object\n";
  auto r = Exec(Bin(), {"agent", "--help"}, {"NCCL_TRIAGE_SERVICES=" + garbage});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(LineCount(r.err), 1) << r.err;
  EXPECT_NE(r.err.find(garbage), std::string::npos) << r.err;

  // A real shared object without the entry point: the fake libnccl of the tests.
  r = Exec(Bin(), {"agent", "--help"}, {"NCCL_TRIAGE_SERVICES=" + std::string(FAKE_NCCL_LIB)});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(LineCount(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("no ncclTriageServices symbol"), std::string::npos) << r.err;

  r = Exec(Bin(), {"agent", "--help"}, {"NCCL_TRIAGE_SERVICES=" + (dir_ / "absent.so").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("NCCL_TRIAGE_SERVICES names " + (dir_ / "absent.so").string() +
                       ", which does not exist"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(LineCount(r.err), 1) << r.err;

  // The explicit path wins over the module beside the binary.
  r = Exec(kBinary, {"agent", "--help"}, {"NCCL_TRIAGE_SERVICES=" + garbage});
  EXPECT_EQ(r.exit_code, 2) << r.out;
}

}  // namespace
}  // namespace nccl_triage
