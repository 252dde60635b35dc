// WorkloadMonitor: one workload pass after every agent cycle, on a thread of its own.
//
// A pass: scan the GPU processes (scanner.h); if there are any, name their pods from a cache of
// this node's pod list (field selector spec.nodeName), listed again only when the cache cannot
// name a container or the resync period passed (PodListReason: no LIST in the steady state);
// read the node's allocatable RDMA resources (cached for node_refresh) and the kubelet's device
// assignments (pod-resources socket, when mounted); judge each container (judge.h); patch the
// annotations of pods on this node whose verdict changed (publish.h, with the pod's UID as
// precondition); hand the findings to the AgentState, from which the exporter serves
// nccl_triage_workload_check_status and the /status section.
//
// Failure handling: the API away -> the last pod list is used for names, no patch is sent, one
// warning per streak; a pod deleted between the list and the patch (404) or replaced by another
// of the same name (422 on metadata.uid, UidMismatch) -> one debug line, nothing else; the kubelet socket
// away -> judged without assignments. Nothing from a workload's environment is logged.
//
// As a StateSink it only notes that a new cycle finished and wakes its worker, so the agent loop
// never waits for a pass. RunPass may also be called directly (tests, `check --workloads`).
// Thread safety: OnState from any thread; RunPass from one thread at a time. The state, client,
// pod-resources source, clock and logger are not owned and must outlive the monitor.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "base/log.h"
#include "core/config.h"
#include "core/snapshot.h"
#include "kube/kube_api.h"
#include "state/agent_state.h"
#include "state/state_sink.h"
#include "workload/pod_resources.h"
#include "workload/pods.h"
#include "workload/publish.h"
#include "workload/ras_watch.h"
#include "workload/scanner.h"

namespace nccl_triage::workload {

struct WorkloadMonitorOptions {
  std::string node;  // for the field selector and GetNode; empty: no API lookups
  ScannerOptions scanner;
  Config config;
  bool annotate = true;  // agent.annotate_pod: patch workload pods' annotations
  PodListPolicy pod_list;
  // The node's allocatable RDMA resources change with the device plugin's configuration, rarely.
  std::chrono::milliseconds node_refresh{std::chrono::hours(1)};
};

struct WorkloadPass {
  ScanResult scan;
  PodDirectory directory;
  std::vector<ContainerVerdict> containers;
  std::vector<PodVerdict> pods;
  int patches_sent = 0;     // successful patches
  int patches_failed = 0;   // any other outcome
  int patches_refused = 0;  // pods not on this node (never patched)
  RasCycle ras;             // the RAS queries of this pass (config.ras.enabled only)
  double duration_seconds = 0;
};

class WorkloadMonitor final : public StateSink {
 public:
  // `state`, `kube` and `pod_resources` may be null (no state updates / no API / no kubelet).
  WorkloadMonitor(WorkloadMonitorOptions options, AgentState* state, KubeClient* kube,
                  PodResourcesSource* pod_resources, Clock& clock, Logger& log);
  ~WorkloadMonitor() override;
  WorkloadMonitor(const WorkloadMonitor&) = delete;
  WorkloadMonitor& operator=(const WorkloadMonitor&) = delete;

  // Uses (and owns) this pod-resources source from now on; call before Start().
  void AdoptPodResources(std::unique_ptr<PodResourcesSource> source);
  // Sends the RAS queries (config.ras.enabled) through `querier` instead of entering namespaces
  // (tests); not owned; call before Start() and the first pass.
  void UseRasQuerier(RasQuerier& querier);

  // One pass against the node's snapshot (the hardware facts the containers share).
  WorkloadPass RunPass(const NodeSnapshot& host);

  // The coordinator's confirmed fault on this node, as the next passes annotate GPU pods with it
  // (OnState keeps it current; tests and `check --workloads` may set it directly).
  void SetNodeFault(std::optional<std::string> node_fault);

  void Start();
  void Stop();
  void OnState(const AgentStateView& view) override;

  uint64_t passes() const;

 private:
  PodDirectory Lookup(const std::vector<CgroupRef>& containers);
  void Publish(WorkloadPass& pass);
  void RunRas(WorkloadPass& pass);
  void WarnOnce(std::string& streak, const std::string& line);
  void Loop(const std::stop_token& stop);

  const WorkloadMonitorOptions options_;
  AgentState* state_;
  KubeClient* kube_;
  PodResourcesSource* pod_resources_;
  std::unique_ptr<PodResourcesSource> owned_pod_resources_;
  Clock& clock_;
  Logger& log_;
  CheckRegistry registry_;
  WorkloadScanner scanner_;
  NamespaceRasQuerier namespace_querier_;
  std::unique_ptr<RasWatch> ras_;  // config.ras.enabled only

  // Pass thread only.
  std::map<std::string, ApiPod> pod_cache_;    // by UID, from the last successful list
  std::optional<Clock::TimePoint> listed_at_;  // of that list
  std::set<std::string> missed_;               // containers that list could not name
  std::optional<NodeResources> node_cache_;
  Clock::TimePoint node_fetched_{};
  std::string list_streak_, node_streak_, kubelet_streak_, patch_streak_, node_rule_streak_;

  mutable std::mutex mu_;
  std::condition_variable_any wake_;
  std::shared_ptr<const NodeSnapshot> pending_;  // the newest snapshot not yet passed
  uint64_t seen_cycles_ = 0;
  std::optional<std::string> node_fault_;  // NodeFaultAnnotation of the coordinator's verdict
  uint64_t passes_ = 0;
  std::jthread worker_;
};

}  // namespace nccl_triage::workload
