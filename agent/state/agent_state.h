// AgentState: everything the agent knows right now, shared between the agent loop (which writes
// the report of each cycle), the coordinator link (which writes probe results and verdicts) and
// the exporters (which read it on every scrape, /status request and publication).
//
// Thread safety: every method is safe to call from any thread. Writers take a mutex for the time
// of a few pointer swaps; readers take a consistent copy with View(), which shares the large
// immutable parts (report, snapshot, probe results) through shared_ptr<const>, so a scrape never
// waits for a cycle or a probe and never sees half of an update. Ownership: the app owns the
// AgentState and keeps it alive longer than the agent loop, the link and the HTTP server.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <utility>
#include <vector>

#include "core/decision.h"
#include "core/model.h"
#include "core/probe_availability.h"
#include "core/probe_result.h"
#include "core/report.h"
#include "core/snapshot.h"
#include "state/snapshot_summary.h"

namespace nccl_triage {

// A verdict on this node as a whole: from probes when the coordinator sends one (basis probes),
// otherwise the report's class from the checks (basis checks).
struct NodeVerdict {
  FaultClass fault_class = FaultClass::kUnknown;
  Basis basis = Basis::kChecks;
  std::vector<std::string> causes;  // catalogue ids, most likely first
  std::string reason;               // one line for people
  int64_t decided_at_unix_ms = 0;
  // From the coordinator: probes localised a fault on this node, repeated for hold_down sweeps.
  bool confirmed = false;
  // From the coordinator: peers whose link with this node is a confirmed fault.
  std::vector<std::string> confirmed_links;

  friend bool operator==(const NodeVerdict&, const NodeVerdict&) = default;
};

struct ProbeRecord {
  ProbeResult result;
  int64_t recorded_at_unix_ms = 0;
  uint64_t seq = 0;    // increases with every recorded probe (metrics observe each one once)
  int rail = -1;       // a rail's IB probe: its rail number; -1 for the pair's own probes
  std::string ib_hca;  // a rail's IB probe: the NCCL_IB_HCA that selected it ("=mlx5_3:1")
};

struct PairVerdictRecord {
  PairVerdict verdict;
  int64_t decided_at_unix_ms = 0;
};

// One workload check on one container of a GPU pod on this node.
struct WorkloadFinding {
  std::string ns;
  std::string pod;
  std::string container;
  Finding finding;
};

// A GPU pod's last answer from NCCL's RAS port (workload/ras_watch.h): how many ranks of its
// job stopped answering, as the communicator that misses the most counts them.
struct RasJobStatus {
  std::string ns;
  std::string pod;
  std::string state;  // the judgement: ok, stuck or error (ras/report.h)
  int ranks_unresponsive = 0;
  int ranks_dead = 0;
  uint64_t collective_lag = 0;  // the largest spread of one collective's counts in a communicator
  int64_t answered_at_unix_ms = 0;
  // ras.diagnostics: the findings of NCCL's last diagnostics report (-1: none yet) and their
  // cause ids, comma-separated ("" when none or unnamed).
  int diagnostics_findings = -1;
  std::string diagnostics_causes;
  friend bool operator==(const RasJobStatus&, const RasJobStatus&) = default;
};

// The duration of one recorded probe, kept so that the duration histogram sees every probe once
// even when several results for the same (peer, mode) arrive between two scrapes.
struct ProbeObservation {
  uint64_t seq = 0;
  ProbeMode mode = ProbeMode::kSocket;
  double duration_seconds = 0;
};

struct CycleInfo {
  uint64_t cycles = 0;  // finished cycles
  int64_t last_started_unix_ms = 0;
  int64_t last_finished_unix_ms = 0;
  double last_duration_seconds = 0;
  std::string last_error;  // empty when the last cycle gathered and judged normally
};

using ProbeKey = std::pair<std::string, ProbeMode>;  // (peer, mode)
using RailProbeKey = std::pair<std::string, int>;    // (peer, rail)

// A consistent copy of the state at one moment; cheap to take (shared immutable parts).
struct AgentStateView {
  std::string node;
  std::string version;
  int64_t started_at_unix_ms = 0;
  bool ready = false;  // the first cycle finished (whatever it found)
  CycleInfo cycle;
  std::shared_ptr<const NodeReport> report;  // null before the first cycle
  std::shared_ptr<const NodeSnapshot> snapshot;
  std::shared_ptr<const SnapshotSummary> summary;
  std::map<ProbeKey, std::shared_ptr<const ProbeRecord>> probes;
  // The per-rail IB probes, apart: a rail's result must not stand for the pair's IB probe (which
  // lets NCCL use every rail) in `probes`, its metrics or its /status row.
  std::map<RailProbeKey, std::shared_ptr<const ProbeRecord>> rail_probes;
  std::map<std::string, std::shared_ptr<const PairVerdictRecord>> pairs;  // by peer
  std::optional<NodeVerdict> probe_verdict;                               // from the coordinator
  std::shared_ptr<const std::vector<WorkloadFinding>> workloads;          // never null
  std::shared_ptr<const std::vector<RasJobStatus>> ras_jobs;              // never null
  std::map<std::string, uint64_t> ras_queries;  // RAS queries since start, by outcome
  int64_t last_probe_unix_ms = 0;  // 0 until a probe was recorded
  std::string coordinator_status;  // "standalone", or a line from the coordinator link
  // Whether probes can run here and why not: the start-up library check, then every probe.
  ProbeAvailability probe_availability;
  std::string pool;  // the node pool whose expectations this node is judged by ("" : none)
  uint64_t generation = 0;         // increases with every change

