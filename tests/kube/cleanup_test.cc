// What `nccl-triage-server cleanup` takes from a node or a pod (kube/cleanup.h): ours only, and
// the patches that remove it. RunCleanup against the real API server: tests/k8s/cleanup_command.sh.
#include "kube/cleanup.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace nccl_triage
