#include "workload/view.h"

#include <filesystem>
#include <nlohmann/json.hpp>
#include <ostream>

#include "checks/check_util.h"
#include "core/report.h"

namespace nccl_triage::workload {
namespace {

std::string PodLabel(const PodContainer& p) {
  return (p.namespace_name.empty() ? std::string() : p.namespace_name + "/") + p.pod;
}

const char* StatusWord(FaultClass verdict, const ContainerVerdict& v) {
  if (verdict == FaultClass::kArchitecture || verdict == FaultClass::kIbResource) return "FAIL";
  for (const auto& f : v.findings) {
    if (f.status == CheckStatus::kWarn) return "WARN";
  }
  return verdict == FaultClass::kHealthy ? "OK" : "?";
}

}  // namespace

std::string PodResourcesSocketUnder(const std::string& root) {
  const std::string socket = (std::filesystem::path(root) / kPodResourcesSocket).string();
  std::error_code ec;
  return std::filesystem::exists(socket, ec) ? socket : std::string();
}

std::vector<GpuAllocation> GpuAllocationsOf(const std::vector<PodResourcesEntry>& entries) {
  std::vector<GpuAllocation> out;
  for (const auto& e : entries) {
    const std::string owner = e.namespace_name + "/" + e.pod + "/" + e.container;
    for (const auto& d : e.devices) {
      if (!d.resource.starts_with("nvidia.com/")) continue;
      for (const auto& id : d.ids) out.push_back({owner, d.resource, id});
    }
  }
  return out;
}

void ReadGpuAllocations(PodResourcesSource& source, NodeSnapshot& snapshot) {
  auto listed = source.List();
  if (listed.ok()) {
    snapshot.gpu_allocations = GpuAllocationsOf(*listed);
    snapshot.gpu_allocations_error.clear();
  } else {
    snapshot.gpu_allocations.reset();
    snapshot.gpu_allocations_error = listed.status().message();
  }
}

std::unique_ptr<WorkloadMonitor> MakeWorkloadMonitor(
    WorkloadMonitorOptions options, AgentState* state, KubeClient* kube,
    std::unique_ptr<PodResourcesSource> pod_resources, Clock& clock, Logger& log) {
  auto monitor =
      std::make_unique<WorkloadMonitor>(std::move(options), state, kube, nullptr, clock, log);
  if (pod_resources) monitor->AdoptPodResources(std::move(pod_resources));
  return monitor;
}

nlohmann::json ToJson(const ContainerVerdict& v) {
  nlohmann::json findings = nlohmann::json::array();
  for (const auto& f : v.findings) findings.push_back(nccl_triage::ToJson(f));
  nlohmann::json nccl = nullptr;
  if (v.nccl) nccl = {{"path", v.nccl->path}, {"version", v.nccl->version}};
  nlohmann::json env = nlohmann::json::object();
  for (const auto& [k, val] : v.environ) env[k] = val;
  return {{"namespace", v.pod.namespace_name},
          {"pod", v.pod.pod},
          {"container", v.pod.container},
          {"pod_uid", v.pod.pod_uid},
          {"container_id", v.container_id},
          {"pids", v.pids},
          {"gpus", v.gpu_devices},
          {"verdict", ToString(v.verdict)},
          {"causes", v.causes},
          {"nccl", nccl},
          {"environ", env},
          {"findings", findings}};
}

nlohmann::json WorkloadsJson(const WorkloadPass& pass) {
  nlohmann::json containers = nlohmann::json::array();
  for (const auto& c : pass.containers) containers.push_back(ToJson(c));
  nlohmann::json skipped = nlohmann::json::array();
  for (const auto& s : pass.scan.skipped) skipped.push_back({{"pid", s.pid}, {"reason", s.reason}});
  return {{"containers", containers},
          {"skipped", skipped},
          {"processes_scanned", pass.scan.processes_scanned},
          {"error", pass.scan.error},
          {"pods_listed", pass.directory.fresh},
          {"pods_error", pass.directory.list_error}};
}

void RenderWorkloadsTable(const WorkloadPass& pass, std::ostream& os) {
  os << "\nWorkloads: " << pass.containers.size() << " GPU container(s) in " << pass.pods.size()
     << " pod(s), " << pass.scan.processes_scanned << " processes scanned\n";
  if (!pass.scan.error.empty()) os << "  could not look: " << pass.scan.error << "\n";
  for (const auto& c : pass.containers) {
    std::string word = StatusWord(c.verdict, c);
    word.resize(4, ' ');
    os << "  " << word << "  " << PodLabel(c.pod) << " " << c.pod.container << "  "
       << ToString(c.verdict);
    if (!c.causes.empty()) os << " (" << Join(c.causes) << ")";
    if (c.nccl) os << "  NCCL " << (c.nccl->version.empty() ? c.nccl->path : c.nccl->version);
    os << "  pid";
    if (c.pids.size() > 1) os << "s";
    for (size_t i = 0; i < c.pids.size(); ++i) os << (i ? "," : " ") << c.pids[i];
    os << "\n";
    for (const auto& f : c.findings) {
      if (f.status != CheckStatus::kFail && f.status != CheckStatus::kWarn) continue;
      os << "      " << ToString(f.status) << " " << f.check << ": " << f.message << "\n";
      if (f.status == CheckStatus::kFail && !f.remedy.empty()) {
        os << "        fix: " << f.remedy << "\n";
      }
    }
  }
  if (!pass.scan.skipped.empty()) {
    os << "  skipped " << pass.scan.skipped.size() << " GPU process(es):";
    for (size_t i = 0; i < pass.scan.skipped.size() && i < 5; ++i) {
      os << (i ? "; " : " ") << "pid " << pass.scan.skipped[i].pid << " "
         << pass.scan.skipped[i].reason;
    }
    os << "\n";
  }
}

int WorkloadExitCode(const WorkloadPass& pass) {
  for (const auto& c : pass.containers) {
    if (!c.causes.empty()) return 1;
  }
  return 0;
}

}  // namespace nccl_triage::workload
