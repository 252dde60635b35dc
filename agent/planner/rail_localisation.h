// Localisation to (node, rail) from the per-rail IB probes of a sweep.
//
// A rail-optimised fabric connects rail k of every node only to rail k of the others (its own
// leaf switches), so the IB probe of a pair on rail k exercises one path: node A's HCA port k,
// the rail-k fabric, node B's HCA port k. From every (pair, rail) probed in a sweep:
//   rail good    a node's rail k passed with at least one peer;
//   node rail    a node's rail k passed with no peer and failed with at least two peers that are
//                good on rail k: that node's HCA, port or cable of rail k;
//   node         every rail of a node that was probed (two or more) is a node-rail fault: the node
//                (its driver, memory registration, PCIe), not one HCA;
//   link rail    a failed (pair, rail) whose two nodes are both good on rail k and neither a
//                node-rail fault there: the path between them on rail k (a switch port, a route);
//   inconclusive anything else (one peer only, no good reference on that rail).
// A (pair, rail) whose NCCL run passed but whose busbw is below busbw_min_fraction of the rail's
// port rate (the lower of the two nodes', JudgeRails) is a failure like any other here: a rail
// slow with two good peers is that node's rail, "rate-degraded" (RailFault::degraded).
// A pair's socket failure is not a rail fault: only IB outcomes are given here. Pure; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/reflect.h"
#include "core/model.h"
#include "planner/node_info.h"
#include "planner/pair_judge.h"

namespace nccl_triage {

// One (pair, rail) IB probe of a sweep.
struct RailPairOutcome {
  NodePair pair;
  int rail = 0;
  std::string device;  // "mlx5_3": the HCA of rail k (named alike on the nodes of one model)
  bool passed = false;
  FaultClass fault_class = FaultClass::kUnknown;  // of a failure
  std::vector<std::string> causes;                // catalogue ids, most likely first
  // Rate-degraded: NCCL passed on the rail but its busbw was below busbw_min_fraction of the
  // rail's port rate (ib.bandwidth; judged only for probes of at least kBandwidthBoundBytes).
  bool degraded = false;
  double busbw_bytes_per_second = 0;     // of a passed NCCL run
  double expected_bytes_per_second = 0;  // the rail's port rate (lower end), 0 when not judged
};

enum class RailFaultKind { kNodeRail, kNode, kLinkRail };
constexpr auto NamesOf(Type<RailFaultKind>) {
  return std::array{Named(RailFaultKind::kNodeRail, "node_rail"),
                    Named(RailFaultKind::kNode, "node"),
                    Named(RailFaultKind::kLinkRail, "link_rail")};
}

struct RailFault {
  RailFaultKind kind = RailFaultKind::kNodeRail;
  std::vector<std::string> nodes;  // one node, or the two of the link (sorted)
  int rail = -1;                   // -1 for a whole-node fault
  std::string device;              // the rail's HCA, empty for a whole-node fault
  FaultClass fault_class = FaultClass::kUnknown;
  std::vector<std::string> causes;
  std::string reason;
  // Every failed probe behind the fault passed NCCL below the rail's port rate: the rail works
  // but is slow (a node-rail fault "rate-degraded"; a whole-node one when all its rails are).
  bool degraded = false;
  friend bool operator==(const RailFault&, const RailFault&) = default;
};

struct RailLocalisation {
  std::vector<RailFault> faults;  // whole nodes, then node rails, then link rails; sorted
  std::vector<RailPairOutcome> inconclusive;  // failed (pair, rail)s nothing above explains
};

RailLocalisation LocaliseRails(const std::vector<RailPairOutcome>& outcomes);

// The outcome of each rail phase of `probes`: judged as the pair's IB phase would be (JudgePair,
// the pair's socket phase and that rail's IB phase), passed when the judgement passes, failed with
// its class and causes when it fails; an inconclusive rail (lost, not run, a GPU busy) is left
// out, as it says nothing about the rail. With options.check_bandwidth the rail's busbw is
// compared with that rail's port rate on both nodes (ExpectedRailBandwidth), not with the ports
// the ranks name or the node's best port.
std::vector<RailPairOutcome> JudgeRails(const NodeInfo& a, const NodeInfo& b,
                                        const PairProbes& probes, const JudgeOptions& options);

}  // namespace nccl_triage
