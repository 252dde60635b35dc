#include "workload/lookup.h"

#include <nlohmann/json.hpp>

namespace nccl_triage::workload {
namespace {

nlohmann::json ResponseJson(const std::optional<KubeResponse>& r) {
  if (!r) return nullptr;
  return {{"status", r->status}, {"error", r->error}, {"body", r->body}};
}

StatusOr<std::optional<KubeResponse>> ResponseFrom(const nlohmann::json& j, const char* key) {
  if (!j.contains(key) || j[key].is_null()) return std::optional<KubeResponse>();
  const auto& r = j[key];
  if (!r.is_object() || !r.value("status", nlohmann::json()).is_number_integer() ||
      !r.value("error", nlohmann::json()).is_string() ||
      !r.value("body", nlohmann::json()).is_string()) {
    return InvalidArgument(std::string("workload lookup: \"") + key +
                           "\" is not {status, error, body}");
  }
  KubeResponse out;
  out.status = r["status"].get<int>();
  out.error = r["error"].get<std::string>();
  out.body = r["body"].get<std::string>();
  return std::optional<KubeResponse>(std::move(out));
}

nlohmann::json EntryJson(const PodResourcesEntry& e) {
  nlohmann::json devices = nlohmann::json::array();
  for (const auto& d : e.devices) devices.push_back({{"resource", d.resource}, {"ids", d.ids}});
  return {{"namespace", e.namespace_name},
          {"pod", e.pod},
          {"container", e.container},
          {"devices", std::move(devices)}};
}

bool IsStringArray(const nlohmann::json& j) {
  if (!j.is_array()) return false;
  for (const auto& v : j) {
    if (!v.is_string()) return false;
  }
  return true;
}

StatusOr<PodResourcesEntry> EntryFrom(const nlohmann::json& j) {
  const Status bad = InvalidArgument("workload lookup: a pod_resources entry is malformed");
  if (!j.is_object()) return bad;
  PodResourcesEntry e;
  for (auto [key, field] : {std::pair{"namespace", &e.namespace_name}, std::pair{"pod", &e.pod},
                            std::pair{"container", &e.container}}) {
    if (!j.contains(key) || !j[key].is_string()) return bad;
    *field = j[key].get<std::string>();
  }
  if (!j.contains("devices") || !j["devices"].is_array()) return bad;
  for (const auto& d : j["devices"]) {
    if (!d.is_object() || !d.contains("resource") || !d["resource"].is_string() ||
        !d.contains("ids") || !IsStringArray(d["ids"])) {
      return bad;
    }
    e.devices.push_back(
        {d["resource"].get<std::string>(), d["ids"].get<std::vector<std::string>>()});
  }
  return e;
}

}  // namespace

nlohmann::json ToJson(const WorkloadLookup& lookup) {
  nlohmann::json pr = nullptr;
  if (lookup.pod_resources) {
    if (lookup.pod_resources->ok()) {
      nlohmann::json entries = nlohmann::json::array();
      for (const auto& e : lookup.pod_resources->value()) entries.push_back(EntryJson(e));
      pr = {{"entries", std::move(entries)}};
    } else {
      pr = {{"error", lookup.pod_resources->status().message()}};
    }
  }
  return {{"schema", kWorkloadLookupSchema},
          {"pods", ResponseJson(lookup.pods)},
          {"node", ResponseJson(lookup.node)},
          {"pod_resources", std::move(pr)}};
}

StatusOr<WorkloadLookup> WorkloadLookupFromJson(const nlohmann::json& j) {
  if (!j.is_object()) return InvalidArgument("workload lookup: not a JSON object");
  const auto schema = j.value("schema", nlohmann::json());
  if (!schema.is_string() || schema.get<std::string>() != kWorkloadLookupSchema) {
    return InvalidArgument(std::string("workload lookup: schema is not ") + kWorkloadLookupSchema +
                           " (nccl-triage-server of another version?)");
  }
  WorkloadLookup out;
  auto pods = ResponseFrom(j, "pods");
  if (!pods.ok()) return pods.status();
  out.pods = std::move(pods).value();
  auto node = ResponseFrom(j, "node");
  if (!node.ok()) return node.status();
  out.node = std::move(node).value();
  if (j.contains("pod_resources") && !j["pod_resources"].is_null()) {
    const auto& pr = j["pod_resources"];
    if (pr.is_object() && pr.contains("error") && pr["error"].is_string()) {
      out.pod_resources = Unavailable(pr["error"].get<std::string>());
    } else if (pr.is_object() && pr.contains("entries") && pr["entries"].is_array()) {
      std::vector<PodResourcesEntry> entries;
      for (const auto& e : pr["entries"]) {
        auto entry = EntryFrom(e);
        if (!entry.ok()) return entry.status();
        entries.push_back(std::move(entry).value());
      }
      out.pod_resources = std::move(entries);
    } else {
      return InvalidArgument("workload lookup: \"pod_resources\" is neither {entries} nor {error}");
    }
  }
  return out;
}

}  // namespace nccl_triage::workload
