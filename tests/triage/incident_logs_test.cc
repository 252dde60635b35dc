// The logs' step on its own: logs as the classifier left them in, sorted logs and the logs'
// verdict out.
#include "triage/incident_logs.h"

#include <gtest/gtest.h>

#include "incident_values.h"

namespace nccl_triage::triage {
namespace {

using incident_test::FailingLog;
using incident_test::HealthyLog;
using incident_test::LostPeerLog;
using incident_test::PodOn;
using incident_test::UnreadLog;

std::vector<JobPod> Pods(int n) {
  std::vector<JobPod> pods;
  for (int i = 0; i < n; ++i) {
    const std::string s = std::to_string(i);
    pods.push_back(PodOn("w" + s, "gpu-0" + s, s, "10.0.0.1" + s));
  }
  return pods;
}

std::vector<std::string> PodsOf(const std::vector<LogView>& views) {
  std::vector<std::string> out;
  for (const LogView& v : views) out.push_back(v.log->pod + (v.log->previous ? "'" : ""));
  return out;
}

TEST(SortLogs, OrdersFailuresByTimeThenPreviousInstanceThenPodOrderUntimedLast) {
  const std::vector<JobPod> pods = Pods(4);
  std::vector<LogResult> logs = {FailingLog("w2", 5000), FailingLog("w0", std::nullopt),
                                 FailingLog("w1", 5000), FailingLog("w3", 3000)};
  logs[2].previous = true;
  const SortedLogs s = SortLogs(logs, pods, ScopeOfJob(pods, {}));
  EXPECT_EQ(PodsOf(s.faults), (std::vector<std::string>{"w3", "w1'", "w2", "w0"}));
  EXPECT_EQ(s.faults[0].pod, &pods[3]);
  EXPECT_EQ(s.read, 4);
  EXPECT_TRUE(s.side_effects.empty());
}

TEST(SortLogs, SaysWhichLogsWereNotReadReadInPartOrCut) {
  const std::vector<JobPod> pods = Pods(3);
  std::vector<LogResult> logs = {UnreadLog("w0", "HTTP 403 Forbidden"), HealthyLog("w1"),
                                 HealthyLog("w2")};
  logs[1].end.error = "stream reset";
  logs[2].end.tail_cut = true;
  logs[2].previous = true;
  const SortedLogs s = SortLogs(logs, pods, ScopeOfJob(pods, {}));
  EXPECT_EQ(s.not_looked_at,
            (std::vector<std::string>{
                "w0/trainer: log not read: HTTP 403 Forbidden",
                "w1/trainer: log read in part: stream reset",
                "w2/trainer (previous instance): the end of its log (beyond the byte limit)"}));
  EXPECT_EQ(s.total, 3);
  EXPECT_EQ(s.read, 2);
  EXPECT_EQ(s.unreadable, 1);
  EXPECT_EQ(s.healthy, 2);
}

TEST(SortLogs, CountsThePeersTheSideEffectsNameByTheirPods) {
  const std::vector<JobPod> pods = Pods(4);
  const std::vector<LogResult> logs = {LostPeerLog("w0", "w1", 300),
                                       LostPeerLog("w2", "10.0.0.11", 100),
                                       LostPeerLog("w3", "10.9.9.9", 200)};
  const SortedLogs s = SortLogs(logs, pods, ScopeOfJob(pods, {}));
  EXPECT_EQ(PodsOf(s.side_effects), (std::vector<std::string>{"w2", "w3", "w0"}));
  ASSERT_EQ(s.named.size(), 1U);  // 10.9.9.9 is none of the job's
  EXPECT_EQ(s.named[0].match.pod, "w1");
  EXPECT_EQ(s.named[0].named_by, 2);
}

TEST(NameFirstFailure, SideEffectsThatNameTheFailingPodConfirmItAndNameNoPeer) {
  const std::vector<JobPod> pods = Pods(3);
  const std::vector<LogResult> logs = {LostPeerLog("w0", "w1"), FailingLog("w1", 1000),
                                       LostPeerLog("w2", "w1")};
  const LogFindings f = NameFirstFailure(SortLogs(logs, pods, ScopeOfJob(pods, {})), pods);
  ASSERT_TRUE(f.first.has_value());
  EXPECT_EQ(f.first->pod, "w1");
  EXPECT_EQ(f.first->node, "gpu-01");
  EXPECT_EQ(f.first->rank, "w1:77");
  EXPECT_EQ(f.first->order, "the only log that names a failure");
  EXPECT_EQ(f.confirmed_by, 2);
  EXPECT_FALSE(f.peer.has_value());
  EXPECT_EQ(f.verdict.fault_class, FaultClass::kIbResource);
  EXPECT_EQ(f.verdict.cause, "limits.memlock");
  EXPECT_EQ(f.verdict.summary,
            "w1 failed first (limits.memlock); 1 failing, 2 only lost a peer, 0 healthy (of 3 "
            "logs)");
}

TEST(NameFirstFailure, ThePeerTheFirstFailureNamesCountsTheSideEffectsThatNameItToo) {
  const std::vector<JobPod> pods = Pods(3);
  const std::vector<LogResult> logs = {
      FailingLog("w0", 1000, "NET/IB : Got completion from peer 10.0.0.12<43211> with status=12"),
      FailingLog("w1", std::nullopt), LostPeerLog("w1", "w2")};
  const LogFindings f = NameFirstFailure(SortLogs(logs, pods, ScopeOfJob(pods, {})), pods);
  ASSERT_TRUE(f.first && f.peer);
  EXPECT_EQ(f.first->order, "the earliest by timestamp where logs have one, then pod order");
  EXPECT_EQ(f.peer->match.pod, "w2");
  EXPECT_EQ(f.peer->match.how, "pod IP");
  EXPECT_EQ(f.peer->named_by, 2);
}

TEST(NameFirstFailure, WithoutAFailureThePeerNamedMostIsBlamed) {
  const std::vector<JobPod> pods = Pods(4);
  const std::vector<LogResult> logs = {LostPeerLog("w0", "w2"), LostPeerLog("w1", "w3"),
                                       LostPeerLog("w2", "w3"), UnreadLog("w3", "HTTP 404")};
  const LogFindings f = NameFirstFailure(SortLogs(logs, pods, ScopeOfJob(pods, {})), pods);
  EXPECT_FALSE(f.first.has_value());
  ASSERT_TRUE(f.peer.has_value());
  EXPECT_EQ(f.peer->match.pod, "w3");
  EXPECT_EQ(f.verdict.cause, "peer.exited");
  EXPECT_EQ(f.verdict.fault_class, FaultClass::kUnknown);
  EXPECT_EQ(f.verdict.summary,
            "no log names the failing call; 0 failing, 3 only lost a peer, 0 healthy, 1 not read "
            "(of 4 logs); they name pod w3 (2 logs)");
}

TEST(NameFirstFailure, CompletedRunsAreHealthyAndNothingReadIsUnknownUnlooked) {
  const std::vector<JobPod> pods = Pods(2);
  const std::vector<LogResult> healthy = {HealthyLog("w0"), HealthyLog("w1")};
  const LogFindings h = NameFirstFailure(SortLogs(healthy, pods, ScopeOfJob(pods, {})), pods);
  EXPECT_EQ(h.verdict.fault_class, FaultClass::kHealthy);
  EXPECT_TRUE(h.verdict.looked);
  const std::vector<LogResult> unread = {UnreadLog("w0", "HTTP 403")};
  const LogFindings u = NameFirstFailure(SortLogs(unread, pods, ScopeOfJob(pods, {})), pods);
  EXPECT_EQ(u.verdict.fault_class, FaultClass::kUnknown);
  EXPECT_FALSE(u.verdict.looked);
  EXPECT_EQ(u.verdict.summary,
            "no log could be read; 0 failing, 0 only lost a peer, 0 healthy, 1 not read (of 1 "
            "logs)");
}

TEST(CutText, CutsAtTheStartOfAUtf8SequenceAndSaysSo) {
  EXPECT_EQ(CutText("short", 10), "short");
  EXPECT_EQ(CutText("abcdef", 3), "abc...");
  EXPECT_EQ(CutText("ab\xC3\xA9z", 3), "ab...");  // é is two bytes: not split
}

}  // namespace
}  // namespace nccl_triage::triage
