// The coordinator's state in a ConfigMap (coordinator/state_store.h) with the real Kubernetes
// client against the fake API server: its encoding and bounds, writes only on change, the
// resourceVersion guard, no write before a read worked; and a restart of the remediator and of
// the hold-down from it: the fault stays confirmed, the taint stays, the release clock goes on
// (a wall clock stepped back never hastens it) and no dry-run event is told twice. The same
// against the real API server with the chart's RBAC is in tests/k8s.
#include "coordinator/state_store.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/log.h"
#include "exporter/tls_test_cert.h"
#include "kube/kube_client.h"
#include "planner/cluster_verdicts.h"
#include "support/fake_api_harness.h"
#include "support/fake_api_server.h"
#include "support/fake_clock.h"
#include "support/text_file.h"

namespace nccl_triage {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr int64_t kHour = 3'600'000;
constexpr int64_t kMinute = 60'000;
constexpr char kNs[] = "nccl-triage";
constexpr char kName[] = "nccl-triage-state";

TrackedFault NodeFault(const std::string& node, int seen, bool confirmed) {
  TrackedFault t;
  t.fault = {FaultKind::kNode, {node}, FaultClass::kIbResource, {"ib.port_state"}, "port down"};
  t.seen = seen;
  t.confirmed = confirmed;
  return t;
}

TEST(CoordinatorStateEncoding, KeepsFaultsCountersAndRemediationMemory) {
  CoordinatorState s;
  s.faults.push_back(NodeFault("a", 1, false));
  s.faults.push_back(NodeFault("b", 2, true));
  TrackedFault link;
  link.fault = {FaultKind::kLink, {"c", "d"}, FaultClass::kArchitecture, {"x.y"}, "r"};
  link.seen = 2;
  link.unseen = 1;
  link.confirmed = true;
  s.faults.push_back(link);
  s.remediation.healthy_since_unix_ms = {{"b", 1'700'000'000'123}};
  s.remediation.announced = {{"a", "ib_resource"}};
  s.remediation.operator_released = {"e"};
  s.remediation.breaker_open = true;
  const CoordinatorState back = DecodeCoordinatorState(EncodeCoordinatorState(s));
  ASSERT_EQ(back.faults.size(), 3U);
  // Confirmed first (the bound keeps them), then the most seen.
  EXPECT_EQ(back.faults[0].fault.nodes, std::vector<std::string>{"b"});
  EXPECT_EQ(back.faults[1].fault, link.fault);
  EXPECT_EQ(back.faults[1].unseen, 1);
  EXPECT_EQ(back.faults[2].fault.nodes, std::vector<std::string>{"a"});
  EXPECT_EQ(back.faults[2].seen, 1);
  EXPECT_FALSE(back.faults[2].confirmed);
  EXPECT_EQ(back.remediation, s.remediation);
}

TEST(CoordinatorStateEncoding, IsBoundedAndSkipsWhatDoesNotParse) {
  CoordinatorState s;
  for (size_t i = 0; i < kMaxStateFaults + 50; ++i) {
    TrackedFault t = NodeFault("n" + std::to_string(i), 1, i % 2 == 0);
    t.fault.reason = std::string(5'000, 'r');
    t.fault.causes = std::vector<std::string>(20, "ib.port_state");
    s.faults.push_back(t);
  }
  auto data = EncodeCoordinatorState(s);
  size_t bytes = 0;
  for (const auto& [k, v] : data) bytes += k.size() + v.size();
  EXPECT_LT(bytes, 900'000U) << "a ConfigMap holds at most 1 MiB";
  CoordinatorState back = DecodeCoordinatorState(data);
  ASSERT_EQ(back.faults.size(), kMaxStateFaults);
  size_t confirmed = 0;
  for (const TrackedFault& t : back.faults) {
    confirmed += t.confirmed;
    EXPECT_LE(t.fault.reason.size(), kMaxStateReason);
    EXPECT_LE(t.fault.causes.size(), kMaxStateCauses);
  }
  EXPECT_EQ(confirmed, (kMaxStateFaults + 50) / 2) << "every confirmed fault is kept";

  data["faults"] = R"([{"kind":"node","nodes":["ok"],"class":"ib_resource","seen":2,"unseen":0,
                       "confirmed":true},{"kind":"node","nodes":[],"class":"ib_resource"},
                       {"kind":"bogus"},17,{"kind":"link","nodes":["a"],"class":"healthy",
                       "seen":1,"unseen":0,"confirmed":false}])";
  data["remediation"] = "not json";
  back = DecodeCoordinatorState(data);
  ASSERT_EQ(back.faults.size(), 1U);
  EXPECT_EQ(back.faults[0].fault.nodes, std::vector<std::string>{"ok"});
  EXPECT_EQ(back.remediation, RemediatorMemory{});
}

