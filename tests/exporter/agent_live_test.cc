// The real agent binary, scraped by real tools: promtool checks a live /metrics, a real Prometheus
// server scrapes three agents and answers the verdict the checks give for each fixture, and
// node_exporter's infiniband collector, pointed at the same fixture sysfs, agrees with our port
// metrics.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <set>

#include "live_util.h"

namespace nccl_triage {
namespace {

using namespace std::chrono_literals;
using namespace testing;

// `nccl-triage check --format json --root ROOT`: what the checks say about a fixture.
nlohmann::json CheckJson(const std::string& root) {
  std::string cmd = CheckBinary() + " check --format json --root " + root + " 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  pclose(p);
  return nlohmann::json::parse(out, nullptr, false);
}

TEST(AgentBinary, ServesAFixtureThatPassesPromtoolAndStopsOnSigterm) {
  std::string promtool = FindProgram("promtool");
  if (promtool.empty()) GTEST_SKIP() << "promtool not installed";
  TempDir tmp;
  AgentProcess agent(FixtureRoot("dgx-a100"), tmp.path() + "/agent.log");
  int port = agent.WaitReady();
  ASSERT_GT(port, 0) << agent.log();
  auto livez = HttpGet(port, "/livez");
  ASSERT_TRUE(livez);
  EXPECT_EQ(livez->status, 200);
  auto metrics = HttpGet(port, "/metrics");
  ASSERT_TRUE(metrics);
  ASSERT_EQ(metrics->status, 200);
  std::ofstream(tmp.path() + "/metrics.txt") << metrics->body;
  std::string cmd = promtool + " check metrics < " + tmp.path() + "/metrics.txt > " + tmp.path() +
                    "/promtool.txt 2>&1";
  int rc = std::system(cmd.c_str());
  EXPECT_EQ(rc, 0) << ReadFile(tmp.path() + "/promtool.txt");
  // Several contract families are in a real scrape of a DGX A100 fixture.
  std::set<std::string> names;
  for (const auto& s : ParseExposition(metrics->body)) names.insert(s.name);
  for (const char* n :
       {"nccl_triage_node_verdict", "nccl_triage_check_status", "nccl_triage_ib_port_state",
        "nccl_triage_ib_port_physical_state", "nccl_triage_ib_port_rate_bytes_per_second",
        "nccl_triage_ib_port_errors_total", "nccl_triage_ib_expected_bytes_per_second",
        "nccl_triage_memlock_limit_bytes", "nccl_triage_last_check_timestamp_seconds",
        "nccl_triage_build_info"}) {
    EXPECT_TRUE(names.contains(n)) << n;
  }
  auto status = HttpGet(port, "/status");
  ASSERT_TRUE(status);
  auto j = nlohmann::json::parse(status->body);
  EXPECT_EQ(j["verdict"]["class"], CheckJson(FixtureRoot("dgx-a100"))["class"]);
  auto exit = agent.child().Stop(SIGTERM, 10s);
  ASSERT_TRUE(exit) << "the agent did not stop within 10 s of SIGTERM";
  EXPECT_TRUE(WIFEXITED(*exit) && WEXITSTATUS(*exit) == 0) << agent.log();
}

TEST(AgentBinary, OnceAgreesWithCheckOnEveryFixture) {
  for (const auto& entry : std::filesystem::directory_iterator(FixtureDir())) {
    if (!std::filesystem::exists(entry.path() / "sys")) continue;
    std::string root = entry.path().string();
    std::string cmd = AgentBinary() + " agent --once --root " + root + " 2>/dev/null";
    FILE* p = popen(cmd.c_str(), "r");
    std::string out;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
    pclose(p);
    auto once = nlohmann::json::parse(out, nullptr, false);
    auto check = CheckJson(root);
    ASSERT_FALSE(once.is_discarded()) << root;
    EXPECT_EQ(once["class"], check["class"]) << root;
    EXPECT_EQ(once["causes"], check["causes"]) << root;
  }
}

TEST(AgentBinary, BadFlagsAndAnUnusableRootExitWithUsageCode) {
  auto run = [](const std::string& args) {
    return WEXITSTATUS(
        std::system((AgentBinary() + " agent " + args + " >/dev/null 2>&1").c_str()));
  };
  EXPECT_EQ(run("--bogus"), 2);
  EXPECT_EQ(run("--root /nonexistent-root --once"), 2);
  EXPECT_EQ(run("--listen nonsense --standalone"), 2);
}

TEST(Prometheus, ScrapesAgentsAndAnswersTheVerdictOfTheChecks) {
  std::string prometheus = FindProgram("prometheus");
  if (prometheus.empty()) GTEST_SKIP() << "prometheus not installed";
  TempDir tmp;
  const std::vector<std::string> fixtures = {"dgx-a100", "port-down", "memlock-64k"};
  std::vector<std::unique_ptr<AgentProcess>> agents;
  std::string targets;
  for (const auto& f : fixtures) {
    agents.push_back(std::make_unique<AgentProcess>(FixtureRoot(f), tmp.path() + "/" + f + ".log"));
  }
  for (size_t i = 0; i < fixtures.size(); ++i) {
    int port = agents[i]->WaitReady();
    ASSERT_GT(port, 0) << agents[i]->log();
    targets += "      - targets: ['127.0.0.1:" + std::to_string(port) + "']\n" +
               "        labels: {fixture: '" + fixtures[i] + "'}\n";
  }
  std::ofstream(tmp.path() + "/prometheus.yml")
      << "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
      << "scrape_configs:\n  - job_name: nccl-triage\n    static_configs:\n"
      << targets;
  int prom_port = FreePort();
  Child prom({prometheus, "--config.file=" + tmp.path() + "/prometheus.yml",
              "--storage.tsdb.path=" + tmp.path() + "/data",
              "--web.listen-address=127.0.0.1:" + std::to_string(prom_port)},
             tmp.path() + "/prometheus.log");
  std::map<std::string, std::string> classes;  // fixture -> class Prometheus answered
  bool got = WaitFor(
      [&] {
        auto r = HttpGet(prom_port, "/api/v1/query?query=nccl_triage_node_verdict%3D%3D1");
        if (!r || r->status != 200) return false;
        auto j = nlohmann::json::parse(r->body, nullptr, false);
        if (j.is_discarded()) return false;
        classes.clear();
        for (const auto& series : j["data"]["result"]) {
          classes[series["metric"].value("fixture", "")] = series["metric"].value("class", "");
        }
        return classes.size() == fixtures.size();
      },
      45s);
  ASSERT_TRUE(got) << ReadFile(tmp.path() + "/prometheus.log");
  for (const auto& f : fixtures) {
    auto check = CheckJson(FixtureRoot(f));
    EXPECT_EQ(classes[f], check["class"].get<std::string>()) << f;
  }
  // The one-hot gauge carries every class: exactly four series per agent.
  auto all =
      HttpGet(prom_port, "/api/v1/query?query=count%20by%20(fixture)%20(nccl_triage_node_verdict)");
  ASSERT_TRUE(all);
  for (const auto& series : nlohmann::json::parse(all->body)["data"]["result"]) {
    EXPECT_EQ(series["value"][1], "4") << series.dump();
  }
}

// node_exporter's infiniband collector metric for each of our error counters.
const std::map<std::string, std::string> kNodeExporterCounters = {
    {"excessive_buffer_overrun_errors", "node_infiniband_excessive_buffer_overrun_errors_total"},
    {"link_downed", "node_infiniband_link_downed_total"},
    {"link_error_recovery", "node_infiniband_link_error_recovery_total"},
    {"local_link_integrity_errors", "node_infiniband_local_link_integrity_errors_total"},
    {"port_rcv_constraint_errors", "node_infiniband_port_receive_constraint_errors_total"},
    {"port_rcv_errors", "node_infiniband_port_errors_received_total"},
    {"port_rcv_remote_physical_errors",
     "node_infiniband_port_receive_remote_physical_errors_total"},
    {"port_rcv_switch_relay_errors", "node_infiniband_port_receive_switch_relay_errors_total"},
    {"port_xmit_constraint_errors", "node_infiniband_port_transmit_constraint_errors_total"},
    {"port_xmit_discards", "node_infiniband_port_transmit_discards_total"},
    {"symbol_error", "node_infiniband_symbol_error_total"},
    {"VL15_dropped", "node_infiniband_vl15_dropped_total"},
};

// The kernel's numbers for the state names (drivers/infiniband/core/sysfs.c).
const std::map<std::string, int> kStateIds = {{"NOP", 0},   {"DOWN", 1},   {"INIT", 2},
                                              {"ARMED", 3}, {"ACTIVE", 4}, {"ACTIVE_DEFER", 5}};
const std::map<std::string, int> kPhysIds = {
    {"Sleep", 1},  {"Polling", 2},           {"Disabled", 3}, {"PortConfigurationTraining", 4},
    {"LinkUp", 5}, {"LinkErrorRecovery", 6}, {"Phy Test", 7}};

TEST(NodeExporter, AgreesOnPortStatePhysicalStateRateAndErrorCountersOfEveryIbFixture) {
  std::string node_exporter = FindProgram("prometheus-node-exporter");
  if (node_exporter.empty()) GTEST_SKIP() << "prometheus-node-exporter not installed";
  TempDir tmp;
  int fixtures_compared = 0;
  for (const auto& entry : std::filesystem::directory_iterator(FixtureDir())) {
    if (!std::filesystem::exists(entry.path() / "sys/class/infiniband")) continue;
    std::string name = entry.path().filename().string();
    SCOPED_TRACE(name);
    AgentProcess agent(entry.path().string(), tmp.path() + "/" + name + ".agent.log");
    int ne_port = FreePort();
    Child ne({node_exporter, "--path.sysfs=" + (entry.path() / "sys").string(),
              "--collector.disable-defaults", "--collector.infiniband",
              "--web.listen-address=127.0.0.1:" + std::to_string(ne_port)},
             tmp.path() + "/" + name + ".ne.log");
    int port = agent.WaitReady();
    ASSERT_GT(port, 0) << agent.log();
    std::optional<HttpResult> theirs;
    ASSERT_TRUE(WaitFor(
        [&] {
          theirs = HttpGet(ne_port, "/metrics");
          return theirs && theirs->status == 200;
        },
        20s));
    auto ours = HttpGet(port, "/metrics");
    ASSERT_TRUE(ours);

    using Key = std::pair<std::string, std::string>;  // device, port
    std::map<Key, int> our_state, our_phys;
    std::map<Key, double> our_rate;
    std::map<std::pair<Key, std::string>, double> our_counters;
    for (const auto& s : ParseExposition(ours->body)) {
      Key k{s.labels.count("device") ? s.labels.at("device") : "",
            s.labels.count("port") ? s.labels.at("port") : ""};
      if (s.name == "nccl_triage_ib_port_state" && s.value == 1) {
        our_state[k] = kStateIds.at(s.labels.at("state"));
      } else if (s.name == "nccl_triage_ib_port_physical_state" && s.value == 1) {
        our_phys[k] = kPhysIds.at(s.labels.at("state"));
      } else if (s.name == "nccl_triage_ib_port_rate_bytes_per_second") {
        our_rate[k] = s.value;
      } else if (s.name == "nccl_triage_ib_port_errors_total") {
        our_counters[{k, kNodeExporterCounters.at(s.labels.at("counter"))}] = s.value;
      }
    }
    int ports = 0, counters = 0;
    for (const auto& s : ParseExposition(theirs->body)) {
      if (!s.labels.count("device") || !s.labels.count("port")) continue;
      Key k{s.labels.at("device"), s.labels.at("port")};
      if (s.name == "node_infiniband_state_id") {
        ++ports;
        ASSERT_TRUE(our_state.count(k)) << k.first;
        EXPECT_EQ(our_state[k], s.value) << k.first;
      } else if (s.name == "node_infiniband_physical_state_id") {
        ASSERT_TRUE(our_phys.count(k)) << k.first;
        EXPECT_EQ(our_phys[k], s.value) << k.first;
      } else if (s.name == "node_infiniband_rate_bytes_per_second") {
        ASSERT_TRUE(our_rate.count(k)) << k.first;
        EXPECT_DOUBLE_EQ(our_rate[k], s.value) << k.first;
      } else if (our_counters.count({k, s.name})) {
        ++counters;
        double value = our_counters[{k, s.name}];
        EXPECT_EQ(value, s.value) << k.first << " " << s.name;
      }
    }
    EXPECT_EQ(ports, static_cast<int>(our_state.size()));
    EXPECT_GT(ports, 0);
    EXPECT_GT(counters, 0);
    ++fixtures_compared;
  }
  EXPECT_GE(fixtures_compared, 5);
}

}  // namespace
}  // namespace nccl_triage
