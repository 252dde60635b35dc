// The validation of nodes that join or reboot (validation.new_nodes) against a real
// kube-apiserver (tests/k8s/cluster.sh), with the coordinator ServiceAccount's token and the RBAC
// the chart gives it (kube_prepare.sh, values-kube.yaml), the nodes read from a NodeCache kept by
// a real watch as the coordinator reads them, and its state kept in the real ConfigMap. The nodes
// are the remediation pool's plain Node objects (the same lock; validation.node_selector names
// their pool label, as the chart names the agent's nodeSelector, so that the nodes other tests
// create meanwhile are not validated), whose status.nodeInfo.bootID the cluster admin patches as
// a kubelet reports a new boot, and one node of the pool created during the test:
//   - a node that rebooted and a node that joined are tainted nccl-triage.io/unvalidated, each
//     with one Warning event; the rebooted one is released after its probes pass;
//   - a coordinator restarted meanwhile (a new process: a new monotonic clock, the ConfigMap
//     alone) keeps the joined node's validation and its timeout, which releases it;
//   - a coordinator killed between its patch and the event finds the event kept on the node: the
//     next one posts it, once.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <unistd.h>

#include "base/log.h"
#include "coordinator/node_validator.h"
#include "coordinator/remediator.h"
#include "coordinator/state_store.h"
#include "kube/kube_client.h"
#include "kube/node_cache.h"
#include "real_api.h"
#include "remediation_pool.h"
#include "support/fake_clock.h"
#include "support/stop_after_patch.h"

