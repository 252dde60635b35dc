// What `nccl-triage-server cleanup` takes from a node or a pod (kube/cleanup.h): ours only, and
// the patches that remove it. RunCleanup against the real API server: tests/k8s/cleanup_command.sh.
#include "kube/cleanup.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace nccl_triage {
namespace {

using nlohmann::json;

json Node() {
  return json::parse(R"({
    "metadata": {"name": "gpu-1", "resourceVersion": "41",
                 "annotations": {"nccl-triage.io/remediated": "taint=ib_resource,cordon",
                                 "nccl-triage.io/pending-event": "x",
                                 "team.example/owner": "ml"}},
    "spec": {"unschedulable": true,
             "taints": [{"key": "nccl-triage.io/fault", "value": "ib_resource",
                         "effect": "NoSchedule"},
                        {"key": "nvidia.com/gpu", "effect": "NoSchedule"}]},
    "status": {"conditions": [{"type": "Ready", "status": "True"},
                              {"type": "NcclFabricReady", "status": "False"}]}})");
}

TEST(CleanupPlan, TakesOurTaintCordonAnnotationsAndConditionOnly) {
  const NodeCleanup plan = PlanNodeCleanup(Node());
  EXPECT_EQ(plan.name, "gpu-1");
  EXPECT_EQ(plan.taints, std::vector<std::string>{"nccl-triage.io/fault=ib_resource:NoSchedule"});
  EXPECT_EQ(plan.kept_taints,
            json::parse(R"([{"key": "nvidia.com/gpu", "effect": "NoSchedule"}])"));
  EXPECT_TRUE(plan.uncordon);
  EXPECT_EQ(plan.annotations, (std::vector<std::string>{"nccl-triage.io/pending-event",
                                                         "nccl-triage.io/remediated"}));
  ASSERT_TRUE(plan.condition_index);
  EXPECT_EQ(*plan.condition_index, 1);
  EXPECT_EQ(DescribeNodeCleanup(plan),
            "node gpu-1: taint nccl-triage.io/fault=ib_resource:NoSchedule, cordon, annotation "
            "nccl-triage.io/pending-event, annotation nccl-triage.io/remediated, condition "
            "NcclFabricReady");
}

TEST(CleanupPlan, LeavesACordonOurMarkerDoesNotClaim) {
  json node = Node();
  node["metadata"]["annotations"]["nccl-triage.io/remediated"] = "taint=ib_resource";
  EXPECT_FALSE(PlanNodeCleanup(node).uncordon);
  node["metadata"]["annotations"].erase("nccl-triage.io/remediated");
  EXPECT_FALSE(PlanNodeCleanup(node).uncordon);
}

TEST(CleanupPlan, NodeWithNothingOfOursIsEmpty) {
  const json node = json::parse(R"({"metadata": {"name": "cpu-1",
      "annotations": {"nccl-triage.example/x": "y"}},
      "spec": {"unschedulable": true, "taints": [{"key": "a", "effect": "NoSchedule"}]},
      "status": {"conditions": [{"type": "Ready"}]}})");
  EXPECT_TRUE(PlanNodeCleanup(node).Empty());
  EXPECT_TRUE(PlanNodeCleanup(json::parse("{}")).Empty());
  EXPECT_TRUE(PlanNodeCleanup(json::parse("[1]")).Empty());
}

TEST(CleanupPatch, KeepsOtherTaintsUnderTheReadResourceVersion) {
  const NodePatch patch = NodeCleanupPatch(PlanNodeCleanup(Node()));
  const json body = NodePatchBody(patch);
  EXPECT_EQ(body["metadata"]["resourceVersion"], "41");
  EXPECT_EQ(body["spec"]["taints"],
            json::parse(R"([{"key": "nvidia.com/gpu", "effect": "NoSchedule"}])"));
  EXPECT_EQ(body["spec"]["unschedulable"], false);
  EXPECT_TRUE(body["metadata"]["annotations"]["nccl-triage.io/remediated"].is_null());
  EXPECT_FALSE(body["metadata"]["annotations"].contains("team.example/owner"));
}

TEST(CleanupPatch, LeavesTaintsAloneWhenNoneIsOurs) {
  json node = Node();
  node["spec"]["taints"].erase(0);
  const json body = NodePatchBody(NodeCleanupPatch(PlanNodeCleanup(node)));
  EXPECT_FALSE(body["spec"].contains("taints"));
}

