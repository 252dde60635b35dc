// The coordinator's remediation against a real kube-apiserver (tests/k8s/cluster.sh) with the
// coordinator ServiceAccount's token and the RBAC the chart gives it in cordon mode
// (kube_prepare.sh, values-kube.yaml): 64 plain Node objects (no kubelet: the API server stores
// them) in the pool pool.example/name=remediation. Verdicts are synthetic (the step is driven
// directly, as the sweep loop does); every write is read back with the cluster admin's
// kubeconfig.
//   3 confirmed faults      3 nodes tainted and cordoned, marked, events accepted;
//   40 at once              the circuit breaker: never more than 10 % of the pool (6) tainted;
//   recovery                our taints, marks and cordons removed after recover_after, an
//                           operator's own taint and cordon left alone;
//   the node watch          a node created and a node tainted after the coordinator's first
//                           list are seen through its watch (no second list), and remediated
//                           from there.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "base/files.h"
#include "base/log.h"
#include "coordinator/remediator.h"
#include "kube/kube_client.h"
#include "kube/kubeconfig.h"
#include "kube/node_cache.h"
#include "real_api.h"
#include "remediation_pool.h"
#include "support/fake_clock.h"
#include "support/stop_after_patch.h"

namespace nccl_triage {
namespace {

using nlohmann::json;

constexpr int kNodes = testing::kPoolNodes;
constexpr int64_t kHour = 3'600'000;
using testing::kPoolLabel;

using real_api::Admin;
using real_api::ApiPort;
using real_api::As;
using real_api::Work;

std::string NodeName(int i) { return testing::PoolNodeName(i); }

// tests/k8s/fault_proxy.py in front of the API server, with `faults` (its options); killed when
// it goes out of scope.
class FaultProxy {
 public:
  explicit FaultProxy(std::vector<std::string> faults) {
    port_file_ = Work() + "/fault-proxy-" + std::to_string(::getpid()) + ".port";
    ::unlink(port_file_.c_str());
    std::vector<std::string> argv = {"python3", NCCL_TRIAGE_FAULT_PROXY, Work(), port_file_};
    argv.insert(argv.end(), faults.begin(), faults.end());
    pid_ = ::fork();
    if (pid_ == 0) {
      std::vector<char*> a;
      for (auto& s : argv) a.push_back(s.data());
      a.push_back(nullptr);
      ::execvp(a[0], a.data());
      ::_exit(127);
    }
    // Until it listens (it writes the file then), or it died.
    for (int i = 0; i < 600 && port_ == 0; ++i) {
      port_ = std::atoi(real_api::Read(port_file_).c_str());
      if (port_ == 0) ::usleep(100'000);
    }
  }
  ~FaultProxy() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      ::waitpid(pid_, nullptr, 0);
    }
    ::unlink(port_file_.c_str());
  }
  // The coordinator's ServiceAccount, through the proxy.
  std::unique_ptr<InClusterKubeClient> Coordinator() const {
    InClusterOptions o;
    o.host = "127.0.0.1";
    o.port = port_;
    o.service_account_dir = Work() + "/kube/coordinator";
    auto client = InClusterKubeClient::Create(o);
    EXPECT_TRUE(client.ok()) << client.status().message();
    return client.ok() ? std::move(client).value() : nullptr;
  }
  int port() const { return port_; }