namespace nccl_triage {
namespace {

using nlohmann::json;
using real_api::Admin;
using real_api::ApiPort;
using real_api::As;
using real_api::Work;

constexpr int64_t kMinute = 60'000;
constexpr int64_t kStartUnixMs = 1'700'000'000'000;
constexpr const char* kNs = "kt";
constexpr const char* kName = "kt-nccl-triage-state";
constexpr const char* kLate = "validation-late";

std::string NodeName(int i) { return testing::PoolNodeName(i); }

std::string Kubectl() {
  return std::string(NCCL_TRIAGE_KUBECTL) + " --kubeconfig " + Work() + "/kubeconfig";
}

// What `command` prints.
std::string Output(const std::string& command) {
  std::string out;
  if (FILE* p = ::popen(command.c_str(), "r")) {
    char buf[4096];
    size_t n = 0;
    while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
    ::pclose(p);
  }
  return out;
}

// As a kubelet reports a boot: the status subresource, by the cluster admin.
bool SetBootId(const std::string& node, const std::string& boot_id) {
  const std::string patch = "{\"status\":{\"nodeInfo\":{\"bootID\":\"" + boot_id + "\"}}}";
  const std::string command = Kubectl() + " patch node " + node +
                              " --subresource=status --type=merge -p '" + patch + "' >/dev/null";
  return std::system(command.c_str()) == 0;
}

// Events of `reason` about `node` (in "default", where the coordinator posts them).
int Events(const std::string& node, const std::string& reason) {
  const std::string out = Output(Kubectl() + " get events -n default --field-selector reason=" +
                                 reason + ",involvedObject.name=" + node + " -o name");
  int n = 0;
  for (char c : out) n += c == '\n';
  return n;
}

using testing::kPoolLabel;
using testing::kPoolName;

// The pool's nodes only (validation.node_selector): other tests running meanwhile create nodes
// of their own in this cluster, which are not this test's to taint, as a CPU node is not the
// coordinator's.
NodeValidatorOptions Options() {
  NodeValidatorOptions o;
  o.policy = {.enabled = true, .timeout_ms = 30 * kMinute, .max_nodes = 10, .max_percent = 10};
  o.node_selector = {{kPoolLabel, kPoolName}};
  o.list_page = 25;
  return o;
}

// What the coordinator composes for validation (remediation_stage.h, state_sync.cc), no gRPC:
// the node cache on its watch thread, the validator on a clock of its own (a new process starts
// a new monotonic clock) and the state store.
struct Coordinator {
  Coordinator(KubeClient& kube, Logger& log, int64_t start_unix_ms)
      : clock(start_unix_ms), store(kube, kNs, kName, log) {
    NodeCacheOptions fields = RemediationNodeFields(kPoolLabel);  // as remediation_stage.cc does
    fields.list_page = 25;
    cache = std::make_unique<NodeCache>(kube, fields, log, system_clock);
    cache->Start();
    validator = std::make_unique<NodeValidator>(kube, Options(), log, clock, cache.get());
  }
  ~Coordinator() { cache->Stop(); }
  bool Resume() {
    CoordinatorState kept;
    if (!store.Load(&kept)) return false;
    validator->Restore(kept.validation);
    return true;
  }
  // Waits until the cache shows `node` with `boot_id` (or, with boot_id "-", without the node).
  bool Sees(const std::string& node, const std::string& boot_id) {
    for (int i = 0; i < 600; ++i) {
      std::vector<CachedNode> nodes;
      std::string error;
      if (cache->Nodes(&nodes, &error, std::chrono::seconds(5))) {
        bool found = false;
        for (const CachedNode& n : nodes) {
          if (n.name == node) found = n.boot_id == boot_id;
        }
        if (found || (boot_id == "-" && std::none_of(nodes.begin(), nodes.end(),
                                                      [&](const CachedNode& n) {
                                                        return n.name == node;
                                                      }))) {
          return true;
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }
  // One sweep's end: the validation step, then the state written (as RunOneSweep does).
  ValidationStatus Sweep(const std::map<std::string, NodeProbePasses>& probed = {},
                         std::stop_token stop = {}) {
    ValidationStatus s = validator->Step(probed, stop);
    CoordinatorState state;
    state.validation = validator->Memory();
    EXPECT_TRUE(store.Save(state));
    return s;
  }
  FakeClock clock;
  SystemClock system_clock;
  StateStore store;
  std::unique_ptr<NodeCache> cache;
  std::unique_ptr<NodeValidator> validator;
};

class ValidationRealApi : public ::testing::Test {
 protected:
  void SetUp() override {
    // As nccl-triage-server does: a write into a connection the API server closed is an error.
    std::signal(SIGPIPE, SIG_IGN);
    ASSERT_GT(ApiPort(), 0) << "no cluster in " << Work() << " (ctest fixture k8s_cluster)";
    coordinator_ = As("coordinator");
    admin_ = Admin();
    ASSERT_TRUE(coordinator_ && admin_);
    ASSERT_TRUE(testing::ResetPool(*admin_));
    ASSERT_EQ(std::system((Kubectl() + " delete node " + kLate +
                           " --ignore-not-found >/dev/null 2>&1")
                              .c_str()),
              0);
    StateStore store(*coordinator_, kNs, kName, log_);
    CoordinatorState none;
    ASSERT_TRUE(store.Load(&none)) << out_.str();
    ASSERT_TRUE(store.Save(CoordinatorState{})) << out_.str();
    // Every pool node has booted once (a plain Node has no bootID until a kubelet reports one).
    for (int i = 10; i < 14; ++i) ASSERT_TRUE(SetBootId(NodeName(i), "boot-a"));
  }
  void TearDown() override {
    std::system((Kubectl() + " delete node " + kLate + " --ignore-not-found >/dev/null 2>&1")
                    .c_str());
    if (admin_) testing::ResetPool(*admin_);
  }

  json Node(const std::string& name) {
    KubeResponse r = admin_->GetNode(name);
    EXPECT_TRUE(r.ok()) << r.Describe();
    return json::parse(r.body, nullptr, false);
  }
  std::string OurTaint(const std::string& name) {
    const json n = Node(name);
    if (!n.is_object()) return "";
    for (const json& t : n["spec"].value("taints", json::array())) {
      if (t.value("key", "") == kUnvalidatedTaintKey) return t.value("value", "");
    }
    return "";
  }
  bool EventPending(const std::string& name) {
    const json n = Node(name);
    return n.is_object() && n["metadata"].value("annotations", json::object())
                                .contains(std::string(kPendingValidationEventAnnotation));
  }
  static std::map<std::string, NodeProbePasses> Passed(const std::string& node) {
    return {{node, {.socket = true, .ib = true}}};
  }

  std::unique_ptr<InClusterKubeClient> coordinator_, admin_;
  std::ostringstream out_;
  Logger log_{out_};
};

TEST_F(ValidationRealApi, ARebootAndAJoinAreTaintedUntilProbesPassOrTheTimeoutAcrossARestart) {
  const std::string rebooted = NodeName(10);
  const int unvalidated_before = Events(rebooted, "NcclTriageUnvalidated");
  const int validated_before = Events(rebooted, "NcclTriageValidated");
  // Events of an earlier run about a node of the same name may still be there.
  const int late_before = Events(kLate, "NcclTriageUnvalidated");
  const int late_timed_out_before = Events(kLate, "NcclTriageValidationTimedOut");
  {
    Coordinator first(*coordinator_, log_, kStartUnixMs);
    ASSERT_TRUE(first.Resume()) << out_.str();
    ASSERT_TRUE(first.Sees(rebooted, "boot-a")) << out_.str();
    ValidationStatus s = first.Sweep();  // turned on: remembers every node's bootID
    ASSERT_TRUE(s.list_error.empty()) << s.list_error;
    EXPECT_TRUE(s.tainted.empty());
    EXPECT_EQ(s.nodes_seen, testing::kPoolNodes) << "only the pool's nodes";

    // remediation-10 reboots, a new node joins: both seen through the watch.
    ASSERT_TRUE(SetBootId(rebooted, "boot-b"));
    {
      const std::string manifest = Work() + "/validation-late.yaml";
      std::ofstream(manifest) << "apiVersion: v1\nkind: Node\nmetadata:\n  name: " << kLate
                              << "\n  labels: {" << kPoolLabel << ": " << kPoolName << "}\n";
      ASSERT_EQ(std::system((Kubectl() + " create -f " + manifest + " >/dev/null").c_str()), 0);
      ::unlink(manifest.c_str());
    }
    ASSERT_TRUE(SetBootId(kLate, "boot-late"));
    ASSERT_TRUE(first.Sees(rebooted, "boot-b")) << out_.str();
    ASSERT_TRUE(first.Sees(kLate, "boot-late")) << out_.str();
    first.clock.Advance(std::chrono::milliseconds(kMinute));
    s = first.Sweep();
    EXPECT_EQ(s.tainted, (std::vector<std::string>{rebooted, kLate})) << out_.str();
    EXPECT_TRUE(s.errors.empty()) << s.errors.begin()->second;
    EXPECT_EQ(OurTaint(rebooted), "rebooted");
    EXPECT_EQ(OurTaint(kLate), "new-node");
    EXPECT_EQ(Events(rebooted, "NcclTriageUnvalidated"), unvalidated_before + 1);
    EXPECT_EQ(Events(kLate, "NcclTriageUnvalidated"), late_before + 1);
    EXPECT_FALSE(EventPending(rebooted));  // posted, the annotation removed

    // The rebooted node passes a socket and an IB probe: released. The new one is not probed.
    first.clock.Advance(std::chrono::milliseconds(5 * kMinute));
    s = first.Sweep(Passed(rebooted));
    EXPECT_EQ(s.validated, std::vector<std::string>{rebooted});
    EXPECT_EQ(s.unvalidated, std::vector<std::string>{kLate});
    EXPECT_EQ(OurTaint(rebooted), "");
    EXPECT_EQ(OurTaint(kLate), "new-node");
    EXPECT_EQ(Events(rebooted, "NcclTriageValidated"), validated_before + 1);
  }  // the coordinator stops: nothing undone, its memory gone but for the ConfigMap

  // A new coordinator 10 minutes later (the new node has been waiting 15 minutes of 30).
  Coordinator second(*coordinator_, log_, kStartUnixMs + 16 * kMinute);
  ASSERT_TRUE(second.Resume()) << out_.str();
  ASSERT_TRUE(second.Sees(kLate, "boot-late")) << out_.str();
  ValidationStatus s = second.Sweep();
  EXPECT_TRUE(s.tainted.empty()) << "tainted again after the restart";
  EXPECT_EQ(s.unvalidated, std::vector<std::string>{kLate});
  EXPECT_EQ(OurTaint(rebooted), "") << "the released node was tainted again";
  EXPECT_EQ(Events(kLate, "NcclTriageUnvalidated"), late_before + 1);
  second.clock.Advance(std::chrono::milliseconds(14 * kMinute));
  s = second.Sweep();
  EXPECT_TRUE(s.timed_out.empty()) << "the timeout started before the taint";
  second.clock.Advance(std::chrono::milliseconds(1 * kMinute + 1000));
  s = second.Sweep();
  EXPECT_EQ(s.timed_out, std::vector<std::string>{kLate}) << out_.str();
  EXPECT_EQ(OurTaint(kLate), "");
  EXPECT_EQ(Events(kLate, "NcclTriageValidationTimedOut"), late_timed_out_before + 1);
  EXPECT_FALSE(EventPending(kLate));
}

TEST_F(ValidationRealApi, AnEventLostToAKillAfterThePatchIsPostedByTheNextCoordinator) {
  const std::string node = NodeName(12);
  const int before = Events(node, "NcclTriageUnvalidated");
  {
    Coordinator first(*coordinator_, log_, kStartUnixMs);
    ASSERT_TRUE(first.Resume());
    ASSERT_TRUE(first.Sees(node, "boot-a")) << out_.str();
    first.Sweep();
  }
  ASSERT_TRUE(SetBootId(node, "boot-b"));
  {
    // Killed right after its patch: no event, nothing kept of this step.
    testing::StopAfterFirstPatch api(*coordinator_);
    StateStore store(*coordinator_, kNs, kName, log_);
    CoordinatorState kept;
    ASSERT_TRUE(store.Load(&kept));
    FakeClock clock(kStartUnixMs + kMinute);
    NodeValidator v(api, Options(), log_, clock);
    v.Restore(kept.validation);
    ValidationStatus s = v.Step({}, api.stop.get_token());
    EXPECT_EQ(s.tainted, std::vector<std::string>{node}) << out_.str();
    EXPECT_EQ(api.events, 0);
  }
  ASSERT_EQ(OurTaint(node), "rebooted");
  ASSERT_TRUE(EventPending(node)) << Node(node).dump();
  ASSERT_EQ(Events(node, "NcclTriageUnvalidated"), before);

  Coordinator next(*coordinator_, log_, kStartUnixMs + 2 * kMinute);
  ASSERT_TRUE(next.Resume());
  ASSERT_TRUE(next.Sees(node, "boot-b")) << out_.str();
  ValidationStatus s = next.Sweep();
  EXPECT_TRUE(s.tainted.empty()) << "tainted twice";
  EXPECT_EQ(s.unvalidated, std::vector<std::string>{node});
  EXPECT_EQ(Events(node, "NcclTriageUnvalidated"), before + 1);
  EXPECT_FALSE(EventPending(node));
  next.Sweep();
  EXPECT_EQ(Events(node, "NcclTriageUnvalidated"), before + 1);  // once
}

}  // namespace
}  // namespace nccl_triage
