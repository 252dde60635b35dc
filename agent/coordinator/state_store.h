// StateStore: what the coordinator must not forget when it restarts, kept in one ConfigMap of
// its namespace (docs/remediation.md, "State across restarts").
//
// Kept: every fault hold-down tracks (suspected ones with their counters, confirmed ones), the
// remediator's memory (remediator.h: since when each remediated node has been healthy, on the
// wall clock; the dry-run announcements; the operators' releases; the breaker as last found), and
// the node validator's (node_validator.h: each node's bootID, at most kMaxValidatorBootIds, and
// the nodes being validated since when).
// A coordinator that starts reads it before its first sweep, so a fault confirmed before a
// restart stays confirmed even when the agent of its node restarted too (and so forgot what it
// was told), its taint stays, its release clock goes on and no dry-run event is told twice.
//
// Why one ConfigMap and not annotations on each Node: the state exists in every remediation mode,
// and dry-run must not need the right to patch Nodes; one object is read in one GET at start and
// written in one PUT per sweep that changed something (never when nothing changed), where
// annotations would cost a patch per node that changes and a list of every node to read back.
// Its size is bounded: at most kMaxFaults faults (confirmed ones first, then the most seen), each
// with at most kMaxCauses causes and a reason cut to kMaxReason characters, about 300 bytes a
// fault, well under the 1 MiB an object may hold.
//
// Writes are guarded by the resourceVersion read: a 409 Conflict (someone else wrote it) reads
// it again and writes once more (this coordinator is the only writer of what it holds). A failed
// read or write is logged once until it works again and retried at the next sweep; a
// coordinator that could not read the state at start does not write until a read has worked,
// so a passing API error never erases what was kept. Nothing here throws. Not thread-safe: the
// coordinator's sweep thread calls it.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "coordinator/node_validator.h"
#include "coordinator/remediator.h"
#include "kube/kube_api.h"
#include "planner/hold_down.h"

namespace nccl_triage {

class Logger;

// What a coordinator keeps across a restart.
struct CoordinatorState {
  std::vector<TrackedFault> faults;
  RemediatorMemory remediation;
  ValidatorMemory validation;  // validation.new_nodes (node_validator.h)
};

inline constexpr size_t kMaxStateFaults = 2'000;
inline constexpr size_t kMaxStateCauses = 8;
inline constexpr size_t kMaxStateReason = 200;

// The ConfigMap's data for a state (bounded as above), and back: entries that do not parse are
// left out (a hand-edited object must not stop the coordinator).
std::map<std::string, std::string> EncodeCoordinatorState(const CoordinatorState& state);
CoordinatorState DecodeCoordinatorState(const std::map<std::string, std::string>& data);

class StateStore {
 public:
  // `kube` and `log` must outlive the store.
  StateStore(KubeClient& kube, std::string ns, std::string name, Logger& log);

  // Reads the object: true with `out` set (empty when there is none yet), false when the API
  // could not answer (logged; try again later).
  bool Load(CoordinatorState* out);
  // Writes `state` when it differs from what was last read or written; false when the write
  // failed (logged once, retried by the next call). Nothing is written before a Load worked.
  bool Save(const CoordinatorState& state);

  bool loaded() const { return loaded_; }
  const std::string& name() const { return name_; }
  // API calls made (reads and writes), for the tests of "written only when it changes".
  int calls() const { return calls_; }

 private:
  bool Put(const std::map<std::string, std::string>& data);
  void Failing(const std::string& why);

  KubeClient& kube_;
  std::string ns_;
  std::string name_;
  Logger& log_;
  bool loaded_ = false;
  bool failing_ = false;
  std::string resource_version_;  // empty: the object does not exist (yet)
  std::map<std::string, std::string> last_;
  int calls_ = 0;
};

}  // namespace nccl_triage
