// PairRun: one pair's probes as a state machine, the socket phase, the IB phase and then one IB
// phase per rail of `rails` (each on that rail's HCA of both nodes), each phase with two ranks
// (rank 0 creates NCCL's unique id, the coordinator relays it to rank 1).
//
// It is driven by events (Start, a unique id, a rank's report, an agent lost, an abort, Tick with
// the time) and answers each with the actions the caller must carry out in order: assignments to
// send, a unique id to relay, cancellations, and the end of a phase (for the probe counters). Time
// is a value passed in, never read, so a test drives a 120 s deadline in microseconds.
//
// The rules it keeps:
//   - a phase ends when both ranks reported, or at its deadline (a rank that never reported is
//     lost, the phase inconclusive); the socket phase is followed by the IB phase, and the IB
//     phase by the rail phases, one at a time, unless a phase was lost (an agent gone, a deadline
//     missed: the next phase would only wait for it too);
//   - a rank that ends before the rendezvous (refused, unavailable, or rank 0 before it handed out
//     a unique id) leaves its peer nothing to wait for: the peer is cancelled at once;
//   - a rank that fails with a specific cause in its NCCL log has said why: its peer, which can
//     only wait for a partner that is gone, is cancelled at once; a failure that names no cause
//     gives the peer `peer_failed_grace` to report its own log (it often holds the cause);
//   - an agent lost mid-probe, a malformed unique id or a coordinator shutting down ends the
//     phase as lost and cancels whatever is still running.
//
// Pure: no I/O, no clock, no threads; not thread-safe (the coordinator calls it under its lock).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/probe_result.h"
#include "core/rail_selection.h"
#include "planner/node_info.h"
#include "planner/pair_judge.h"

namespace nccl_triage {

using SteadyTime = std::chrono::steady_clock::time_point;

struct PairRunSetup {
  NodePair pair;
  std::string rank0;  // creates the unique id
  std::string rank1;
  std::string id_prefix;  // probe ids are "<id_prefix>-<mode>-r<rank>"; unique per run
  // From the assignment to giving up on a rank that did not report: the probe deadline the agents
  // are given plus a grace for the report to travel.
  std::chrono::milliseconds phase_timeout{130'000};
  // When one rank failed without naming a cause, how long the other may take to report its log.
  std::chrono::milliseconds peer_failed_grace{5'000};
  // Whether a node's agent can be sent a message now; a phase cannot start, nor an id be relayed,
  // to one that cannot. Consulted during the events only.
  std::function<bool(const std::string&)> connected;
  // The rails both nodes have (same rail number, same HCA), probed one by one after the IB phase.
  // Empty: no rail phases.
  struct Rail {
    int rail = 0;
    std::string device;  // "mlx5_3/1", for the results
  };
  std::vector<Rail> rails;
};

// One thing the caller must do after an event.
struct PairRunAction {
  enum class Kind {
    kAssign,         // send an assignment: probe_id, peer, mode, rank to `node`
    kRelayUniqueId,  // send rank 0's unique id (`text`) to `node` for probe_id
    kCancel,         // tell `node` to stop probe_id; `text` is the reason
    kPhaseOver,      // a phase ended; `text` is its outcome ("pass", "fail", ..., "lost")
  };
  Kind kind = Kind::kAssign;
  std::string node;
  std::string probe_id;
  std::string peer;
  ProbeMode mode = ProbeMode::kSocket;
  int rank = 0;
  int rail = -1;  // kAssign, kPhaseOver of a rail phase: the rail; -1 otherwise
  std::string text;
};
using PairRunActions = std::vector<PairRunAction>;

class PairRun {
 public:
  explicit PairRun(PairRunSetup setup);

  // Assigns the socket phase to both ranks.
  PairRunActions Start(SteadyTime now);
  // Rank 0's unique id (already checked to be well formed): relayed to rank 1 once.
  PairRunActions OnUniqueId(const std::string& id);
  // The report of `rank` for the current phase (the caller routed it by probe id).
  PairRunActions OnReport(int rank, ProbeResult result, SteadyTime now);
  // The agent of `node` went away: a phase it takes part in is lost.
  PairRunActions OnAgentLost(const std::string& node, const std::string& why);
  // Ends the current phase as lost, with the reason (malformed id, shutting down).
  PairRunActions Abort(const std::string& reason);
  // Acts on the deadlines that have passed at `now`.
  PairRunActions Tick(SteadyTime now);

  // When Tick next has something to do; nullopt once done.
  std::optional<SteadyTime> NextDeadline() const;
  bool done() const { return done_; }
  ProbeMode mode() const { return mode_; }
  // The rail of the current phase, -1 for the socket and IB phases.
  int rail() const { return rail_index_ < 0 ? -1 : setup_.rails[rail_index_].rail; }
  const NodePair& pair() const { return setup_.pair; }
  const std::string& node(int rank) const { return slot_[rank].node; }
  // The probe id `rank` holds in the current phase, "" once it reported or was cancelled.
  const std::string& probe_id(int rank) const { return slot_[rank].probe_id; }
  // Both phases as far as they went, for JudgePair.
  const PairProbes& probes() const { return probes_; }

 private:
  struct Slot {
    std::string node;
    std::string probe_id;
    std::optional<ProbeResult> result;
  };

  void StartPhase(ProbeMode mode, SteadyTime now, PairRunActions& out);
  // Records the phase and cancels what still runs; true when another phase is to follow (this
  // one ended without being lost and it was not the last).
  bool EndPhase(const std::string& lost, PairRunActions& out);
  void FinishPhase(SteadyTime now, PairRunActions& out);  // both ranks have a result
  void Lose(const std::string& why, PairRunActions& out) { EndPhase(why, out); }
  void CancelSlot(Slot& slot, const std::string& reason, PairRunActions& out);
  void CancelUnreported(const std::string& reason, SteadyTime now, PairRunActions& out);
  bool Connected(const std::string& node) const;
  ModeProbes& Current();  // where the current phase's results go

  PairRunSetup setup_;
  ProbeMode mode_ = ProbeMode::kSocket;
  int rail_index_ = -1;  // index into setup_.rails during a rail phase
  Slot slot_[2];
  bool relayed_ = false;
  SteadyTime deadline_{};
  std::optional<SteadyTime> peer_failed_deadline_;
  PairProbes probes_;
  bool started_ = false;
  bool done_ = false;
};

// The rails a pair is probed on in sweep `turn`: those `selection` picks from a's rail table
// (SelectRails) that b has too, on the same HCA and port ("mlx5_3/1"). A rail-optimised fabric
// connects rail k only to rail k, so a rail the other node lacks or names differently is not
// probed. Empty when either node sent no rail table.
std::vector<PairRunSetup::Rail> PairRails(const NodeInfo& a, const NodeInfo& b,
                                          const RailSelection& selection, uint64_t turn);

// True when a failed rank's NCCL log names a cause other than a consequence of its peer's failure
// (the peer exited, a timeout, a generic system or internal error).
bool NamesSpecificCause(const ProbeResult& r);

}  // namespace nccl_triage
