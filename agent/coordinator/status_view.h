// CoordinatorView: the coordinator's state at one moment, as /status, the demo and the tests read
// it; how it is built from the coordinator's parts, its JSON, and the coordinator's HTTP surface
// (/livez, /readyz, /metrics, /status, POST /sweep with the coordinator's bearer token).
//
// The view is a copy: building it takes the coordinator's lock once, serving it does not. Pairs
// the cross-node checks predict broken are found through groups of nodes with the same
// cross-node signature, so a large, mostly uniform cluster costs a few group comparisons, not n².
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "coordinator/node_validator.h"
#include "coordinator/remediator.h"
#include "planner/cluster_verdicts.h"
#include "planner/hold_down.h"
#include "planner/node_info.h"
#include "planner/schedule.h"

namespace nccl_triage {

class HttpAuthorizer;
class HttpServer;

inline constexpr size_t kMaxPredictedPairs = 256;

struct CoordinatorView {
  struct Agent {
    NodeInfo info;
    bool connected = false;
    std::string peer;  // the agent's address as gRPC saw it
  };
  using Pair = PairRecord;
  using Node = PublishedNodeVerdict;

  std::vector<Agent> agents;          // every node ever seen, by name
  std::map<std::string, Node> nodes;  // the published node verdicts
  std::vector<Pair> pairs;            // the last probe result of each pair, by pair
  // Pairs not probed yet that the cross-node checks predict broken (basis checks), at most
  // kMaxPredictedPairs.
  std::vector<std::pair<NodePair, PairVerdict>> predicted;
  std::vector<TrackedFault> faults;  // suspected and confirmed
  uint64_t sweeps_done = 0;
  int last_sweep_rounds = 0;
  uint64_t pairs_concluded = 0;  // pairs whose last probe was conclusive (passed or localised)
  uint64_t pairs_tested = 0;
  uint64_t pairs_total = 0;
  uint64_t coverage_cycles = 0;
  int hold_down = 2;
  // The last sweep's remediation (remediation.mode not off): in dry-run, the plan.
  std::optional<RemediationStatus> remediation;
  // The last sweep's validation of new and rebooted nodes (validation.new_nodes on).
  std::optional<ValidationStatus> validation;
  // Leader election (coordinator.leader_election): whether this replica leads, who holds the
  // Lease, and the leader label of its pod. Every replica is ready; this says which one the
  // Service should send the agents to.
  struct Leadership {
    bool leader = false;
    std::string holder;  // the Lease's holder last read; "" none (yet)
    std::string lease;   // "namespace/name"
    int64_t transitions = 0;
    std::string last_error;
    std::string pod_label;      // "key=value"; "" when the replica keeps no label
    bool pod_labelled = false;  // this replica's pod carries it (last written or read)
  };
  std::optional<Leadership> leadership;
};

// What a view is built from: the coordinator's parts, read under its lock.
struct CoordinatorViewSource {
  const std::map<std::string, NodeInfo>& known;     // every node ever seen
  const std::map<std::string, std::string>& peers;  // each node's last address
  std::function<bool(const std::string&)> connected;
  const ClusterVerdicts& verdicts;
  const CoverageSchedule& schedule;
  uint64_t sweeps_done = 0;
  int last_sweep_rounds = 0;
  const RemediationStatus* remediation = nullptr;  // null: remediation off
  const ValidationStatus* validation = nullptr;    // null: validation.new_nodes off
};

// `with_pairs` false leaves out the pair records (a large cluster has many): the counters, nodes
// and faults only. A node without a published verdict shows its checks' verdict.
CoordinatorView BuildCoordinatorView(const CoordinatorViewSource& source, bool with_pairs);

// The /status document. Healthy pairs are counted, not listed.
nlohmann::json ToJson(const CoordinatorView& view);

// The coordinator's HTTP endpoints, each answered through one of these.
struct CoordinatorEndpoints {
  std::function<bool()> ready;              // /readyz
  std::function<std::string()> not_ready_reason;  // said by /readyz's 503; unset: none
  std::function<std::string()> metrics;     // /metrics (Prometheus text)
  std::function<CoordinatorView()> view;    // /status
  std::function<uint64_t()> request_sweep;  // POST /sweep: the sweep that will answer
  // Whether the bearer token of a POST /sweep is the coordinator's token (compared in constant
  // time by the caller). Unset, or a coordinator without a token: /sweep is refused (403).
  std::function<bool(std::string_view token)> sweep_token_matches;
  // server.auth: kubernetes: /metrics and /status answer only a bearer token the API server
  // allows (exporter/http_auth.h); null: anyone. /sweep keeps its own token; health stays open.
  std::shared_ptr<HttpAuthorizer> authorizer;
};
void AddCoordinatorEndpoints(HttpServer& http, CoordinatorEndpoints endpoints);

}  // namespace nccl_triage
