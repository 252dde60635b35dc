// What the nodes say, each step on its own: the agents' verdicts, the probes, the kernel window
// and the kernel causes placed in it, the rail lines.
#include "triage/incident_nodes.h"

#include <gtest/gtest.h>

#include "base/log.h"
#include "incident_values.h"
#include "triage/log_reader.h"

namespace nccl_triage::triage {
namespace {

using incident_test::FailingLog;
using incident_test::PodOn;

AgentVerdict Agent(const std::string& node, const std::string& verdict,
                   std::vector<std::string> causes = {}) {
  return {node, "agent-" + node, verdict, "checks", std::move(causes), ""};
}

int64_t Ns(const char* rfc3339) { return *ParseRfc3339Nanos(rfc3339); }

TEST(JudgeChecks, PrefersAFaultOnANodeTheLogsPointAtOverAnEarlierOne) {
  const std::vector<AgentVerdict> agents = {Agent("gpu-00", "architecture", {"pcie.acs"}),
                                            Agent("gpu-01", "healthy"),
                                            Agent("gpu-02", "ib_resource", {"ib.port_state"})};
  const std::set<std::string> nodes = {"gpu-00", "gpu-01", "gpu-02"};
  const ChecksFindings any = JudgeChecks(true, "", agents, nodes, {});
  EXPECT_EQ(any.verdict.fault_class, FaultClass::kArchitecture);
  const ChecksFindings focused = JudgeChecks(true, "", agents, nodes, {"gpu-02"});
  EXPECT_EQ(focused.verdict.fault_class, FaultClass::kIbResource);
  EXPECT_EQ(focused.verdict.cause, "ib.port_state");
  EXPECT_EQ(focused.verdict.summary,
            "agent on gpu-02: ib_resource (basis checks), ib.port_state; 1 of 3 nodes healthy");
  EXPECT_TRUE(focused.not_looked_at.empty());
}

TEST(JudgeChecks, NamesTheNodesWithoutAVerdictAndIgnoresAgentsOfOtherNodes) {
  const std::vector<AgentVerdict> agents = {Agent("gpu-00", "healthy"), Agent("gpu-11", "unknown"),
                                            Agent("gpu-99", "ib_resource")};
  std::set<std::string> nodes = {"gpu-00"};
  for (int i = 1; i <= 7; ++i) nodes.insert("gpu-1" + std::to_string(i));
  const ChecksFindings f = JudgeChecks(true, "", agents, nodes, {});
  EXPECT_EQ(f.verdict.fault_class, FaultClass::kUnknown);  // gpu-99 runs none of the job
  EXPECT_TRUE(f.verdict.looked);
  EXPECT_EQ(f.verdict.summary, "1 of 2 nodes healthy, the others unknown");
  EXPECT_EQ(f.not_looked_at,
            std::vector<std::string>{"node checks: no agent verdict on 6 node(s): gpu-12, gpu-13, "
                                     "gpu-14, gpu-15, gpu-16 and 1 more"});
}

TEST(JudgeChecks, AllHealthyIsHealthyAndUnreadSaysWhy) {
  const std::vector<AgentVerdict> agents = {Agent("gpu-00", "healthy"), Agent("gpu-01", "healthy")};
  const ChecksFindings h = JudgeChecks(true, "", agents, {"gpu-00", "gpu-01"}, {});
  EXPECT_EQ(h.verdict.fault_class, FaultClass::kHealthy);
  EXPECT_EQ(h.verdict.summary, "the agents on all 2 nodes report healthy");
  const ChecksFindings u = JudgeChecks(false, "HTTP 403", agents, {"gpu-00"}, {});
  EXPECT_FALSE(u.verdict.looked);
  EXPECT_EQ(u.verdict.summary, "not read: HTTP 403");
  EXPECT_EQ(u.not_looked_at, std::vector<std::string>{"node checks: HTTP 403"});
}

TEST(JudgeProbes, PrefersAFaultOnANodeTheLogsPointAtAndNotesNodesNotJudged) {
  ProbeOutcome p;
  p.asked = true;
  p.pairs_probed = 4;
  p.nodes = {{"gpu-00", "good", ""}, {"gpu-01", "busy", "a job runs"}, {"gpu-02", "fault", ""}};
  p.faults = {{"node", "gpu-00", "", FaultClass::kArchitecture, {"pcie.acs"}, ""},
              {"link", "gpu-03", "gpu-02", FaultClass::kIbResource, {"ib.fabric"}, "cable"}};
  const ProbesFindings any = JudgeProbes(p, {});
  EXPECT_EQ(any.fault, &p.faults[0]);
  const ProbesFindings f = JudgeProbes(p, {"gpu-02"});
  EXPECT_EQ(f.fault, &p.faults[1]);
  EXPECT_TRUE(f.verdict.looked);
  EXPECT_EQ(f.verdict.fault_class, FaultClass::kIbResource);
  EXPECT_EQ(f.verdict.summary,
            "link fault gpu-03 - gpu-02: ib_resource (ib.fabric); 4 pairs probed");
  EXPECT_EQ(f.not_looked_at, std::vector<std::string>{"probes on gpu-01: busy (a job runs)"});
}

TEST(JudgeProbes, GoodNodesAreHealthyAndProbesNotRunOrUnansweredAreNotLooked) {
  ProbeOutcome p;
  p.asked = true;
  p.pairs_probed = 1;
  p.references = {"ref-1"};
  p.nodes = {{"gpu-00", "good", ""}, {"gpu-01", "good", ""}};
  const ProbesFindings good = JudgeProbes(p, {});
  EXPECT_EQ(good.verdict.fault_class, FaultClass::kHealthy);
  EXPECT_EQ(good.verdict.summary,
            "2 nodes pass the socket and the IB probe now (1 pairs probed, 1 known-good "
            "reference(s))");
  p.error = "connection refused";
  EXPECT_EQ(JudgeProbes(p, {}).not_looked_at,
            std::vector<std::string>{"probes: the coordinator did not answer: connection refused"});
  ProbeOutcome not_run;
  not_run.not_asked = "--no-probe";
  const ProbesFindings n = JudgeProbes(not_run, {});
  EXPECT_FALSE(n.verdict.looked);
  EXPECT_EQ(n.verdict.summary, "not run: --no-probe");
}

TEST(JobKernelWindow, StartsAtTheFirstPodStartWithinTheLookBackAndEndsAfterTheGrace) {
  std::vector<JobPod> pods = {PodOn("w0", "gpu-00", "0"), PodOn("w1", "gpu-01", "1")};
  pods[0].start_time = "2025-02-11T09:05:00Z";
  pods[1].start_time = "2025-02-11T09:00:00Z";
  const std::vector<LogResult> logs = {FailingLog("w0", Ns("2025-02-11T09:20:00Z")),
                                       FailingLog("w1", Ns("2025-02-11T09:14:00Z"))};
  const KernelWindow w = JobKernelWindow(logs, pods);
  ASSERT_TRUE(w.from_ms && w.to_ms);
  EXPECT_EQ(FormatRfc3339(*w.from_ms), "2025-02-11T09:00:00Z");
  EXPECT_EQ(FormatRfc3339(*w.to_ms), "2025-02-11T09:30:00Z");  // 10 min after the last
  EXPECT_EQ(w.bounds,
            "from the job's first pod start (2025-02-11T09:00:00Z) to 10 min after the last "
            "failure (2025-02-11T09:30:00Z)");
  pods[1].start_time = "2025-02-11T05:00:00Z";  // more than 2 h before: the look-back bounds it
  EXPECT_EQ(FormatRfc3339(*JobKernelWindow(logs, pods).from_ms), "2025-02-11T07:14:00Z");
}

TEST(JobKernelWindow, NoneWhenNoLogGivesTheFailureATime) {
  const KernelWindow w = JobKernelWindow({FailingLog("w0", std::nullopt)}, {});
  EXPECT_FALSE(w.from_ms.has_value());
  EXPECT_EQ(w.bounds, "no log gives the failure a time: kernel events are not placed");
}

TEST(KernelCauses, PlacesEachCauseOfTheJobsNodesInOrOutsideTheWindow) {
  KernelWindow w;
  w.from_ms = Ns("2025-02-11T09:00:00Z") / 1'000'000;
  w.to_ms = Ns("2025-02-11T09:30:00Z") / 1'000'000;
  w.first_failure_ms = Ns("2025-02-11T09:14:00Z") / 1'000'000;
  w.last_failure_ms = Ns("2025-02-11T09:20:00Z") / 1'000'000;
  AgentVerdict a = Agent("gpu-00", "unknown", {"kernel.xid", "ib.port_state", "kernel.link_flap"});
  a.kernel_last_event = {{"kernel.xid", "2025-02-11T09:10:00Z"},
                         {"kernel.link_flap", "2025-02-11T11:00:00Z"}};
  AgentVerdict b = Agent("gpu-01", "unknown", {"kernel.gpu_off_bus"});
  b.updated = "2025-02-11T10:00:00Z";
  b.kernel_last_event = {{"kernel.gpu_off_bus", "2025-02-11T08:14:00Z"}};
  const AgentVerdict other = Agent("gpu-99", "unknown", {"kernel.xid"});
  const KernelLines in = KernelCauses({a, b, other}, {"gpu-00", "gpu-01"}, w);
  EXPECT_EQ(in.in_window, std::vector<std::string>{"gpu-00: kernel.xid (NVIDIA Xid error), last "
                                                   "event at 2025-02-11T09:10:00Z"});
  ASSERT_EQ(in.outside.size(), 2U);
  EXPECT_NE(in.outside[0].find("after the job failed: 1 h 40 min after the last failure"),
            std::string::npos)
      << in.outside[0];
  EXPECT_NE(in.outside[1].find("before the job: 1 h 0 min before the first failure"),
            std::string::npos)
      << in.outside[1];
  // Without a window nothing is set apart; a cause without a time says so.
  b.kernel_last_event.clear();
  const KernelLines all = KernelCauses({a, b}, {"gpu-00", "gpu-01"}, KernelWindow{});
  EXPECT_EQ(all.in_window.size(), 3U);
  EXPECT_TRUE(all.outside.empty());
  EXPECT_NE(all.in_window[2].find("reported by its agent at 2025-02-11T10:00:00Z (the time of its "
                                  "events is not known)"),
            std::string::npos)
      << all.in_window[2];
}

TEST(RailLines, OneLinePerRailFaultSayingWhoSawIt) {
  const std::vector<ProbeRailFault> rails = {
      {"gpu-01", 3, "mlx5_3/1", "node_rail", true, {"ib.bandwidth"}, "slow", "sweep"},
      {"gpu-02", 1, "mlx5_1/1", "link_rail", false, {}, "", "triage"},
      {"gpu-02", 2, "mlx5_2/1", "node", false, {"a", "b"}, "", "triage"}};
  EXPECT_EQ(RailLines(rails),
            (std::vector<std::string>{
                "gpu-01 rail 3 (mlx5_3/1): rate-degraded (ib.bandwidth), seen by the last sweep: "
                "slow",
                "gpu-02 rail 1 (mlx5_1/1): link fault, seen by these probes",
                "gpu-02 rail 2 (mlx5_2/1): fault (a, b), seen by these probes"}));
}

}  // namespace
}  // namespace nccl_triage::triage
