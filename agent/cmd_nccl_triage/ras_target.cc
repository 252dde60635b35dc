#include "cmd_nccl_triage/ras_target.h"

#include <unistd.h>

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "base/files.h"
#include "probe/subprocess.h"
#include "ras/netns.h"
#include "workload/environ.h"
#include "workload/lookup.h"
#include "workload/scanner.h"

namespace nccl_triage {
namespace {

constexpr const char* kSelfNetns = "/proc/self/ns/net";

// Fills in the namespace comparison and the process's NCCL_RAS_ADDR.
Status Complete(RasTarget& t) {
  t.netns_path = "/proc/" + std::to_string(t.pid) + "/ns/net";
  auto same = ras::SameNamespace(t.netns_path, kSelfNetns);
  if (!same.ok()) {
    std::string m = "pid " + std::to_string(t.pid) + ": " + same.status().message();
    if (m.find("Permission denied") != std::string::npos) {
      m += " (another user's process: run as root, or in the agent's pod)";
    }
    return NotFound(m);
  }
  t.enter_netns = t.enter_netns || !*same;
  auto environ =
      ReadWholeFile("/proc/" + std::to_string(t.pid) + "/environ", "environment", 1 << 20);
  if (environ.ok()) {
    const auto kept = workload::FilterEnviron(*environ).kept;
    if (const auto it = kept.find("NCCL_RAS_ADDR"); it != kept.end()) t.ras_addr = it->second;
  }
  return Status::Ok();
}

}  // namespace

StatusOr<RasTarget> PickPodProcess(const workload::ScanResult& scan, const workload::ApiPod& pod) {
  const std::string who = "pod " + pod.namespace_name + "/" + pod.name;
  if (!scan.error.empty()) return Unavailable(who + ": the process scan failed: " + scan.error);
  for (const auto& c : scan.containers) {
    if (c.ref.pod_uid != pod.uid || c.processes.empty()) continue;
    RasTarget t;
    t.pid = c.processes.front().pid;
    std::string container = c.ref.container_id.substr(0, 12);
    for (const auto& ac : pod.containers) {
      if (ac.container_id == c.ref.container_id) container = ac.name;
    }
    t.what = who + " container " + container + " pid " + std::to_string(t.pid);
    // hostNetwork: NCCL listens in the node's namespace; so does this process (the agent's pod
    // is hostNetwork too). Otherwise Complete() compares the namespaces.
    t.enter_netns = false;
    return t;
  }
  return NotFound(who + " (uid " + pod.uid +
                  "): no process of it holds a GPU on this node (not running here, or not "
                  "started NCCL yet)");
}

StatusOr<workload::ApiPod> LookupPod(const std::string& server_exe, const std::string& node,
                                     const std::string& ns, const std::string& name) {
  if (::access(server_exe.c_str(), X_OK) != 0) {
    return NotFound(server_exe + " not found: --pod needs nccl-triage-server beside nccl-triage "
                    "(or use --pid)");
  }
  SubprocessOptions o;
  o.argv = {server_exe, "workload-lookup", "--node", node, "--api"};
  for (const char* var : {"KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"}) {
    if (const char* v = std::getenv(var)) o.env.push_back(std::string(var) + "=" + v);
  }
  o.timeout = std::chrono::seconds(30);
  o.max_output_bytes = 64 << 20;
  const SubprocessResult r = RunSubprocess(std::move(o));
  if (r.kind != ExitKind::kExited || r.exit_code != 0) {
    return Unavailable("nccl-triage-server workload-lookup failed (" +
                       std::string(ToString(r.kind)) + "): " + r.err.substr(0, r.err.find('\n')));
  }
  auto lookup = workload::WorkloadLookupFromJson(
      nlohmann::json::parse(r.out, nullptr, /*allow_exceptions=*/false));
  if (!lookup.ok()) return lookup.status();
  if (!lookup->pods || !lookup->pods->ok()) {
    return Unavailable("cannot list the pods of node " + node + ": " +
                       (lookup->pods ? lookup->pods->error + " (HTTP " +
                                           std::to_string(lookup->pods->status) + ")"
                                     : std::string("not asked")));
  }
  const auto pods = workload::ParsePodList(
      nlohmann::json::parse(lookup->pods->body, nullptr, /*allow_exceptions=*/false));
  for (const auto& [uid, pod] : pods) {
    if (pod.namespace_name == ns && pod.name == name) return pod;
  }
  return NotFound("pod " + ns + "/" + name + " is not on node " + node);
}

StatusOr<RasTarget> ResolvePodTarget(const std::string& server_exe, const std::string& node,
                                     const std::string& pod_ref) {
  const auto slash = pod_ref.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == pod_ref.size()) {
    return InvalidArgument("--pod: expects NAMESPACE/NAME (not '" + pod_ref + "')");
  }
  auto pod = LookupPod(server_exe, node, pod_ref.substr(0, slash), pod_ref.substr(slash + 1));
  if (!pod.ok()) return pod.status();
  workload::ScannerOptions so;
  so.self_pid = static_cast<int>(::getpid());
  const workload::ScanResult scan = workload::WorkloadScanner(so).Scan();
  auto t = PickPodProcess(scan, *pod);
  if (!t.ok()) return t.status();
  if (Status s = Complete(*t); !s.ok()) return s;
  if (pod->host_network) t->enter_netns = false;
  return t;
}

StatusOr<RasTarget> ResolvePidTarget(int pid) {
  RasTarget t;
  t.pid = pid;
  t.what = "pid " + std::to_string(pid);
  if (Status s = Complete(t); !s.ok()) return s;
  return t;
}

}  // namespace nccl_triage
