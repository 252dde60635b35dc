// The incident verdict as a pure function: which rank failed first, the peer it blames, the
// class and basis when logs, node checks and probes agree or not, the exit code, and how the
// incident is shown and kept (table, bounded annotation, event).
#include "triage/incident.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "incident_values.h"

#include "triage/peers.h"
#include "triage/render.h"
#include "triage/target.h"

namespace nccl_triage::triage {
namespace {

// The steps' pod builder (incident_values.h) with the host address the report shows.
JobPod Pod(const std::string& name, const std::string& node, const std::string& ip,
           const std::string& index) {
  JobPod p = incident_test::PodOn(name, node, index, ip);
  p.pod_ips = {ip};
  p.host_ip = "192.168.0." + index;
  return p;
}

// A log read from `text`, each line written `step` ms after `start_ms`.
LogResult Log(const std::string& pod, const std::string& text, int64_t start_ms, bool time = true) {
  LogReader r;
  int64_t ms = start_ms;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    std::string line = text.substr(pos, nl - pos);
    if (time) {
      char ts[64];
      std::snprintf(ts, sizeof(ts), "2025-02-11T09:14:%02lld.%03lldZ ",
                    static_cast<long long>(ms / 1000 % 60), static_cast<long long>(ms % 1000));
      line = ts + line;
    }
    r.Feed(line + "\n");
    ms += 1;
    pos = nl + 1;
  }
  LogResult l;
  l.pod = pod;
  l.container = "trainer";
  l.read = true;
  l.end.head_bytes = text.size();
  l.summary = r.Finish();
  return l;
}

const std::string kHealthy =
    "h:1:1 [0] NCCL INFO NCCL version 2.18.3+cuda12.2\n"
    "h:1:1 [0] NCCL INFO Using network IB\n"
    "h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0\n"
    "h:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1b000 - Init COMPLETE\n"
    "h:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1b000 - Destroy COMPLETE\n";

const std::string kMemlock =
    "w1:4121:4121 [0] NCCL INFO Using network IB\n"
    "w1:4121:4121 [0] misc/ibvwrap.cc:262 NCCL WARN Call to ibv_reg_mr failed with error Cannot "
    "allocate memory\n"
    "w1:4121:4121 [0] NCCL INFO transport/net_ib.cc:692 -> 2\n";

std::string Closed(const std::string& self, const std::string& peer) {
  return self + ":77:77 [0] NCCL INFO Using network IB\n" + self +
         ":77:77 [0] misc/socket.cc:538 NCCL WARN socketProgress: Connection closed by remote "
         "peer " +
         peer + "<52187>\n" + self + ":77:77 [0] NCCL INFO misc/socket.cc:789 -> 6\n";
}

IncidentInput Job(int n) {
  IncidentInput in;
  in.ns = "ml";
  in.target = "job train";
  for (int i = 0; i < n; ++i) {
    in.pods.push_back(Pod("w" + std::to_string(i), "gpu-0" + std::to_string(i),
                          "10.0.0." + std::to_string(i + 10), std::to_string(i)));
  }
  in.checks_read = true;
  in.probes.not_asked = "--no-probe";
  in.now_ms = 1739265300000;
  return in;
}

TEST(PeerNames, FindsTheAddressesNcclAndC10dPrint) {
  EXPECT_EQ(PeerNamesIn("NCCL WARN socketProgress: Connection closed by remote peer "
                        "gpu-a17<52187>"),
            std::vector<std::string>{"gpu-a17"});
  EXPECT_EQ(PeerNamesIn("NET/IB : Got completion from peer 10.0.0.2<43211> with status=12"),
            std::vector<std::string>{"10.0.0.2"});
  EXPECT_EQ(PeerNamesIn("Connect to eth0:10.1.2.3<41503> failed : Connection refused"),
            std::vector<std::string>{"10.1.2.3"});
  EXPECT_EQ(PeerNamesIn("Connect to fe80::1%ib0<41503> failed"),
            std::vector<std::string>{"fe80::1"});
  EXPECT_EQ(PeerNamesIn("Read error [10.0.0.3]:2435: Connection reset by peer"),
            std::vector<std::string>{"10.0.0.3"});
  EXPECT_EQ(PeerNamesIn("localGid ::ffff:10.0.0.1 remoteGids ::ffff:10.0.0.9"),
            std::vector<std::string>{"10.0.0.9"});
  EXPECT_TRUE(PeerNamesIn("Bootstrap : Using eth0:10.0.0.1<0>").empty());  // its own socket
  EXPECT_TRUE(PeerNamesIn("no address here").empty());
}

TEST(PeerNames, ResolvesToThePodOrOnlyTheNode) {
  std::vector<JobPod> pods = {Pod("w0", "gpu-00", "10.0.0.10", "0"),
                              Pod("w1", "gpu-01", "10.0.0.11", "1"),
                              Pod("w2", "gpu-01", "10.0.0.12", "2")};
  EXPECT_EQ(ResolvePeer("10.0.0.11", pods)->pod, "w1");
  EXPECT_EQ(ResolvePeer("w2", pods)->how, "pod name");
  auto node = ResolvePeer("gpu-01", pods);  // two pods there: only the node is known
  ASSERT_TRUE(node.has_value());
  EXPECT_EQ(node->pod, "");
  EXPECT_EQ(node->node, "gpu-01");
  EXPECT_EQ(ResolvePeer("192.168.0.0", pods)->pod, "w0");  // the one pod on its host
  EXPECT_FALSE(ResolvePeer("10.9.9.9", pods).has_value());
}

TEST(Incident, TheEarliestFailureByTimeIsTheFirstFailingRankAndItsPeerIsNamed) {
  IncidentInput in = Job(4);
  in.logs.push_back(Log("w0", Closed("w0", "w1"), 3000));
  in.logs.push_back(Log("w1", kMemlock, 1000));  // WARN at 1001 ms: the earliest
  in.logs.push_back(Log("w2", Closed("w2", "w1"), 2000));
  in.logs.push_back(Log("w3", kHealthy, 0));
  Incident inc = JudgeIncident(in);
  ASSERT_TRUE(inc.first.has_value());
  EXPECT_EQ(inc.first->pod, "w1");
  EXPECT_EQ(inc.first->node, "gpu-01");
  EXPECT_EQ(inc.first->order, "the only log that names a failure");
  EXPECT_EQ(inc.fault_class, FaultClass::kIbResource);
  EXPECT_EQ(inc.cause, "limits.memlock");
  EXPECT_EQ(inc.basis, "log");
  EXPECT_EQ(inc.where.kind, "node");
  EXPECT_EQ(inc.where.node, "gpu-01");
  EXPECT_EQ(inc.exit_code, 1);
  EXPECT_FALSE(inc.remedy.empty());
  EXPECT_EQ(inc.rows.front().pod, "w1");
  EXPECT_EQ(inc.rows.front().note, "failed first");
  EXPECT_EQ(inc.event_object.kind, "Job");
}

TEST(Incident, OfTwoFailingLogsTheOneThatFailedEarlierWins) {
  IncidentInput in = Job(3);
  in.logs.push_back(Log("w2", kMemlock, 5000));
  in.logs.push_back(Log("w0", kMemlock, 9000));
  Incident inc = JudgeIncident(in);
  ASSERT_TRUE(inc.first.has_value());
  EXPECT_EQ(inc.first->pod, "w2");
  EXPECT_EQ(inc.first->order, "the earliest by the runtime's timestamps");
}

TEST(Incident, WithoutTimestampsItSaysItFellBackToPodOrder) {
  IncidentInput in = Job(3);
  in.logs.push_back(Log("w2", kMemlock, 0, false));
  in.logs.push_back(Log("w1", kMemlock, 0, false));
  Incident inc = JudgeIncident(in);
  ASSERT_TRUE(inc.first.has_value());
  EXPECT_EQ(inc.first->pod, "w1");
  EXPECT_EQ(inc.first->order, "the earliest by timestamp where logs have one, then pod order");
}

TEST(Incident, SideEffectsAloneNameThePodThatWentAway) {
  IncidentInput in = Job(4);
  in.pods[1].containers[0].reason = "OOMKilled";
  in.pods[1].containers[0].exit_code = 137;
  in.logs.push_back(Log("w0", Closed("w0", "10.0.0.11"), 0));
  in.logs.push_back(Log("w2", Closed("w2", "10.0.0.11"), 0));
  in.logs.push_back(Log("w3", Closed("w3", "w1"), 0));
  LogResult gone;
  gone.pod = "w1";
  gone.container = "trainer";
  gone.end.status = 404;
  gone.end.error = "HTTP 404 NotFound: the container is gone";
  in.logs.push_back(gone);
  Incident inc = JudgeIncident(in);
  EXPECT_FALSE(inc.first.has_value());
  ASSERT_TRUE(inc.peer.has_value());
  EXPECT_EQ(inc.peer->match.pod, "w1");
  EXPECT_EQ(inc.peer->named_by, 3);
  EXPECT_EQ(inc.where.node, "gpu-01");
  EXPECT_EQ(inc.fault_class, FaultClass::kUnknown);
  EXPECT_EQ(inc.exit_code, 3);
  EXPECT_NE(inc.reason.find("OOMKilled (exit 137)"), std::string::npos) << inc.reason;
  EXPECT_NE(std::find(inc.not_looked_at.begin(), inc.not_looked_at.end(),
                      "w1/trainer: log not read: HTTP 404 NotFound: the container is gone"),
            inc.not_looked_at.end());
}

TEST(Incident, TheSideEffectsEvidenceGoesByTimeWhateverOrderTheLogsArrivedIn) {
  IncidentInput in = Job(4);
  in.logs.push_back(Log("w3", Closed("w3", "w1"), 300));
  in.logs.push_back(Log("w2", Closed("w2", "w1"), 0));
  in.logs.push_back(Log("w0", Closed("w0", "w1"), 200));
  Incident inc = JudgeIncident(in);
  ASSERT_EQ(inc.evidence.size(), 3U);
  EXPECT_EQ(inc.evidence[0].pod, "w2");
  EXPECT_EQ(inc.evidence[1].pod, "w0");
  EXPECT_EQ(inc.evidence[2].pod, "w3");
}

TEST(Incident, HealthyLogsAreHealthyFromTheLog) {
  IncidentInput in = Job(2);
  in.logs.push_back(Log("w0", kHealthy, 0));
  in.logs.push_back(Log("w1", kHealthy, 0));
  Incident inc = JudgeIncident(in);
  EXPECT_EQ(inc.fault_class, FaultClass::kHealthy);
  EXPECT_EQ(inc.basis, "log");
  EXPECT_EQ(inc.exit_code, 0);
}

TEST(Incident, NothingReadIsNothingToConclude) {
  IncidentInput in = Job(1);
  LogResult denied;
  denied.pod = "w0";
  denied.container = "trainer";
  denied.end.status = 403;
  denied.end.error = "HTTP 403 Forbidden: cannot get resource \"pods/log\"";
  in.logs.push_back(denied);
  in.checks_read = false;
  in.checks_error = "agent pods in namespace nccl-triage: HTTP 403 Forbidden";
  Incident inc = JudgeIncident(in);
  EXPECT_EQ(inc.fault_class, FaultClass::kUnknown);
  EXPECT_EQ(inc.exit_code, 3);
  EXPECT_EQ(inc.rows.front().log, "not read: HTTP 403 Forbidden: cannot get resource \"pods/log\"");
  EXPECT_FALSE(inc.bases[0].looked);
  EXPECT_FALSE(inc.bases[1].looked);
  EXPECT_FALSE(inc.bases[2].looked);
}

TEST(Incident, NodeChecksGiveAPredictionWhenTheLogsSayNothing) {
  IncidentInput in = Job(2);
  in.logs.push_back(Log("w0", "just application output\n", 0));
  in.agents.push_back({"gpu-00", "agent-a", "healthy", "checks", {}, ""});
  in.agents.push_back({"gpu-01", "agent-b", "ib_resource", "checks", {"ib.port_state"}, ""});
  Incident inc = JudgeIncident(in);
  EXPECT_EQ(inc.fault_class, FaultClass::kIbResource);
  EXPECT_EQ(inc.basis, "checks");
  EXPECT_EQ(inc.cause, "ib.port_state");
  EXPECT_EQ(inc.where.node, "gpu-01");
  EXPECT_EQ(inc.exit_code, 1);
}

TEST(Incident, ListsTheKernelCausesTheAgentsReportOnTheJobsNodesOnly) {
  IncidentInput in = Job(2);
  in.logs.push_back(Log("w0", "just application output\n", 0));
  in.agents.push_back({"gpu-00", "agent-a", "unknown", "checks",
                       {"kernel.xid", "kernel.gpu_off_bus"}, "2026-01-01T12:03:00Z"});
  in.agents.push_back({"gpu-01", "agent-b", "ib_resource", "checks", {"ib.port_state"}, ""});
  in.agents.push_back({"gpu-99", "agent-z", "unknown", "checks", {"kernel.xid"}, ""});
  Incident inc = JudgeIncident(in);
  ASSERT_EQ(inc.kernel.size(), 2U);  // gpu-99 runs no pod of the job
  EXPECT_EQ(inc.kernel[1],
            "gpu-00: kernel.gpu_off_bus (GPU fallen off the bus), reported by its agent at "
            "2026-01-01T12:03:00Z (the time of its events is not known)");
  EXPECT_EQ(ToJson(inc)["kernel"].size(), 2U);
  EXPECT_NE(RenderIncidentTable(inc, KeepOutcome{}).find("kernel:   gpu-00: kernel.xid"),
            std::string::npos);
}

// The logs' lines are written at 2025-02-11T09:14:00Z on: the job failed then.
TEST(Incident, BlamesAnXidInsideTheJobsWindowButNotOneThreeHoursBefore) {
  IncidentInput in = Job(2);
  in.logs.push_back(Log("w1", kMemlock, 0));
  ASSERT_TRUE(in.logs[0].summary.root_ns.has_value());
  AgentVerdict now{"gpu-00", "agent-a", "unknown", "checks", {"kernel.xid"}, ""};
  now.kernel_last_event["kernel.xid"] = "2025-02-11T09:13:30Z";
  AgentVerdict before{"gpu-01", "agent-b", "unknown", "checks", {"kernel.xid"}, ""};
  before.kernel_last_event["kernel.xid"] = "2025-02-11T06:14:00Z";
  in.agents = {now, before};
  Incident inc = JudgeIncident(in);
  ASSERT_EQ(inc.kernel.size(), 1U);
  EXPECT_EQ(inc.kernel[0],
            "gpu-00: kernel.xid (NVIDIA Xid error), last event at 2025-02-11T09:13:30Z");
  ASSERT_EQ(inc.kernel_outside.size(), 1U);
  EXPECT_EQ(inc.kernel_outside[0].rfind("gpu-01: kernel.xid", 0), 0U) << inc.kernel_outside[0];
  EXPECT_NE(
      inc.kernel_outside[0].find("before the job: 3 h 0 min before the first failure, not blamed"),
      std::string::npos)
      << inc.kernel_outside[0];
  const nlohmann::json j = ToJson(inc);
  EXPECT_EQ(j["kernel"].size(), 1U);
  EXPECT_EQ(j["kernel_outside_window"].size(), 1U);
  EXPECT_EQ(j["kernel_window"]["from"], "2025-02-11T07:14:00Z");  // 2 h before the failure
  EXPECT_EQ(j["kernel_window"]["to"], "2025-02-11T09:24:00Z");    // 10 min after it
  const std::string table = RenderIncidentTable(inc, KeepOutcome{});
  EXPECT_NE(table.find("kernel:   gpu-00: kernel.xid"), std::string::npos);
  EXPECT_NE(table.find("kernel:   not blamed: gpu-01: kernel.xid"), std::string::npos);
}

TEST(Incident, TheKernelWindowStartsAtTheJobsFirstPodStartAndEndsAfterAGrace) {
  IncidentInput in = Job(2);
  in.pods[0].start_time = "2025-02-11T09:00:00Z";
  in.pods[1].start_time = "2025-02-11T09:05:00Z";
  in.logs.push_back(Log("w1", kMemlock, 0));
  AgentVerdict early{"gpu-00", "agent-a", "unknown", "checks", {"kernel.xid"}, ""};
  early.kernel_last_event["kernel.xid"] = "2025-02-11T08:30:00Z";  // before the pods started
  AgentVerdict late{"gpu-01", "agent-b", "unknown", "checks",
                    {"kernel.gpu_off_bus", "kernel.link_flap"}, ""};
  late.kernel_last_event["kernel.gpu_off_bus"] = "2025-02-11T09:20:00Z";  // within the grace
  late.kernel_last_event["kernel.link_flap"] = "2025-02-11T11:00:00Z";    // long after
  in.agents = {early, late};
  Incident inc = JudgeIncident(in);
  ASSERT_EQ(inc.kernel.size(), 1U);
  EXPECT_EQ(inc.kernel[0].rfind("gpu-01: kernel.gpu_off_bus", 0), 0U) << inc.kernel[0];
  ASSERT_EQ(inc.kernel_outside.size(), 2U);
  EXPECT_NE(inc.kernel_outside[0].find("before the job: 44 min before the first failure"),
            std::string::npos)
      << inc.kernel_outside[0];
  EXPECT_NE(inc.kernel_outside[1].find("after the job failed: 1 h 45 min after the last"),
            std::string::npos)
      << inc.kernel_outside[1];
  EXPECT_EQ(ToJson(inc)["kernel_window"]["from"], "2025-02-11T09:00:00Z");
}

TEST(Incident, KernelCausesAreNotSetApartWhenNoLogGivesTheFailureATime) {
  IncidentInput in = Job(2);
  in.logs.push_back(Log("w1", kMemlock, 0, /*time=*/false));
  AgentVerdict old{"gpu-00", "agent-a", "unknown", "checks", {"kernel.xid"}, ""};
  old.kernel_last_event["kernel.xid"] = "2025-02-11T06:14:00Z";
  in.agents = {old};
  Incident inc = JudgeIncident(in);
  ASSERT_EQ(inc.kernel.size(), 1U);
  EXPECT_TRUE(inc.kernel_outside.empty());
  EXPECT_TRUE(ToJson(inc)["kernel_window"]["from"].is_null());
}

TEST(Incident, ProbesThatPassNowDisagreeWithAFailingLog) {
  IncidentInput in = Job(2);
  in.logs.push_back(Log("w1", kMemlock, 0));
  in.probes.asked = true;
  in.probes.nodes = {{"gpu-00", "good", ""}, {"gpu-01", "good", ""}};
  in.probes.pairs_probed = 3;
  Incident inc = JudgeIncident(in);
  EXPECT_EQ(inc.fault_class, FaultClass::kIbResource);
  EXPECT_EQ(inc.basis, "log");
  ASSERT_EQ(inc.disagreements.size(), 1U);
  EXPECT_NE(inc.disagreements[0].find("the probes pass now"), std::string::npos);
}

TEST(Incident, AProbeFaultLocalisesALinkTheLogsCouldNot) {
  IncidentInput in = Job(2);
  in.logs.push_back(Log("w0", "app only\n", 0));
  in.probes.asked = true;
  in.probes.faults.push_back(
      {"link", "gpu-00", "gpu-01", FaultClass::kIbResource, {"ib.fabric"}, "cable"});
  Incident inc = JudgeIncident(in);
  EXPECT_EQ(inc.basis, "probes");
  EXPECT_EQ(inc.where.kind, "link");
  EXPECT_EQ(inc.where.peer_node, "gpu-01");
  EXPECT_EQ(inc.exit_code, 1);
}

TEST(Incident, ARailFaultOfTheLastSweepOnAJobNodeIsNamed) {
  // The triage's own probes pass; the coordinator's last sweep found gpu-01's rail 3 slow.
  auto answer = nlohmann::json::parse(R"({
    "nodes": [
      {"node": "gpu-00", "state": "good", "reason": "", "rails": [
        {"rail": 3, "device": "mlx5_3/1", "fault": "", "rate_degraded": false, "causes": []}]},
      {"node": "gpu-01", "state": "good", "reason": "", "rails": [
        {"rail": 2, "device": "mlx5_2/1", "fault": ""},
        {"rail": 3, "device": "mlx5_3/1", "fault": "node_rail", "rate_degraded": true,
         "causes": ["ib.bandwidth"], "reason": "rail 3 (mlx5_3/1) is rate-degraded: ...",
         "seen_by": "sweep"},
        "not an object", {"rail": "x", "fault": "node"}]}],
    "faults": [], "pairs_probed": 1, "references": []})");
  auto probes = ProbeOutcomeFromJson(answer);
  ASSERT_TRUE(probes.ok()) << probes.status().message();
  // Rails without a fault, and malformed ones, are left out.
  ASSERT_EQ(probes->rail_faults.size(), 1U);
  EXPECT_EQ(probes->rail_faults[0].node, "gpu-01");
  EXPECT_EQ(probes->rail_faults[0].rail, 3);
  EXPECT_TRUE(probes->rail_faults[0].rate_degraded);
  IncidentInput in = Job(2);
  in.logs.push_back(Log("w0", "app only\n", 0));
  in.probes = *probes;
  Incident inc = JudgeIncident(in);
  ASSERT_EQ(inc.rails.size(), 1U);
  EXPECT_EQ(inc.rails[0],
            "gpu-01 rail 3 (mlx5_3/1): rate-degraded (ib.bandwidth), seen by the last sweep: "
            "rail 3 (mlx5_3/1) is rate-degraded: ...");
  EXPECT_EQ(ToJson(inc)["rails"][0], inc.rails[0]);
  KeepOutcome kept;
  kept.not_attempted = "--no-keep";
  const std::string t = RenderIncidentTable(inc, kept);
  EXPECT_NE(t.find("rail:     gpu-01 rail 3 (mlx5_3/1): rate-degraded (ib.bandwidth)"),
            std::string::npos)
      << t;
}

