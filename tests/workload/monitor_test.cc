// The workload pass end to end against the exporter's fake Kubernetes client: annotations only
// on change, removal when healthy, pods deleted or replaced between the list and the patch, the
// API away, metrics series that follow the pods, the agent's own pod, and secrets that never
// leave the environment they were planted in.
#include "workload/monitor.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <thread>

#include "base/clock.h"
#include "base/log.h"
#include "exporter/agent_http.h"
#include "exporter/metrics.h"
#include "state/agent_state.h"
#include "support/fake_clock.h"
#include "support/fake_kube_client.h"
#include "workload_test_util.h"

namespace nccl_triage::workload {
namespace {

using testing::ContainerId;
using testing::GoodProcess;
using testing::PodJson;
using testing::PodListJson;
using testing::PodUid;
using testing::WorkloadRoot;

constexpr const char* kNode = "gpu-node-1";

// The fake, with a hook that runs after each pod list (to delete or replace a pod in between).
class HookedKube final : public KubeClient {
 public:
  explicit HookedKube(FakeKubeClient& fake) : fake_(fake) {}
  KubeResponse PatchPodAnnotations(const std::string& ns, const std::string& pod,
                                   const AnnotationPatch& a) override {
    return fake_.PatchPodAnnotations(ns, pod, a);
  }
  KubeResponse PatchNodeCondition(const std::string& node, const NodeCondition& c) override {
    return fake_.PatchNodeCondition(node, c);
  }
  KubeResponse CreateEvent(const KubeEvent& e) override { return fake_.CreateEvent(e); }
  KubeResponse GetPod(const std::string& ns, const std::string& name) override {
    return fake_.GetPod(ns, name);
  }
  KubeResponse ListPods(const std::string& selector) override {
    KubeResponse r = fake_.ListPods(selector);
    if (list_body) r.body = list_body->dump();
    if (after_list) after_list();
    return r;
  }
  KubeResponse GetNode(const std::string& name) override { return fake_.GetNode(name); }
  KubeResponse PatchPodAnnotationsIfUid(const std::string& ns, const std::string& pod,
                                        const std::string& uid, const AnnotationPatch& a) override {
    return fake_.PatchPodAnnotationsIfUid(ns, pod, uid, a);
  }
  std::function<void()> after_list;
  std::optional<nlohmann::json>
      list_body;  // answered whatever the selector (a server that ignores it)

 private:
  FakeKubeClient& fake_;
};

struct Harness {
  WorkloadRoot root;
  FakeKubeClient fake;
  HookedKube kube{fake};
  AgentState state{kNode, "test", 0};
  FakeClock clock;
  std::ostringstream log_text;
  Logger log{log_text, LogLevel::kDebug};
  std::unique_ptr<WorkloadMonitor> monitor;

  explicit Harness(const std::vector<FixtureWorkloadProcess>& processes,
                   std::vector<nlohmann::json> pods, bool with_kube = true)
      : root(processes) {
    fake.SetPods(PodListJson(std::move(pods)));
    fake.SetNodes({{"items", {testing::NodeJson(kNode, {{"nvidia.com/gpu", "8"}})}}});
    WorkloadMonitorOptions o;
    o.node = kNode;
    o.scanner.root = root.root();
    monitor = std::make_unique<WorkloadMonitor>(o, &state, with_kube ? &kube : nullptr, nullptr,
                                                clock, log);
  }

  WorkloadPass Pass() { return monitor->RunPass(root.host); }