TEST(HoldDownRestore, ConfirmedAndSuspectedFaultsGoOnWhereTheyWere) {
  ClusterVerdicts v(2);
  const auto changed = v.Restore({NodeFault("bad", 2, true), NodeFault("maybe", 1, false)});
  EXPECT_EQ(changed, std::vector<std::string>{"bad"});
  const PublishedNodeVerdict* bad = v.Find("bad");
  ASSERT_NE(bad, nullptr);
  EXPECT_TRUE(bad->confirmed_fault);
  EXPECT_EQ(bad->fault_class, FaultClass::kIbResource);
  EXPECT_EQ(bad->basis, Basis::kProbes);
  ASSERT_EQ(v.hold_down().Confirmed().size(), 1U);
  const TrackedFault* maybe = v.hold_down().FindNode("maybe");
  ASSERT_NE(maybe, nullptr);
  EXPECT_FALSE(maybe->confirmed);
  EXPECT_EQ(maybe->seen, 1);
  // One more sweep that sees it confirms it: the counter went on, it did not start again.
  SweepResult r;
  r.number = 1;
  r.faults.push_back(NodeFault("maybe", 1, false).fault);
  v.Apply(r, {});
  EXPECT_TRUE(v.hold_down().FindNode("maybe")->confirmed);
  // A fault tracked already is left as it is.
  EXPECT_TRUE(v.Restore({NodeFault("maybe", 0, false)}).empty());
  EXPECT_TRUE(v.hold_down().FindNode("maybe")->confirmed);
}

json FakeNode(const std::string& name) {
  return {{"metadata", {{"name", name}, {"labels", {{"pool", "a"}}}}}, {"spec", json::object()}};
}

class StateStoreTest : public ::testing::Test {
 protected:
  StateStoreTest() {
    for (int i = 0; i < 10; ++i) server_->AddNode(FakeNode("n" + std::to_string(i)));
    kube_ = api_.Client();
  }

  std::unique_ptr<Remediator> Make(RemediationMode mode, Clock& clock) {
    RemediatorOptions o;
    o.policy = {.mode = mode, .max_nodes = 3, .max_percent = 50, .healthy_ms = kHour};
    o.pool_label = "pool";
    return std::make_unique<Remediator>(*kube_, o, log_, clock);
  }
  static void AdvanceTo(FakeClock& clock, int64_t at_ms) {
    const auto want = std::chrono::milliseconds(at_ms);
    const auto now = clock.Now().time_since_epoch();
    if (want > now) clock.Advance(want - now);
  }
  static std::map<std::string, ConfirmedNodeFault> Faulty(const std::string& node) {
    return {{node, {FaultClass::kIbResource, {"ib.port_state"}}}};
  }
  bool HasOurTaint(const std::string& node) const {
    for (const json& t : server_->Node(node)["spec"].value("taints", json::array())) {
      if (t.value("key", "") == kFaultTaintKey) return true;
    }
    return false;
  }
  size_t EventsWithReason(const std::string& reason) const {
    size_t n = 0;
    for (const json& e : server_->Events()) n += e.value("reason", "") == reason;
    return n;
  }
  StateStore Store() { return StateStore(*kube_, kNs, kName, log_); }

  testing::FakeApiHarness api_{"state_store"};
  testing::FakeApiServer* server_ = &api_.server();
  std::unique_ptr<InClusterKubeClient> kube_;
  std::ostringstream out_;
  Logger log_{out_};
};

TEST_F(StateStoreTest, WritesOnlyWhenTheStateChanges) {
  StateStore store = Store();
  CoordinatorState s;
  ASSERT_TRUE(store.Load(&s));  // none yet
  EXPECT_TRUE(s.faults.empty());
  s.faults.push_back(NodeFault("a", 1, false));
  ASSERT_TRUE(store.Save(s));
  EXPECT_EQ(server_->CountCalls("POST", "/configmaps"), 1U);
  ASSERT_TRUE(store.Save(s));
  ASSERT_TRUE(store.Save(s));
  EXPECT_EQ(server_->CountCalls("PUT", "/configmaps"), 0U) << "written although unchanged";
  s.faults[0].seen = 2;
  s.faults[0].confirmed = true;
  ASSERT_TRUE(store.Save(s));
  EXPECT_EQ(server_->CountCalls("PUT", "/configmaps/" + std::string(kName)), 1U);
  // A new store reads what was written, and writing it back changes nothing.
  StateStore again = Store();
  CoordinatorState read;
  ASSERT_TRUE(again.Load(&read));
  ASSERT_EQ(read.faults.size(), 1U);
  EXPECT_TRUE(read.faults[0].confirmed);
  ASSERT_TRUE(again.Save(read));
  EXPECT_EQ(server_->CountCalls("PUT", "/configmaps"), 1U);
}

