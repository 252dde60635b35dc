// `nccl-triage triage` end to end: the two real executables against a fake Kubernetes API over
// real HTTPS, serving a 16-rank job whose logs are real NCCL logs (tests/fixtures/nccl-logs:
// captures from an H200 with NCCL 2.28.9 and lines in the formats of older versions). Every bad
// input has a test that asserts its line and its exit code.
#include "triage_test_util.h"

namespace nccl_triage {
namespace {

using namespace triage_test;  // NOLINT(google-build-using-namespace): the harness of these tests

class TriageCli : public TriageEnv {
 protected:
  // The 16-rank job: rank 5 (host gpu-a17) fails ibv_reg_mr first; rank 6 (gpu-a18) and the
  // even ranks lose their connection to it; the odd ranks are real successful H200 captures.
  void SixteenRankJob(FakeApiServer& s) {
    for (int i = 0; i < 16; ++i) {
      const std::string host = i == 5 ? "gpu-a17" : i == 6 ? "gpu-a18" : "";
      s.AddPod(PodJson(Name(i), Node(i), "10.0.1." + std::to_string(i), i, host));
      std::string text;
      int64_t start = kT0 + int64_t{i} * 1'000'000;
      if (i == 5) {
        text = LinesOf("synthetic/ibv-reg-mr-memlock-2.18.log", "gpu-a17");
        start = kT0;
      } else if (i == 6) {
        text = LinesOf("synthetic/ibv-reg-mr-memlock-2.18.log", "gpu-a18");
        start = kT0 + 1'000'000'000;
      } else if (i % 2 == 0) {
        text = ReadTextFile(kLogs + "synthetic/peer-closed-only-2.18.log");
        start = kT0 + 2'000'000'000;
      } else {
        text = ReadTextFile(kLogs + "h200-nccl-2.28.9/socket.r" + std::to_string(i % 4 == 1) +
                            ".log");
      }
      s.SetLog("ml", Name(i), "trainer", false, FakeLog::FromText(text, start));
    }
  }
};

TEST_F(TriageCli, NamesTheRankThatFailedFirstItsNodeAndTheCause) {
  auto& s = Server();
  SixteenRankJob(s);
  auto r = Triage({"--job", "train-7", "--no-probe", "--format", "json", "--keep"});
  ASSERT_EQ(r.exit_code, 1) << r.err << r.out;
  json j = json::parse(r.out);
  EXPECT_EQ(j["schema"], "nccl-triage/incident/v1");
  EXPECT_EQ(j["namespace"], "ml");
  EXPECT_EQ(j["class"], "ib_resource");
  EXPECT_EQ(j["cause"], "limits.memlock");
  EXPECT_EQ(j["basis"], "log");
  EXPECT_EQ(j["first_failure"]["pod"], Name(5));
  EXPECT_EQ(j["first_failure"]["node"], "gpu-05");
  EXPECT_EQ(j["first_failure"]["order"], "the only log that names a failure");
  EXPECT_NE(j["first_failure"]["line"]["text"].get<std::string>().find("ibv_reg_mr failed"),
            std::string::npos);
  EXPECT_EQ(j["localisation"]["kind"], "node");
  EXPECT_EQ(j["localisation"]["node"], "gpu-05");
  EXPECT_EQ(j["confirmed_by_logs"], 8);  // rank 6 and the seven other even ranks
  EXPECT_EQ(j["logs"].size(), 16U);
  EXPECT_EQ(j["bases"][2]["summary"], "not run: --no-probe");
  EXPECT_EQ(j["found_by"], "labelSelector batch.kubernetes.io/job-name=train-7");

  // Kept (--keep): the bounded annotation on all 16 pods, the event on the Job.
  EXPECT_EQ(j["kept"]["annotated"], 16);
  for (int i = 0; i < 16; ++i) {
    auto a = s.Annotations("ml", Name(i));
    ASSERT_TRUE(a.count("nccl-triage.io/incident")) << Name(i);
    EXPECT_LE(a["nccl-triage.io/incident"].size(), 2048U);
    EXPECT_EQ(json::parse(a["nccl-triage.io/incident"])["node"], "gpu-05");
  }
  auto events = s.Events();
  ASSERT_EQ(events.size(), 1U);
  EXPECT_EQ(events[0]["involvedObject"]["kind"], "Job");
  EXPECT_EQ(events[0]["involvedObject"]["apiVersion"], "batch/v1");
  EXPECT_EQ(events[0]["involvedObject"]["uid"], "job-uid-7");
  EXPECT_EQ(events[0]["reason"], "NcclIncidentIbResource");
  EXPECT_EQ(events[0]["type"], "Warning");
  // Every log was asked with timestamps and a head bound.
  for (const auto& c : s.Calls()) {
    if (c.path.find("/log") == std::string::npos) continue;
    EXPECT_NE(c.query.find("timestamps=true"), std::string::npos) << c.query;
    EXPECT_NE(c.query.find("limitBytes="), std::string::npos) << c.query;
  }
}

// The README's example ("When a job has died") is this run's output, word for word but the time
// of the run: the documentation shows what the binary prints.
TEST_F(TriageCli, TheReadmeShowsWhatItPrints) {
  auto& s = Server();
  SixteenRankJob(s);
  auto r = Triage({"--job", "train-7", "-n", "ml", "--no-probe"});
  ASSERT_EQ(r.exit_code, 1) << r.err;
  const std::string documented = ReadmeExample("triage");
  ASSERT_FALSE(documented.empty());
  const std::string printed = "$ nccl-triage triage --job train-7 -n ml --no-probe\n" + r.out;
  EXPECT_EQ(WithoutRunTime(documented), WithoutRunTime(printed)) << "the README should show:\n"
                                                                 << WithoutRunTime(printed);
}

TEST_F(TriageCli, TheTableSaysTheSameForAPerson) {
  auto& s = Server();
  SixteenRankJob(s);
  auto r = Triage({"--job", "train-7", "--no-probe", "--no-keep"});
  ASSERT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.out.find("class:    ib_resource"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("first:    train-7-worker-5/trainer on node gpu-05"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("where:    node gpu-05 (from the log)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("kept:     nothing (--no-keep)"), std::string::npos) << r.out;
  EXPECT_EQ(s.Events().size(), 0U);
  EXPECT_EQ(r.err, "");  // no progress line when stderr is not a terminal
}

TEST_F(TriageCli, IsReadOnlyUnlessToldToKeep) {
  auto& s = Server();
  SixteenRankJob(s);
  auto r = Triage({"--job", "train-7", "--no-probe", "--format", "json"});
  ASSERT_EQ(r.exit_code, 1) << r.err;
  json j = json::parse(r.out);
  EXPECT_EQ(j["kept"]["annotated"], 0) << j["kept"].dump();
  EXPECT_EQ(s.Events().size(), 0U);
  for (int i = 0; i < 16; ++i) {
    EXPECT_EQ(s.Annotations("ml", Name(i)).count("nccl-triage.io/incident"), 0U) << Name(i);
  }
  for (const auto& c : s.Calls()) {
    EXPECT_TRUE(c.method == "GET") << c.method << " " << c.path;
  }
  auto both = Triage({"--job", "train-7", "--no-probe", "--keep", "--no-keep"});
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_NE(both.err.find("--keep and --no-keep"), std::string::npos) << both.err;
}

TEST_F(TriageCli, OnATerminalTheLogsProgressIsShownThenErased) {
  auto& s = Server();
  SixteenRankJob(s);
  auto r = TriageOnTerminal({"--job", "train-7", "--no-probe", "--no-keep"});
  ASSERT_EQ(r.exit_code, 1) << r.text;
  const size_t done = r.text.find("\rreading logs: 16 of 16");
  ASSERT_NE(done, std::string::npos) << r.text;
  const size_t erased = r.text.find("\r\033[K", done);
  ASSERT_NE(erased, std::string::npos) << r.text;
  EXPECT_NE(r.text.find("incident: job train-7", erased), std::string::npos) << r.text;
}

TEST_F(TriageCli, AHealthyRunIsHealthyFromTheLog) {
  auto& s = Server();
  for (int i = 0; i < 2; ++i) {
    s.AddPod(PodJson(Name(i), Node(i), "10.0.1." + std::to_string(i), i));
    s.SetLog("ml", Name(i), "trainer", false,
             FakeLog::FromText(
                 ReadTextFile(kLogs + "h200-nccl-2.28.9/socket.r" + std::to_string(i) + ".log"),
                 kT0));
  }
  auto r = Triage({"--selector", "job-name=train-7", "--no-probe", "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  json j = json::parse(r.out);
  EXPECT_EQ(j["class"], "healthy");
  EXPECT_EQ(j["basis"], "log");
}

TEST_F(TriageCli, NoMatchingPodsIsOneLineAndExit2) {
  auto& s = Server();
  SixteenRankJob(s);
  auto r = Triage({"--job", "nope", "--no-probe"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(Lines(r.err), 1) << r.err;
  EXPECT_EQ(r.err.rfind("nccl-triage triage: no pods match job nope in namespace ml", 0), 0U)
      << r.err;
  EXPECT_EQ(r.out, "");
}

TEST_F(TriageCli, UnreadableLogsAreListedAndTheRestGoesOn) {
  auto& s = Server();
  SixteenRankJob(s);
  FakeLog denied;
  denied.status = 403;
  denied.error_message =
      "pods \"train-7-worker-3\" is forbidden: User \"alice\" cannot get resource \"pods/log\"";
  s.SetLog("ml", Name(3), "trainer", false, denied);
  FakeLog rotated;
  rotated.status = 500;
  rotated.error_message = "unable to retrieve container logs for containerd://4f2a";
  s.SetLog("ml", Name(7), "trainer", false, rotated);
  // Worker 9 restarted; its previous instance is gone (the API's 400).
  s.AddPod(PodJson("train-7-worker-16", "gpu-16", "10.0.1.16", 16, "", 1));
  s.SetLog("ml", "train-7-worker-16", "trainer", false,
           FakeLog::FromText(ReadTextFile(kLogs + "h200-nccl-2.28.9/default.r0.log"), kT0));
  auto r = Triage({"--job", "train-7", "--no-probe", "--no-keep"});
  ASSERT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.out.find("train-7-worker-3/trainer: log not read: HTTP 403 Forbidden: pods "
                       "\"train-7-worker-3\" is forbidden"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("train-7-worker-7/trainer: log not read: HTTP 500 InternalError: unable "
                       "to retrieve container logs"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("train-7-worker-16/trainer (previous instance): log not read: HTTP 400 "
                       "BadRequest: previous terminated container"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("first:    train-7-worker-5/trainer"), std::string::npos) << r.out;
}

TEST_F(TriageCli, HugeAndHostileLogsStayBoundedAndNeverReachTheTerminalRaw) {
  auto& s = Server();
  s.AddPod(PodJson(Name(0), Node(0), "10.0.1.0", 0));
  const std::string warn =
      "evil:1:1 [0] misc/ibvwrap.cc:262 NCCL WARN Call to ibv_reg_mr failed with error Cannot "
      "allocate memory \x1b]0;owned\x07\x1b[31m";
  FakeLog log;
  log.lines = 400000;  // about 40 MiB, with an 8 MiB line in the middle
  log.line = [warn](size_t i) {
    if (i == 200000) return std::string(8 << 20, 'A');
    if (i == 399990) return warn;
    return std::string("\x1b[2J\x1b[H spam line ") + std::to_string(i) + " \x7f\x01";
  };
  log.start_ns = kT0;
  s.SetLog("ml", Name(0), "trainer", false, log);
  auto r = Triage({"--pods", Name(0), "--no-probe", "--no-keep", "--max-log-bytes", "4MiB"});
  ASSERT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos);
  EXPECT_EQ(r.out.find('\x07'), std::string::npos);
  EXPECT_NE(r.out.find("limits.memlock"), std::string::npos) << r.out;
  EXPECT_LT(s.log_bytes_served(), 5U << 20);  // head 1 MiB + tail within the 4 MiB bound
  EXPECT_NE(r.out.find("middle of the log skipped"), std::string::npos) << r.out;
}

TEST_F(TriageCli, AnApiThatRefusesTheListIsOneLineAndExit2) {
  auto& s = Server();
  s.FailPodReads(403, "pods is forbidden: User \"alice\" cannot list resource \"pods\"", 10);
  auto r = Triage({"--job", "train-7", "--no-probe"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(Lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("cannot list the pods in namespace ml"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("HTTP 403 Forbidden"), std::string::npos) << r.err;
}

TEST_F(TriageCli, AWrongTokenIsOneLineAndExit2) {
  Server();
  WriteKubeconfig(
      testing::KubeconfigFor(server_->port(), ReadTextFile(cert_.cert_path), "wrong", "ml"));
  auto r = Triage({"--job", "train-7", "--no-probe"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(Lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("HTTP 401 Unauthorized"), std::string::npos) << r.err;
}

TEST_F(TriageCli, AnUnreachableApiIsOneLineAndExit2) {
  Server();
  const int port = server_->port();
  server_.reset();  // nothing listens there now
  WriteKubeconfig(testing::KubeconfigFor(port, ReadTextFile(cert_.cert_path), kToken, "ml"));
  auto r = Triage({"--job", "train-7", "--no-probe"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(Lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("connection failed"), std::string::npos) << r.err;
}

TEST_F(TriageCli, AnExecPluginIsRefusedWithOneLine) {
  WriteKubeconfig(
      "current-context: eks\nclusters:\n- name: c\n  cluster: {server: 'https://127.0.0.1:1'}\n"
      "contexts:\n- name: eks\n  context: {cluster: c, user: u}\n"
      "users:\n- name: u\n  user:\n    exec: {command: aws, args: [eks, get-token]}\n");
  auto r = Triage({"--job", "train-7", "--no-probe"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(Lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("user 'u' gets its credentials from an exec plugin (aws); nccl-triage "
                       "does not run credential plugins"),
            std::string::npos)
      << r.err;
}

TEST_F(TriageCli, AClientCertificateFromTheKubeconfigAuthenticates) {
  auto& s = Server(cert_.cert_path);
  SixteenRankJob(s);
  WriteKubeconfig(testing::KubeconfigFor(server_->port(), ReadTextFile(cert_.cert_path), "", "ml",
                                         ReadTextFile(cert_.cert_path),
                                         ReadTextFile(cert_.key_path)));
  auto r = Triage({"--job", "train-7", "--no-probe", "--no-keep", "--format", "json"});
  ASSERT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(json::parse(r.out)["first_failure"]["pod"], Name(5));
}

TEST_F(TriageCli, UsageErrorsAreOneLineAndExit2) {
  for (const auto& args :
       std::vector<std::vector<std::string>>{{},
                                             {"--job", "a", "--pods", "b"},
                                             {"--job", "Bad_Name"},
                                             {"--job", "a", "--since", "yesterday"},
                                             {"--job", "a", "--format", "yaml"},
                                             {"--job", "a", "--max-log-bytes", "lots"},
                                             {"--job", "a", "--frobnicate"},
                                             {"--job", "a", "--coordinator", "http://c:9501"},
                                             {"--job", "a", "--coordinator", "coordinator"},
                                             {"--job", "a", "--coordinator", "c:99999"}}) {
    auto r = Triage(args);
    EXPECT_EQ(r.exit_code, 2) << ::testing::PrintToString(args);
    EXPECT_EQ(Lines(r.err), 1) << r.err;
    EXPECT_EQ(r.err.rfind("nccl-triage triage: ", 0), 0U) << r.err;
  }
}

TEST_F(TriageCli, WithoutTheServerBesideItSaysSoInOneLine) {
  fs::create_directories(dir_ / "bin");
  fs::copy_file(kBinary, dir_ / "bin" / "nccl-triage");
  auto r = Triage({"--job", "train-7", "--no-probe"}, {}, (dir_ / "bin" / "nccl-triage").string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(Lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("nccl-triage-server not found: the triage reads the Kubernetes API "
                       "through nccl-triage-server, installed beside nccl-triage"),
            std::string::npos)
      << r.err;
}

TEST_F(TriageCli, SinceIsPassedToTheApi) {
  auto& s = Server();
  SixteenRankJob(s);
  auto r = Triage({"--job", "train-7", "--since", "2h", "--no-probe", "--no-keep"});
  ASSERT_EQ(r.exit_code, 1) << r.err;
  for (const auto& c : s.Calls()) {
    if (c.path.find("/log") != std::string::npos) {
      EXPECT_NE(c.query.find("sinceSeconds=7200"), std::string::npos) << c.query;
    }
  }
}

}  // namespace
}  // namespace nccl_triage
