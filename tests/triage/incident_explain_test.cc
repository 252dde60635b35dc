// The explanation, the rows and the event's object, each from the values it takes.
#include "triage/incident_explain.h"

#include <gtest/gtest.h>

#include "core/catalogue.h"
#include "incident_values.h"

namespace nccl_triage::triage {
namespace {

using incident_test::FailingLog;
using incident_test::HealthyLog;
using incident_test::LostPeerLog;
using incident_test::PodOn;
using incident_test::UnreadLog;

std::vector<JobPod> Pods() {
  return {PodOn("w0", "gpu-00", "0"), PodOn("w1", "gpu-01", "1"), PodOn("w2", "gpu-02", "2")};
}

TEST(ExplainLogs, TheFirstFailureItsPeerAndItsEvidence) {
  const std::vector<JobPod> pods = Pods();
  const std::vector<LogResult> logs = {FailingLog("w1", 1000)};
  const JobScope scope = ScopeOfJob(pods, {});
  const SortedLogs sorted = SortLogs(logs, pods, scope);
  LogFindings found = NameFirstFailure(sorted, pods);
  found.peer = PeerView{{"w2", "w2", "gpu-02", "pod name"}, 1};
  found.confirmed_by = 2;
  const Explanation e = ExplainLogs(sorted, found, scope);
  EXPECT_EQ(e.reason,
            "w1 on gpu-01 failed first with limits.memlock, naming w2 as its peer; 2 other log(s) "
            "lost their connection to it");
  ASSERT_EQ(e.evidence.size(), 1U);  // the cause's evidence is the first line itself
  EXPECT_EQ(e.evidence[0].pod, "w1");
  EXPECT_EQ(e.remedy, "fix limits.memlock");
}

TEST(ExplainLogs, SideEffectsNameThePodThatWentAwayAndHowItEnded) {
  std::vector<JobPod> pods = Pods();
  pods[1].containers[0].reason = "OOMKilled";
  pods[1].containers[0].exit_code = 137;
  const std::vector<LogResult> logs = {LostPeerLog("w0", "w1", 200), LostPeerLog("w2", "w1", 100)};
  const JobScope scope = ScopeOfJob(pods, {});
  const SortedLogs sorted = SortLogs(logs, pods, scope);
  const Explanation e = ExplainLogs(sorted, NameFirstFailure(sorted, pods), scope);
  EXPECT_EQ(e.reason,
            "2 logs show only the consequence of a failure elsewhere (a peer exited); they name "
            "pod w1, whose container is terminated OOMKilled (exit 137)");
  ASSERT_EQ(e.evidence.size(), 2U);
  EXPECT_EQ(e.evidence[0].pod, "w2");  // by time
  EXPECT_EQ(e.remedy.rfind("Read why pod w1 stopped", 0), 0U) << e.remedy;
}

TEST(ExplainDecision, TheDecidingCausesFixReplacesTheLogsHint) {
  Explanation logs;
  logs.reason = "no log names an NCCL failure";
  logs.remedy = "a hint from the logs";
  const ProbeFault probe{"link",        "gpu-00", "gpu-01", FaultClass::kIbResource,
                         {"ib.fabric"}, "cable"};
  const IncidentDecision d{FaultClass::kIbResource, "ib.fabric", "probes", {}};
  const Explanation e = ExplainDecision(logs, d, &probe, Localisation{});
  EXPECT_EQ(e.reason,
            "no log names an NCCL failure; the probes find a link fault on gpu-00 - gpu-01: cable");
  EXPECT_EQ(e.remedy, std::string(FindCause("ib.fabric")->remedy));
  const IncidentDecision checks{FaultClass::kIbResource, "", "checks", {}};
  const Explanation c = ExplainDecision(logs, checks, nullptr, {"node", "gpu-01", "", "checks"});
  EXPECT_EQ(c.reason,
            "no log names an NCCL failure; the node checks predict ib_resource on gpu-01");
  EXPECT_EQ(c.remedy, "a hint from the logs");  // no cause: nothing better to say
}

TEST(ExplainDecision, NothingKnownSaysHowToLearnMore) {
  const Explanation e = ExplainDecision(Explanation{}, IncidentDecision{}, nullptr, {});
  EXPECT_EQ(e.remedy.rfind("Rerun with NCCL_DEBUG=INFO", 0), 0U) << e.remedy;
}

TEST(PodRows, TheFirstFailureItsPeerOtherFailuresUnreadSideEffectsThenHealthy) {
  const std::vector<JobPod> pods = {PodOn("w0", "gpu-00", "0"), PodOn("w1", "gpu-01", "1"),
                                    PodOn("w2", "gpu-02", "2"), PodOn("w3", "gpu-03", "3"),
                                    PodOn("w4", "gpu-04", "4"), PodOn("w5", "gpu-05", "5")};
  std::vector<LogResult> logs = {
      HealthyLog("w0"),       LostPeerLog("w1", "w3"), UnreadLog("w2", "HTTP 404"),
      FailingLog("w3", 2000), FailingLog("w4", 1000),  HealthyLog("w5")};
  logs[5].end.tail = true;
  logs[5].end.tail_cut = true;
  const JobScope scope = ScopeOfJob(pods, {});
  const SortedLogs sorted = SortLogs(logs, pods, scope);
  LogFindings found = NameFirstFailure(sorted, pods);
  ASSERT_EQ(found.first->pod, "w4");
  found.peer = PeerView{{"w0", "w0", "gpu-00", "pod name"}, 1};
  const std::vector<PodRow> rows = PodRows(logs, sorted, found, scope);
  std::vector<std::string> order;
  for (const PodRow& r : rows) order.push_back(r.pod);
  EXPECT_EQ(order, (std::vector<std::string>{"w4", "w0", "w3", "w2", "w1", "w5"}));
  EXPECT_EQ(rows[0].note, "failed first");
  EXPECT_EQ(rows[0].log, "2.0 KiB, 10 lines");
  EXPECT_EQ(rows[0].state, "terminated Error (exit 1)");
  EXPECT_EQ(rows[3].log, "not read: HTTP 404");
  EXPECT_EQ(rows[4].note, "side effect of a failure elsewhere");
  EXPECT_EQ(rows[5].note, "middle of the log skipped; end of the log cut");
}

TEST(EventObject, TheFirstFailingPodsOwnerElseTheFirstPodElseThePodItself) {
  std::vector<JobPod> pods = Pods();
  FirstFailure first;
  first.pod = "w2";
  pods[2].owner = {"kubeflow.org/v1", "PyTorchJob", "train", "pt-uid"};
  const JobScope scope = ScopeOfJob(pods, {});
  EXPECT_EQ(EventObject(first, pods, scope).kind, "PyTorchJob");
  EXPECT_EQ(EventObject(std::nullopt, pods, scope).kind, "Job");
  pods[0].owner = {};
  const OwnerRef pod = EventObject(std::nullopt, pods, scope);
  EXPECT_EQ(pod.kind, "Pod");
  EXPECT_EQ(pod.name, "w0");
  EXPECT_EQ(pod.uid, "uid-w0");
  EXPECT_TRUE(EventObject(std::nullopt, {}, ScopeOfJob({}, {})).kind.empty());
}

}  // namespace
}  // namespace nccl_triage::triage
