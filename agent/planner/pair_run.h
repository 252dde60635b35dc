// PairRun: one pair's probes as a state machine: the socket phase, the IB phase and then one IB
// phase per rail of `rails` (each on that rail's HCA of both nodes), each phase with two ranks
// (rank 0 creates NCCL's unique id, the coordinator relays it to rank 1). Rail phases run side by
// side, up to `parallel_rails` at once, when the rails' GPUs differ on both nodes.
//
// It is driven by events (Start, a unique id, a rank's report, an agent lost, an abort, Tick with
// the time) and answers each with the actions the caller must carry out in order: assignments to
// send, a unique id to relay, cancellations, and the end of a phase (for the probe counters). Time
// is a value passed in, never read, so a test drives a 120 s deadline in microseconds.
//
// The rules it keeps:
//   - a phase ends when both ranks reported, or at its deadline (a rank that never reported is
//     lost, the phase inconclusive); the socket phase is followed by the IB phase, and the IB
//     phase by the rail phases, unless a phase was lost (an agent gone, a deadline missed: the
//     next phase would only wait for it too); rail phases already running then still finish;
//   - two rail phases run at once only when each node probes them on different GPUs (a rail whose
//     GPU a node does not know runs alone): an agent runs one probe per GPU;
//   - a rank that ends before the rendezvous (refused, unavailable, or rank 0 before it handed out
//     a unique id) leaves its peer nothing to wait for: the peer is cancelled at once;
//   - a rank that fails with a specific cause in its NCCL log has said why: its peer, which can
//     only wait for a partner that is gone, is cancelled at once; a failure that names no cause
//     gives the peer `peer_failed_grace` to report its own log (it often holds the cause);
//   - an agent lost mid-probe or a coordinator shutting down ends every running phase as lost
//     and cancels whatever is still running; a malformed unique id ends its own phase so.
//
// Pure: no I/O, no clock, no threads; not thread-safe (the coordinator calls it under its lock).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
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
  // The rails both nodes have (same rail number, same HCA), probed after the IB phase. Empty: no
  // rail phases.
  struct Rail {
    int rail = 0;
    std::string device;  // "mlx5_3/1", for the results
    // The GPU (bus id) each node probes this rail on, from its rail table; "" when that node
    // does not know one (the rail then runs alone).
    std::string gpu_a;  // of pair.a
    std::string gpu_b;  // of pair.b
  };
  std::vector<Rail> rails;
  // How many rail phases may run at once (the smallest of both agents' and the coordinator's
  // probe.parallel_rails); 1: one after the other.
  int parallel_rails = 1;
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
  int rail = -1;  // kAssign, kCancel, kPhaseOver of a rail phase: the rail; -1 otherwise
  std::string text;
};
using PairRunActions = std::vector<PairRunAction>;

class PairRun {
 public:
  explicit PairRun(PairRunSetup setup);

  // Assigns the socket phase to both ranks.
  PairRunActions Start(SteadyTime now);
  // Rank 0's unique id for `probe_id` (already checked to be well formed): relayed to rank 1 of
  // that phase once.
  PairRunActions OnUniqueId(const std::string& probe_id, const std::string& id);
  // The report of the rank holding `probe_id` (the caller checked it came from that rank's node).
  PairRunActions OnReport(const std::string& probe_id, ProbeResult result, SteadyTime now);
  // The agent of `node` went away: every running phase is lost.
  PairRunActions OnAgentLost(const std::string& node, const std::string& why);
  // Ends every running phase as lost, with the reason (shutting down).
  PairRunActions Abort(const std::string& reason);
  // Ends the phase of `probe_id` as lost (a malformed unique id); the others run on.
  PairRunActions AbortPhase(const std::string& probe_id, const std::string& reason);
  // Acts on the deadlines that have passed at `now`.
  PairRunActions Tick(SteadyTime now);

  // When Tick next has something to do; nullopt once done.
  std::optional<SteadyTime> NextDeadline() const;
  bool done() const { return done_; }
  const NodePair& pair() const { return setup_.pair; }
  const std::string& node(int rank) const { return rank == 0 ? setup_.rank0 : setup_.rank1; }

  // What a running phase's probe id stands for.
  struct Held {
    int rank = 0;
    ProbeMode mode = ProbeMode::kSocket;
    int rail = -1;  // -1 for the socket and IB phases
  };
  // nullopt once the rank reported or was cancelled, or for an id this run never gave out.
  std::optional<Held> Holding(const std::string& probe_id) const;
  // The probe ids `rank` holds in the running phases, in the order the phases started.
  std::vector<std::string> probe_ids(int rank) const;
  // How many phases run now (more than one only for rails).
  size_t running() const { return phases_.size(); }
  // The phases as far as they went, for JudgePair.
  const PairProbes& probes() const { return probes_; }

 private:
  struct Slot {
    std::string node;
    std::string probe_id;
    std::optional<ProbeResult> result;
  };
  struct Phase {
    ProbeMode mode = ProbeMode::kSocket;
    int rail_index = -1;  // into setup_.rails; -1 for the socket and IB phases
    size_t entry = 0;     // a rail phase's row of probes_.rails
    Slot slot[2];
    bool relayed = false;
    SteadyTime deadline{};
    std::optional<SteadyTime> peer_failed_deadline;
    bool over = false;
  };
  enum class Stage { kSocket, kIb, kRails };

  // Starts a phase; it may end at once (an agent not connected).
  void StartPhase(ProbeMode mode, int rail_index, SteadyTime now, PairRunActions& out);
  // Records the phase and cancels what still runs; `lost` non-empty: no new phase starts.
  void EndPhase(Phase& phase, const std::string& lost, PairRunActions& out);
  // Drops the phases that ended and starts what may follow them; decides done.
  void Settle(SteadyTime now, PairRunActions& out);
  // After a phase was lost (nothing new starts): drops the phases that ended; done when none
  // runs.
  void DropLost();
  void CancelSlot(Phase& phase, Slot& slot, const std::string& reason, PairRunActions& out);
  void CancelUnreported(Phase& phase, const std::string& reason, PairRunActions& out);
  void OnPhaseReport(Phase& phase, int rank, ProbeResult result, SteadyTime now,
                     PairRunActions& out);
  // The running phase and rank of `probe_id`; {nullptr, -1} when none holds it.
  std::pair<Phase*, int> Find(const std::string& probe_id);
  template <class Phases>
  static auto FindIn(Phases& phases, const std::string& probe_id)
      -> std::pair<decltype(&phases.front()), int>;
  bool Connected(const std::string& node) const;
  int RailOf(const Phase& phase) const;
  ModeProbes& Results(const Phase& phase);  // where the phase's results go
  // Whether pending rail `index` may start beside the rail phases running now.
  bool FitsBesideRunning(int index) const;

  PairRunSetup setup_;
  Stage stage_ = Stage::kSocket;
  std::vector<Phase> phases_;  // the running phases, in the order they started
  std::vector<int> pending_;   // rails (indices into setup_.rails) not started yet, in order
  bool lost_ = false;          // a phase was lost: nothing new starts
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
