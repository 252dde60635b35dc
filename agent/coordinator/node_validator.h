// NodeValidator: keeps NCCL jobs off a node that joined the cluster or rebooted until the
// coordinator's A/B probes have shown it works (validation.new_nodes, docs/remediation.md,
// "Validating new and rebooted nodes").
//
// Once per sweep it reads every node (from the coordinator's NodeCache, kept by a watch, or else
// pages of GET /api/v1/nodes: name, taints and status.nodeInfo.bootID) and compares each bootID
// with the one it remembers:
//   unknown node     a node that joined: NoSchedule taint nccl-triage.io/unvalidated=new-node;
//   other bootID     a node that rebooted: the same taint with the value "rebooted";
// with a Warning event on the node. The taint goes once the node has passed a socket probe and an
// IB probe (in any pair, in sweeps after the taint was placed; IB counts as passed where the
// coordinator runs no IB probe), with a Normal event; or once `timeout_ms` has passed without
// that, with a Warning event (capacity is never stranded by a node the probes could not reach).
//
// Only the nodes whose labels hold `node_selector` (the chart: the agent's nodeSelector) are
// validated: a node without an agent is never probed, and would only wait out the timeout. A node
// outside it is not remembered, so one that gains the labels later (GPU feature discovery labels
// a node after it joins) is validated as a new node; one that loses them while it carries our
// taint is still released by its probes or its timeout.
//
// The first step ever (nothing remembered yet) only remembers the bootIDs: nodes that existed
// when the feature was turned on are not tainted. A breaker of its own: never more than
// `max_nodes` nodes, nor more than `max_percent` % of the nodes listed (rounded down, at least
// one), carry the taint at once; a node beyond the limit is not tainted (its bootID is
// remembered, a Warning event and a log line say so), since many nodes starting at once is a
// rollout or a power event, not something to fence one node at a time.
//
// Only the taint nccl-triage.io/unvalidated is ever added or removed: the node's full taint list
// is written back (a JSON merge patch) guarded by metadata.resourceVersion, and a 409 Conflict is
// retried once on a fresh read. A taint of ours an operator removed is not put back. In dry-run
// nothing is patched: a Normal event says what would have been done. The event of a patch is
// written into the node's annotation nccl-triage.io/pending-validation-event by that patch and
// posted after it (coordinator/pending_event.h, as the remediator's): a coordinator killed in
// between loses no event, the next step of whichever coordinator leads posts it.
//
// What must survive a restart (the bootIDs, the nodes being validated and since when, on the wall
// clock) is Memory(), kept by coordinator/state_store.h; Restore() takes it back. Timeouts run on
// the monotonic clock. Not thread-safe: the coordinator's sweep thread calls it.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "coordinator/pending_event.h"
#include "kube/kube_api.h"
#include "kube/node_cache.h"

