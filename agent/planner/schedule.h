// CoverageSchedule: the round-robin that tests every pair of nodes, round after round, across
// sweeps (the circle method).
//
// With n nodes (one "bye" seat added when n is odd), the circle method seats them at positions
// 0..m (m = n rounded up to even, minus 1); position m stays fixed and the others rotate. Round r
// (0 <= r < m) pairs position m with r and (r+k) mod m with (r-k) mod m for k = 1..(m-1)/2: every
// round is a perfect matching and every pair meets in exactly one round, so the whole cluster is
// covered in n-1 rounds (n rounds for odd n, each node sitting out once).
//
// Each sweep's first round is the next round of this schedule. Which round comes next is chosen
// greedily: the round with the most pairs not yet tested in the current coverage cycle, then the
// most such pairs that cross topology groups (switches/racks), then the one picked least recently.
// The schedule outlives a sweep; when the node set changes it is rebuilt for the new set and keeps
// which pairs were already tested, so untested pairs still come first. When every pair of the
// current set has been tested, a new coverage cycle starts.
//
// Memory is O(n + pairs tested in this cycle): rounds are computed, never stored. Pure (no clock,
// no I/O; the seed drives the seating when there is no topology). Not thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "planner/node_info.h"

namespace nccl_triage {

// The position pairs of round r of the circle method for n nodes (positions 0..n-1; a pair with
// the bye seat is left out).
std::vector<std::pair<int, int>> CircleRound(int n, int r);
// The number of rounds that cover every pair of n nodes (n-1 for even n, n for odd n).
int CircleRounds(int n);

class CoverageSchedule {
 public:
  explicit CoverageSchedule(uint64_t seed = 1);

  // The current nodes as (name, topology value). Rebuilds the seating when the set changed.
  void SetNodes(const std::vector<std::pair<std::string, std::string>>& nodes);

  // The next round: the chosen circle round restricted to nodes for which `available` is true,
  // then those left without a partner paired among themselves (untested, cross-topology first).
  std::vector<NodePair> NextRound(const std::function<bool(const std::string&)>& available);

  // A pair was probed to a conclusion (passed, or failed and was localised). Pairs outside the
  // current node set are ignored.
  void MarkTested(const NodePair& pair);
  bool IsTested(const NodePair& pair) const;

  uint64_t pairs_total() const;   // n(n-1)/2 for the current set
  uint64_t pairs_tested() const;  // tested in the current coverage cycle
  uint64_t cycles_completed() const { return cycles_; }
  int rounds_per_cycle() const { return CircleRounds(static_cast<int>(names_.size())); }
  size_t size() const { return names_.size(); }

 private:
  int RoundOf(int pa, int pb) const;  // positions -> round index
  uint64_t Key(uint32_t ida, uint32_t idb) const;
  bool TestedPositions(int pa, int pb) const;
  bool Cross(int pa, int pb) const { return group_[pa] != group_[pb]; }
  void Recount();

  std::mt19937_64 rng_;
  std::vector<std::string> names_;  // by position
  std::vector<int> group_;          // topology group by position
  std::vector<uint32_t> id_;        // stable id by position
  std::unordered_map<std::string, int> pos_of_;
  std::unordered_map<std::string, std::string> topo_of_;
  std::unordered_map<std::string, uint32_t> stable_id_;  // never shrinks: ids are not reused
  std::unordered_set<uint64_t> tested_;                  // stable-id pairs tested in this cycle
  uint64_t tested_in_set_ = 0;           // tested pairs whose nodes are both in the set
  std::vector<int64_t> untested_;        // by round
  std::vector<int64_t> cross_untested_;  // by round
  std::vector<uint64_t> last_picked_;    // by round
  uint64_t picks_ = 0;
  uint64_t cycles_ = 0;
  bool restart_cycle_ = false;  // the cycle is complete; the next NextRound starts a new one
};

}  // namespace nccl_triage