 private:
  std::string port_file_;
  pid_t pid_ = -1;
  int port_ = 0;
};

class RemediationRealApi : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_GT(ApiPort(), 0) << "no cluster in " << Work() << " (ctest fixture k8s_cluster)";
    coordinator_ = As("coordinator");
    agent_ = As("agent-1");
    admin_ = Admin();
    ASSERT_TRUE(coordinator_ && agent_ && admin_);
    // A clean pool: what an earlier run left is undone by the admin.
    ASSERT_TRUE(testing::ResetPool(*admin_));
  }

  json Node(const std::string& name) {
    KubeResponse r = admin_->GetNode(name);
    EXPECT_TRUE(r.ok()) << r.Describe();
    return json::parse(r.body, nullptr, false);
  }
  static bool HasTaint(const json& node, const std::string& key) {
    for (const json& t : node["spec"].value("taints", json::array())) {
      if (t.value("key", "") == key) return true;
    }
    return false;
  }
  static bool Unschedulable(const json& node) { return node["spec"].value("unschedulable", false); }
  static bool Marked(const json& node) {
    return node["metadata"].value("annotations", json::object()).contains(
        std::string(kRemediatedAnnotation));
  }
  // The pool's nodes carrying our taint, as the admin reads them.
  std::set<std::string> Tainted() {
    std::set<std::string> out;
    for (int i = 0; i < kNodes; ++i) {
      if (HasTaint(Node(NodeName(i)), std::string(kFaultTaintKey))) out.insert(NodeName(i));
    }
    return out;
  }

  Remediator Make(KubeClient* through = nullptr) {
    RemediatorOptions o;
    o.policy = {.mode = RemediationMode::kCordon,
                .max_nodes = 10,
                .max_percent = 10,  // 64 nodes: 6
                .healthy_ms = kHour};
    o.pool_label = kPoolLabel;
    o.list_page = 25;  // the real API's chunking: 66 nodes in three pages
    return Remediator(through ? *through : *coordinator_, o, log_, clock_);
  }

  static std::map<std::string, ConfirmedNodeFault> Faults(int from, int to) {
    std::map<std::string, ConfirmedNodeFault> out;
    for (int i = from; i < to; ++i) {
      out[NodeName(i)] = {FaultClass::kIbResource, {"ib.port_state"}};
    }
    return out;
  }

  // One step at `at_ms` of the (fake, monotonic) clock.
  RemediationStatus StepAt(Remediator& r, const std::map<std::string, ConfirmedNodeFault>& faults,
                           int64_t at_ms) {
    const auto want = std::chrono::milliseconds(at_ms);
    const auto now = clock_.Now().time_since_epoch();
    if (want > now) clock_.Advance(want - now);
    return r.Step(faults);
  }

  FakeClock clock_;
  std::unique_ptr<InClusterKubeClient> coordinator_, agent_, admin_;
  std::ostringstream out_;
  Logger log_{out_};
};

TEST_F(RemediationRealApi, TaintsCordonsAndReleasesWithTheBreakerAndLeavesOperatorsAlone) {
  // An operator's own taint and cordon on remediation-05, and a cordon on remediation-04, which
  // is about to fail.
  NodePatch op;
  op.taints = json::array({{{"key", "ops.example/maintenance"}, {"effect", "NoSchedule"}}});
  op.unschedulable = true;
  ASSERT_TRUE(admin_->PatchNode(NodeName(5), op).ok());
  NodePatch cordon;
  cordon.unschedulable = true;
  ASSERT_TRUE(admin_->PatchNode(NodeName(4), cordon).ok());

  Remediator r = Make();
  const int64_t t0 = kHour;
  std::map<std::string, ConfirmedNodeFault> three = Faults(3, 5);
  three[NodeName(20)] = {FaultClass::kArchitecture, {"limits.memlock"}};
  RemediationStatus s = StepAt(r, three, t0);
  ASSERT_TRUE(s.list_error.empty()) << s.list_error;
  EXPECT_GE(s.nodes_seen, kNodes);
  EXPECT_TRUE(s.errors.empty()) << s.errors.begin()->second;
  EXPECT_FALSE(s.breaker_open);
  EXPECT_EQ(Tainted(), (std::set<std::string>{NodeName(3), NodeName(4), NodeName(20)}));
  const json n3 = Node(NodeName(3));
  EXPECT_TRUE(Unschedulable(n3));
  EXPECT_EQ(n3["metadata"]["annotations"][std::string(kRemediatedAnnotation)],
            "taint=ib_resource,cordon");
  const json n20 = Node(NodeName(20));
  for (const json& t : n20["spec"]["taints"]) {
    if (t["key"] == kFaultTaintKey) {
      EXPECT_EQ(t["value"], "architecture");
      EXPECT_EQ(t["effect"], "NoSchedule");
    }
  }
  // remediation-04 was cordoned by the operator: tainted, but the cordon is not ours.
  EXPECT_EQ(Node(NodeName(4))["metadata"]["annotations"][std::string(kRemediatedAnnotation)],
            "taint=ib_resource");
  int events = 0;
  for (const auto& o : s.outcomes) {
    EXPECT_EQ(o.result, "ok") << o.action;
    events += o.action == "event";
  }
  EXPECT_EQ(events, 3);  // a Warning event per node, created by the API server

  // A fault on 40 nodes at once: the breaker lets 6 (10 % of 64) be remediated, no more.
  s = StepAt(r, Faults(10, 50), t0 + 1000);
  EXPECT_TRUE(s.breaker_open);
  EXPECT_TRUE(s.errors.empty());
  const std::set<std::string> tainted = Tainted();
  EXPECT_EQ(tainted.size(), 6U);
  EXPECT_EQ(s.remediated.size(), 6U);
  // Of the 40, remediation-20 is tainted already and 3 more fit (3 + 3 = 6 with 3 and 4, not
  // yet released): 36 held back.
  EXPECT_EQ(s.held_back.size(), 36U);
  EXPECT_FALSE(tainted.count(NodeName(49)));

  // Recovery: healthy from now on; released only after recover_after.
  s = StepAt(r, {}, t0 + 2000);
  EXPECT_EQ(Tainted().size(), 6U);
  s = StepAt(r, {}, t0 + 2000 + kHour);
  EXPECT_TRUE(s.errors.empty());
  EXPECT_EQ(s.actions.size(), 6U);
  EXPECT_TRUE(Tainted().empty());
  for (int i = 0; i < kNodes; ++i) {
    const json n = Node(NodeName(i));
    EXPECT_FALSE(Marked(n)) << NodeName(i);
    const bool operator_cordon = i == 4 || i == 5;
    EXPECT_EQ(Unschedulable(n), operator_cordon) << NodeName(i);
  }
  EXPECT_TRUE(HasTaint(Node(NodeName(5)), "ops.example/maintenance"));
}

