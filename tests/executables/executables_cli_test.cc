// The two executables: `nccl-triage` (check, classify-log, probe) links no gRPC, HTTP, TLS or
// prometheus-cpp; `nccl-triage-server` (agent, coordinator) links them. `check --workloads` stays
// in the small one and reads the API and the kubelet through `nccl-triage-server
// workload-lookup`; without the server beside it, the pass still judges every container and
// says what it could not read.
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
const std::string kServer = std::string(NCCL_TRIAGE_BINARY_DIR) + "/nccl-triage-server";
const std::string kFixture = std::string(NCCL_TRIAGE_FIXTURE_DIR) + "/dgx-a100";

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

// A directory of its own per test: a copy of the small binary, without the server.
class Layout : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ("executables_cli_" + std::to_string(::getpid()) + "_" +
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

TEST(ExecutablesSplit, SmallBinaryLinksNoServingLibraries) {
  const std::string libs = Ldd(kBinary);
  for (const char* heavy :
       {"libgrpc", "libprotobuf", "libssl", "libcrypto", "libprometheus", "httplib", "libabsl",
        "libmicrohttpd"}) {
    EXPECT_EQ(libs.find(heavy), std::string::npos) << heavy << " is linked into the binary:\n"
                                                   << libs;
  }
  EXPECT_NE(libs.find("libyaml-cpp"), std::string::npos) << libs;
  EXPECT_NE(libs.find("libibverbs"), std::string::npos) << libs;
  const std::string server = Ldd(kServer);
  EXPECT_NE(server.find("libgrpc++"), std::string::npos) << server;
  EXPECT_NE(server.find("libprometheus-cpp-core"), std::string::npos) << server;
  EXPECT_NE(server.find("libmicrohttpd"), std::string::npos) << server;
  EXPECT_EQ(server.find("not found"), std::string::npos) << server;
}

TEST(ExecutablesSplit, BothReportTheSameBuild) {
  auto small = Exec(kBinary, {"--version"});
  auto server = Exec(kServer, {"--version"});
  ASSERT_EQ(small.exit_code, 0) << small.err;
  ASSERT_EQ(server.exit_code, 0) << server.err;
  const std::string v = small.out.substr(small.out.find(' ') + 1);
  EXPECT_EQ(server.out, "nccl-triage-server " + v);
  EXPECT_EQ(small.out.rfind("nccl-triage 0.", 0), 0U) << small.out;
}

TEST(ExecutablesSplit, ServerRunsTheServices) {
  for (const char* cmd : {"agent", "coordinator", "dump-schema"}) {
    auto r = Exec(kServer, {cmd, "--help"});
    EXPECT_EQ(r.exit_code, 0) << cmd << ": " << r.err;
    EXPECT_NE(r.out.find(std::string("usage: nccl-triage-server ") + cmd), std::string::npos)
        << r.out;
  }
  auto r = Exec(kServer, {"--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out.find("workload-lookup"), std::string::npos) << "internal command in usage";
}

// Log pipelines (Fluent Bit, Vector, promtail) want one JSON object per line: every stderr line
// of an agent cycle parses, with time, level, component and message.
TEST(ServerLogFormat, AgentWritesOneJsonObjectPerLineWithLogFormatJson) {
  auto r = Exec(kServer, {"agent", "--standalone", "--once", "--root", kFixture, "--node",
                          "gpu-node-1", "--listen", "127.0.0.1:0", "--log-format", "json"});
  EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.err;
  std::istringstream lines(r.err);
  std::string line;
  int objects = 0;
  while (std::getline(lines, line)) {
    auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    ASSERT_TRUE(j.is_object()) << "not a JSON object: " << line;
    for (const char* key : {"time", "level", "component", "message"}) {
      EXPECT_TRUE(j.contains(key)) << key << " missing in " << line;
    }
    ++objects;
  }
  EXPECT_GT(objects, 0) << "the agent logged nothing";
}

TEST(ServerLogFormat, AnUnknownFormatIsRefusedWithTheChoices) {
  for (const char* cmd : {"agent", "coordinator"}) {
    auto r = Exec(kServer, {cmd, "--log-format", "xml"});
    EXPECT_EQ(r.exit_code, 2) << cmd;
    EXPECT_NE(r.err.find("--log-format: expects one of text, json (not 'xml')"), std::string::npos)
        << r.err;
  }
}

// An empty token file disabled authentication with only a warning; the coordinator refuses to
// start now, with one line that names the file.
TEST(ServerStartUp, CoordinatorRefusesToStartWithAnEmptyTokenFile) {
  const fs::path dir = fs::temp_directory_path() / ("empty-token-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "token") << "\n";
  std::ofstream(dir / "config.yaml") << "coordinator:\n  token_file: " << (dir / "token").string()
                                     << "\n";
  auto r = Exec(kServer, {"coordinator", "--config", (dir / "config.yaml").string(), "--listen",
                          "127.0.0.1:0", "--http-listen", "127.0.0.1:0"});
  fs::remove_all(dir);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("is empty: refusing to run without authentication"), std::string::npos)
      << r.err;
}

// coordinator.identity_only: the identity check is the agents' only authentication, so the
// coordinator will not start without it, nor with a shared token that nothing would check.
TEST(ServerStartUp, IdentityOnlyCoordinatorRefusesToStartWithoutTheIdentityCheck) {
  const fs::path dir = fs::temp_directory_path() / ("identity-only-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "token") << "a-shared-token\n";
  std::ofstream(dir / "off.yaml") << "coordinator:\n  identity_only: true\n"
                                     "  verify_node_identity: false\n";
  std::ofstream(dir / "mixed.yaml") << "coordinator:\n  identity_only: true\n"
                                       "  verify_node_identity: true\n  token_file: "
                                    << (dir / "token").string() << "\n";
  const std::vector<std::string> listen = {"--listen", "127.0.0.1:0", "--http-listen",
                                           "127.0.0.1:0"};
  auto args = [&](const char* file) {
    std::vector<std::string> a = {"coordinator", "--config", (dir / file).string()};
    a.insert(a.end(), listen.begin(), listen.end());
    return a;
  };
  auto off = Exec(kServer, args("off.yaml"));
  auto mixed = Exec(kServer, args("mixed.yaml"));
  fs::remove_all(dir);
  EXPECT_EQ(off.exit_code, 2) << off.err;
  EXPECT_EQ(off.err,
            "nccl-triage-server coordinator: coordinator.identity_only needs "
            "coordinator.verify_node_identity: true (without it no agent would be "
            "authenticated)\n");
  EXPECT_EQ(mixed.exit_code, 2) << mixed.err;
  EXPECT_EQ(mixed.err,
            "nccl-triage-server coordinator: coordinator.identity_only uses no shared token: "
            "unset coordinator.token_file and NCCL_TRIAGE_TOKEN\n");
}

// server.auth: kubernetes with no API server to ask, or no service account to ask with: both
// refuse to start with one line, rather than serve /metrics and /status to anyone.
TEST(ServerStartUp, HttpAuthWithoutTheApiServerRefusesToStart) {
  const fs::path dir = fs::temp_directory_path() / ("http-auth-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "config.yaml")
      << "server:\n  auth: kubernetes\nagent:\n  listen: 127.0.0.1:0\n  annotate_pod: false\n"
         "  workloads: false\ncoordinator:\n  listen: 127.0.0.1:0\n  http_listen: 127.0.0.1:0\n";
  const std::string config = (dir / "config.yaml").string();
  for (const char* cmd : {"agent", "coordinator"}) {
    std::vector<std::string> args = {cmd, "--config", config};
    if (std::string(cmd) == "agent") {
      args.insert(args.end(), {"--standalone", "--root", kFixture});
    }
    auto r = Exec(kServer, args);
    EXPECT_EQ(r.exit_code, 2) << cmd << ": " << r.err;
    EXPECT_NE(r.err.find("server.auth: kubernetes needs the Kubernetes API (no "
                         "KUBERNETES_SERVICE_HOST); outside a cluster set server.auth: none"),
              std::string::npos)
        << r.err;
    EXPECT_EQ(LineCount(r.err), 1) << r.err;
    r = Exec(kServer, args,
             {"KUBERNETES_SERVICE_HOST=127.0.0.1", "KUBERNETES_SERVICE_PORT=1",
              "NCCL_TRIAGE_SERVICE_ACCOUNT_DIR=" + (dir / "no-such-account").string()});
    EXPECT_EQ(r.exit_code, 2) << cmd << ": " << r.err;
    EXPECT_NE(r.err.find("server.auth: kubernetes: "), std::string::npos) << r.err;
  }
  fs::remove_all(dir);
}

TEST(ExecutablesSplit, SmallBinaryPointsServicesToTheServer) {
  for (const char* cmd : {"agent", "coordinator"}) {
    auto r = Exec(kBinary, {cmd});
    EXPECT_EQ(r.exit_code, 2) << cmd;
    EXPECT_EQ(LineCount(r.err), 1) << r.err;
    EXPECT_NE(r.err.find(std::string("run `nccl-triage-server ") + cmd + "`"), std::string::npos)
        << r.err;
  }
}

TEST(ExecutablesSplit, WorkloadLookupPrintsItsSchema) {
  auto r = Exec(kServer, {"workload-lookup", "--node", "gpu-1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.out;
  EXPECT_EQ(j["schema"], "nccl-triage/workload-lookup/v1");
  EXPECT_TRUE(j["pods"].is_null());
  // Asked for the API outside a pod (no service account): the reason, not a crash.
  r = Exec(kServer, {"workload-lookup", "--node", "gpu-1", "--api"},
           {"KUBERNETES_SERVICE_HOST=127.0.0.1", "KUBERNETES_SERVICE_PORT=1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  j = nlohmann::json::parse(r.out, nullptr, false);
  EXPECT_NE(j["pods"]["error"].get<std::string>().find("no Kubernetes API"), std::string::npos)
      << r.out;
  r = Exec(kServer, {"workload-lookup"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(LineCount(r.err), 1) << r.err;
}

// The committed gpu-pods root through the real binary: the scan judges the three pods.
TEST(ExecutablesSplit, CheckWorkloadsJudgesTheGpuPodsFixture) {
  const std::string root = std::string(NCCL_TRIAGE_FIXTURE_DIR) + "/gpu-pods";
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

// One flag parser behind every command: the same spellings and the same line for a bad flag.
TEST(ExecutablesSplit, EveryCommandSaysTheSameThingAboutABadFlag) {
  const std::string demo = std::string(NCCL_TRIAGE_BINARY_DIR) + "/nccl-triage-demo";
  const std::vector<std::pair<std::string, std::vector<std::string>>> commands = {
      {kBinary, {"check"}}, {kBinary, {"classify-log"}}, {kBinary, {"probe", "--pair-local"}},
      {kServer, {"agent"}}, {kServer, {"coordinator"}},  {kServer, {"workload-lookup"}},
      {demo, {}},           {kBinary, {"cleanup"}},      {kServer, {"cleanup"}},
  };
  for (const auto& [exe, words] : commands) {
    std::vector<std::string> args = words;
    args.push_back("--bogus=1");
    auto r = Exec(exe, args);
    std::string name = fs::path(exe).filename().string();
    if (!words.empty()) name += " " + words[0];
    EXPECT_EQ(r.exit_code, 2) << name;
    EXPECT_EQ(r.err, name + ": unknown flag '--bogus' (try --help)\n") << name;
  }
  // --flag=value wherever --flag value works.
  auto r = Exec(kBinary, {"check", "--root=" + kFixture, "--format=json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = Exec(kServer, {"agent", "--once", "--standalone", "--root=" + kFixture, "--node=n1"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST_F(Layout, CheckWorksWithoutTheServer) {
  auto r = Exec(Bin(), {"check", "--root", kFixture, "--format", "json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"class\": \"healthy\""), std::string::npos) << r.out;
  r = Exec(Bin(), {"classify-log", "--help"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

// The cleanup calls the API through the server: without it, one line says so (exit 2).
TEST_F(Layout, CleanupWithoutTheServerSaysWhatIsMissing) {
  auto r = Exec(Bin(), {"cleanup", "--dry-run"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("nccl-triage-server not found"), std::string::npos) << r.err;
  r = Exec(Bin(), {"cleanup", "--help"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("usage: nccl-triage cleanup"), std::string::npos) << r.out;
}

// In a pod but without the server beside the binary: every container is still judged, and the
// pod list's error says what is missing.
TEST_F(Layout, CheckWorkloadsWithoutTheServerSaysWhatItCouldNotRead) {
  const std::string root = std::string(NCCL_TRIAGE_FIXTURE_DIR) + "/gpu-pods";
  auto r = Exec(Bin(), {"check", "--root", root, "--workloads", "--format", "json"},
                {"KUBERNETES_SERVICE_HOST=127.0.0.1"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out << r.err;
  EXPECT_EQ(j["workloads"]["containers"].size(), 3U) << r.out;
  EXPECT_NE(r.out.find("nccl-triage-server not found"), std::string::npos) << r.out << r.err;
}

}  // namespace
}  // namespace nccl_triage