TEST(CleanupPatch, ConditionRemovalIsGuardedByItsType) {
  EXPECT_EQ(NodeConditionRemovalBody(3, "NcclFabricReady"), json::parse(R"([
      {"op": "test", "path": "/status/conditions/3/type", "value": "NcclFabricReady"},
      {"op": "remove", "path": "/status/conditions/3"}])"));
}

TEST(CleanupPlan, PodLosesOnlyOurAnnotations) {
  const PodCleanup plan = PlanPodCleanup(json::parse(R"({"metadata": {"namespace": "ml",
      "name": "train-0", "uid": "u-1", "annotations": {"nccl-triage.io/causes": "ib.port_state",
      "nccl-triage.io/node-verdict": "ib_resource", "team.example/owner": "ml"}}})"));
  EXPECT_EQ(plan.uid, "u-1");
  EXPECT_EQ(plan.annotations,
            (std::vector<std::string>{"nccl-triage.io/causes", "nccl-triage.io/node-verdict"}));
  EXPECT_EQ(DescribePodCleanup(plan),
            "pod ml/train-0: annotation nccl-triage.io/causes, annotation "
            "nccl-triage.io/node-verdict");
  EXPECT_TRUE(PlanPodCleanup(json::parse(R"({"metadata": {"name": "web"}})")).Empty());
}

// Two pages of nodes and of pods, one 409 Conflict on the first node patch (someone tainted the
// node meanwhile), every other call recorded.
class PagedCluster final : public KubeClient {
 public:
  std::vector<std::string> calls;
  json gpu1 = Node();
  bool endless_nodes = false;  // every page says "continue=p2": a server that never ends

  KubeResponse ListNodes(const NodeListQuery& q) override {
    calls.push_back("ListNodes " + q.label_selector + " continue=" + q.continue_token);
    if (q.continue_token.empty() || endless_nodes) {
      return Ok({{"metadata", {{"continue", "p2"}}}, {"items", {gpu1}}});
    }
    return Ok({{"metadata", json::object()},
               {"items", {{{"metadata", {{"name", "cpu-1"}}}}}}});
  }
  KubeResponse ListAllPods(const PodListQuery& q) override {
    calls.push_back("ListAllPods " + q.field_selector + " continue=" + q.continue_token);
    const json pod = {{"metadata",
                       {{"namespace", "ml"},
                        {"name", q.continue_token.empty() ? "train-0" : "train-1"},
                        {"uid", "u"},
                        {"annotations", {{"nccl-triage.io/causes", "x"}}}}}};
    if (q.continue_token.empty()) return Ok({{"metadata", {{"continue", "p2"}}}, {"items", {pod}}});
    return Ok({{"metadata", json::object()}, {"items", {pod}}});
  }
  KubeResponse PatchNode(const std::string& node, const NodePatch& patch) override {
    calls.push_back("PatchNode " + node + " rv=" + patch.resource_version + " taints=" +
                    (patch.taints ? patch.taints->dump() : "-"));
    if (patch.resource_version == "41") {
      // An operator's taint arrived after our read.
      gpu1["metadata"]["resourceVersion"] = "42";
      gpu1["spec"]["taints"].push_back({{"key", "late"}, {"effect", "NoExecute"}});
      KubeResponse r;
      r.status = 409;
      return r;
    }
    return Ok(json::object());
  }
  KubeResponse GetNode(const std::string& name) override {
    calls.push_back("GetNode " + name);
    return Ok(gpu1);
  }
  KubeResponse RemoveNodeCondition(const std::string& node, int index,
                                   const std::string& type) override {
    calls.push_back("RemoveNodeCondition " + node + " " + std::to_string(index) + " " + type);
    return Ok(json::object());
  }
  KubeResponse PatchPodAnnotationsIfUid(const std::string& ns, const std::string& pod,
                                        const std::string& uid,
                                        const AnnotationPatch& annotations) override {
    calls.push_back("PatchPod " + ns + "/" + pod + " uid=" + uid + " " +
                    AnnotationPatchBody(annotations).dump());
    return Ok(json::object());
  }
  // Not called by the cleanup.
  KubeResponse PatchPodAnnotations(const std::string&, const std::string&,
                                   const AnnotationPatch&) override {
    return Unexpected();
  }
  KubeResponse PatchNodeCondition(const std::string&, const NodeCondition&) override {
    return Unexpected();
  }
  KubeResponse CreateEvent(const KubeEvent&) override { return Unexpected(); }
  KubeResponse GetPod(const std::string&, const std::string&) override { return Unexpected(); }
  KubeResponse ListPods(const std::string&) override { return Unexpected(); }

