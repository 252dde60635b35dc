#include "workload/judge.h"

#include <algorithm>

#include "checks/check_util.h"
#include "core/catalogue.h"
#include "core/ids.h"
#include "core/probe_result.h"
#include "core/report.h"
#include "workload/nccl_env.h"

namespace nccl_triage::workload {
namespace {

std::string Proc(int pid) { return "proc/" + std::to_string(pid); }

bool StartsWithRdma(std::string_view name) { return name.starts_with("rdma/"); }

// The per-process Config carries the workload's NCCL_SOCKET_IFNAME and NCCL_IB_GID_INDEX in the
// expect.* fields; findings say where the values really came from.
void RelabelEnvironmentConfig(Finding& f, const std::string& env_source) {
  bool unset = false;
  for (auto& e : f.evidence) {
    if (e.source == "config: expect.socket_ifname" || e.source == "config: expect.ib_gid_index") {
      e.source = env_source;
    } else if (e.key == "expect.socket_ifname" && e.value == "unset") {
      e = Evidence{"NCCL_SOCKET_IFNAME", "(unset)", env_source};
      unset = true;
    }
  }
  if (unset && f.status == CheckStatus::kSkip) {
    f.message = "NCCL_SOCKET_IFNAME is not set: NCCL chooses the interface itself";
  }
}

// versions.nccl when the process's maps do not give a version: say why in workload terms.
Finding NcclNotKnown(const ProcessFacts& p) {
  checks::FindingBuilder b(ids::kVersionsNccl);
  if (!p.nccl.ok()) {
    b.Add("maps", "unreadable (" + p.nccl.error + ")", p.nccl.source);
    return b.Skip("the process's memory map could not be read");
  }
  if (!p.nccl.value->has_value()) {
    b.Add("libnccl.so", "not mapped", p.nccl.source);
    return b.Skip("NCCL is not mapped in the process (not initialised yet, or linked statically)");
  }
  b.Add("libnccl.so", (*p.nccl.value)->path, p.nccl.source);
  return b.Skip("the library's file name does not carry its version");
}

}  // namespace

std::vector<std::string_view> WorkloadCheckIds() {
  std::vector<std::string_view> ids(kWorkloadHostChecks.begin(), kWorkloadHostChecks.end());
  for (CauseId id : CatalogueIds<CauseKind::kWorkloadCheck>()) ids.push_back(id);
  return ids;
}

NodeSnapshot ProcessCheckSnapshot(const ProcessFacts& p, const Fact<std::string>& host_netns,
                                  const NodeSnapshot& host) {
  NodeSnapshot s;
  // The hardware and the kernel are the host's: a container shares them.
  s.node = host.node;
  s.root = host.root;
  s.taken_at_unix_ms = host.taken_at_unix_ms;
  s.self_pid = p.pid;
  s.kernel_release = host.kernel_release;
  s.arch = host.arch;
  s.hypervisor = host.hypervisor;
  s.mem_total_bytes = host.mem_total_bytes;
  s.pci_devices = host.pci_devices;
  s.pci_error = host.pci_error;
  s.infiniband_class_present = host.infiniband_class_present;
  s.ib_devices = host.ib_devices;
  s.uverbs_class_present = host.uverbs_class_present;
  s.uverbs = host.uverbs;
  s.modules = host.modules;
  s.selinux_enforce = host.selinux_enforce;
  s.nvidia_driver_version = host.nvidia_driver_version;
  s.gpus = host.gpus;
  s.live.gathered = false;  // live facts are the agent's own process, not this one's

  // What the process itself has.
  s.memlock = p.memlock;
  s.nofile = p.nofile;
  s.cap_eff = p.cap_eff;
  s.seccomp_mode = p.seccomp_mode;
  s.self_netns = p.netns;
  s.init_netns = host_netns;
  s.dev_infiniband_present = p.dev_infiniband_present;
  s.dev_infiniband = p.dev_infiniband;
  if (p.mounts.ok()) s.mounts = *p.mounts.value;
  const bool host_ns = p.netns.ok() && host_netns.ok() && *p.netns.value == *host_netns.value;
  if (host_ns) {
    // The host's namespace: the node snapshot knows its interfaces better (state, type, and the
    // addresses when it was gathered live).
    s.interfaces = host.interfaces;
    s.live.gathered = host.live.gathered;
  } else if (p.interfaces.ok()) {
    s.interfaces = *p.interfaces.value;
  }
  return s;
}

Config ProcessCheckConfig(const ProcessFacts& p, const Config& base) {
  Config c = base;
  c.expect.socket_ifname.reset();
  c.expect.ib_gid_index.reset();
  if (!p.environ.ok()) return c;
  NcclSettings settings = NcclSettingsFrom(p.environ.value->kept);
  if (settings.socket_ifname && !settings.socket_ifname->empty()) {
    c.expect.socket_ifname = *settings.socket_ifname;
  }
  if (settings.ib_gid_index) {
    // -1 is NCCL's "choose automatically" (2.21+): nothing to validate.
    auto v = ParseNcclInt(*settings.ib_gid_index);
    if (v && *v >= 0 && *v < 1 << 16) c.expect.ib_gid_index = static_cast<int>(*v);
  }
  return c;
}

std::vector<Finding> JudgeProcess(const ProcessFacts& p, const Fact<std::string>& host_netns,
                                  const NodeSnapshot& host, const Config& config,
                                  const CheckRegistry& registry) {
  NodeSnapshot snap = ProcessCheckSnapshot(p, host_netns, host);
  Config cfg = ProcessCheckConfig(p, config);
  const CheckRegistry subset = registry.Only(kWorkloadHostChecks);
  std::vector<Finding> findings;
  // The NCCL the process mapped stands in for a probe's report of the version it loaded.
  ProbeResult mapped;
  CheckContext context;
  const bool nccl_known =
      p.nccl.ok() && p.nccl.value->has_value() && !(*p.nccl.value)->version.empty();
  if (nccl_known) {
    mapped.nccl_version = (*p.nccl.value)->version;
    mapped.nccl_library = (*p.nccl.value)->path;
    mapped.detail = "mapped in the process";
    context.probe = &mapped;
  }
  std::vector<Finding> ran = subset.Run(snap, cfg, context);
  const std::string env_source = Proc(p.pid) + "/environ";
  for (auto& f : ran) {
    RelabelEnvironmentConfig(f, env_source);
    const auto& disabled = cfg.checks.disabled;
    if (f.check == ids::kVersionsNccl && !nccl_known &&
        std::find(disabled.begin(), disabled.end(), f.check) == disabled.end()) {
      f = NcclNotKnown(p);
    }
  }
  for (CauseId id : kWorkloadHostChecks) {
    auto it = std::find_if(ran.begin(), ran.end(), [&](const Finding& f) { return f.check == id; });
    if (it != ran.end()) {
      findings.push_back(std::move(*it));
    } else {
      findings.push_back(checks::FindingBuilder(id).Skip("check not available in this build"));
    }
  }
  if (p.environ.ok()) {
    NcclSettings settings = NcclSettingsFrom(p.environ.value->kept);
    findings.push_back(EnvIbDisable(settings, host, env_source));
    findings.push_back(EnvIbHca(settings, host, p.dev_infiniband, env_source));
  } else {
    for (CauseId id : {ids::kEnvIbDisable, ids::kEnvIbHca}) {
      findings.push_back(checks::FindingBuilder(id)
                             .Add("environ", "unreadable (" + p.environ.error + ")", env_source)
                             .Skip("the process's environment could not be read"));
    }
  }
  return findings;
}

std::optional<Finding> RdmaResourceFinding(const PodContainer& pod, const NodeResources& node,
                                           bool devices_present) {
  if (!node.known || node.rdma_resources.empty()) return std::nullopt;
  std::vector<std::string> requested;
  for (const auto& [name, qty] : pod.limits) {
    if (StartsWithRdma(name)) requested.push_back(name + "=" + qty);
  }
  if (pod.assigned) {
    for (const auto& a : *pod.assigned) {
      if (StartsWithRdma(a.resource) && !a.ids.empty()) {
        requested.push_back(a.resource + " (assigned " + Join(a.ids) + ")");
      }
    }
  }
  if (!requested.empty()) return std::nullopt;
  checks::FindingBuilder b(ids::kContainerRdmaDevices);
  b.Add("node advertises", Join(node.rdma_resources), "api: node status.allocatable");
  b.Add("container requests", "no rdma/* resource",
        pod.assigned ? "api: pod spec resources.limits, kubelet pod-resources List"
                     : "api: pod spec resources.limits");
  const std::string what = "the pod requests none of the node's RDMA resources (" +
                           Join(node.rdma_resources) + ")";
  if (devices_present) {
    return b.Warn(what +
                  "; it has uverbs devices by other means (privileged or a hostPath "
                  "mount), outside the device plugin's accounting");
  }
  return b.Fail(what + ", so the device plugin gave it no /dev/infiniband device");
}

ContainerVerdict JudgeContainer(const ContainerFacts& container, const PodContainer& pod,
                                const Fact<std::string>& host_netns, const NodeSnapshot& host,
                                const Config& config, const NodeResources& node,
                                const CheckRegistry& registry) {
  ContainerVerdict v;
  v.pod = pod;
  v.container_id = container.ref.container_id;
  std::vector<Finding> worst;
  std::vector<int> worst_pid;
  std::vector<int> worst_count;  // processes sharing the worst status
  bool any_devices = false;
  for (const auto& p : container.processes) {
    v.pids.push_back(p.pid);
    for (const auto& d : p.gpu_devices) {
      if (std::find(v.gpu_devices.begin(), v.gpu_devices.end(), d) == v.gpu_devices.end()) {
        v.gpu_devices.push_back(d);
      }
    }
    for (const auto& e : p.dev_infiniband) any_devices = any_devices || e.starts_with("uverbs");
    std::vector<Finding> findings = JudgeProcess(p, host_netns, host, config, registry);
    if (worst.empty()) {
      worst = std::move(findings);
      worst_pid.assign(worst.size(), p.pid);
      worst_count.assign(worst.size(), 1);
      continue;
    }
    for (size_t i = 0; i < findings.size() && i < worst.size(); ++i) {
      int a = Severity(findings[i].status), b = Severity(worst[i].status);
      if (a > b) {
        worst[i] = std::move(findings[i]);
        worst_pid[i] = p.pid;
        worst_count[i] = 1;
      } else if (a == b) {
        ++worst_count[i];
      }
    }
  }
  const size_t n = container.processes.size();
  for (size_t i = 0; i < worst.size(); ++i) {
    std::string who = "pid " + std::to_string(worst_pid[i]);
    if (n > 1)
      who +=
          " (" + std::to_string(worst_count[i]) + " of " + std::to_string(n) + " processes alike)";
    worst[i].evidence.insert(worst[i].evidence.begin(),
                             Evidence{"process", who, Proc(worst_pid[i])});
  }
  if (auto extra = RdmaResourceFinding(pod, node, any_devices)) {
    for (auto& f : worst) {
      if (f.check != ids::kContainerRdmaDevices) continue;
      // One finding per check id: the device plugin's view joins the devices' view, and the
      // worse status of the two stands.
      if (Severity(extra->status) > Severity(f.status)) {
        f.status = extra->status;
        f.message = extra->message;
      } else if (f.status == CheckStatus::kFail) {
        f.message += "; " + extra->message;
      }
      f.evidence.insert(f.evidence.end(), extra->evidence.begin(), extra->evidence.end());
    }
  }
  if (!container.processes.empty()) {
    const ProcessFacts& first = container.processes.front();
    if (first.environ.ok()) v.environ = first.environ.value->kept;
    if (first.nccl.ok()) v.nccl = *first.nccl.value;
  }
  NodeReport r = MakeReport("", worst, 0);
  v.verdict = r.fault_class;
  v.causes = std::move(r.causes);
  v.findings = std::move(r.findings);
  return v;
}

}  // namespace nccl_triage::workload
