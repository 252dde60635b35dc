// ClusterVerdicts: the coordinator's publishing policy, from the outcome of each sweep to the
// verdicts it shows and pushes to the agents.
//
//   - A sweep's faults get their causes in the order an operator needs them: a node fault's own
//     failing checks first (the NCCL log names the symptom, the check the state behind it), a
//     link fault's cross-node check before the symptom. A node fault lists only its own causes:
//     a check that fails on a peer it failed with, and not on the node, is the peer's (the
//     peer's verdict names it; the pair record shows both).
//   - Hold-down (HoldDown) decides which faults are confirmed.
//   - A node's published verdict: a confirmed fault (basis probes); else, when its probes pass,
//     healthy from probes unless its own checks fail on something two ranks over the network do
//     not exercise (/dev/shm, one degraded port among several: the checks' verdict stands, basis
//     checks); else the verdict already published stays (a suspected fault does not change it
//     until confirmed); else its checks' verdict.
//   - A verdict from the checks alone follows core's rule (ClassFromFindings, MakeReport), the
//     same the agent applies to its own report, so agent and coordinator agree on a node: a node
//     where nothing passed is unknown at both ends, not healthy at one of them.
//   - What an agent is pushed: its node verdict and its pairs, every unhealthy pair (most recent
//     first) and then the few most recent healthy ones, bounded: the agent publishes one series
//     per peer, so a node of a large cluster must not collect one for every pair it ever met.
//   - The pair records are bounded: past `max_pair_records` the oldest healthy pairs go first.
//   - After a coordinator restart, Resume rebuilds the confirmed faults from what the agents
//     were last told (they send it in their Hello): a node's own confirmed fault at once, a link
//     fault once both of its nodes have said so (one agent cannot put a fault on another node).
//
// Pure; not thread-safe (the coordinator calls it under its lock).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/model.h"
#include "planner/hold_down.h"
#include "planner/node_info.h"
#include "planner/pair_judge.h"
#include "planner/sweep.h"

namespace nccl_triage {

// The verdict the coordinator publishes on one node.
struct PublishedNodeVerdict {
  FaultClass fault_class = FaultClass::kUnknown;
  Basis basis = Basis::kChecks;
  std::vector<std::string> causes;
  std::string reason;
  NodeState state = NodeState::kUntested;  // in the last sweep that tested it
  bool confirmed_fault = false;
  friend bool operator==(const PublishedNodeVerdict&, const PublishedNodeVerdict&) = default;
};

// The last probe result of one pair.
struct PairRecord {
  NodePair pair;
  PairJudgement judgement;
  PairLocalisation localisation = PairLocalisation::kNone;
  uint64_t sweep = 0;
  int round = 0;
};

// What one agent is told about its node and its pairs (the Verdicts message, as plain values).
struct AgentVerdicts {
  struct Node {
    PublishedNodeVerdict verdict;
    // kNode when this node is a confirmed fault, kInconclusive when its last sweep could not say.
    PairLocalisation localisation = PairLocalisation::kNone;
    bool confirmed = false;  // a confirmed fault, or a verdict from probes
  };
  struct Pair {
    std::string peer;
    PairVerdict verdict;
    ProbeOutcome socket = ProbeOutcome::kNotRun;
    ProbeOutcome ib = ProbeOutcome::kNotRun;
    PairLocalisation localisation = PairLocalisation::kNone;
    bool confirmed = false;  // a confirmed link fault
  };
  std::optional<Node> node;  // absent until the node has a published verdict
  std::vector<Pair> pairs;
};

// The verdict of a node from its own checks only (basis checks), by core's rule. The agents send
// their failing and warning findings and count their passes (NodeInfo::checks_passed); an agent
// that does not count them is taken to have passed some, as before it could say. A node whose
// agent said its probes cannot run (ProbesCannotRun) is never healthy from its checks: unknown
// instead, its availability cause (probe.no_nccl, ...) first, and the reason says why it has no
// probe results.
PublishedNodeVerdict ChecksVerdict(const NodeInfo& info, std::string reason);

class ClusterVerdicts {
 public:
  static constexpr size_t kMaxPairsPerAgent = 64;
  static constexpr size_t kMaxHealthyPairsPerAgent = 8;
  static constexpr size_t kDefaultMaxPairRecords = 200'000;