TEST(Incident, ACoordinatorThatDoesNotAnswerIsSaidAndLeavesTheLogVerdict) {
  IncidentInput in = Job(1);
  in.logs.push_back(Log("w0", "app only\n", 0));
  in.probes.asked = true;
  in.probes.error = "connection refused";
  Incident inc = JudgeIncident(in);
  EXPECT_EQ(inc.exit_code, 3);
  EXPECT_EQ(inc.bases[2].summary, "the coordinator did not answer: connection refused");
}

TEST(Incident, TheJsonCarriesTheSchemaAndEveryBasis) {
  IncidentInput in = Job(2);
  in.logs.push_back(Log("w1", kMemlock, 0));
  nlohmann::json j = ToJson(JudgeIncident(in));
  EXPECT_EQ(j["schema"], "nccl-triage/incident/v1");
  EXPECT_EQ(j["class"], "ib_resource");
  EXPECT_EQ(j["bases"].size(), 3U);
  EXPECT_EQ(j["first_failure"]["pod"], "w1");
  EXPECT_EQ(j["first_failure"]["at"], "2025-02-11T09:14:00.001Z");
  EXPECT_EQ(j["localisation"]["kind"], "node");
  EXPECT_EQ(j["exit_code"], 1);
}

TEST(IncidentText, TheAnnotationStaysWithinItsBound) {
  IncidentInput in = Job(1);
  in.logs.push_back(Log("w0", kMemlock, 0));
  Incident inc = JudgeIncident(in);
  inc.reason = std::string(10000, 'x') + "\"\\";
  const std::string a = IncidentAnnotation(inc);
  EXPECT_LE(a.size(), kMaxAnnotationBytes);
  auto j = nlohmann::json::parse(a);
  EXPECT_EQ(j["class"], "ib_resource");
  EXPECT_EQ(j["truncated"], true);
  inc.reason = std::string(5000, '\x01');  // escapes grow six times
  EXPECT_LE(IncidentAnnotation(inc).size(), kMaxAnnotationBytes);
  EXPECT_LE(IncidentEventMessage(inc).size(), kMaxEventMessageBytes);
  EXPECT_EQ(IncidentEventReason(inc), "NcclIncidentIbResource");
}