TEST_F(RemediationRealApi, ATaintAnOperatorRemovedIsNeitherPutBackNorCounted) {
  Remediator r = Make();
  std::map<std::string, ConfirmedNodeFault> faults = Faults(2, 3);
  RemediationStatus s = StepAt(r, faults, kHour);
  ASSERT_TRUE(HasTaint(Node(NodeName(2)), std::string(kFaultTaintKey)));
  // kubectl taint node remediation-02 nccl-triage.io/fault- (the admin keeps the other taints).
  json taints = json::array();
  for (const json& t : Node(NodeName(2))["spec"]["taints"]) {
    if (t["key"] != kFaultTaintKey) taints.push_back(t);
  }
  NodePatch by_hand;
  by_hand.taints = taints;
  ASSERT_TRUE(admin_->PatchNode(NodeName(2), by_hand).ok());
  StepAt(r, faults, kHour + 1);
  s = StepAt(r, faults, kHour + 2);  // two sweeps later, the fault still confirmed
  const json n = Node(NodeName(2));
  EXPECT_FALSE(HasTaint(n, std::string(kFaultTaintKey))) << "put back against the operator";
  EXPECT_FALSE(Marked(n));
  EXPECT_TRUE(s.remediated.empty());
  EXPECT_EQ(s.released_by_operator, std::vector<std::string>{NodeName(2)});
  EXPECT_TRUE(s.errors.empty());
}

// D7 on the real API: a stop (SIGTERM) while the first patch is in flight; no call starts after
// it, and the next start does the rest.
TEST_F(RemediationRealApi, NoApiCallStartsOnceAStopIsRequested) {
  testing::StopAfterFirstPatch api(*coordinator_);
  Remediator r = Make(&api);
  clock_.Advance(std::chrono::milliseconds(kHour));
  RemediationStatus s = r.Step(Faults(6, 9), nullptr, api.stop.get_token());
  EXPECT_EQ(s.cut_short, "stop requested");
  EXPECT_EQ(api.patches, 1);
  EXPECT_EQ(api.events, 0);
  EXPECT_EQ(Tainted(), std::set<std::string>{NodeName(6)});  // the call in flight, no other
  Remediator next = Make();
  s = StepAt(next, Faults(6, 9), kHour + 1);
  EXPECT_TRUE(s.cut_short.empty());
  EXPECT_TRUE(s.errors.empty());
  EXPECT_EQ(Tainted(), (std::set<std::string>{NodeName(6), NodeName(7), NodeName(8)}));
}