  explicit ClusterVerdicts(int hold_down, size_t max_pair_records = kDefaultMaxPairRecords);

  // Publishes one sweep: orders the faults' causes, applies hold-down, records the pairs and
  // updates the verdict of every node of the sweep. `known` is what each node told about itself.
  // Nodes outside the sweep keep their verdict (a confirmed fault stays held down).
  void Apply(SweepResult result, const std::map<std::string, NodeInfo>& known);

  // Resumes what `node`'s agent was last told by a coordinator before this one started: its own
  // confirmed node fault, and its confirmed link faults (held once both nodes claim them).
  // Returns the nodes whose verdicts changed (to push them again); empty when nothing was new.
  std::vector<std::string> Resume(const std::string& node, const AgentVerdicts& told,
                                  uint64_t sweep);

  // Restores the faults a coordinator before this one tracked (suspected ones with their
  // counters, confirmed ones published again as node verdicts and link pair records), as kept
  // in the API server (coordinator/state_store.h). A fault tracked already is left as it is.
  // Returns the nodes whose verdicts changed (to push them again).
  std::vector<std::string> Restore(const std::vector<TrackedFault>& faults);

  // What a node's agent said of its probes (NodeInfo::probe), after each hello and summary. A
  // node whose probes cannot run (ProbesCannotRun) is left out of the sweeps, so no sweep would
  // update its verdict: it becomes its checks' (ChecksVerdict: never healthy, the reason says
  // why), state untested. When its probes can run again, that verdict gives way to its checks'
  // plain one until a sweep probes it. A confirmed fault stays either way (held down until the
  // node passes probes again). Returns whether the published verdict changed (to push it).
  bool UpdateProbeAvailability(const std::string& node, const NodeInfo& info);

  // Drops everything about a node that left the cluster: its verdict, its pair records and the
  // faults that name it (the coordinator's node table expires such nodes).
  void Forget(const std::string& node);

  // The published verdict of a node, or nullptr before any sweep included it.
  const PublishedNodeVerdict* Find(const std::string& node) const;
  // What the agent of `node` is pushed.
  AgentVerdicts ForAgent(const std::string& node) const;

  const std::map<std::string, PublishedNodeVerdict>& nodes() const { return nodes_; }
  const std::map<NodePair, PairRecord>& pairs() const { return pairs_; }
  const HoldDown& hold_down() const { return hold_down_; }

 private:
  void RecordPairs(const SweepResult& result);
  PublishedNodeVerdict NodeVerdict(const std::string& node, const NodeOutcome& outcome,
                                   const NodeInfo& info) const;
  // A fault confirmed before this coordinator started (Restore, Resume), published again: the
  // node fault `f` with `reason`; the link `key`'s record, made and indexed when the pair has
  // none from a sweep yet (returned to be filled in, else nullptr). Both add the nodes to
  // `changed`.
  void PublishResumedNode(const LocalisedFault& f, std::string reason,
                          std::vector<std::string>& changed);
  PairRecord* ResumedLinkRecord(const NodePair& key, std::vector<std::string>& changed);

  HoldDown hold_down_;
  size_t max_pair_records_;
  std::map<NodePair, PairRecord> pairs_;
  // node -> its pair records (pointers into pairs_, whose elements are stable).
  std::map<std::string, std::map<NodePair, const PairRecord*>> pairs_by_node_;
  std::map<std::string, PublishedNodeVerdict> nodes_;
  // Link faults one node said were confirmed, waiting for the other node to say so (Resume).
  std::map<NodePair, std::string> link_claimed_by_;
  // Nodes whose published verdict says their probes cannot run (UpdateProbeAvailability).
  std::set<std::string> blind_;
};

}  // namespace nccl_triage
