// `nccl-triage ras` end to end against the fake RAS port: what it prints, its JSON, exit codes.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>

#include "cmd_nccl_triage/cli.h"
#include "cmd_nccl_triage/ras_target.h"
#include "ras/fake_ras_server.h"
#include "workload/lookup.h"

namespace nccl_triage {
namespace {

using ras::testing::FakeMode;
using ras::testing::FakeRasServer;
using ras::testing::ReadTranscriptFile;

struct Outcome {
  int code;
  std::string out, err;
};

Outcome Ras(std::vector<std::string> args) {
  std::ostringstream out, err;
  CliContext ctx{std::move(args), out, err, "/nonexistent/nccl-triage"};
  const int code = RunRasCommand(ctx);
  return {code, out.str(), err.str()};
}

TEST(RasCommand, NamesTheStoppedRank) {
  FakeRasServer s(ReadTranscriptFile("nccl-2.28.9-3-stopped-5s-json.txt"));
  const Outcome r = Ras({"--addr", s.addr()});
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.out.find("state:    stuck: rank 1 of communicator b7bb7673efec257b (pid 614 on "
                       "192.0.2.2, GPU 0) does not answer"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("nccl:     2.28.9, RAS protocol 2, json report"), std::string::npos);
  EXPECT_TRUE(r.err.empty()) << r.err;
}

// The example of docs/ras.md is the command's output for the recorded report.
TEST(RasCommand, DocsExampleIsTheOutput) {
  std::ifstream in(std::string(NCCL_TRIAGE_SOURCE_DIR) + "/docs/ras.md");
  std::stringstream doc;
  doc << in.rdbuf();
  const std::string text = doc.str();
  const std::string begin = "<!-- example:ras-stopped -->\n```text\n$ nccl-triage ras\n";
  const auto from = text.find(begin);
  const auto to = text.find("```\n<!-- /example:ras-stopped -->");
  ASSERT_NE(from, std::string::npos);
  ASSERT_NE(to, std::string::npos);
  const std::string example = text.substr(from + begin.size(), to - from - begin.size());

  FakeRasServer s(ReadTranscriptFile("nccl-2.28.9-3-stopped-5s-json.txt"));
  const Outcome r = Ras({"--addr", s.addr()});
  // What differs between runs: the address line and the milliseconds.
  auto normal = [](std::string t) {
    t = t.substr(t.find('\n') + 1);
    return std::regex_replace(t, std::regex("answered in [0-9]+ ms"), "answered in N ms");
  };
  EXPECT_EQ(normal(r.out), normal(example));
}

TEST(RasCommand, JsonNamesTheLaggingRank) {
  FakeRasServer s(ReadTranscriptFile("nccl-2.28.9-2-lagging-json.txt"));
  const Outcome r = Ras({"--addr", s.addr(), "--format", "json", "--again", "0"});
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_EQ(s.connections(), 1);
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["schema"], "nccl-triage/ras/v1");
  EXPECT_EQ(j["state"], "stuck");
  ASSERT_EQ(j["findings"].size(), 1u);
  EXPECT_EQ(j["findings"][0]["kind"], "lagging");
  EXPECT_EQ(j["findings"][0]["rank"], 1);
  EXPECT_EQ(j["findings"][0]["pid"], 614);
  EXPECT_EQ(j["communicators"][0]["ranks"][1]["op_counts"]["AllReduce"], 484);
  EXPECT_EQ(j["protocol"]["known"], true);
}

TEST(RasCommand, AsksAgainWhenARankLagsAndSaysTheCountsDidNotMove) {
  FakeRasServer s(ReadTranscriptFile("nccl-2.28.9-2-lagging-text.txt"));
  const Outcome r = Ras({"--addr", s.addr(), "--again", "1"});
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_EQ(s.connections(), 2);
  EXPECT_NE(r.out.find("; asked again 1 s later"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("lags (AllReduce: launched 484, others up to 485); the counts did not "
                       "move between the two queries"),
            std::string::npos)
      << r.out;
}

TEST(RasCommand, HealthyJobExitsZero) {
  FakeRasServer s(ReadTranscriptFile("nccl-2.28.9-1-healthy-text.txt"));
  const Outcome r = Ras({"--addr", s.addr(), "--reply", "text"});
  EXPECT_EQ(r.code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("state:    ok: every rank answered"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("job:      1 node, 2 processes, 2 GPUs"), std::string::npos) << r.out;
}

TEST(RasCommand, UnknownProtocolIsSaidOnStderr) {
  FakeRasServer s(ReadTranscriptFile("nccl-2.28.9-1-healthy-json.txt"), FakeMode::kReplay, "7");
  const Outcome r = Ras({"--addr", s.addr()});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err,
            "nccl-triage ras: warning: the server speaks RAS protocol 7, this client knows "
            "protocol 2; its report is read as protocol 2\n");
  EXPECT_NE(r.out.find("RAS protocol 7 (unknown: this client speaks 2"), std::string::npos);
}

TEST(RasCommand, NoReportIsOneLineAndExitTwo) {
  FakeRasServer garbage("", FakeMode::kGarbage);
  Outcome r = Ras({"--addr", garbage.addr()});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find("not an NCCL RAS server"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty());

  FakeRasServer silent("", FakeMode::kSilent);
  r = Ras({"--addr", silent.addr(), "--timeout", "1"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("timed out"), std::string::npos) << r.err;
}

TEST(RasCommand, UsageErrors) {
  EXPECT_EQ(Ras({"--pod", "a/b", "--pid", "1"}).code, 2);
  EXPECT_EQ(Ras({"--addr", "host:port"}).code, 2);
  EXPECT_EQ(Ras({"--pod", "no-slash"}).code, 2);
  const Outcome gone = Ras({"--pid", "999999999"});
  EXPECT_EQ(gone.code, 2);
  EXPECT_NE(gone.err.find("pid 999999999"), std::string::npos) << gone.err;
  EXPECT_EQ(Ras({"--help"}).code, 0);
}

TEST(RasCommand, PidInThisNamespaceIsAskedFromHere) {
  FakeRasServer s(ReadTranscriptFile("nccl-2.28.9-1-healthy-text.txt"));
  const Outcome r = Ras({"--pid", std::to_string(::getpid()), "--addr", s.addr()});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("(network namespace host)"), std::string::npos) << r.out;
}

TEST(RasTarget, PicksTheFirstGpuProcessOfThePod) {
  workload::ScanResult scan;
  workload::ContainerFacts other;
  other.ref.pod_uid = "11111111-1111-1111-1111-111111111111";
  other.ref.container_id = std::string(64, 'a');
  other.processes.resize(1);
  other.processes[0].pid = 10;
  workload::ContainerFacts mine;
  mine.ref.pod_uid = "22222222-2222-2222-2222-222222222222";
  mine.ref.container_id = std::string(64, 'b');
  mine.processes.resize(2);
  mine.processes[0].pid = 20;
  mine.processes[1].pid = 21;
  scan.containers = {other, mine};
  workload::ApiPod pod;
  pod.uid = mine.ref.pod_uid;
  pod.namespace_name = "ml";
  pod.name = "train-0";
  pod.containers.push_back({"trainer", std::string(64, 'b'), {}});
  auto t = PickPodProcess(scan, pod);
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->pid, 20);
  EXPECT_EQ(t->what, "pod ml/train-0 container trainer pid 20");
  pod.uid = "33333333-3333-3333-3333-333333333333";
  auto none = PickPodProcess(scan, pod);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("no process of it holds a GPU"), std::string::npos);
}

