// HoldDown: a localised fault becomes confirmed only after it has been seen in `hold_down`
// consecutive sweeps that tested it, and a confirmed fault clears only after `hold_down`
// consecutive sweeps that tested it and did not see it. One transient failure pages nobody, and a
// flapping link does not flap the alert.
//
// "Tested" comes from the sweep: a node fault is tested when its node had a conclusive result, a
// link fault when its pair did. A sweep that could not look (the node was busy or disconnected)
// leaves the fault's state as it was. Link faults are re-probed every sweep (LinksToRetest) so
// that they can repeat or clear: the coverage schedule would not bring the pair back for n-1
// rounds. Pure; not thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "planner/sweep.h"

namespace nccl_triage {

struct TrackedFault {
  LocalisedFault fault;  // as seen last
  int seen = 0;          // consecutive sweeps that saw it
  int unseen = 0;        // consecutive sweeps that tested it and did not see it (while confirmed)
  bool confirmed = false;
  uint64_t first_seen_sweep = 0;
  uint64_t last_seen_sweep = 0;
};

class HoldDown {
 public:
  explicit HoldDown(int hold_down) : hold_down_(hold_down < 1 ? 1 : hold_down) {}

  void Apply(const SweepResult& sweep);

  std::vector<TrackedFault> All() const;  // suspected and confirmed, in key order
  std::vector<TrackedFault> Confirmed() const;
  std::vector<NodePair> LinksToRetest() const;  // every tracked link fault
  // A fault this coordinator confirmed before it restarted (from the agents' last verdicts): held
  // as confirmed from `sweep` on, as if seen `hold_down` times, so that it neither clears nor
  // re-confirms until sweeps say so. False when the fault is tracked already (nothing changes).
  bool Resume(const LocalisedFault& fault, uint64_t sweep);
  // A fault as a coordinator before this one tracked it (its counters and confirmation, kept in
  // the API server: coordinator/state_store.h). False when the fault is tracked already or is
  // malformed (nothing changes).
  bool Restore(const TrackedFault& tracked);
  // A node left the cluster for good: its faults are dropped.
  void Forget(const std::string& node);
  // The tracked fault of a node or pair, or nullptr.
  const TrackedFault* FindNode(const std::string& node) const;
  const TrackedFault* FindLink(const NodePair& pair) const;
  int hold_down() const { return hold_down_; }

 private:
  using Key = std::pair<FaultKind, NodePair>;  // node faults use NodePair(node, "")
  static Key KeyOf(const LocalisedFault& f);

  int hold_down_;
  std::map<Key, TrackedFault> faults_;
};

}  // namespace nccl_triage