 private:
  static KubeResponse Ok(const json& body) {
    KubeResponse r;
    r.status = 200;
    r.body = body.dump();
    return r;
  }
  KubeResponse Unexpected() {
    calls.push_back("unexpected");
    return {};
  }
};

// A server that answers every page with the same continue token: one line, nothing patched,
// instead of a command that never ends.
TEST(RunCleanup, AServerThatRepeatsItsContinueTokenEndsTheListWithAnError) {
  PagedCluster cluster;
  cluster.endless_nodes = true;
  const CleanupResult result = RunCleanup(cluster, {});
  ASSERT_EQ(result.errors.size(), 1u);
  EXPECT_EQ(result.errors[0], "list nodes: the server repeats its continue token");
  EXPECT_EQ(std::count_if(cluster.calls.begin(), cluster.calls.end(),
                          [](const std::string& c) { return c.rfind("ListNodes", 0) == 0; }),
            2);
  EXPECT_EQ(std::count_if(cluster.calls.begin(), cluster.calls.end(),
                          [](const std::string& c) { return c.rfind("Patch", 0) == 0; }),
            0);
}

TEST(RunCleanup, ReadsEveryPageAndReplansAfterAConflict) {
  PagedCluster cluster;
  const CleanupResult result = RunCleanup(cluster, {});
  EXPECT_TRUE(result.errors.empty()) << result.errors.front();
  EXPECT_EQ(result.nodes, 1);
  EXPECT_EQ(result.pods, 2);
  const std::string kept = R"([{"effect":"NoSchedule","key":"nvidia.com/gpu"}])";
  const std::string kept_and_late =
      R"([{"effect":"NoSchedule","key":"nvidia.com/gpu"},{"effect":"NoExecute","key":"late"}])";
  const std::string pod_patch = R"({"metadata":{"annotations":{"nccl-triage.io/causes":null}}})";
  EXPECT_EQ(cluster.calls, (std::vector<std::string>{
                               "ListNodes  continue=",
                               "ListNodes  continue=p2",
                               "PatchNode gpu-1 rv=41 taints=" + kept,
                               "GetNode gpu-1",
                               "PatchNode gpu-1 rv=42 taints=" + kept_and_late,
                               "RemoveNodeCondition gpu-1 1 NcclFabricReady",
                               "ListAllPods  continue=",
                               "ListAllPods  continue=p2",
                               "PatchPod ml/train-0 uid=u " + pod_patch,
                               "PatchPod ml/train-1 uid=u " + pod_patch,
                           }));
}

TEST(RunCleanup, DryRunOnlyReadsAndSelectorLimitsThePodsToItsNodes) {
  PagedCluster cluster;
  CleanupOptions options;
  options.dry_run = true;
  options.node_selector = "pool=h100";
  const CleanupResult result = RunCleanup(cluster, options);
  EXPECT_EQ(result.lines.size(), 5u);  // gpu-1; train-0 and train-1 as listed on each node
  for (const auto& call : cluster.calls) {
    EXPECT_TRUE(call.rfind("List", 0) == 0) << "a dry run called " << call;
  }
  EXPECT_NE(std::find(cluster.calls.begin(), cluster.calls.end(),
                      "ListAllPods spec.nodeName=cpu-1 continue="),
            cluster.calls.end());
  EXPECT_EQ(cluster.calls.front(), "ListNodes pool=h100 continue=");
}

// The uninstall hook's stop step: a DaemonSet's pods marked, both workloads deleted, the cleanup
// waiting until their pods are gone (two polls here), then the usual cleanup.
class ReleaseWithPods final : public KubeClient {
 public:
  std::vector<std::string> calls;
  int polls_with_pods = 2;  // namespace lists after the deletes that still show the pods
  bool deleted = false;