// --pod through a stand-in for `nccl-triage-server workload-lookup` (a script printing the
// lookup document): the pod is found by namespace and name, then its GPU processes are looked
// for on this machine, where there are none.
TEST(RasTarget, PodIsLookedUpThroughTheServerExecutable) {
  const std::string dir = ::testing::TempDir() + "ras-lookup-" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  workload::WorkloadLookup lookup;
  KubeResponse pods;
  pods.status = 200;
  pods.body = R"({"items": [{"metadata": {"uid": "22222222-2222-2222-2222-222222222222",
                  "namespace": "ml", "name": "train-0"},
                  "spec": {"nodeName": "node-1", "hostNetwork": true}}]})";
  lookup.pods = pods;
  std::ofstream(dir + "/lookup.json") << workload::ToJson(lookup).dump();
  const std::string exe = dir + "/nccl-triage-server";
  std::ofstream(exe) << "#!/bin/sh\n/bin/cat '" << dir << "/lookup.json'\n";
  std::filesystem::permissions(exe, std::filesystem::perms::owner_all);

  auto pod = LookupPod(exe, "node-1", "ml", "train-0");
  ASSERT_TRUE(pod.ok()) << pod.status().message();
  EXPECT_EQ(pod->uid, "22222222-2222-2222-2222-222222222222");
  EXPECT_TRUE(pod->host_network);
  auto other = LookupPod(exe, "node-1", "ml", "train-9");
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.status().message(), "pod ml/train-9 is not on node node-1");
  auto resolved = ResolvePodTarget(exe, "node-1", "ml/train-0");
  ASSERT_FALSE(resolved.ok());
  EXPECT_NE(resolved.status().message().find("pod ml/train-0 (uid 22222222-"), std::string::npos)
      << resolved.status().message();
  auto missing = LookupPod(dir + "/absent", "node-1", "ml", "train-0");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("or use --pid"), std::string::npos);
  std::filesystem::remove_all(dir);
}