// D10 on the real API: the process dies right after a patch; the event it owed is in the node's
// pending-event annotation, and the next coordinator, which knows nothing of the fault, posts it
// once and removes the annotation.
TEST_F(RemediationRealApi, AnEventLostToAKillAfterThePatchIsPostedByTheNextCoordinator) {
  {
    testing::StopAfterFirstPatch api(*coordinator_);
    Remediator r = Make(&api);
    clock_.Advance(std::chrono::milliseconds(kHour));
    r.Step(Faults(9, 10), nullptr, api.stop.get_token());
    ASSERT_EQ(api.events, 0);
  }
  json n = Node(NodeName(9));
  ASSERT_TRUE(HasTaint(n, std::string(kFaultTaintKey)));
  ASSERT_TRUE(n["metadata"]["annotations"].contains(std::string(kPendingEventAnnotation)));
  Remediator restarted = Make();
  RemediationStatus s = StepAt(restarted, {}, kHour + 1);
  int posted = 0;
  for (const auto& o : s.outcomes) {
    if (o.action != "event") continue;
    ++posted;
    EXPECT_EQ(o.result, "ok") << "the API server refused the event";
  }
  EXPECT_EQ(posted, 1);
  EXPECT_FALSE(Node(NodeName(9))["metadata"]["annotations"].contains(
      std::string(kPendingEventAnnotation)));
  s = StepAt(restarted, {}, kHour + 2);
  for (const auto& o : s.outcomes) EXPECT_NE(o.action, "event") << "posted twice";
}

TEST_F(RemediationRealApi, AnOperatorsCordonDuringOurPatchIsNotTakenForOurs) {
  // The proxy cordons remediation-09 as the admin just before our patch of it reaches the API
  // server, which then answers 409: the retry must read the cordon as the operator's.
  FaultProxy proxy({"--cordon-before-patch", NodeName(9)});
  ASSERT_GT(proxy.port(), 0) << "fault_proxy.py did not start";
  auto through = proxy.Coordinator();
  ASSERT_TRUE(through);
  Remediator r = Make(through.get());
  RemediationStatus s = StepAt(r, Faults(9, 10), kHour);
  EXPECT_TRUE(s.errors.empty()) << s.errors.begin()->second;
  json n = Node(NodeName(9));
  EXPECT_TRUE(HasTaint(n, std::string(kFaultTaintKey)));
  EXPECT_EQ(n["metadata"]["annotations"][std::string(kRemediatedAnnotation)], "taint=ib_resource");
  StepAt(r, {}, 2 * kHour);
  StepAt(r, {}, 3 * kHour);  // released
  n = Node(NodeName(9));
  EXPECT_FALSE(HasTaint(n, std::string(kFaultTaintKey)));
  EXPECT_TRUE(Unschedulable(n)) << "the operator's cordon was removed by our release";
}

TEST_F(RemediationRealApi, AnEndlessContinueTokenEndsAtThePageBound) {
  FaultProxy proxy({"--endless-continue"});
  ASSERT_GT(proxy.port(), 0) << "fault_proxy.py did not start";
  auto through = proxy.Coordinator();
  ASSERT_TRUE(through);
  RemediatorOptions o;
  o.policy.mode = RemediationMode::kCordon;
  o.list_page = 500;
  o.max_listed_nodes = 5'000;  // 11 pages
  Remediator r(*through, o, log_, clock_);
  RemediationStatus s = r.Step(Faults(1, 2));
  EXPECT_NE(s.list_error.find("more than 11 pages"), std::string::npos) << s.list_error;
  EXPECT_TRUE(Tainted().empty());
}

TEST_F(RemediationRealApi, APatchOnAStaleResourceVersionIsAConflict) {
  const json n = Node(NodeName(7));
  const std::string rv = n["metadata"]["resourceVersion"];
  NodePatch touch;
  touch.annotations["example.com/touched"] = "yes";
  ASSERT_TRUE(admin_->PatchNode(NodeName(7), touch).ok());
  NodePatch p;
  p.resource_version = rv;
  p.taints = json::array({{{"key", std::string(kFaultTaintKey)}, {"value", "x"},
                           {"effect", "NoSchedule"}}});
  KubeResponse r = coordinator_->PatchNode(NodeName(7), p);
  EXPECT_EQ(r.status, 409) << r.Describe();
  EXPECT_FALSE(HasTaint(Node(NodeName(7)), std::string(kFaultTaintKey)));
  touch.annotations["example.com/touched"] = std::nullopt;
  ASSERT_TRUE(admin_->PatchNode(NodeName(7), touch).ok());
}

