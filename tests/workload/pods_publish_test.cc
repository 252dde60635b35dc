// The Kubernetes side of the workload view: pod lists, node resources, resolving a cgroup's
// container, pod verdicts and the annotation patches they need.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "workload/pods.h"
#include "workload/publish.h"
#include "workload_test_util.h"

namespace nccl_triage::workload {
namespace {

using testing::ContainerId;
using testing::PodJson;
using testing::PodListJson;
using testing::PodUid;

TEST(PodList, ParsesPodsByUidWithContainerIdsAndLimits) {
  auto list = PodListJson({PodJson(PodUid(1), "team-a", "train-0", "trainer", ContainerId(1))});
  auto pods = ParsePodList(list);
  ASSERT_EQ(pods.size(), 1u);
  const ApiPod& p = pods.at(PodUid(1));
  EXPECT_EQ(p.namespace_name, "team-a");
  EXPECT_EQ(p.name, "train-0");
  ASSERT_EQ(p.containers.size(), 1u);
  EXPECT_EQ(p.containers[0].container_id, ContainerId(1));
  EXPECT_EQ(p.containers[0].limits.at("nvidia.com/gpu"), "8");
}

TEST(PodList, MalformedItemsAreSkipped) {
  nlohmann::json list = {{"items",
                          {nullptr,
                           42,
                           {{"metadata", {{"uid", "not-a-uid"}, {"name", "x"}}}},
                           {{"metadata", {{"uid", PodUid(2)}}}},  // no name
                           PodJson(PodUid(3), "ns", "ok", "c", ContainerId(3))}}};
  auto pods = ParsePodList(list);
  ASSERT_EQ(pods.size(), 1u);
  EXPECT_EQ(pods.begin()->second.name, "ok");
  EXPECT_TRUE(ParsePodList(nlohmann::json("garbage")).empty());
  EXPECT_TRUE(ParsePodList(nlohmann::json::object()).empty());
}

TEST(PodList, ContainerNotStartedHasNoId) {
  auto pod = PodJson(PodUid(1), "ns", "p", "c", ContainerId(1));
  pod["status"]["containerStatuses"][0]["containerID"] = "";
  auto parsed = ParsePod(pod);
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(parsed->containers[0].container_id, "");
}

TEST(NodeResources, ListsNonZeroRdmaResources) {
  auto node = testing::NodeJson("n", {{"cpu", "128"},
                                      {"nvidia.com/gpu", "8"},
                                      {"rdma/rdma_shared_device_a", "1k"},
                                      {"rdma/unused", "0"}});
  NodeResources r = ParseNodeResources(node);
  EXPECT_TRUE(r.known);
  EXPECT_EQ(r.rdma_resources, std::vector<std::string>{"rdma/rdma_shared_device_a"});
  EXPECT_FALSE(ParseNodeResources(nlohmann::json::object()).known);
}

TEST(ResolveContainer, GoesByUidAndContainerIdOnly) {
  PodDirectory dir;
  dir.pods = ParsePodList(PodListJson(
      {PodJson(PodUid(1), "team-a", "train-0", "trainer", ContainerId(1), {{"rdma/ib", "1"}})}));
  dir.assignments = std::vector<PodResourcesEntry>{
      {"team-a", "train-0", "trainer", {{"nvidia.com/gpu", {"GPU-1"}}}},
      {"team-a", "train-0", "sidecar", {{"nvidia.com/gpu", {"GPU-9"}}}}};
  PodContainer pc = ResolveContainer({PodUid(1), ContainerId(1), "containerd", ""}, dir);
  EXPECT_TRUE(pc.pod_found);
  EXPECT_TRUE(pc.container_found);
  EXPECT_EQ(pc.namespace_name, "team-a");
  EXPECT_EQ(pc.pod, "train-0");
  EXPECT_EQ(pc.container, "trainer");
  ASSERT_TRUE(pc.assigned.has_value());
  ASSERT_EQ(pc.assigned->size(), 1u);
  EXPECT_EQ((*pc.assigned)[0].ids, std::vector<std::string>{"GPU-1"});

  // Same pod, a container id the statuses do not list: no name is guessed.
  PodContainer other = ResolveContainer({PodUid(1), ContainerId(7), "containerd", ""}, dir);
  EXPECT_TRUE(other.pod_found);
  EXPECT_FALSE(other.container_found);
  EXPECT_EQ(other.container, "id:" + ContainerId(7).substr(0, 12));

  // A UID the API does not know.
  PodContainer unknown = ResolveContainer({PodUid(2), ContainerId(2), "", ""}, dir);
  EXPECT_FALSE(unknown.pod_found);
  EXPECT_EQ(unknown.namespace_name, "");
  EXPECT_EQ(unknown.pod, "uid:" + PodUid(2));
}

ContainerVerdict Verdict(int pod, const std::string& container, FaultClass cls,
                         std::vector<std::string> causes) {
  ContainerVerdict v;
  v.pod.pod_uid = PodUid(pod);
  v.pod.namespace_name = "ns";
  v.pod.pod = "pod-" + std::to_string(pod);
  v.pod.container = container;
  v.pod.pod_found = true;
  for (const auto& c : causes) {
    Finding f;
    f.check = c;
    f.fault_class = FaultClass::kArchitecture;
    f.status = CheckStatus::kFail;
    v.findings.push_back(f);
  }
  Finding pass;
  pass.check = "limits.nofile";
  pass.status = CheckStatus::kPass;
  v.findings.push_back(pass);
  v.verdict = cls;
  v.causes = causes;
  return v;
}

TEST(PodList, ReadsTheNodeTheApiScheduledThePodOn) {
  auto pods = ParsePodList(PodListJson(
      {PodJson(PodUid(1), "team-a", "train-0", "trainer", ContainerId(1), {}, {}, "gpu-node-7")}));
  ASSERT_EQ(pods.size(), 1u);
  EXPECT_EQ(pods.begin()->second.node_name, "gpu-node-7");
  EXPECT_TRUE(OnNode(pods.begin()->second, "gpu-node-7"));
  EXPECT_FALSE(OnNode(pods.begin()->second, "gpu-node-1"));
  EXPECT_FALSE(OnNode(pods.begin()->second, ""));
  ApiPod unscheduled;
  EXPECT_FALSE(OnNode(unscheduled, "gpu-node-1"));
}

TEST(PodListReason, NoContainersNeedNoList) {
  EXPECT_EQ(PodListReason({}, {}, PodListState{}, PodListPolicy{}), "");
}

TEST(PodListReason, ListsFirstThenOnlyWhenTheCacheCannotNameAContainer) {
  const CgroupRef known{PodUid(1), ContainerId(1), "containerd", ""};
  const CgroupRef unknown{PodUid(2), ContainerId(2), "containerd", ""};
  auto cache = ParsePodList(
      PodListJson({PodJson(PodUid(1), "team-a", "train-0", "trainer", ContainerId(1))}));
  PodListPolicy policy;
  EXPECT_EQ(PodListReason({known}, {}, PodListState{}, policy), "first list");
  PodListState listed{true, std::chrono::minutes(1), {}};
  EXPECT_EQ(PodListReason({known}, cache, listed, policy), "");
  EXPECT_NE(PodListReason({known, unknown}, cache, listed, policy).find("not in the last list"),
            std::string::npos);
  // A restarted container has a new id in the same pod: the cache cannot name it.
  const CgroupRef restarted{PodUid(1), ContainerId(3), "containerd", ""};
  EXPECT_NE(PodListReason({restarted}, cache, listed, policy), "");
}

TEST(PodListReason, AContainerTheLastListLackedWaitsForTheRetryPeriod) {
  const CgroupRef unknown{PodUid(2), ContainerId(2), "containerd", ""};
  PodListPolicy policy;
  PodListState st{true, std::chrono::minutes(1), UnresolvedContainers({unknown}, {})};
  ASSERT_EQ(st.missed.size(), 1u);
  EXPECT_EQ(PodListReason({unknown}, {}, st, policy), "");
  st.since_list = policy.miss_retry;
  EXPECT_NE(PodListReason({unknown}, {}, st, policy), "");
}

TEST(PodListReason, ResyncsAfterThePeriodEvenWhenEverythingResolves) {
  const CgroupRef known{PodUid(1), ContainerId(1), "containerd", ""};
  auto cache = ParsePodList(
      PodListJson({PodJson(PodUid(1), "team-a", "train-0", "trainer", ContainerId(1))}));
  PodListPolicy policy;
  EXPECT_EQ(PodListReason({known}, cache, PodListState{true, policy.resync, {}}, policy), "resync");
}

TEST(PodVerdicts, CombineTheContainersOfAPod) {
  auto pods =
      PodVerdicts({Verdict(1, "a", FaultClass::kArchitecture, {"shm.size"}),
                   Verdict(1, "b", FaultClass::kArchitecture, {"limits.memlock", "shm.size"}),
                   Verdict(2, "c", FaultClass::kHealthy, {})});
  ASSERT_EQ(pods.size(), 2u);
  EXPECT_EQ(pods[0].verdict, FaultClass::kArchitecture);
  // Catalogue order, no duplicates.
  EXPECT_EQ(pods[0].causes, (std::vector<std::string>{"limits.memlock", "shm.size"}));
  EXPECT_EQ(pods[0].containers, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(pods[1].verdict, FaultClass::kHealthy);
}

TEST(AnnotationChange, FailingPodGetsVerdictCausesBasisAndUpdated) {
  PodVerdict p;
  p.verdict = FaultClass::kArchitecture;
  p.causes = {"limits.memlock", "shm.size"};
  auto patch = AnnotationChange(p, {{"team.example/owner", "alice"}}, 1'700'000'000'000);
  ASSERT_TRUE(patch.has_value());
  EXPECT_EQ(patch->at("nccl-triage.io/verdict"), "architecture");
  EXPECT_EQ(patch->at("nccl-triage.io/causes"), "limits.memlock,shm.size");
  EXPECT_EQ(patch->at("nccl-triage.io/basis"), "checks");
  EXPECT_EQ(patch->at("nccl-triage.io/updated"), "2023-11-14T22:13:20Z");
  EXPECT_EQ(patch->count("team.example/owner"), 0u);  // other annotations are never named
}

NodeVerdict ConfirmedNodeFault() {
  NodeVerdict v;
  v.fault_class = FaultClass::kIbResource;
  v.basis = Basis::kProbes;
  v.causes = {"ib.port_state", "ib.fabric"};
  v.confirmed = true;
  return v;
}

TEST(NodeFaultAnnotation, OnlyAFaultTheCoordinatorConfirmedIsSaid) {
  EXPECT_FALSE(NodeFaultAnnotation(std::nullopt));
  NodeVerdict suspected = ConfirmedNodeFault();
  suspected.confirmed = false;  // one sweep, not yet repeated for hold_down
  EXPECT_FALSE(NodeFaultAnnotation(suspected));
  EXPECT_EQ(NodeFaultAnnotation(ConfirmedNodeFault()),
            "ib_resource (node fault confirmed by probes): ib.port_state,ib.fabric");
  NodeVerdict link;
  link.fault_class = FaultClass::kHealthy;
  link.confirmed_links = {"node-b", "node-c"};
  EXPECT_EQ(NodeFaultAnnotation(link), "link fault confirmed by probes to node-b,node-c");
}

TEST(NodeFaultAnnotation, IsBounded) {
  NodeVerdict v = ConfirmedNodeFault();
  for (int i = 0; i < 100; ++i) v.confirmed_links.push_back("node-" + std::to_string(i));
  auto text = NodeFaultAnnotation(v);
  ASSERT_TRUE(text);
  EXPECT_EQ(text->size(), kMaxNodeVerdictAnnotationBytes);
  EXPECT_EQ(text->substr(text->size() - 3), "...");
}

TEST(AnnotationChange, AHealthyPodOnAFaultyNodeGetsTheNodesVerdictAndLosesItAfterwards) {
  PodVerdict p;
  p.verdict = FaultClass::kHealthy;
  const auto fault = NodeFaultAnnotation(ConfirmedNodeFault());
  auto patch = AnnotationChange(p, {}, 1'700'000'000'000, fault);
  ASSERT_TRUE(patch.has_value());
  EXPECT_EQ(patch->size(), 1u);  // the pod's own keys stay away: its settings are fine
  EXPECT_EQ(patch->at("nccl-triage.io/node-verdict"), *fault);
  std::map<std::string, std::string> current = {{"nccl-triage.io/node-verdict", *fault}};
  EXPECT_FALSE(AnnotationChange(p, current, 1'700'000'000'000, fault).has_value());
  auto cleared = AnnotationChange(p, current, 1'700'000'000'000, std::nullopt);
  ASSERT_TRUE(cleared.has_value());
  EXPECT_EQ(cleared->at("nccl-triage.io/node-verdict"), std::nullopt);
}

TEST(AnnotationChange, AFailingPodOnAFaultyNodeGetsBoth) {
  PodVerdict p;
  p.verdict = FaultClass::kArchitecture;
  p.causes = {"shm.size"};
  auto patch =
      AnnotationChange(p, {}, 1'700'000'000'000, NodeFaultAnnotation(ConfirmedNodeFault()));
  ASSERT_TRUE(patch.has_value());
  EXPECT_EQ(patch->at("nccl-triage.io/verdict"), "architecture");
  EXPECT_EQ(patch->count("nccl-triage.io/node-verdict"), 1u);
}

TEST(AnnotationChange, NoPatchWhenNothingChanged) {
  PodVerdict p;
  p.verdict = FaultClass::kArchitecture;
  p.causes = {"shm.size"};
  std::map<std::string, std::string> current = {{"nccl-triage.io/verdict", "architecture"},
                                                {"nccl-triage.io/causes", "shm.size"},
                                                {"nccl-triage.io/basis", "checks"},
                                                {"nccl-triage.io/updated", "2023-11-14T22:13:20Z"}};
  EXPECT_FALSE(AnnotationChange(p, current, 1'800'000'000'000).has_value());
  p.causes = {"limits.memlock", "shm.size"};
  EXPECT_TRUE(AnnotationChange(p, current, 1'800'000'000'000).has_value());
}

TEST(AnnotationChange, HealthyPodHasItsWorkloadKeysRemovedAndNothingElse) {
  PodVerdict p;
  p.verdict = FaultClass::kHealthy;
  std::map<std::string, std::string> current = {{"nccl-triage.io/verdict", "architecture"},
                                                {"nccl-triage.io/causes", "shm.size"},
                                                {"nccl-triage.io/updated", "x"},
                                                {"team.example/owner", "alice"}};
  auto patch = AnnotationChange(p, current, 0);
  ASSERT_TRUE(patch.has_value());
  EXPECT_EQ(patch->size(), 3u);
  for (const auto& [k, v] : *patch) {
    EXPECT_FALSE(v.has_value()) << k;
    EXPECT_TRUE(k.starts_with("nccl-triage.io/")) << k;
  }
  EXPECT_FALSE(AnnotationChange(p, {{"team.example/owner", "alice"}}, 0).has_value());
}

TEST(AnnotationChange, UnknownVerdictChangesNothing) {
  PodVerdict p;
  p.verdict = FaultClass::kUnknown;
  EXPECT_FALSE(AnnotationChange(p, {{"nccl-triage.io/verdict", "architecture"}}, 0).has_value());
}

TEST(StateFindings, OnePerContainerAndCheck) {
  auto f = StateFindings({Verdict(1, "a", FaultClass::kArchitecture, {"shm.size"})});
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].ns, "ns");
  EXPECT_EQ(f[0].pod, "pod-1");
  EXPECT_EQ(f[0].container, "a");
  EXPECT_EQ(f[0].finding.check, "shm.size");
}

}  // namespace
}  // namespace nccl_triage::workload