  KubeResponse ListNamespacedPods(const std::string& ns, const PodListQuery&) override {
    calls.push_back("ListNamespacedPods " + ns);
    json items = json::array();
    if (!deleted || polls_with_pods-- > 0) {
      items.push_back(PodOwnedBy("agent-x1", "DaemonSet", "kt-agent"));
      items.push_back(PodOwnedBy("coord-1", "ReplicaSet", "kt-coordinator-6d9f"));
      items.push_back(PodOwnedBy("other", "ReplicaSet", "kt-coordinator2-1"));
    }
    return Ok({{"metadata", json::object()}, {"items", items}});
  }
  KubeResponse DeleteObject(const std::string& ns, const std::string& resource,
                            const std::string& name) override {
    calls.push_back("Delete " + ns + "/" + resource + "/" + name);
    deleted = true;
    KubeResponse r;
    r.status = resource == "deployments" || resource == "leases" ? 404 : 200;  // gone: fine
    return r;
  }
  KubeResponse PatchPodAnnotationsIfUid(const std::string& ns, const std::string& pod,
                                        const std::string& uid,
                                        const AnnotationPatch& annotations) override {
    calls.push_back("PatchPod " + ns + "/" + pod + " uid=" + uid + " " +
                    AnnotationPatchBody(annotations).dump());
    return Ok(json::object());
  }
  KubeResponse ListNodes(const NodeListQuery&) override {
    calls.push_back("ListNodes");
    return Ok({{"metadata", json::object()}, {"items", json::array()}});
  }
  KubeResponse ListAllPods(const PodListQuery&) override {
    calls.push_back("ListAllPods");
    return Ok({{"metadata", json::object()}, {"items", json::array()}});
  }
  KubeResponse PatchPodAnnotations(const std::string&, const std::string&,
                                   const AnnotationPatch&) override {
    return {};
  }
  KubeResponse PatchNodeCondition(const std::string&, const NodeCondition&) override { return {}; }
  KubeResponse CreateEvent(const KubeEvent&) override { return {}; }
  KubeResponse GetPod(const std::string&, const std::string&) override { return {}; }
  KubeResponse ListPods(const std::string&) override { return {}; }
  KubeResponse GetNode(const std::string&) override { return {}; }

 private:
  static json PodOwnedBy(const std::string& name, const std::string& kind,
                         const std::string& owner) {
    return {{"metadata",
             {{"namespace", "kt"},
              {"name", name},
              {"uid", "u-" + name},
              {"ownerReferences", {{{"kind", kind}, {"name", owner}}}}}}};
  }
  static KubeResponse Ok(const json& body) {
    KubeResponse r;
    r.status = 200;
    r.body = body.dump();
    return r;
  }
};

TEST(RunCleanup, StopMarksTheAgentsDeletesTheWorkloadsAndWaitsForTheirPods) {
  ReleaseWithPods cluster;
  CleanupFlags flags;
  ASSERT_TRUE(ParseCleanupFlags({"--stop", "kt/daemonset/kt-agent", "--stop",
                                 "kt/deployment/kt-coordinator", "--stop-timeout", "60", "--delete",
                                 "kt/configmap/kt-state", "--delete", "kt/lease/kt-lease"},
                                flags)
                  .ok());
  flags.options.stop_poll = std::chrono::milliseconds(0);
  const CleanupResult result = RunCleanup(cluster, flags.options);
  EXPECT_TRUE(result.errors.empty()) << result.errors.front();
  EXPECT_EQ(result.stopped, (std::vector<std::string>{"daemonset kt/kt-agent: 1 pod(s)",
                                                      "deployment kt/kt-coordinator: 1 pod(s)"}));
  // The deployment answered 404 (gone already): fine, and so is a Lease that was never made.
  EXPECT_EQ(result.deleted, (std::vector<std::string>{"configmap kt/kt-state"}));
  const std::string mark = R"({"metadata":{"annotations":{"nccl-triage.io/uninstalling":"true"}}})";
  EXPECT_EQ(cluster.calls, (std::vector<std::string>{
                               "ListNamespacedPods kt",
                               "PatchPod kt/agent-x1 uid=u-agent-x1 " + mark,
                               "Delete kt/daemonsets/kt-agent",
                               "ListNamespacedPods kt",
                               "Delete kt/deployments/kt-coordinator",
                               "ListNamespacedPods kt",  // poll 1, the DaemonSet's: still there
                               "ListNamespacedPods kt",  // poll 1, the Deployment's: gone
                               "ListNamespacedPods kt",  // poll 2: all gone
                               "ListNamespacedPods kt",
                               "Delete kt/configmaps/kt-state",
                               "Delete kt/leases/kt-lease",
                               "ListNodes",
                               "ListAllPods",
                           }));
}