// ---- --diagnostics (NCCL 2.31+)

TEST(RasDiagnosticsCommand, AReportWithoutFindingsIsOk) {
  FakeRasServer s(ReadTranscriptFile("nccl-2.32.6-modelled-diag-ok.txt"));
  const Outcome r = Ras({"--diagnostics", "--addr", s.addr()});
  EXPECT_EQ(r.code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("state:    ok: 4 check(s) passed, none failed or differs"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("2 RAS peers, NCCL took 4.2 ms"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("findings"), std::string::npos) << r.out;
}

TEST(RasDiagnosticsCommand, AFailedCheckAndADifferingSettingAreFindingsWithCauses) {
  FakeRasServer s(ReadTranscriptFile("nccl-2.32.6-modelled-diag-env-ecc.txt"));
  const Outcome r = Ras({"--diagnostics", "--addr", s.addr(), "--format", "json"});
  EXPECT_EQ(r.code, 1) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["schema"], "nccl-triage/ras-diagnostics/v1");
  EXPECT_EQ(j["state"], "findings");
  ASSERT_EQ(j["findings"].size(), 3u) << r.out;
  EXPECT_EQ(j["findings"][0]["cause"], "gpu.health");
  EXPECT_EQ(j["findings"][0]["tag"], "WARN");
  EXPECT_EQ(j["findings"][0]["line"], 4);
  EXPECT_EQ(j["findings"][1]["cause"], "nccl.env_mismatch");
  EXPECT_EQ(j["findings"][1]["tag"], "INFO");
  EXPECT_EQ(j["findings"][2]["text"], "NCCL environment: NCCL_SOCKET_IFNAME=eth9 on rank(s) {1}");
  EXPECT_EQ(j["report"]["complete"], true);
  EXPECT_EQ(j["report"]["peers"], 2);
  EXPECT_EQ(j["passed"], 2);
  // Only the failed ECC check names a fault; settings that differ are suspects (a job may set
  // them per rank on purpose), so they alone never raise the pod's gauge.
  EXPECT_EQ(j["faults"], 1);

  const Outcome t = Ras({"--diagnostics", "--addr", s.addr()});
  EXPECT_EQ(t.code, 1);
  EXPECT_NE(t.out.find("state:    findings: 3 finding(s): gpu.health, nccl.env_mismatch; first: "
                       "ECC: uncorrected volatile errors on rank(s) {1}"),
            std::string::npos)
      << t.out;
}

// Real NCCL 2.32.6 reports (tests/gpu/ras-diag.sh on an H100, two ranks on one GPU with a
// distinct NCCL_HOSTID and NCCL_RAS_ADDR each). A job that runs: the settings that name the
// process differ by design and are no finding, the [INFO] lines of checks the machine cannot
// run (no HCA) neither.
TEST(RasDiagnosticsCommand, ARealReportOfAJobThatRunsIsOk) {
  for (const char* file :
       {"nccl-2.32.6-1-diag-same-rank0.txt", "nccl-2.32.6-1-diag-same-rank1.txt"}) {
    FakeRasServer s(ReadTranscriptFile(file));
    const Outcome r = Ras({"--diagnostics", "--addr", s.addr()});
    EXPECT_EQ(r.code, 0) << file << r.err << r.out;
    EXPECT_NE(r.out.find("state:    ok: 6 check(s) passed, none failed or differs"),
              std::string::npos)
        << file << r.out;
    EXPECT_NE(r.out.find("2 RAS peers, NCCL took "), std::string::npos) << r.out;
  }
}

// The same job with two settings that differ between the ranks: both named, with each rank's
// value, as suspects (no fault: the gauge stays at zero), and still nothing of the per-process
// settings.
TEST(RasDiagnosticsCommand, ARealReportNamesTheSettingsThatDifferAsSuspects) {
  FakeRasServer s(ReadTranscriptFile("nccl-2.32.6-2-diag-differ.txt"));
  const Outcome r = Ras({"--diagnostics", "--addr", s.addr(), "--format", "json"});
  EXPECT_EQ(r.code, 1) << r.err << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["state"], "findings");
  EXPECT_EQ(j["faults"], 0);
  EXPECT_EQ(j["passed"], 6);
  EXPECT_EQ(j["report"]["peers"], 2);
  ASSERT_EQ(j["findings"].size(), 6u) << r.out;
  std::string texts;
  for (const auto& f : j["findings"]) {
    EXPECT_EQ(f["cause"], "nccl.env_mismatch") << f.dump();
    EXPECT_EQ(f["strength"], "suspect") << f.dump();
    texts += f["text"].get<std::string>() + "\n";
  }
  EXPECT_NE(texts.find("NCCL_DEBUG_SUBSYS=INIT,RAS,ENV on rank(s) {1}"), std::string::npos)
      << texts;
  EXPECT_NE(texts.find("NCCL_TRIAGE_DIAG_MARK=(unset) on rank(s) {0}"), std::string::npos)
      << texts;
  EXPECT_EQ(texts.find("NCCL_HOSTID"), std::string::npos) << texts;
  EXPECT_EQ(texts.find("NCCL_RAS_ADDR"), std::string::npos) << texts;
  EXPECT_EQ(texts.find("env var(s) differ"), std::string::npos) << texts;
}

