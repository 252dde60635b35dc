// The labels of this agent's Node, read once at start-up for everything that needs them: the
// node's pool (config.pools) and the topology label the agent reports to the coordinator
// (coordinator.topology_label). One GET of the Node serves both.
//
// Pure apart from the KubeClient it is given. Thread-compatible.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <string>

#include "kube/kube_api.h"

namespace nccl_triage {

// The labels of a Kubernetes Node object (the JSON body of GET /api/v1/nodes/<name>); empty when
// the body is not a Node.
std::map<std::string, std::string> NodeLabelsFromJson(const std::string& body);

struct NodeLabelsRead {
  std::map<std::string, std::string> labels;
  std::string error;  // why the node could not be read ("GET node n1: 403 ..."); empty when read
  bool ok() const { return error.empty(); }
};

// GETs `node`, up to `attempts` times while the answer says a retry can help (the API server
// restarting as the DaemonSet rolls out), calling `sleep` with 2 s, 4 s, ... in between.
NodeLabelsRead ReadNodeLabels(KubeClient& kube, const std::string& node,
                              const std::function<void(std::chrono::seconds)>& sleep,
                              int attempts = 3);

}  // namespace nccl_triage
