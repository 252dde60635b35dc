// Sweep: the planner and judge of one sweep, as a pure state machine.
//
//   round 1  the pairs the coverage schedule chose: every available node in one disjoint pair;
//   round 2  every member of a failed (or inconclusive) pair is re-paired with a node that passed
//            in this sweep (a known-good reference), and links suspected in earlier sweeps are
//            probed again (hold-down needs them to repeat);
//   round 3  only if some node is still ambiguous (e.g. two faulty nodes met in round 1).
//
// Localisation, from every pair probed in this sweep:
//   good        a node with at least one passing pair;
//   node fault  a node with no passing pair that failed with two different good partners;
//   link fault  a failed pair whose two nodes are both good (each passes elsewhere) and neither
//               is a node fault: only the pair fails;
//   inconclusive  anything else when the rounds run out (too few references, a lost agent).
// A failed pair with one node-fault member is explained by that node (PairLocalisation kNode).
//
// Rails: a pair's per-rail IB probes (Record's `rails`) are localised by LocaliseRails. A node
// whose rail fails without a peer good on it yet is re-paired like an ambiguous node (the same
// rounds, not more); a node-rail or whole-node rail fault makes the node a node fault whose reason
// names the rail ("rail 5 (mlx5_5/1) passes with no peer ..."), a link-rail fault makes its pair a
// link fault, unless the pair-level probes already localised them.
//
// The caller drives it: NextRound() gives disjoint pairs, the caller probes them and Record()s
// each judgement, then asks NextRound() again until it is empty; Result() is the sweep's verdict.
// Pure (the seed drives the choice of references); not thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "base/reflect.h"
#include "planner/node_info.h"
#include "planner/pair_judge.h"
#include "planner/rail_localisation.h"

namespace nccl_triage {

enum class FaultKind { kNode, kLink };
constexpr auto NamesOf(Type<FaultKind>) {
  return std::array{Named(FaultKind::kNode, "node"), Named(FaultKind::kLink, "link")};
}

enum class NodeState { kUntested, kGood, kNodeFault, kInconclusive };
constexpr auto NamesOf(Type<NodeState>) {
  return std::array{Named(NodeState::kUntested, "untested"), Named(NodeState::kGood, "good"),
                    Named(NodeState::kNodeFault, "node_fault"),
                    Named(NodeState::kInconclusive, "inconclusive")};
}

enum class PairLocalisation { kNone, kNode, kLink, kInconclusive };
constexpr auto NamesOf(Type<PairLocalisation>) {
  return std::array{Named(PairLocalisation::kNone, "none"), Named(PairLocalisation::kNode, "node"),
                    Named(PairLocalisation::kLink, "link"),
                    Named(PairLocalisation::kInconclusive, "inconclusive")};
}

struct LocalisedFault {
  FaultKind kind = FaultKind::kNode;
  std::vector<std::string> nodes;  // one node, or the two nodes of the link (sorted)
  FaultClass fault_class = FaultClass::kUnknown;
  std::vector<std::string> causes;  // catalogue ids, most likely first
  std::string reason;
  friend bool operator==(const LocalisedFault&, const LocalisedFault&) = default;
};

struct NodeOutcome {
  NodeState state = NodeState::kUntested;
  FaultClass fault_class = FaultClass::kUnknown;  // healthy for good nodes
  std::vector<std::string> causes;
  std::string reason;
};

struct PairOutcome {
  NodePair pair;
  int round = 0;
  PairJudgement judgement;
  PairLocalisation localisation = PairLocalisation::kNone;
  std::vector<RailPairOutcome> rails;  // the pair's conclusive per-rail IB probes
};

struct SweepResult {
  uint64_t number = 0;
  int rounds = 0;
  std::map<std::string, NodeOutcome> nodes;  // every node of the sweep
  std::vector<PairOutcome> pairs;            // every pair probed, in probing order
  std::vector<LocalisedFault> faults;        // node faults first, then links; sorted
  // What this sweep could have seen: nodes and pairs with a conclusive result (hold-down counts a
  // fault as gone only when its node or pair was tested and it did not show).
  std::set<std::string> tested_nodes;
  std::set<NodePair> tested_pairs;
  RailLocalisation rails;  // from every pair's per-rail probes (empty without rails)
};

struct SweepSetup {
  uint64_t number = 0;
  std::vector<std::string> nodes;  // available when the sweep started
  std::vector<NodePair> round1;    // from the coverage schedule (disjoint)
  std::vector<NodePair> retest;    // suspected links to probe again in round 2
  // Cross-node prediction: true when a and b are predicted not to work together (never used as
  // each other's reference). May be empty.
  std::function<bool(const std::string&, const std::string&)> incompatible;
  int max_rounds = 3;
  uint64_t seed = 1;
};

class Sweep {
 public:
  explicit Sweep(SweepSetup setup);

  // The pairs of the next round; empty when the sweep is over. Each call starts a new round.
  std::vector<NodePair> NextRound();
  int round() const { return round_; }

  // The judgement of a pair of the current round (others are ignored), with its per-rail IB
  // outcomes (JudgeRails) when rails were probed.
  void Record(const NodePair& pair, const PairJudgement& judgement,
              std::vector<RailPairOutcome> rails = {});
  // A node left (its agent disconnected): it gets no new pairs.
  void RemoveNode(const std::string& node);

  SweepResult Result() const;

 private:
  struct Analysis;
  Analysis Analyse() const;
  std::vector<RailPairOutcome> RailOutcomes() const;

  SweepSetup setup_;
  int round_ = 0;
  std::set<std::string> present_;
  std::vector<PairOutcome> tests_;
  std::set<NodePair> planned_;  // pairs of the current round
  uint64_t rng_state_;
};

}  // namespace nccl_triage
