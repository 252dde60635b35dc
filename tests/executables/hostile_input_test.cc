// The two executables under hostile input, end to end: names that are not UTF-8
// through every output (check --format json, --dump-snapshot, /status, /metrics, the Hello to a
// coordinator), and the agent's HTTP server under a header flood and slow clients.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <atomic>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "base/log.h"
#include "coordinator/server.h"
#include "exporter/live_util.h"
#include "support/fixture/fixture.h"

namespace nccl_triage {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using namespace testing;

// Runs `argv` to completion (at most `limit`); its exit status (or -signal, -1 when it had to be
// killed) and its output.
std::pair<int, std::string> RunToEnd(const std::vector<std::string>& argv, const std::string& out,
                                     std::chrono::milliseconds limit = 60s) {
  Child child(argv, out);
  auto status = child.Stop(0, limit);  // signal 0: only wait
  if (!status) return {-1, ReadFile(out)};
  const int code = WIFEXITED(*status) ? WEXITSTATUS(*status) : -WTERMSIG(*status);
  return {code, ReadFile(out)};
}

// A DGX A100 node of two HCAs whose first HCA is "mlx\xff" and with an interface "eth\xff\xfe".
std::string HostileNamesRoot(const TempDir& tmp) {
  FixtureSpec spec = DgxA100Spec();
  spec.hcas.resize(2);
  spec.gpus.resize(1);
  const std::string root = tmp.path() + "/root";
  EXPECT_TRUE(WriteFixture(spec, root).ok());
  fs::rename(root + "/sys/class/infiniband/mlx5_0", root + "/sys/class/infiniband/mlx\xff");
  const std::string eth = root + "/sys/class/net/eth\xff\xfe";
  fs::create_directories(eth);
  std::ofstream(eth + "/operstate") << "up\n";
  std::ofstream(eth + "/type") << "1\n";
  std::ofstream(eth + "/mtu") << "1500\n";
  return root;
}

// Each of these aborted (SIGABRT, nlohmann type_error 316), answered 500,
// failed promtool or was refused by the coordinator, which the agent then re-dialled forever.
TEST(HostileNames, SurviveCheckJsonDumpStatusMetricsAndTheHello) {
  TempDir tmp;
  const std::string root = HostileNamesRoot(tmp);

  auto [code, out] = RunToEnd({CheckBinary(), "check", "--format", "json", "--root", root},
                              tmp.path() + "/check.json");
  EXPECT_TRUE(code == 0 || code == 1) << code << "\n" << out;
  auto report = nlohmann::json::parse(out.substr(0, out.rfind('}') + 1), nullptr, false);
  ASSERT_FALSE(report.is_discarded()) << out.substr(0, 500);
  EXPECT_NE(out.find("mlx\\\\xff"), std::string::npos);

  auto [dump_code, dump] =
      RunToEnd({CheckBinary(), "check", "--root", root, "--dump-snapshot", "-"},
               tmp.path() + "/snapshot.json");
  EXPECT_EQ(dump_code, 0) << dump.substr(0, 500);
  auto snapshot = nlohmann::json::parse(dump, nullptr, false);
  ASSERT_FALSE(snapshot.is_discarded()) << dump.substr(0, 500);
  EXPECT_NE(dump.find("eth\\\\xff\\\\xfe"), std::string::npos);

  std::ostringstream log_text;
  Logger log(log_text, LogLevel::kDebug);
  CoordinatorOptions co;
  co.config.coordinator.listen = "127.0.0.1:0";
  co.config.coordinator.http_listen.clear();
  co.config.coordinator.sweep_interval_seconds = 0;
  co.token = "hostile-names";
  CoordinatorServer coordinator(co, log);
  ASSERT_TRUE(coordinator.Start().ok()) << log_text.str();
  setenv("NCCL_TRIAGE_TOKEN", "hostile-names", 1);
  Child agent(
      {AgentBinary(), "agent", "--root", root, "--node", "node-x", "--listen", "127.0.0.1:0",
       "--coordinator", "127.0.0.1:" + std::to_string(coordinator.grpc_port())},
      tmp.path() + "/agent.log");
  unsetenv("NCCL_TRIAGE_TOKEN");
  EXPECT_TRUE(coordinator.WaitForAgents(1, 20s)) << "the coordinator refused the Hello\n"
                                                 << log_text.str() << "\n"
                                                 << ReadFile(tmp.path() + "/agent.log");

  std::smatch m;
  int port = 0;
  WaitFor(
      [&] {
        std::string text = ReadFile(tmp.path() + "/agent.log");
        if (std::regex_search(text, m, std::regex("serving .* on 127\\.0\\.0\\.1:([0-9]+)"))) {
          port = std::stoi(m[1]);
        }
        return port > 0;
      },
      20s);
  ASSERT_GT(port, 0) << ReadFile(tmp.path() + "/agent.log");
  ASSERT_TRUE(WaitFor(
      [&] {
        auto r = HttpGet(port, "/readyz");
        return r && r->status == 200;
      },
      20s));
  auto status = HttpGet(port, "/status");
  ASSERT_TRUE(status);
  EXPECT_EQ(status->status, 200) << status->body;
  EXPECT_FALSE(nlohmann::json::parse(status->body, nullptr, false).is_discarded());
  auto metrics = HttpGet(port, "/metrics");
  ASSERT_TRUE(metrics);
  ASSERT_EQ(metrics->status, 200);
  EXPECT_NE(metrics->body.find("mlx\\\\xff"), std::string::npos);
  const std::string promtool = FindProgram("promtool");
  if (!promtool.empty()) {
    std::ofstream(tmp.path() + "/metrics.txt") << metrics->body;
    const std::string cmd = promtool + " check metrics < " + tmp.path() + "/metrics.txt > " +
                            tmp.path() + "/promtool.txt 2>&1";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << ReadFile(tmp.path() + "/promtool.txt");
  }
  agent.Stop(SIGTERM, 10s);
}

// `--config naming a FIFO hung (the read waited for a writer). Both
// executables refuse anything but a regular file at once, with one line.
TEST(HostileFiles, AConfigThatIsAFifoIsRefusedAtOnce) {
  TempDir tmp;
  const std::string fifo = tmp.path() + "/config.yaml";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::vector<std::vector<std::string>> commands = {
      {CheckBinary(), "check", "--root", FixtureRoot("dgx-a100"), "--config", fifo},
      {AgentBinary(), "agent", "--standalone", "--root", FixtureRoot("dgx-a100"), "--listen",
       "127.0.0.1:0", "--config", fifo}};
  for (const auto& argv : commands) {
    const auto start = std::chrono::steady_clock::now();
    auto [code, out] = RunToEnd(argv, tmp.path() + "/out.txt", 10s);
    EXPECT_EQ(code, 2) << argv[1] << ": " << out;
    EXPECT_LT(std::chrono::steady_clock::now() - start, 5s) << argv[1];
    EXPECT_NE(out.find("is not a regular file"), std::string::npos) << argv[1] << ": " << out;
  }
}

long RssKiB(pid_t pid) {
  std::string status = ReadFile("/proc/" + std::to_string(pid) + "/status");
  size_t at = status.find("VmRSS:");
  return at == std::string::npos ? -1 : std::stol(status.substr(at + 6));
}

// Against the real agent: four parallel requests of a million header
// lines (53 MB each) took it from 41 to 769 MB; slow clients starved /livez.
TEST(HostileClients, AHeaderFloodAndSlowClientsNeitherGrowNorStarveTheAgent) {
  TempDir tmp;
  AgentProcess agent(FixtureRoot("dgx-a100"), tmp.path() + "/agent.log");
  const int port = agent.WaitReady();
  ASSERT_GT(port, 0) << agent.log();
  const long before = RssKiB(agent.child().pid());

  std::atomic<size_t> sent{0};
  std::vector<std::jthread> floods;
  for (int f = 0; f < 4; ++f) {
    floods.emplace_back([&, f] {
      int fd = ConnectFrom(port, f % 2 ? "127.0.0.3" : "127.0.0.4");
      if (fd < 0) return;
      std::string chunk;
      for (int i = 0; i < 1000; ++i) {
        chunk += "X-Flood-" + std::to_string(i) + ": aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n";
      }
      if (SendAll(fd, "GET /status HTTP/1.1\r\nHost: x\r\n")) {
        for (int i = 0; i < 1000 && SendAll(fd, chunk); ++i) sent += chunk.size();
      }
      ::close(fd);
    });
  }
  // Meanwhile eight slow clients trickle header lines from another address.
  std::atomic<bool> stop{false};
  std::vector<std::jthread> slow;
  for (int i = 0; i < 8; ++i) {
    slow.emplace_back([&] {
      int fd = ConnectFrom(port, "127.0.0.5");
      if (fd < 0) return;
      SendAll(fd, "GET /status HTTP/1.1\r\n");
      for (int k = 0; !stop && SendAll(fd, "X-Slow-" + std::to_string(k) + ": 1\r\n"); ++k) {
        std::this_thread::sleep_for(200ms);
      }
      ::close(fd);
    });
  }
  std::this_thread::sleep_for(300ms);
  for (int i = 0; i < 5; ++i) {
    const auto start = std::chrono::steady_clock::now();
    auto livez = HttpGet(port, "/livez");
    ASSERT_TRUE(livez);
    EXPECT_EQ(livez->status, 200);
    EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);
    std::this_thread::sleep_for(200ms);
  }
  floods.clear();
  stop = true;
  slow.clear();
  const long after = RssKiB(agent.child().pid());
  EXPECT_LT(sent.load(), 4u * (16u << 20)) << "the agent kept reading the floods";
  EXPECT_LT(after - before, 16 * 1024) << "RSS " << before << " KiB -> " << after << " KiB";
  auto metrics = HttpGet(port, "/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->status, 200);
}

}  // namespace
}  // namespace nccl_triage
