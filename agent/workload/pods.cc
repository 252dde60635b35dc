#include "workload/pods.h"

#include <nlohmann/json.hpp>

namespace nccl_triage::workload {
namespace {

using json = nlohmann::json;

const json& Member(const json& j, const char* key) {
  static const json kNull;  // immutable sentinel for absent members
  if (!j.is_object()) return kNull;
  auto it = j.find(key);
  return it == j.end() ? kNull : *it;
}

std::string String(const json& j, const char* key) {
  const json& v = Member(j, key);
  return v.is_string() ? v.get<std::string>() : std::string();
}

std::map<std::string, std::string> StringMap(const json& j) {
  std::map<std::string, std::string> out;
  if (!j.is_object()) return out;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.value().is_string()) {
      out[it.key()] = it.value().get<std::string>();
    } else if (it.value().is_number()) {
      out[it.key()] = it.value().dump();
    }
  }
  return out;
}

// Kubernetes quantities of extended resources are integers ("1", "8"); "0" means none.
bool NonZeroQuantity(const std::string& q) {
  if (q.empty()) return false;
  for (char c : q) {
    if (c != '0' && c != '.') return true;
  }
  return false;
}

std::string ShortId(const std::string& id) { return id.substr(0, 12); }

}  // namespace

std::optional<ApiPod> ParsePod(const json& pod) {
  const json& meta = Member(pod, "metadata");
  ApiPod p;
  auto uid = NormalizePodUid(String(meta, "uid"));
  if (!uid) return std::nullopt;
  p.uid = *uid;
  p.namespace_name = String(meta, "namespace");
  p.name = String(meta, "name");
  if (p.name.empty()) return std::nullopt;
  p.annotations = StringMap(Member(meta, "annotations"));
  const json& spec = Member(pod, "spec");
  p.node_name = String(spec, "nodeName");
  p.host_network =
      Member(spec, "hostNetwork").is_boolean() && Member(spec, "hostNetwork").get<bool>();
  std::map<std::string, ApiContainer> by_name;
  for (const char* list : {"initContainers", "containers", "ephemeralContainers"}) {
    const json& items = Member(spec, list);
    if (!items.is_array()) continue;
    for (const auto& c : items) {
      ApiContainer ac;
      ac.name = String(c, "name");
      if (ac.name.empty()) continue;
      ac.limits = StringMap(Member(Member(c, "resources"), "limits"));
      by_name[ac.name] = std::move(ac);
    }
  }
  const json& status = Member(pod, "status");
  for (const char* list :
       {"initContainerStatuses", "containerStatuses", "ephemeralContainerStatuses"}) {
    const json& items = Member(status, list);
    if (!items.is_array()) continue;
    for (const auto& c : items) {
      std::string name = String(c, "name");
      auto id = ContainerIdFromStatus(String(c, "containerID"));
      if (name.empty() || !id) continue;
      auto& ac = by_name[name];
      ac.name = name;
      ac.container_id = *id;
    }
  }
  for (auto& [name, c] : by_name) p.containers.push_back(std::move(c));
  return p;
}

std::map<std::string, ApiPod> ParsePodList(const json& list) {
  std::map<std::string, ApiPod> out;
  const json& items = Member(list, "items");
  if (!items.is_array()) return out;
  for (const auto& item : items) {
    if (auto p = ParsePod(item)) out[p->uid] = std::move(*p);
  }
  return out;
}

NodeResources ParseNodeResources(const json& node) {
  NodeResources r;
  const json& allocatable = Member(Member(node, "status"), "allocatable");
  if (!allocatable.is_object()) {
    r.error = "node has no status.allocatable";
    return r;
  }
  r.known = true;
  for (const auto& [name, qty] : StringMap(allocatable)) {
    if (name.starts_with("rdma/") && NonZeroQuantity(qty)) r.rdma_resources.push_back(name);
  }
  return r;
}

bool OnNode(const ApiPod& pod, std::string_view node) {
  return !node.empty() && pod.node_name == node;
}

namespace {

std::string ContainerKey(const CgroupRef& ref) { return ref.pod_uid + "/" + ref.container_id; }

bool Resolves(const CgroupRef& ref, const std::map<std::string, ApiPod>& cache) {
  auto it = cache.find(ref.pod_uid);
  if (it == cache.end()) return false;
  for (const auto& c : it->second.containers) {
    if (c.container_id == ref.container_id) return true;
  }
  return false;
}

}  // namespace

std::set<std::string> UnresolvedContainers(const std::vector<CgroupRef>& containers,
                                           const std::map<std::string, ApiPod>& cache) {
  std::set<std::string> out;
  for (const auto& ref : containers) {
    if (!Resolves(ref, cache)) out.insert(ContainerKey(ref));
  }
  return out;
}

std::string PodListReason(const std::vector<CgroupRef>& containers,
                          const std::map<std::string, ApiPod>& cache, const PodListState& state,
                          const PodListPolicy& policy) {
  if (containers.empty()) return "";
  if (!state.listed) return "first list";
  if (state.since_list >= policy.resync) return "resync";
  for (const auto& ref : containers) {
    if (Resolves(ref, cache)) continue;
    if (state.missed.contains(ContainerKey(ref)) && state.since_list < policy.miss_retry) continue;
    return "container " + ShortId(ref.container_id) + " of pod " + ref.pod_uid +
           " is not in the last list";
  }
  return "";
}

PodContainer ResolveContainer(const CgroupRef& ref, const PodDirectory& directory) {
  PodContainer pc;
  pc.pod_uid = ref.pod_uid;
  pc.pod = "uid:" + ref.pod_uid;
  pc.container = "id:" + ShortId(ref.container_id);
  auto it = directory.pods.find(ref.pod_uid);
  if (it == directory.pods.end()) return pc;
  const ApiPod& pod = it->second;
  pc.pod_found = true;
  pc.namespace_name = pod.namespace_name;
  pc.pod = pod.name;
  for (const auto& c : pod.containers) {
    if (c.container_id != ref.container_id) continue;
    pc.container_found = true;
    pc.container = c.name;
    pc.limits = c.limits;
    break;
  }
  if (pc.container_found && directory.assignments) {
    std::vector<DeviceAssignment> devices;
    for (const auto& e : *directory.assignments) {
      if (e.namespace_name == pc.namespace_name && e.pod == pc.pod && e.container == pc.container) {
        devices.insert(devices.end(), e.devices.begin(), e.devices.end());
      }
    }
    pc.assigned = std::move(devices);
  }
  return pc;
}

}  // namespace nccl_triage::workload