TEST(RunCleanup, StopGivesUpAfterItsTimeoutAndStillCleans) {
  ReleaseWithPods cluster;
  cluster.polls_with_pods = 1'000'000;
  CleanupOptions options;
  options.stop = {{"kt", "daemonsets", "kt-agent"}};
  options.stop_timeout_seconds = 0;
  options.stop_poll = std::chrono::milliseconds(0);
  const CleanupResult result = RunCleanup(cluster, options);
  ASSERT_EQ(result.errors.size(), 1u);
  EXPECT_EQ(result.errors[0], "1 pod(s) of daemonset kt/kt-agent still there after 0 s");
  EXPECT_EQ(cluster.calls.back(), "ListAllPods");
}

TEST(CleanupFlags, StopTargetsAreNamespaceKindName) {
  EXPECT_EQ(*ParseStopTarget("kt/daemonset/a"), (StopTarget{"kt", "daemonsets", "a"}));
  EXPECT_EQ(*ParseStopTarget("kt/deployments/b"), (StopTarget{"kt", "deployments", "b"}));
  EXPECT_EQ(*ParseStopTarget("kt/configmap/c", false), (StopTarget{"kt", "configmaps", "c"}));
  EXPECT_EQ(*ParseStopTarget("kt/lease/d", false), (StopTarget{"kt", "leases", "d"}));
  EXPECT_FALSE(ParseStopTarget("kt/configmap/c").ok());
  EXPECT_FALSE(ParseStopTarget("kt/daemonset/a", false).ok());
  for (const char* bad : {"kt/a", "kt/statefulset/a", "/daemonset/a", "kt//a", "kt/daemonset/",
                          "kt/daemonset/a/b"}) {
    EXPECT_FALSE(ParseStopTarget(bad).ok()) << bad;
  }
  CleanupFlags flags;
  EXPECT_FALSE(ParseCleanupFlags({"--stop", "kt/job/x"}, flags).ok());
}

TEST(CleanupPlan, AnAgentFindsItsOwnPodMarkedOnlyByTheUninstallAnnotation) {
  const json list = json::parse(R"({"items": [
    {"metadata": {"namespace": "kt", "name": "agent-a",
                  "annotations": {"nccl-triage.io/uninstalling": "true"}}},
    {"metadata": {"namespace": "kt", "name": "agent-b", "annotations": {"x": "y"}}},
    {"metadata": {"namespace": "other", "name": "agent-c",
                  "annotations": {"nccl-triage.io/uninstalling": "true"}}}]})");
  EXPECT_TRUE(PodMarkedUninstalling(list, "kt", "agent-a"));
  EXPECT_FALSE(PodMarkedUninstalling(list, "kt", "agent-b"));
  EXPECT_FALSE(PodMarkedUninstalling(list, "kt", "agent-c"));  // another namespace's pod
  EXPECT_FALSE(PodMarkedUninstalling(list, "kt", "agent-x"));
  EXPECT_FALSE(PodMarkedUninstalling(json::parse("{}"), "kt", "agent-a"));
}

TEST(CleanupPlan, APodBelongsToItsDaemonSetOrItsDeploymentsReplicaSets) {
  const StopTarget ds{"kt", "daemonsets", "kt-agent"};
  const StopTarget deploy{"kt", "deployments", "kt-coord"};
  auto pod = [](const char* ns, const char* kind, const char* owner) {
    return json{{"metadata",
                 {{"namespace", ns}, {"ownerReferences", {{{"kind", kind}, {"name", owner}}}}}}};
  };
  EXPECT_TRUE(PodOfTarget(pod("kt", "DaemonSet", "kt-agent"), ds));
  EXPECT_FALSE(PodOfTarget(pod("other", "DaemonSet", "kt-agent"), ds));
  EXPECT_FALSE(PodOfTarget(pod("kt", "DaemonSet", "kt-agent2"), ds));
  EXPECT_TRUE(PodOfTarget(pod("kt", "ReplicaSet", "kt-coord-5c7b9"), deploy));
  EXPECT_FALSE(PodOfTarget(pod("kt", "ReplicaSet", "kt-coord"), deploy));
  EXPECT_FALSE(PodOfTarget(pod("kt", "DaemonSet", "kt-coord-1"), deploy));
  EXPECT_FALSE(PodOfTarget(json{{"metadata", {{"namespace", "kt"}}}}, ds));
}

}  // namespace
}  // namespace nccl_triage