namespace nccl_triage {

class Logger;

inline constexpr std::string_view kUnvalidatedTaintKey = "nccl-triage.io/unvalidated";
// What is kept of a bootID (a UUID: its first 16 characters tell reboots apart) and of how many
// nodes, so that the state stays far below the 1 MiB an object may hold.
inline constexpr size_t kBootIdKept = 16;
inline constexpr size_t kMaxValidatorBootIds = 10'000;

struct ValidationPolicy {
  bool enabled = false;
  int64_t timeout_ms = 1'800'000;
  int max_nodes = 10;
  double max_percent = 10.0;
};

struct NodeValidatorOptions {
  ValidationPolicy policy;
  bool dry_run = false;  // remediation.mode dry-run: events only
  std::string component = "nccl-triage-coordinator";
  std::string event_namespace = "default";
  // Only nodes whose labels hold every pair are validated (the nodes the agent runs on); empty:
  // every node. The node cache must keep these label keys (NodeCacheOptions::labels).
  std::map<std::string, std::string> node_selector;
  int list_page = 500;
  int max_listed_nodes = 50'000;
  std::chrono::milliseconds step_deadline{120'000};  // no API call starts after this long
};

// What one sweep's probes showed of a node.
struct NodeProbePasses {
  bool socket = false;  // a socket probe of a pair with this node passed
  bool ib = false;      // an IB probe passed (or no IB probe is run)
};

// A node carrying (or about to carry) the taint.
struct PendingValidation {
  std::string reason;         // "new-node" | "rebooted"
  int64_t since_unix_ms = 0;  // when the taint was decided
  bool socket = false;        // passed since then
  bool ib = false;
  bool tainted = false;  // the taint was placed (gone then: an operator removed it)
  friend bool operator==(const PendingValidation&, const PendingValidation&) = default;
};

// What a validator keeps across a restart.
struct ValidatorMemory {
  bool initialised = false;                      // the bootIDs were taken once
  std::map<std::string, std::string> boot_ids;   // node -> bootID last seen (kBootIdKept chars)
  std::map<std::string, PendingValidation> pending;
  friend bool operator==(const ValidatorMemory&, const ValidatorMemory&) = default;
};

// What a step did, for /status, the metrics and the tests.
struct ValidationStatus {
  int nodes_seen = 0;
  std::vector<std::string> unvalidated;  // carrying our taint after the step
  std::vector<std::string> tainted;      // tainted by this step
  std::vector<std::string> validated;    // released by this step after passing probes
  std::vector<std::string> timed_out;    // released by this step on the timeout
  std::vector<std::string> refused;      // not tainted by this step: the breaker
  bool breaker_open = false;
  std::map<std::string, std::string> errors;
  std::string list_error;
  std::string cut_short;
};

nlohmann::json ToJson(const ValidationStatus& status);

class NodeValidator {
 public:
  // `kube`, `log`, `clock` and `nodes` must outlive the validator. With `nodes` (kept by a
  // watch; it must keep status.nodeInfo.bootID, as every NodeCache does), a step reads the nodes
  // from it; without, it lists them. The patches go to `kube`, their answers to `nodes`.
  NodeValidator(KubeClient& kube, NodeValidatorOptions options, Logger& log, Clock& clock,
                NodeCache* nodes = nullptr);

  // One step with what the last sweep's probes showed (nodes absent: not probed).
  ValidationStatus Step(const std::map<std::string, NodeProbePasses>& probed,
                        std::stop_token stop = {});

  ValidatorMemory Memory() const;
  void Restore(const ValidatorMemory& memory);
  const NodeValidatorOptions& options() const { return options_; }

 private:
  struct NodeRead {
    std::string name;
    std::string boot_id;
    std::string resource_version;
    nlohmann::json taints = nlohmann::json::array();
    bool our_taint = false;
    std::string pending_event;  // the pending-validation-event annotation: not yet posted
    bool selected = true;       // its labels hold NodeValidatorOptions::node_selector
  };
  NodeRead ParseNode(const CachedNode& node) const;
  NodeCacheOptions Fields() const;  // what a node read keeps
  bool ListNodes(std::vector<NodeRead>* nodes, std::string* error);
  std::string CutShort() const { return CutShortReason(stop_, deadline_, clock_); }
  // Adds (`value` non-empty) or removes our taint, with `event` left pending on the node and
  // posted once the patch is done; a 409 is retried once on a fresh read.
  bool PatchTaint(const NodeRead& node, const std::string& value, const PendingNodeEvent& event,
                  ValidationStatus& status);
  // Posts an event a patch left pending on `node`, then removes the annotation.
  void Deliver(const std::string& node, const PendingNodeEvent& event, const std::string& encoded,
               ValidationStatus& status);
  bool PostEvent(const std::string& node, const std::string& type, const std::string& reason,
                 const std::string& message, ValidationStatus& status);

  KubeClient& kube_;
  NodeValidatorOptions options_;
  Logger& log_;
  Clock& clock_;
  NodeCache* nodes_;
  ValidatorMemory memory_;
  std::map<std::string, int64_t> since_ms_;  // pending node -> monotonic ms of since_unix_ms
  std::map<std::string, std::string> failing_;
  PendingEvents pending_;
  // The restored bootIDs were cut at kMaxValidatorBootIds: a node unknown to them is taken as
  // present, not new, at the next step.
  bool relearn_ = false;
  bool list_failing_ = false;
  std::stop_token stop_;
  Clock::TimePoint deadline_{};
};

}  // namespace nccl_triage
