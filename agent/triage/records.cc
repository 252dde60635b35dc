#include "triage/records.h"

namespace nccl_triage::triage {

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(OwnerRef, api_version, kind, name, uid)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(ContainerState, name, restart_count, state, reason,
                                                exit_code, last_reason, last_exit_code)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(JobPod, name, ns, uid, node, hostname, phase,
                                                pod_ip, pod_ips, host_ip, host_network, index,
                                                owner, start_time, containers)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(AgentVerdict, node, pod, verdict, basis, causes,
                                                updated, kernel_last_event)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(LogStreamBegin, id, pod, container, previous)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(LogStreamEnd, id, status, error, head_bytes,
                                                tail_bytes, tail, tail_cut)

namespace {

using nlohmann::json;

// A string at `path` ("status.podIP"), or empty when any step is missing or not a string.
std::string At(const json& j, std::initializer_list<const char*> path) {
  const json* cur = &j;
  for (const char* key : path) {
    if (!cur->is_object()) return {};
    auto it = cur->find(key);
    if (it == cur->end()) return {};
    cur = &*it;
  }
  return cur->is_string() ? cur->get<std::string>() : std::string();
}

const json& Child(const json& j, const char* key) {
  static const json kNull;
  if (!j.is_object()) return kNull;
  auto it = j.find(key);
  return it == j.end() ? kNull : *it;
}

int Int(const json& j, const char* key, int fallback) {
  const json& v = Child(j, key);
  return v.is_number_integer() ? v.get<int>() : fallback;
}

// state / lastState of a containerStatus: which of running, terminated, waiting.
void State(const json& s, std::string& state, std::string& reason, int& exit_code) {
  for (const char* k : {"terminated", "waiting", "running"}) {
    const json& v = Child(s, k);
    if (!v.is_object()) continue;
    state = k;
    reason = At(v, {"reason"});
    if (std::string_view(k) == "terminated") exit_code = Int(v, "exitCode", -1);
    return;
  }
}

template <typename T>
StatusOr<T> FromJson(const json& j, const char* what) {
  if (!j.is_object()) return InvalidArgument(std::string(what) + " is not a JSON object");
  try {
    return j.get<T>();
  } catch (const json::exception& e) {
    return InvalidArgument(std::string(what) + ": " + e.what());
  }
}

}  // namespace

JobPod PodFromApi(const json& pod) {
  JobPod p;
  p.name = At(pod, {"metadata", "name"});
  p.ns = At(pod, {"metadata", "namespace"});
  p.uid = At(pod, {"metadata", "uid"});
  p.node = At(pod, {"spec", "nodeName"});
  p.hostname = At(pod, {"spec", "hostname"});
  p.phase = At(pod, {"status", "phase"});
  p.pod_ip = At(pod, {"status", "podIP"});
  p.host_ip = At(pod, {"status", "hostIP"});
  p.start_time = At(pod, {"status", "startTime"});
  p.host_network = Child(Child(pod, "spec"), "hostNetwork") == true;
  for (const json& ip : Child(Child(pod, "status"), "podIPs")) {
    std::string v = At(ip, {"ip"});
    if (!v.empty()) p.pod_ips.push_back(std::move(v));
  }
  if (p.pod_ips.empty() && !p.pod_ip.empty()) p.pod_ips.push_back(p.pod_ip);
  const json& meta = Child(pod, "metadata");
  for (const char* key : {"batch.kubernetes.io/job-completion-index",
                          "training.kubeflow.org/replica-index", "jobset.sigs.k8s.io/job-index"}) {
    for (const char* where : {"labels", "annotations"}) {
      if (p.index.empty()) p.index = At(meta, {where, key});
    }
  }
  for (const json& ref : Child(meta, "ownerReferences")) {
    if (Child(ref, "controller") != true) continue;
    p.owner = {At(ref, {"apiVersion"}), At(ref, {"kind"}), At(ref, {"name"}), At(ref, {"uid"})};
  }
  // Containers in the spec's order; their status where the API has one.
  for (const json& c : Child(Child(pod, "spec"), "containers")) {
    ContainerState cs;
    cs.name = At(c, {"name"});
    cs.state = "unknown";
    for (const json& s : Child(Child(pod, "status"), "containerStatuses")) {
      if (At(s, {"name"}) != cs.name) continue;
      cs.restart_count = Int(s, "restartCount", 0);
      State(Child(s, "state"), cs.state, cs.reason, cs.exit_code);
      std::string last_state;
      State(Child(s, "lastState"), last_state, cs.last_reason, cs.last_exit_code);
    }
    if (!cs.name.empty()) p.containers.push_back(std::move(cs));
  }
  return p;
}

std::optional<AgentVerdict> AgentVerdictFromApi(const json& pod) {
  // The keys the agent's annotation publisher writes (README, "Pod annotations").
  const json& a = Child(Child(pod, "metadata"), "annotations");
  AgentVerdict v;
  v.verdict = At(a, {"nccl-triage.io/verdict"});
  if (v.verdict.empty()) return std::nullopt;
  v.node = At(pod, {"spec", "nodeName"});
  v.pod = At(pod, {"metadata", "name"});
  v.basis = At(a, {"nccl-triage.io/basis"});
  v.updated = At(a, {"nccl-triage.io/updated"});
  const std::string causes = At(a, {"nccl-triage.io/causes"});
  size_t start = 0;
  while (start < causes.size()) {
    size_t comma = causes.find(',', start);
    if (comma == std::string::npos) comma = causes.size();
    if (comma > start) v.causes.push_back(causes.substr(start, comma - start));
    start = comma + 1;
  }
  // The report annotation is the agent's JSON; one that does not parse gives no times.
  const json report = json::parse(At(a, {"nccl-triage.io/report"}), nullptr, false);
  for (const auto& [cause, at] : Child(report, "kernel_last_event").items()) {
    if (at.is_string()) v.kernel_last_event[cause] = at.get<std::string>();
  }
  return v;
}

json ToJson(const JobPod& pod) { return pod; }
json ToJson(const AgentVerdict& agent) { return agent; }
json ToJson(const LogStreamBegin& begin) { return begin; }
json ToJson(const LogStreamEnd& end) { return end; }

StatusOr<JobPod> JobPodFromJson(const json& j) { return FromJson<JobPod>(j, "pod record"); }
StatusOr<AgentVerdict> AgentVerdictFromJson(const json& j) {
  return FromJson<AgentVerdict>(j, "agent record");
}
StatusOr<LogStreamBegin> LogStreamBeginFromJson(const json& j) {
  return FromJson<LogStreamBegin>(j, "log_begin record");
}
StatusOr<LogStreamEnd> LogStreamEndFromJson(const json& j) {
  return FromJson<LogStreamEnd>(j, "log_end record");
}

}  // namespace nccl_triage::triage
