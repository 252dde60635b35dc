// CoordinatorMetrics: the coordinator's Prometheus metrics (names fixed by the runtime contract,
// prefix nccl_triage_coordinator_), updated by the coordinator as things happen and serialised on
// GET /metrics.
//
//   agents_connected                         gauge
//   sweeps_total                             counter
//   sweep_duration_seconds                   histogram
//   probes_total{mode,outcome}               counter (one per pair and mode, mode socket|ib, and
//                                            one per rail phase, mode ib_rail; outcome "lost"
//                                            when an agent disconnected or never reported)
//   localised_faults{kind}                   gauge (kind node|link: confirmed faults now)
//   fault{kind,node,peer,class,cause}        gauge 1 per confirmed fault (peer "" for node faults)
//   nccl_triage_fault_since_timestamp_seconds{same labels}: unix time first confirmed
//   pairs_tested / pairs_total               gauges (round-robin coverage of the current cycle)
//   node_unprobed_sweeps{node}               gauge (sweeps in a row a connected node was left out)
//   probe_unavailable_nodes{reason}          gauge (connected nodes whose probes cannot run; the
//                                            agents' reasons, each served, 0 when none)
//   last_sweep_timestamp_seconds             gauge
//   leader                                   gauge (1: this replica leads: always without
//                                            coordinator.leader_election; 0: a standby)
// and, without the coordinator_ prefix (an incident is the job's, not the coordinator's; a rail
// is the node's):
//   nccl_triage_incidents_total{class,cause} counter (incidents `nccl-triage triage` concluded)
//   rail_probe_success{node,rail,device,port}  gauge (last sweep: 1 the rail passed with a peer,
//                                              0 it failed with every peer it met)
//   rail_probe_failures{node,rail,device,port} gauge (last sweep: peers the rail failed with)
//   remediation_actions_total{action,mode,result}  counter (remediation API calls on nodes)
//   remediation_nodes{state}                 gauge (tainted | held_back | would_taint)
//   remediation_breaker_open                 gauge (1: the circuit breaker held nodes back)
//   validation_unvalidated_nodes             gauge (nodes carrying nccl-triage.io/unvalidated)
//   validation_breaker_open                  gauge (1: the validation breaker refused a node)
// The rail series are those of the last sweep's conclusive per-rail probes: at most one per rail
// of each node (8 on a DGX), none without probe.rails.
//
// Thread-safe: every method takes an internal mutex.
#pragma once

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "exporter/metrics.h"
#include "planner/hold_down.h"
#include "planner/sweep.h"

namespace nccl_triage {

std::span<const MetricSpec> CoordinatorMetricSpecs();

// probes_total's mode of a per-rail IB phase (probe.rails): one value for every rail, so the
// series stay bounded by modes x outcomes.
inline constexpr std::string_view kRailProbeMode = "ib_rail";

class CoordinatorMetrics {
 public:
  CoordinatorMetrics();
  ~CoordinatorMetrics();
  CoordinatorMetrics(const CoordinatorMetrics&) = delete;
  CoordinatorMetrics& operator=(const CoordinatorMetrics&) = delete;

  void SetAgentsConnected(size_t n);
  void CountProbe(std::string_view mode, std::string_view outcome);
  void ObserveSweep(double seconds, int64_t finished_unix_ms);
  // `now_unix_ms`: the time a fault not confirmed before is first published as confirmed.
  void SetFaults(const std::vector<TrackedFault>& confirmed, int64_t now_unix_ms);
  void SetCoverage(uint64_t tested, uint64_t total);
  // One series per connected node; nodes not in the map lose theirs.
  void SetUnprobedSweeps(const std::map<std::string, uint64_t>& by_node);
  // Connected nodes whose agent says its probes cannot run, by reason (ProbesCannotRun).
  void SetProbeUnavailable(const std::map<std::string, size_t>& by_reason);
  void CountIncident(std::string_view fault_class, std::string_view cause);
  // The per-rail outcomes of a sweep's pairs; (node, rail)s it did not probe lose their series.
  void SetRailProbes(const std::vector<PairOutcome>& pairs);
  // One remediation API call (coordinator/remediator.h) and the state after a step.
  void CountRemediation(std::string_view action, std::string_view mode, std::string_view result);
  void SetRemediation(size_t tainted, size_t held_back, size_t would_taint, bool breaker_open);
  // The node validator's state after a step (coordinator/node_validator.h).
  void SetValidation(size_t unvalidated, bool breaker_open);
  void SetLeader(bool leading);

  std::string Text();

 private:
  std::mutex mu_;
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Gauge* agents_ = nullptr;
  prometheus::Counter* sweeps_ = nullptr;
  prometheus::Histogram* sweep_duration_ = nullptr;
  prometheus::Family<prometheus::Counter>* probes_ = nullptr;
  prometheus::Family<prometheus::Gauge>* localised_family_ = nullptr;
  prometheus::Gauge* localised_node_ = nullptr;
  prometheus::Gauge* localised_link_ = nullptr;
  std::unique_ptr<GaugeSeries> fault_;
  std::unique_ptr<GaugeSeries> fault_since_;
  std::map<prometheus::Labels, double> fault_since_unix_s_;  // labels -> first confirmed
  std::unique_ptr<GaugeSeries> unprobed_;
  std::unique_ptr<GaugeSeries> probe_unavailable_;
  prometheus::Gauge* pairs_tested_ = nullptr;
  prometheus::Gauge* pairs_total_ = nullptr;
  prometheus::Gauge* last_sweep_ = nullptr;
  prometheus::Family<prometheus::Counter>* incidents_ = nullptr;
  std::unique_ptr<GaugeSeries> rail_success_;
  std::unique_ptr<GaugeSeries> rail_failures_;
  prometheus::Family<prometheus::Counter>* remediation_actions_ = nullptr;
  prometheus::Gauge* remediation_tainted_ = nullptr;
  prometheus::Gauge* remediation_held_back_ = nullptr;
  prometheus::Gauge* remediation_would_taint_ = nullptr;
  prometheus::Gauge* remediation_breaker_ = nullptr;
  prometheus::Gauge* validation_unvalidated_ = nullptr;
  prometheus::Gauge* validation_breaker_ = nullptr;
  prometheus::Gauge* leader_ = nullptr;
};

}  // namespace nccl_triage
