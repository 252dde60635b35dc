// The workload view as the command line and the agent use it: building a WorkloadMonitor for a
// root with the API and kubelet sources its caller chose, and presenting a pass as JSON and as a
// table.
//
// JSON (`check --workloads --format json`, key "workloads" of the report): one object per GPU
// container: namespace, pod, container, pod_uid, container_id, pids, gpus, verdict, causes, nccl
// {path, version}, environ (allow-listed NCCL_* and placement variables only) and findings in the
// node report's finding shape. Pure except MakeWorkloadMonitor.
#pragma once

#include <iosfwd>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>

#include "workload/monitor.h"

namespace nccl_triage::workload {

// A monitor on options.scanner.root that owns `pod_resources` (the kubelet's device
// assignments; null when the root has no pod-resources socket). `state` and `kube` may be null.
std::unique_ptr<WorkloadMonitor> MakeWorkloadMonitor(
    WorkloadMonitorOptions options, AgentState* state, KubeClient* kube,
    std::unique_ptr<PodResourcesSource> pod_resources, Clock& clock, Logger& log);

nlohmann::json ToJson(const ContainerVerdict& v);
nlohmann::json WorkloadsJson(const WorkloadPass& pass);

// "Workloads" section for the terminal: one line per container (verdict, pod, container, NCCL),
// then each failing or warning check with its message and remedy.
void RenderWorkloadsTable(const WorkloadPass& pass, std::ostream& os);

// 1 when any container has a failing check, 0 otherwise (the `check` exit-code contract).
int WorkloadExitCode(const WorkloadPass& pass);

}  // namespace nccl_triage::workload