TEST_F(StateStoreTest, AConflictReadsTheObjectAgainAndWritesOnce) {
  StateStore store = Store();
  CoordinatorState s;
  ASSERT_TRUE(store.Load(&s));
  s.faults.push_back(NodeFault("a", 1, false));
  ASSERT_TRUE(store.Save(s));
  server_->SetConfigMapData(kNs, kName, {{"format", "1"}});  // another writer
  s.faults[0].seen = 2;
  ASSERT_TRUE(store.Save(s));
  EXPECT_EQ(server_->CountCalls("PUT", "/configmaps"), 2U);  // 409, then the write
  const CoordinatorState kept =
      DecodeCoordinatorState(server_->ConfigMap(kNs, kName)["data"].get<std::map<std::string,
                                                                                 std::string>>());
  ASSERT_EQ(kept.faults.size(), 1U);
  EXPECT_EQ(kept.faults[0].seen, 2);
}

TEST_F(StateStoreTest, NothingIsWrittenBeforeAReadWorked) {
  CoordinatorState kept;
  kept.faults.push_back(NodeFault("a", 2, true));
  server_->SetConfigMapData(kNs, kName, EncodeCoordinatorState(kept));
  StateStore store = Store();
  server_->FailConfigMaps(503);
  CoordinatorState s;
  EXPECT_FALSE(store.Load(&s));
  EXPECT_FALSE(store.Save(CoordinatorState{}));  // would erase the confirmed fault
  EXPECT_EQ(server_->CountCalls("PUT", "/configmaps"), 0U);
  EXPECT_EQ(server_->CountCalls("POST", "/configmaps"), 0U);
  EXPECT_NE(out_.str().find("503"), std::string::npos) << out_.str();
  ASSERT_TRUE(store.Load(&s));
  ASSERT_EQ(s.faults.size(), 1U);
  EXPECT_TRUE(s.faults[0].confirmed);
}

// The coordinator and the agent of a faulty node both restart: the hold-down and the remediator
// of the new coordinator come back from the ConfigMap alone.
TEST_F(StateStoreTest, AfterARestartTheFaultStaysConfirmedTheTaintStaysAndTheClockGoesOn) {
  FakeClock first;  // unix 1,700,000,000,000 at monotonic 0
  {
    auto r = Make(RemediationMode::kTaint, first);
    ClusterVerdicts v(2);
    StateStore store = Store();
    CoordinatorState s;
    ASSERT_TRUE(store.Load(&s));
    ASSERT_TRUE(v.Restore({NodeFault("n3", 2, true)}).size() == 1);
    AdvanceTo(first, kHour);
    r->Step(Faulty("n3"));
    ASSERT_TRUE(HasOurTaint("n3"));
    // The fault clears (hold-down), the node is healthy from 2 h on; 20 minutes later the
    // coordinator is killed with what it had written after its last sweep.
    AdvanceTo(first, 2 * kHour);
    r->Step({});
    AdvanceTo(first, 2 * kHour + 20 * kMinute);
    r->Step({});
    s.faults = v.hold_down().All();
    s.remediation = r->Memory();
    ASSERT_TRUE(store.Save(s));
  }  // destroyed without any cleanup: nothing is undone on the node
  ASSERT_TRUE(HasOurTaint("n3"));
  // A new coordinator, 10 minutes later, on a monotonic clock of its own.
  FakeClock second(1'700'000'000'000 + 2 * kHour + 30 * kMinute);
  auto r = Make(RemediationMode::kTaint, second);
  ClusterVerdicts v(2);
  StateStore store = Store();
  CoordinatorState s;
  ASSERT_TRUE(store.Load(&s));
  v.Restore(s.faults);
  r->Restore(s.remediation);
  EXPECT_EQ(s.remediation.healthy_since_unix_ms.at("n3"), 1'700'000'000'000 + 2 * kHour);
  // The release clock started at 2 h: 30 minutes are left, not an hour.
  AdvanceTo(second, 29 * kMinute);
  r->Step({});
  EXPECT_TRUE(HasOurTaint("n3")) << "released early";
  AdvanceTo(second, 31 * kMinute);
  RemediationStatus st = r->Step({});
  EXPECT_FALSE(HasOurTaint("n3")) << "the release clock started again";
  ASSERT_EQ(st.actions.size(), 1U);
  EXPECT_EQ(st.actions[0].kind, RemediationActionKind::kRelease);
}

