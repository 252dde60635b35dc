// `nccl-triage triage` with probes: the fake Kubernetes API serves a job whose pods ran on the
// nodes of a demo cluster (an in-process coordinator and agents over real gRPC, probe children
// with the fake NCCL/CUDA, faults injected only into the nodes' fixture roots). The job's logs
// say only that a peer went away; the coordinator's probes, asked for by the triage, name the
// node and the cause — or the link — and the incident is counted on the coordinator.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <set>

#include "coordinator/cluster_test_util.h"
#include "triage_test_util.h"

namespace nccl_triage {
namespace {

using namespace triage_test;  // NOLINT(google-build-using-namespace): the harness of these tests
using testing_util::TestCluster;
using testing_util::TestOptions;

class TriageProbes : public TriageEnv {
 protected:
  // A cluster of six nodes (two of them outside the job, the references) with `fault`.
  void StartCluster(const std::string& fault, std::set<int> busy = {}) {
    DemoOptions o = TestOptions(6, "triage");
    o.busy_nodes = std::move(busy);
    if (!fault.empty()) {
      auto f = ParseDemoFault(fault, 6);
      ASSERT_TRUE(f.ok()) << f.status().message();
      o.faults.push_back(*f);
    }
    cluster_ = std::make_unique<TestCluster>(std::move(o));
    Status s = cluster_->cluster.Start();
    ASSERT_TRUE(s.ok()) << s.message() << "\n" << cluster_->log_text.str();
  }
  std::string Coordinator() const {
    return "127.0.0.1:" + std::to_string(cluster_->cluster.coordinator().grpc_port());
  }
  std::string TokenEnv() const { return "NCCL_TRIAGE_TOKEN=" + cluster_->cluster.token(); }

  // Pods 0-3 of the job on node-0..node-3; every log only lost its peer (pod `lost`).
  void Job(FakeApiServer& s, int lost) {
    for (int i = 0; i < 4; ++i) {
      s.AddPod(PodJson(Name(i), "node-" + std::to_string(i), "10.0.2." + std::to_string(i), i));
      if (i == lost) {
        s.SetLog("ml", Name(i), "trainer", false, FakeLog::FromText("training step 1\n", kT0));
        continue;
      }
      std::string text = ReadTextFile(kLogs + "synthetic/peer-closed-only-2.18.log");
      const std::string from = "gpu-a17<52187>";
      text.replace(text.find(from), from.size(), "10.0.2." + std::to_string(lost) + "<52187>");
      s.SetLog("ml", Name(i), "trainer", false, FakeLog::FromText(text, kT0));
    }
  }

  // `nccl-triage triage --format json --no-keep` of the job whose pod `lost` went away; a fault
  // found (exit 1) is expected.
  json TriageJson(int lost) {
    auto& s = Server();
    Job(s, lost);
    auto r = Triage(
        {"--job", "train-7", "--coordinator", Coordinator(), "--format", "json", "--no-keep"},
        {TokenEnv()});
    EXPECT_EQ(r.exit_code, 1) << r.err << r.out << cluster_->log_text.str();
    json j = json::parse(r.out, nullptr, false);
    return j.is_discarded() ? json::object() : j;
  }

  void TearDown() override { cluster_.reset(); }