  // What the API would list after the patches: the fake's accumulated annotations.
  void SyncAnnotations(std::vector<nlohmann::json> pods) {
    for (auto& p : pods) {
      const std::string ns = p["metadata"]["namespace"], name = p["metadata"]["name"];
      nlohmann::json a = nlohmann::json::object();
      for (const auto& [k, v] : fake.Annotations(ns, name)) a[k] = v;
      for (auto it = p["metadata"]["annotations"].begin(); it != p["metadata"]["annotations"].end();
           ++it) {
        if (!std::string(it.key()).starts_with("nccl-triage.io/")) a[it.key()] = it.value();
      }
      p["metadata"]["annotations"] = a;
    }
    fake.SetPods(PodListJson(std::move(pods)));
  }
};

FixtureWorkloadProcess SmallShm(int pid, int pod) {
  auto p = GoodProcess(pid, pod);
  p.shm_bytes = 64ull << 20;
  return p;
}

TEST(WorkloadMonitor, FailingPodIsAnnotatedOnceAndOnlyOnChange) {
  auto pod = PodJson(PodUid(1), "team-a", "train-0", "trainer", ContainerId(1));
  Harness h({SmallShm(4101, 1)}, {pod});
  WorkloadPass first = h.Pass();
  ASSERT_EQ(first.containers.size(), 1u);
  EXPECT_EQ(first.containers[0].pod.pod, "train-0");
  EXPECT_EQ(first.containers[0].pod.container, "trainer");
  EXPECT_EQ(first.patches_sent, 1);
  auto a = h.fake.Annotations("team-a", "train-0");
  EXPECT_EQ(a["nccl-triage.io/verdict"], "architecture");
  EXPECT_EQ(a["nccl-triage.io/causes"], "shm.size");
  EXPECT_EQ(a["nccl-triage.io/basis"], "checks");
  EXPECT_FALSE(a["nccl-triage.io/updated"].empty());
  // The patch carries the pod's UID as precondition and names only our keys.
  auto calls = h.fake.Calls();
  const auto& patch = calls.back();
  EXPECT_EQ(patch.method, "PatchPodAnnotations");
  EXPECT_EQ(patch.body["metadata"]["uid"], PodUid(1));
  for (auto it = patch.body["metadata"]["annotations"].begin();
       it != patch.body["metadata"]["annotations"].end(); ++it) {
    EXPECT_TRUE(std::string(it.key()).starts_with("nccl-triage.io/")) << it.key();
  }

  h.SyncAnnotations({pod});
  h.clock.Advance(std::chrono::seconds(60));
  WorkloadPass second = h.Pass();
  EXPECT_EQ(second.patches_sent, 0);
  EXPECT_EQ(h.fake.CallCount("PatchPodAnnotations"), 1u);
}

TEST(WorkloadMonitor, HealthyAgainRemovesOnlyItsOwnAnnotations) {
  auto pod =
      PodJson(PodUid(1), "team-a", "train-0", "trainer", ContainerId(1), {{"nvidia.com/gpu", "8"}},
              {{"nccl-triage.io/verdict", "architecture"},
               {"nccl-triage.io/causes", "shm.size"},
               {"nccl-triage.io/basis", "checks"},
               {"nccl-triage.io/updated", "2025-01-01T00:00:00Z"},
               {"team.example/owner", "alice"}});
  Harness h({GoodProcess(4101, 1)}, {pod});
  WorkloadPass pass = h.Pass();
  EXPECT_EQ(pass.pods.at(0).verdict, FaultClass::kHealthy);
  EXPECT_EQ(pass.patches_sent, 1);
  const auto body = h.fake.Calls().back().body;
  const auto& ann = body["metadata"]["annotations"];
  EXPECT_EQ(ann.size(), 4u);
  for (auto it = ann.begin(); it != ann.end(); ++it) {
    EXPECT_TRUE(it.value().is_null()) << it.key();
    EXPECT_TRUE(std::string(it.key()).starts_with("nccl-triage.io/")) << it.key();
  }
  EXPECT_FALSE(ann.contains("team.example/owner"));
}

TEST(WorkloadMonitor, SteadyStateSendsNoListAfterTheFirstOneUntilTheResync) {
  auto pod = PodJson(PodUid(1), "team-a", "train-0", "trainer", ContainerId(1));
  Harness h({SmallShm(4101, 1)}, {pod});
  WorkloadPass first = h.Pass();
  EXPECT_EQ(first.directory.list_reason, "first list");
  // An hour of one-minute cycles: the pod is named from the cache, no LIST, no node GET.
  for (int i = 0; i < 59; ++i) {
    h.clock.Advance(std::chrono::seconds(60));
    WorkloadPass p = h.Pass();
    ASSERT_EQ(p.containers.size(), 1u);
    EXPECT_EQ(p.containers[0].pod.pod, "train-0");
    EXPECT_EQ(p.directory.list_reason, "");
  }
  EXPECT_EQ(h.fake.CallCount("ListPods"), 1u);
  EXPECT_EQ(h.fake.CallCount("GetNode"), 1u);
  h.clock.Advance(std::chrono::seconds(60));
  EXPECT_EQ(h.Pass().directory.list_reason, "resync");
  EXPECT_EQ(h.fake.CallCount("ListPods"), 2u);
}

TEST(WorkloadMonitor, VerdictChangeIsPatchedFromTheCacheWithoutAList) {
  auto pod = PodJson(PodUid(1), "team-a", "train-0", "trainer", ContainerId(1));
  Harness h({SmallShm(4101, 1)}, {pod});
  EXPECT_EQ(h.Pass().patches_sent, 1);
  // The same pod, now healthy: the annotations are removed with no new LIST.
  std::filesystem::remove_all(h.root.root() + "/proc/4101");
  ASSERT_TRUE(WriteWorkloadProcesses({GoodProcess(4101, 1)}, h.root.root()).ok());
  h.clock.Advance(std::chrono::seconds(60));
  WorkloadPass healthy = h.Pass();
  EXPECT_EQ(healthy.patches_sent, 1);
  EXPECT_EQ(h.fake.CallCount("ListPods"), 1u);
}

TEST(WorkloadMonitor, PodOnAnotherNodeIsNeverAnnotated) {
  // A list that names a pod on another node (a wrong selector, a stale cache): judged, not
  // patched, one warning.
  auto pod = PodJson(PodUid(1), "team-a", "train-0", "trainer", ContainerId(1),
                     {{"nvidia.com/gpu", "8"}}, nlohmann::json::object(), "gpu-node-2");
  Harness h({SmallShm(4101, 1)}, {pod});
  h.kube.list_body = PodListJson({pod});
  WorkloadPass pass = h.Pass();
  ASSERT_EQ(pass.containers.size(), 1u);
  EXPECT_EQ(pass.containers[0].pod.pod, "train-0");
  EXPECT_EQ(pass.patches_sent, 0);
  EXPECT_EQ(pass.patches_refused, 1);
  EXPECT_EQ(h.fake.CallCount("PatchPodAnnotations"), 0u);
  EXPECT_NE(h.log_text.str().find("on node 'gpu-node-2', this agent's node is 'gpu-node-1'"),
            std::string::npos)
      << h.log_text.str();
}

TEST(WorkloadMonitor, PodDeletedBetweenListAndPatchIsNotPatched) {
  auto pod = PodJson(PodUid(1), "team-a", "train-0", "trainer", ContainerId(1));
  Harness h({SmallShm(4101, 1)}, {pod});
  h.kube.after_list = [&] { h.fake.SetPods(PodListJson({})); };
  WorkloadPass pass = h.Pass();
  EXPECT_EQ(pass.patches_sent, 0);
  EXPECT_EQ(pass.patches_failed, 1);
  EXPECT_TRUE(h.fake.Annotations("team-a", "train-0").empty());
  EXPECT_NE(h.log_text.str().find("deleted before its annotations"), std::string::npos);
  EXPECT_EQ(h.log_text.str().find("WARN"), std::string::npos) << h.log_text.str();
}

TEST(WorkloadMonitor, PodReplacedByAnotherOfTheSameNameIsNotPatched) {
  auto pod = PodJson(PodUid(1), "team-a", "train-0", "trainer", ContainerId(1));
  Harness h({SmallShm(4101, 1)}, {pod});
  h.kube.after_list = [&] {
    h.fake.SetPods(
        PodListJson({PodJson(PodUid(99), "team-a", "train-0", "trainer", ContainerId(99))}));
  };
  WorkloadPass pass = h.Pass();
  EXPECT_EQ(pass.patches_sent, 0);
  EXPECT_EQ(pass.patches_failed, 1);
  EXPECT_TRUE(h.fake.Annotations("team-a", "train-0").empty());
}

TEST(WorkloadMonitor, ApiAwayJudgesWithoutPatchingAndWarnsOncePerStreak) {
  auto pod = PodJson(PodUid(1), "team-a", "train-0", "trainer", ContainerId(1));
  Harness h({SmallShm(4101, 1)}, {pod});
  h.fake.SetDefaultResponse(KubeResponse{0, "connection refused", "", std::nullopt});
  WorkloadPass a = h.Pass();
  WorkloadPass b = h.Pass();
  ASSERT_EQ(b.containers.size(), 1u);
  EXPECT_EQ(b.containers[0].verdict, FaultClass::kArchitecture);
  EXPECT_EQ(b.containers[0].pod.pod, "uid:" + PodUid(1));  // never listed: a stable label
  EXPECT_EQ(h.fake.CallCount("PatchPodAnnotations"), 0u);
  const std::string logs = h.log_text.str();
  size_t first = logs.find("list pods");
  ASSERT_NE(first, std::string::npos);
  EXPECT_EQ(logs.find("list pods", first + 1), std::string::npos) << logs;
  auto findings = h.state.View().workloads;
  EXPECT_FALSE(findings->empty());
}

TEST(WorkloadMonitor, ApiAwayAfterAListKeepsTheNames) {
  auto pod = PodJson(PodUid(1), "team-a", "train-0", "trainer", ContainerId(1));
  Harness h({SmallShm(4101, 1)}, {pod});
  h.Pass();
  h.fake.SetDefaultResponse(KubeResponse{503, "", "{}", std::nullopt});
  WorkloadPass pass = h.Pass();
  ASSERT_EQ(pass.containers.size(), 1u);
  EXPECT_EQ(pass.containers[0].pod.pod, "train-0");
  EXPECT_FALSE(pass.directory.fresh);
}

TEST(WorkloadMonitor, WithoutKubernetesItStillJudgesAndPublishesFindings) {
  Harness h({SmallShm(4101, 1)}, {}, /*with_kube=*/false);
  WorkloadPass pass = h.Pass();
  ASSERT_EQ(pass.containers.size(), 1u);
  EXPECT_EQ(pass.containers[0].verdict, FaultClass::kArchitecture);
  EXPECT_FALSE(h.state.View().workloads->empty());
}

TEST(WorkloadMonitor, NodeAdvertisingRdmaMakesAPodWithoutTheResourceFail) {
  auto p = GoodProcess(4101, 1);
  p.dev_infiniband_dir = false;
  p.dev_infiniband.clear();
  auto pod = PodJson(PodUid(1), "team-a", "train-0", "trainer", ContainerId(1));
  Harness h({p}, {pod});
  h.fake.SetNodes({{"items", {testing::NodeJson(kNode, {{"rdma/rdma_shared_device_a", "1k"}})}}});
  WorkloadPass pass = h.Pass();
  ASSERT_EQ(pass.containers.size(), 1u);
  const Finding* f = testing::FindingFor(pass.containers[0], "container.rdma_devices");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->status, CheckStatus::kFail);
  EXPECT_NE(f->message.find("rdma/rdma_shared_device_a"), std::string::npos);
  // The node is read once and cached.
  h.Pass();
  EXPECT_EQ(h.fake.CallCount("GetNode"), 1u);
}

TEST(WorkloadMonitor, MetricsFollowThePodsAndVanishWithThem) {
  auto pod = PodJson(PodUid(1), "team-a", "train-0", "trainer", ContainerId(1));
  Harness h({SmallShm(4101, 1)}, {pod});
  AgentMetrics metrics(h.state, "test");
  h.Pass();
  std::string text = metrics.Scrape();
  EXPECT_NE(text.find("nccl_triage_workload_check_status{check=\"shm.size\",container=\"trainer\","
                      "namespace=\"team-a\",pod=\"train-0\",status=\"fail\"} 1"),
            std::string::npos)
      << text;
  // The pod's process is gone: its series go with it.
  std::filesystem::remove_all(h.root.root() + "/proc/4101");
  h.Pass();
  text = metrics.Scrape();
  EXPECT_EQ(text.find("pod=\"train-0\""), std::string::npos) << text;
}

TEST(WorkloadMonitor, StatusGroupsTheFindingsPerContainerWithItsVerdict) {
  Harness h({SmallShm(4101, 1), GoodProcess(4102, 2)},
            {PodJson(PodUid(1), "team-a", "train-0", "trainer", ContainerId(1)),
             PodJson(PodUid(2), "team-b", "train-1", "trainer", ContainerId(2))});
  h.Pass();
  nlohmann::json w = AgentStatusJson(h.state.View())["workloads"];
  ASSERT_EQ(w.size(), 2u) << w.dump(2);
  std::map<std::string, nlohmann::json> by_pod;
  for (const auto& c : w)
    by_pod[c["namespace"].get<std::string>() + "/" + c["pod"].get<std::string>()] = c;
  const auto& bad = by_pod["team-a/train-0"];
  EXPECT_EQ(bad["container"], "trainer");
  EXPECT_EQ(bad["class"], "architecture");
  EXPECT_EQ(bad["causes"], nlohmann::json::array({"shm.size"}));
  EXPECT_GT(bad["findings"].size(), 5u);
  for (const auto& f : bad["findings"]) EXPECT_TRUE(f.contains("check") && f.contains("status"));
  const auto& good = by_pod["team-b/train-1"];
  EXPECT_EQ(good["class"], "healthy");
  EXPECT_TRUE(good["causes"].empty());
  EXPECT_EQ(good["findings"].size(), bad["findings"].size());
}

TEST(WorkloadMonitor, TheAgentsOwnPodIsNeverJudged) {
  auto workload = SmallShm(4101, 1);
  auto probe_child = SmallShm(4500, 7);  // a probe child in the agent's pod holds a GPU
  FixtureWorkloadProcess agent;
  agent.pid = 4400;
  agent.cgroup = KubepodsCgroup(PodUid(7), ContainerId(7));
  Harness h({workload, probe_child, agent},
            {PodJson(PodUid(1), "team-a", "train-0", "trainer", ContainerId(1)),
             PodJson(PodUid(7), "nccl-triage", "agent-x", "agent", ContainerId(7))});
  WorkloadMonitorOptions o;
  o.node = kNode;
  o.scanner.root = h.root.root();
  o.scanner.self_pid = 4400;
  WorkloadMonitor monitor(o, &h.state, &h.kube, nullptr, h.clock, h.log);
  WorkloadPass pass = monitor.RunPass(h.root.host);
  ASSERT_EQ(pass.containers.size(), 1u);
  EXPECT_EQ(pass.containers[0].pod.pod, "train-0");
  EXPECT_TRUE(h.fake.Annotations("nccl-triage", "agent-x").empty());
}

TEST(WorkloadMonitor, AHealthyGpuPodOnANodeWithAConfirmedFaultGetsTheNodesVerdict) {
  auto pod = PodJson(PodUid(1), "team-a", "train-0", "trainer", ContainerId(1));
  Harness h({GoodProcess(4101, 1)}, {pod});
  // The coordinator's verdict reaches the monitor with the agent state (no new cycle needed).
  AgentStateView view;
  NodeVerdict v;
  v.fault_class = FaultClass::kIbResource;
  v.basis = Basis::kProbes;
  v.causes = {"ib.port_state"};
  v.confirmed = true;
  view.probe_verdict = v;
  h.monitor->OnState(view);
  WorkloadPass pass = h.Pass();
  EXPECT_EQ(pass.pods.at(0).verdict, FaultClass::kHealthy);
  EXPECT_EQ(pass.patches_sent, 1);
  auto a = h.fake.Annotations("team-a", "train-0");
  EXPECT_EQ(a["nccl-triage.io/node-verdict"],
            "ib_resource (node fault confirmed by probes): ib.port_state");
  EXPECT_EQ(a.count("nccl-triage.io/verdict"), 0u);

  h.SyncAnnotations({pod});
  EXPECT_EQ(h.Pass().patches_sent, 0);  // unchanged: nothing sent
  view.probe_verdict.reset();           // the fault is repaired
  h.monitor->OnState(view);
  h.SyncAnnotations({pod});
  EXPECT_EQ(h.Pass().patches_sent, 1);
  EXPECT_EQ(h.fake.Annotations("team-a", "train-0").count("nccl-triage.io/node-verdict"), 0u);
}

TEST(WorkloadMonitor, RunsAPassAfterEachNewCycleOnItsOwnThread) {
  Harness h({SmallShm(4101, 1)},
            {PodJson(PodUid(1), "team-a", "train-0", "trainer", ContainerId(1))});
  h.monitor->Start();
  AgentStateView view;
  view.cycle.cycles = 1;
  view.snapshot = std::make_shared<const NodeSnapshot>(h.root.host);
  h.monitor->OnState(view);
  h.monitor->OnState(view);  // the same cycle again: no second pass
  for (int i = 0; i < 500 && h.monitor->passes() == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(h.monitor->passes(), 1u);
  h.monitor->Stop();
  EXPECT_EQ(h.monitor->passes(), 1u);
}

TEST(WorkloadSecrets, PlantedSecretsAppearInNoOutput) {
  const std::string secret_value = "s3cr3t-Tok3n-e0b5f9a1c2d4";
  const std::string secret_name = "MY_API_TOKEN_PLANTED";
  auto p = SmallShm(4101, 1);
  p.environ.push_back({secret_name, secret_value});
  p.environ.push_back({"AWS_SECRET_ACCESS_KEY", secret_value + "-aws"});
  p.environ.push_back({"NCCL_SOCKET_IFNAME", "eth0"});
  // An NCCL_* name is kept, but one that looks like a credential only with its value hidden
  // (`check --workloads --format json` must not print it).
  p.environ.push_back({"NCCL_SECRET_TOKEN", secret_value + "-nccl"});
  p.environ_raw_suffix = std::string("\xff") + secret_value + std::string("\0", 1);
  Harness h({p}, {PodJson(PodUid(1), "team-a", "train-0", "trainer", ContainerId(1))});
  AgentMetrics metrics(h.state, "test");
  WorkloadPass pass = h.Pass();
  ASSERT_EQ(pass.containers.size(), 1u);
  ASSERT_FALSE(pass.containers[0].causes.empty());

  std::vector<std::pair<std::string, std::string>> outputs = {
      {"metrics", metrics.Scrape()},
      {"status", AgentStatusJson(h.state.View()).dump()},
      {"logs", h.log_text.str()},
  };
  std::string calls;
  for (const auto& c : h.fake.Calls())
    calls += c.method + " " + c.target + " " + c.body.dump() + "\n";
  outputs.push_back({"api calls", calls});
  std::string annotations;
  for (const auto& [k, v] : h.fake.Annotations("team-a", "train-0"))
    annotations += k + "=" + v + "\n";
  outputs.push_back({"annotations", annotations});
  // The verdicts themselves (what `check --workloads` prints) carry only allow-listed values.
  std::string verdicts;
  for (const auto& [k, v] : pass.containers[0].environ) verdicts += k + "=" + v + "\n";
  for (const auto& f : pass.containers[0].findings) {
    verdicts += f.message + "\n";
    for (const auto& e : f.evidence) verdicts += e.key + e.value + e.source + "\n";
  }
  outputs.push_back({"verdicts", verdicts});
  for (const auto& [what, text] : outputs) {
    EXPECT_FALSE(text.empty()) << what;
    EXPECT_EQ(text.find("s3cr3t"), std::string::npos) << what << ":\n" << text;
    EXPECT_EQ(text.find(secret_name), std::string::npos) << what;
    EXPECT_EQ(text.find("AWS_SECRET"), std::string::npos) << what;
  }
  // The allow-listed setting is there: the filter is not simply dropping everything.
  EXPECT_NE(verdicts.find("NCCL_SOCKET_IFNAME"), std::string::npos);
  EXPECT_NE(verdicts.find("NCCL_SECRET_TOKEN=<hidden>"), std::string::npos) << verdicts;
}

}  // namespace
}  // namespace nccl_triage::workload
