// TriagePlan: the coordinator's probes for one incident (`nccl-triage triage`, the RPC
// Coordinator.Triage), as pure decisions around the same Sweep the periodic sweeps use.
//
// The job's nodes are probed now, on request: round 1 pairs them with each other (disjoint pairs
// in the order given) and pairs up to two known-good references — idle connected nodes outside
// the job, none with a confirmed fault — with each other or with the job's odd node, so that a
// reference has passed in this sweep when round 2 re-pairs a failed node with one; rounds 2 and 3
// localise as any sweep does. There is no hold-down: the answer is what these probes saw.
// Nodes whose agent is absent, whose GPUs are busy (the job is dead, but another job may have
// started there), or whose agent said its probes cannot run (no NCCL, no GPU, ...), are not
// probed and say so; none of them is a reference.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "planner/node_info.h"
#include "planner/sweep.h"

namespace nccl_triage {

// What the coordinator knows about an agent when the request arrives.
struct TriageAgent {
  bool connected = false;
  bool gpus_busy = false;
  bool confirmed_fault = false;  // a confirmed node fault in the hold-down (no reference)
  // Why its probes cannot run (ProbesUnavailableText); empty when they can or it did not say.
  std::string probes_unavailable{};
};

struct TriagePlan {
  std::vector<std::string> probed;      // the job's nodes that will be probed
  std::vector<std::string> references;  // known-good nodes outside the job
  std::vector<NodePair> round1;
  std::map<std::string, std::string> skipped;  // node -> "absent" | "busy" | "unavailable"
  std::map<std::string, std::string> reasons;  // node -> why it was skipped
};

// `requested` in the order given (duplicates ignored); `agents` by node.
TriagePlan PlanTriage(const std::vector<std::string>& requested,
                      const std::map<std::string, TriageAgent>& agents, size_t max_references = 2);

// One node of the job as the answer reports it.
struct TriageNodeOutcome {
  std::string node;
  std::string state;  // good | fault | inconclusive | untested | busy | absent | unavailable
  FaultClass fault_class = FaultClass::kUnknown;
  std::vector<std::string> causes;
  std::string reason;
};

struct TriageOutcome {
  std::vector<TriageNodeOutcome> nodes;  // the requested nodes, in order
  std::vector<LocalisedFault> faults;    // those that touch a requested node
  std::vector<std::string> references;
  int pairs_probed = 0;
  int rounds = 0;
};

TriageOutcome SummariseTriage(const std::vector<std::string>& requested, const TriagePlan& plan,
                              const SweepResult& result);

// One rail of a requested node in the answer: the rail as the node's agent last said, and the
// rail fault that names it (a whole-node rail fault names every rail of the node).
struct TriageRail {
  Rail rail;
  std::optional<RailFault> fault;
  std::string seen_by;  // "triage": this triage's per-rail probes; "sweep": the last sweep's
};

// The rail table of `node` with its faults: this triage's first (its probes are what the job's
// nodes do now), else the last sweep's. Rails in the node's table order.
std::vector<TriageRail> TriageRails(const NodeInfo& node, const std::vector<RailFault>& triage,
                                    const std::vector<RailFault>& sweep);

}  // namespace nccl_triage