TEST_F(StateStoreTest, AConfirmedFaultKeptInTheStoreKeepsItsTaintAfterARestart) {
  FakeClock first;
  {
    auto r = Make(RemediationMode::kTaint, first);
    ClusterVerdicts v(2);
    v.Restore({NodeFault("n5", 2, true)});
    AdvanceTo(first, kHour);
    r->Step(Faulty("n5"));
    StateStore store = Store();
    CoordinatorState s;
    ASSERT_TRUE(store.Load(&s));
    s.faults = v.hold_down().All();
    s.remediation = r->Memory();
    ASSERT_TRUE(store.Save(s));
  }
  FakeClock second(1'700'000'000'000 + 5 * kHour);
  auto r = Make(RemediationMode::kTaint, second);
  ClusterVerdicts v(2);
  StateStore store = Store();
  CoordinatorState s;
  ASSERT_TRUE(store.Load(&s));
  v.Restore(s.faults);
  r->Restore(s.remediation);
  std::map<std::string, ConfirmedNodeFault> confirmed;
  for (const TrackedFault& t : v.hold_down().Confirmed()) {
    confirmed[t.fault.nodes[0]] = {t.fault.fault_class, t.fault.causes};
  }
  ASSERT_EQ(confirmed.count("n5"), 1U) << "the fault was forgotten";
  for (int hour = 1; hour <= 4; ++hour) {
    AdvanceTo(second, hour * kHour);
    r->Step(confirmed);
  }
  EXPECT_TRUE(HasOurTaint("n5"));
  EXPECT_EQ(EventsWithReason("NcclTriageTainted"), 1U) << "tainted twice";
  EXPECT_EQ(EventsWithReason("NcclTriageReleased"), 0U);
}

TEST_F(StateStoreTest, AWallClockSteppedBackNeverHastensARelease) {
  FakeClock first;
  {
    auto r = Make(RemediationMode::kTaint, first);
    AdvanceTo(first, kHour);
    r->Step(Faulty("n3"));
    AdvanceTo(first, 2 * kHour);
    r->Step({});  // healthy since unix start + 2 h
    StateStore store = Store();
    CoordinatorState s;
    ASSERT_TRUE(store.Load(&s));
    s.remediation = r->Memory();
    ASSERT_TRUE(store.Save(s));
  }
  // The new coordinator's wall clock reads a day earlier (stepped back): no healthy time counts,
  // the full hour is held from now.
  FakeClock second(1'700'000'000'000 - 24 * kHour);
  auto r = Make(RemediationMode::kTaint, second);
  StateStore store = Store();
  CoordinatorState s;
  ASSERT_TRUE(store.Load(&s));
  r->Restore(s.remediation);
  AdvanceTo(second, kHour - 1);
  r->Step({});
  EXPECT_TRUE(HasOurTaint("n3")) << "released before a full hour healthy";
  AdvanceTo(second, kHour);
  r->Step({});
  EXPECT_FALSE(HasOurTaint("n3"));
}

TEST_F(StateStoreTest, NoDryRunEventRepeatsAfterARestart) {
  FakeClock first;
  {
    auto r = Make(RemediationMode::kDryRun, first);
    AdvanceTo(first, kHour);
    r->Step(Faulty("n2"));
    ASSERT_EQ(EventsWithReason("NcclTriageWouldTaint"), 1U);
    StateStore store = Store();
    CoordinatorState s;
    ASSERT_TRUE(store.Load(&s));
    s.remediation = r->Memory();
    ASSERT_TRUE(store.Save(s));
  }
  FakeClock second(1'700'000'000'000 + 2 * kHour);
  auto r = Make(RemediationMode::kDryRun, second);
  StateStore store = Store();
  CoordinatorState s;
  ASSERT_TRUE(store.Load(&s));
  r->Restore(s.remediation);
  AdvanceTo(second, kHour);
  RemediationStatus st = r->Step(Faulty("n2"));
  EXPECT_EQ(st.would_taint, std::vector<std::string>{"n2"});
  EXPECT_EQ(EventsWithReason("NcclTriageWouldTaint"), 1U) << "announced again after a restart";
  // Another node's fault is still told.
  auto two = Faulty("n2");
  two["n4"] = two["n2"];
  r->Step(two);
  EXPECT_EQ(EventsWithReason("NcclTriageWouldTaint"), 2U);
}

}  // namespace
}  // namespace nccl_triage