  // The verdict to publish: the coordinator's (basis probes) when it sent one, else the checks'.
  NodeVerdict Verdict() const;
  // The NCCL version the probes saw last ("" until a probe reported one).
  std::string NcclVersion() const;
};

class AgentState {
 public:
  AgentState(std::string node, std::string version, int64_t started_at_unix_ms);
  AgentState(const AgentState&) = delete;
  AgentState& operator=(const AgentState&) = delete;

  AgentStateView View() const;
  uint64_t Generation() const;
  bool Ready() const;

  // The agent loop: one finished cycle (the report may come with an error line when gathering
  // failed; the agent is ready after the first cycle either way).
  void SetCycle(std::shared_ptr<const NodeReport> report,
                std::shared_ptr<const NodeSnapshot> snapshot,
                std::shared_ptr<const SnapshotSummary> summary, int64_t started_unix_ms,
                int64_t finished_unix_ms, std::string error);

  // The coordinator link (through AgentServices). A result also updates probe_availability.
  // `rail` >= 0: the IB probe of that rail (selected by `ib_hca`), kept in rail_probes.
  void RecordProbe(ProbeResult result, int64_t now_unix_ms, int rail = -1, std::string ib_hca = {});
  void SetPairVerdict(const std::string& peer, PairVerdict verdict, int64_t now_unix_ms);
  void RemovePeer(const std::string& peer);  // its probe results and pair verdict vanish
  void SetProbeVerdict(std::optional<NodeVerdict> verdict);
  void SetCoordinatorStatus(std::string status);
  // The library check's verdict (RecordProbe also updates it from each probe that ran).
  void SetProbeAvailability(ProbeAvailability availability);
  void SetPool(std::string pool);

  // The workload engineer's checks (replaces the whole list each pass).
  void SetWorkloadFindings(std::vector<WorkloadFinding> findings);
  // The RAS watch: every pod's last answer (replaces the list) and the query totals by outcome.
  void SetRasJobs(std::vector<RasJobStatus> jobs, std::map<std::string, uint64_t> queries);

  // Probe durations recorded after `seq` (bounded history: the oldest are dropped first).
  std::vector<ProbeObservation> ProbeObservationsAfter(uint64_t seq) const;

  // Blocks until the generation exceeds `seen` or `stop` is requested; returns the generation.
  uint64_t WaitForChange(uint64_t seen, std::stop_token stop) const;

 private:
  void BumpLocked();

  mutable std::mutex mu_;
  mutable std::condition_variable_any changed_;
  AgentStateView state_;
  uint64_t probe_seq_ = 0;
  std::deque<ProbeObservation> observations_;
};

}  // namespace nccl_triage