  std::unique_ptr<TestCluster> cluster_;
};

TEST_F(TriageProbes, ANodeFaultIsNamedWithItsCauseAndTheIncidentIsCounted) {
  StartCluster("node:2:memlock");
  auto& s = Server();
  Job(s, 2);
  auto r = Triage(
      {"--job", "train-7", "--coordinator", Coordinator(), "--format", "json", "--keep"},
      {TokenEnv()});
  ASSERT_EQ(r.exit_code, 1) << r.err << r.out << cluster_->log_text.str();
  json j = json::parse(r.out);
  EXPECT_EQ(j["class"], "ib_resource");
  EXPECT_EQ(j["cause"], "limits.memlock");
  EXPECT_EQ(j["basis"], "probes");
  EXPECT_EQ(j["localisation"]["kind"], "node");
  EXPECT_EQ(j["localisation"]["node"], "node-2");
  EXPECT_EQ(j["localisation"]["basis"], "probes");
  EXPECT_EQ(j["peer"]["pod"], Name(2));  // the logs pointed there already
  EXPECT_EQ(j["bases"][2]["looked"], true);
  EXPECT_NE(j["remedy"].get<std::string>().find("memlock"), std::string::npos) << j["remedy"];
  EXPECT_EQ(j["kept"]["counted"], true) << j["kept"].dump();
  EXPECT_NE(cluster_->cluster.coordinator().MetricsText().find(
                R"(nccl_triage_incidents_total{cause="limits.memlock",class="ib_resource"} 1)"),
            std::string::npos)
      << cluster_->cluster.coordinator().MetricsText();
  // An incident's probes are no sweep: nothing is published as a confirmed fault (no sweep ran
  // in this cluster, so any fault series would be the triage's).
  EXPECT_EQ(cluster_->cluster.coordinator().MetricsText().find("nccl_triage_coordinator_fault{"),
            std::string::npos)
      << cluster_->cluster.coordinator().MetricsText();
}

TEST_F(TriageProbes, TheReadmeShowsAProbedIncident) {
  StartCluster("node:2:memlock");
  auto& s = Server();
  Job(s, 2);
  auto r = Triage({"--job", "train-7", "-n", "ml", "--coordinator", Coordinator()}, {TokenEnv()});
  ASSERT_EQ(r.exit_code, 1) << r.err << r.out;
  const std::string documented = ReadmeExample("triage-probes");
  ASSERT_FALSE(documented.empty());
  // The README shows the address a user gives; the report itself does not print it.
  const std::string printed =
      "$ nccl-triage triage --job train-7 -n ml --coordinator "
      "nccl-triage-coordinator.nccl-triage:9501\n" +
      r.out;
  EXPECT_EQ(WithoutRunTime(documented), WithoutRunTime(printed)) << "the README should show:\n"
                                                                 << WithoutRunTime(printed);
}

TEST_F(TriageProbes, ANodeWithOneBadRailIsNamedWithTheRail) {
  // mlx5_5 of node 2 fails memory registration; sysfs and the pair probes on mlx5_0 see nothing.
  // The triage's per-rail probes (on with a rail fault) name the node, and the answer's rail
  // table names the rail.
  StartCluster("rail:2:5:mr_register");
  json j = TriageJson(2);
  EXPECT_EQ(j["class"], "ib_resource");
  EXPECT_EQ(j["cause"], "ib.mr_register");
  EXPECT_EQ(j["basis"], "probes");
  EXPECT_EQ(j["localisation"]["node"], "node-2");
  ASSERT_EQ(j["rails"].size(), 1u) << j.dump(2);
  const std::string line = j["rails"][0].get<std::string>();
  EXPECT_EQ(line.rfind("node-2 rail 5 (mlx5_5/1): fault (ib.mr_register", 0), 0u) << line;
  EXPECT_NE(line.find("seen by these probes: rail 5 (mlx5_5/1) passes with no peer"),
            std::string::npos)
      << line;
}

TEST_F(TriageProbes, ALinkFaultIsNamedAsTheLink) {
  StartCluster("link:0-1:cable");
  json j = TriageJson(1);
  EXPECT_EQ(j["class"], "ib_resource");
  EXPECT_EQ(j["basis"], "probes");
  EXPECT_EQ(j["localisation"]["kind"], "link");
  EXPECT_EQ(j["localisation"]["node"], "node-0");
  EXPECT_EQ(j["localisation"]["peer_node"], "node-1");
}

TEST_F(TriageProbes, ANodeWhoseGpusAnotherJobHoldsIsNotProbedAndSaysSo) {
  StartCluster("node:2:memlock", {3});
  auto& s = Server();
  Job(s, 2);
  auto r =
      Triage({"--job", "train-7", "--coordinator", Coordinator(), "--format", "json", "--no-keep"},
             {TokenEnv()});
  ASSERT_EQ(r.exit_code, 1) << r.err << r.out << cluster_->log_text.str();
  json j = json::parse(r.out);
  EXPECT_EQ(j["basis"], "probes");
  EXPECT_EQ(j["localisation"]["node"], "node-2");
  bool said = false;
  for (const auto& line : j["not_looked_at"]) {
    said = said || line.get<std::string>().find(
                       "probes on node-3: busy (its GPUs are held by "
                       "another process (another job may have started "
                       "there)") == 0;
  }
  EXPECT_TRUE(said) << j["not_looked_at"].dump();
  // The coordinator planned the probes without it.
  EXPECT_NE(cluster_->log_text.str().find("triage: 3 of 4 node(s) probed, 1 skipped"),
            std::string::npos)
      << cluster_->log_text.str();
}

TEST_F(TriageProbes, OnATerminalAProgressLineShowsWhileTheProbesRunAndIsErased) {
  StartCluster("node:2:memlock");
  auto& s = Server();
  Job(s, 2);
  auto r = TriageOnTerminal({"--job", "train-7", "--coordinator", Coordinator(), "--no-keep"},
                            {TokenEnv()});
  ASSERT_EQ(r.exit_code, 1) << r.text;
  const size_t line =
      r.text.find("\rprobing 4 node(s) through the coordinator at " + Coordinator() + ": 0 s");
  ASSERT_NE(line, std::string::npos) << r.text;
  // Erased before the report, which follows on a clean line.
  const size_t erased = r.text.find("\r\033[K", line);
  ASSERT_NE(erased, std::string::npos) << r.text;
  EXPECT_NE(r.text.find("incident: job train-7", erased), std::string::npos) << r.text;
  EXPECT_EQ(r.text.find("probing", erased), std::string::npos) << r.text;
}

TEST_F(TriageProbes, AHealthyClusterDisagreesWithNothingAndConcludesNothingFromSideEffects) {
  StartCluster("");
  auto& s = Server();
  Job(s, 3);
  auto r = Triage({"--job", "train-7", "--coordinator", Coordinator(), "--no-keep"}, {TokenEnv()});
  // The probes pass: the fabric is healthy now, and the logs name no failing call.
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("probes  healthy"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("known-good reference(s)"), std::string::npos) << r.out;
}

TEST_F(TriageProbes, AWrongTokenIsSaidAndLeavesTheLogVerdict) {
  StartCluster("");
  auto& s = Server();
  Job(s, 3);
  auto r = Triage({"--job", "train-7", "--coordinator", Coordinator(), "--no-keep"},
                  {"NCCL_TRIAGE_TOKEN=not-the-token"});
  EXPECT_EQ(r.exit_code, 3) << r.err << r.out;
  EXPECT_NE(r.out.find("probes: the coordinator did not answer: the coordinator at " +
                       Coordinator() + ": refused the token (unauthenticated: invalid token)"),
            std::string::npos)
      << r.out;
}

TEST_F(TriageProbes, ACoordinatorThatDoesNotAnswerIsSaidAndExits3) {
  auto& s = Server();
  Job(s, 3);
  auto r =
      Triage({"--job", "train-7", "--coordinator", "127.0.0.1:1", "--no-keep", "--timeout", "20s"},
             {"NCCL_TRIAGE_TOKEN=x"});
  EXPECT_EQ(r.exit_code, 3) << r.err << r.out;
  EXPECT_NE(r.out.find("probes: the coordinator did not answer: the coordinator at 127.0.0.1:1: "
                       "unavailable"),
            std::string::npos)
      << r.out;
}

TEST_F(TriageProbes, ACoordinatorThatAcceptsButNeverAnswersIsCutAtTheTimeout) {
  // A listening socket nobody serves: the kernel completes the TCP handshake, gRPC's never comes.
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(::listen(fd, 8), 0);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const std::string silent = "127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  auto& s = Server();
  Job(s, 3);
  const auto start = std::chrono::steady_clock::now();
  auto r = Triage({"--job", "train-7", "--coordinator", silent, "--timeout", "3s", "--keep"},
                  {"NCCL_TRIAGE_TOKEN=x"});
  const auto took = std::chrono::steady_clock::now() - start;
  ::close(fd);
  EXPECT_EQ(r.exit_code, 3) << r.err << r.out;
  EXPECT_NE(r.out.find("probes: the coordinator did not answer: the coordinator at " + silent +
                       ": no answer in 3 s"),
            std::string::npos)
      << r.out;
  // Not asked a second time to count the incident: the pods are annotated, the count is not.
  EXPECT_NE(r.out.find("not counted (the coordinator did not answer the probes)"),
            std::string::npos)
      << r.out;
  EXPECT_LT(took, std::chrono::seconds(12));
}

}  // namespace
}  // namespace nccl_triage
