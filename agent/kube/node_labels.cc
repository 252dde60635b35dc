#include "kube/node_labels.h"

#include <nlohmann/json.hpp>

namespace nccl_triage {

std::map<std::string, std::string> NodeLabelsFromJson(const std::string& body) {
  std::map<std::string, std::string> out;
  auto j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return out;
  auto meta = j.find("metadata");
  if (meta == j.end() || !meta->is_object()) return out;
  auto labels = meta->find("labels");
  if (labels == meta->end() || !labels->is_object()) return out;
  for (const auto& [k, v] : labels->items()) {
    if (v.is_string()) out[k] = v.get<std::string>();
  }
  return out;
}

NodeLabelsRead ReadNodeLabels(KubeClient& kube, const std::string& node,
                              const std::function<void(std::chrono::seconds)>& sleep,
                              int attempts) {
  KubeResponse r = kube.GetNode(node);
  for (int attempt = 1; attempt < attempts && r.Retryable(); ++attempt) {
    sleep(std::chrono::seconds(2 * attempt));
    r = kube.GetNode(node);
  }
  NodeLabelsRead read;
  if (r.ok()) {
    read.labels = NodeLabelsFromJson(r.body);
  } else {
    read.error = "GET node " + node + ": " + r.Describe();
  }
  return read;
}

}  // namespace nccl_triage