TEST(RasDiagnosticsCommand, AFailedCheckNoRuleKnowsIsStillAFinding) {
  FakeRasServer s(
      "> CLIENT PROTOCOL 2\n< SERVER PROTOCOL 2\n> DIAGNOSTICS\n"
      "node-a:101 NCCL DIAG === RAS Diagnostics ===\n"
      "node-a:101 NCCL DIAG [WARN] Flux capacitor: out of phase on rank(s) {0}\n"
      "node-a:101 NCCL DIAG RAS diagnostics completed in 1.0 ms across 1 RAS peers\n");
  const Outcome r = Ras({"--diagnostics", "--addr", s.addr(), "--format", "json"});
  EXPECT_EQ(r.code, 1) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["findings"].size(), 1u);
  EXPECT_TRUE(j["findings"][0]["cause"].is_null());
  EXPECT_NE(j["summary"].get<std::string>().find("unnamed check"), std::string::npos);
}

// The BUSY answer is the real one of NCCL 2.32.6 (four of five requests sent at once).
TEST(RasDiagnosticsCommand, BusyAndAnOldNcclAreOneLineAndNoReport) {
  FakeRasServer busy(ReadTranscriptFile("nccl-2.32.6-3-diag-busy.txt"));
  const Outcome b = Ras({"--diagnostics", "--addr", busy.addr()});
  EXPECT_EQ(b.code, 2);
  EXPECT_NE(b.err.find("busy: NCCL is running another diagnostics request"), std::string::npos)
      << b.err;
  EXPECT_TRUE(b.out.empty());

  FakeRasServer old(ReadTranscriptFile("nccl-2.28.9-1-healthy-text.txt"));
  const Outcome o = Ras({"--diagnostics", "--addr", old.addr(), "--timeout", "5"});
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.err.find("this NCCL has no RAS diagnostics (2.31+)"), std::string::npos) << o.err;
  EXPECT_EQ(o.err.find('\n'), o.err.size() - 1) << o.err;
}

TEST(RasDiagnosticsCommand, RawPrintsTheReportAsSent) {
  FakeRasServer s(ReadTranscriptFile("nccl-2.32.6-modelled-diag-ok.txt"));
  const Outcome r = Ras({"--diagnostics", "--raw", "--addr", s.addr()});
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out.rfind("node-a:101 NCCL DIAG === RAS Diagnostics ===\n", 0), 0u) << r.out;
}

}  // namespace
}  // namespace nccl_triage