TEST(IncidentText, TheTableNamesTheFirstFailureAndWhatWasNotLookedAt) {
  IncidentInput in = Job(2);
  in.logs.push_back(Log("w1", kMemlock, 0));
  KeepOutcome kept;
  kept.not_attempted = "--no-keep";
  const std::string t = RenderIncidentTable(JudgeIncident(in), kept);
  EXPECT_NE(t.find("class:    ib_resource"), std::string::npos) << t;
  EXPECT_NE(t.find("first:    w1/trainer on node gpu-01"), std::string::npos) << t;
  EXPECT_NE(t.find("probes: --no-probe"), std::string::npos) << t;
  EXPECT_NE(t.find("kept:     nothing (--no-keep)"), std::string::npos) << t;
}

TEST(Target, ParsesDurationsSizesAndNames) {
  EXPECT_EQ(*ParseDurationSeconds("2h"), 7200);
  EXPECT_EQ(*ParseDurationSeconds("1h30m"), 5400);
  EXPECT_FALSE(ParseDurationSeconds("2 hours").ok());
  EXPECT_FALSE(ParseDurationSeconds("0s").ok());
  EXPECT_EQ(*ParseByteSize("8MiB"), 8U << 20);
  EXPECT_FALSE(ParseByteSize("lots").ok());
  EXPECT_TRUE(IsObjectName("train-7.worker"));
  EXPECT_FALSE(IsObjectName("Train_7"));
  EXPECT_FALSE(IsObjectName("a/../b"));
  EXPECT_EQ(SplitList(" a, ,b "), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(JobSelectors("t").front(), "batch.kubernetes.io/job-name=t");
}

}  // namespace
}  // namespace nccl_triage::triage