TEST_F(RemediationRealApi, OnlyTheCoordinatorMayPatchNodes) {
  NodePatch p;
  p.unschedulable = true;
  KubeResponse r = agent_->PatchNode(NodeName(8), p);
  EXPECT_EQ(r.status, 403) << r.Describe();
  EXPECT_EQ(agent_->ListNodes({}).status, 403);
  EXPECT_TRUE(coordinator_->ListNodes({}).ok());
  EXPECT_FALSE(Unschedulable(Node(NodeName(8))));
}

TEST_F(RemediationRealApi, ANodeAddedOrTaintedAfterStartIsSeenThroughTheWatch) {
  // As nccl-triage-server does (agent/cmd_nccl_triage_server/main.cc): a write into a connection
  // the API server closed (or the watch's, shut down on Stop) is an error to the client, not a
  // signal.
  std::signal(SIGPIPE, SIG_IGN);
  const std::string kubectl = std::string(NCCL_TRIAGE_KUBECTL) + " --kubeconfig " + Work() +
                              "/kubeconfig";
  const std::string late = "watch-late";
  ASSERT_EQ(std::system((kubectl + " delete node " + late + " --ignore-not-found >/dev/null")
                            .c_str()),
            0);
  // The coordinator's own client and RBAC (list and watch), on the real clock: the watch runs
  // on its thread as in the coordinator.
  SystemClock clock;
  NodeCacheOptions o = RemediationNodeFields(kPoolLabel);
  o.list_page = 25;
  NodeCache cache(*coordinator_, o, log_, clock);
  cache.Start();
  std::vector<CachedNode> nodes;
  std::string error;
  ASSERT_TRUE(cache.Nodes(&nodes, &error, std::chrono::seconds(60))) << error << out_.str();
  ASSERT_GE(nodes.size(), static_cast<size_t>(kNodes));

  const std::string manifest = Work() + "/watch-late.yaml";
  {
    std::ofstream f(manifest);
    f << "apiVersion: v1\nkind: Node\nmetadata:\n  name: " << late
      << "\n  labels: {" << kPoolLabel << ": " << testing::kPoolName << "}\n";
  }
  ASSERT_EQ(std::system((kubectl + " create -f " + manifest + " >/dev/null").c_str()), 0);
  NodePatch op;
  op.taints = json::array({{{"key", "ops.example/watched"}, {"effect", "NoSchedule"}}});
  ASSERT_TRUE(admin_->PatchNode(NodeName(7), op).ok());

  auto seen = [&] {
    if (!cache.Nodes(&nodes, &error)) return false;
    bool added = false, tainted = false;
    for (const CachedNode& n : nodes) {
      added = added || n.name == late;
      if (n.name == NodeName(7)) {
        for (const json& t : n.taints) {
          tainted = tainted || t.value("key", "") == "ops.example/watched";
        }
      }
    }
    return added && tainted;
  };
  for (int i = 0; i < 300 && !seen(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(seen()) << out_.str();
  EXPECT_EQ(cache.stats().lists, 1U) << "seen by a list, not the watch";
  EXPECT_GE(cache.stats().events, 2U);

  // The remediator reads the cache (no list) and taints the new node.
  RemediatorOptions ro;
  ro.policy = {.mode = RemediationMode::kTaint, .max_nodes = 10, .max_percent = 10,
               .healthy_ms = kHour};
  ro.pool_label = kPoolLabel;
  Remediator r(*coordinator_, ro, log_, clock, &cache);
  RemediationStatus s = r.Step({{late, {FaultClass::kIbResource, {"ib.port_state"}}}});
  EXPECT_TRUE(s.list_error.empty()) << s.list_error;
  EXPECT_TRUE(s.errors.empty()) << s.errors.begin()->second;
  EXPECT_TRUE(HasTaint(Node(late), std::string(kFaultTaintKey)));
  EXPECT_TRUE(HasTaint(Node(NodeName(7)), "ops.example/watched"));
  EXPECT_EQ(cache.stats().lists, 1U);

  ASSERT_EQ(std::system((kubectl + " delete node " + late + " >/dev/null").c_str()), 0);
  auto gone = [&] {
    if (!cache.Nodes(&nodes, &error)) return false;
    for (const CachedNode& n : nodes) {
      if (n.name == late) return false;
    }
    return true;
  };
  for (int i = 0; i < 300 && !gone(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(gone());
  cache.Stop();
  ::unlink(manifest.c_str());
}

}  // namespace
}  // namespace nccl_triage
