#include "coordinator/coordinator_metrics.h"

#include <array>
#include <map>
#include <utility>

#include "core/probe_availability.h"
#include "core/rails.h"

namespace nccl_triage {
namespace {

constexpr std::array kSpecs = {
    MetricSpec{"nccl_triage_coordinator_agents_connected", "gauge", "",
               "Agents with an open session to the coordinator."},
    MetricSpec{"nccl_triage_coordinator_sweeps_total", "counter", "", "Sweeps finished."},
    MetricSpec{"nccl_triage_coordinator_sweep_duration_seconds", "histogram", "",
               "Wall time of a sweep, all rounds."},
    MetricSpec{"nccl_triage_coordinator_probes_total", "counter", "mode,outcome",
               "Pair probes run, by mode (socket, ib, ib_rail: one per rail phase) and merged "
               "outcome (lost: an agent went away)."},
    MetricSpec{"nccl_triage_coordinator_localised_faults", "gauge", "kind",
               "Confirmed faults localised to a node or to a link."},
    MetricSpec{"nccl_triage_coordinator_fault", "gauge", "kind,node,peer,class,cause",
               "1 for each confirmed fault (peer is empty for node faults)."},
    MetricSpec{"nccl_triage_fault_since_timestamp_seconds", "gauge",
               "kind,node,peer,class,cause",
               "Unix time each confirmed fault (labels as nccl_triage_coordinator_fault) was "
               "first confirmed by this coordinator (one resumed after a restart: the restart)."},
    MetricSpec{"nccl_triage_coordinator_pairs_tested", "gauge", "",
               "Pairs tested in the current round-robin coverage cycle."},
    MetricSpec{"nccl_triage_coordinator_pairs_total", "gauge", "",
               "Pairs of the current node set (n(n-1)/2)."},
    MetricSpec{"nccl_triage_coordinator_node_unprobed_sweeps", "gauge", "node",
               "Sweeps in a row a connected node was left out of (its GPUs busy); 0 once probed."},
    MetricSpec{"nccl_triage_coordinator_probe_unavailable_nodes", "gauge", "reason",
               "Connected nodes whose agent says its NCCL probes cannot run, by reason (no_nccl, "
               "no_cuda, no_gpu, error, as nccl_triage_probe_available): left out of sweeps and "
               "triages, their verdicts from node checks only, never healthy."},
    MetricSpec{"nccl_triage_coordinator_last_sweep_timestamp_seconds", "gauge", "",
               "Unix time the last sweep finished."},
    MetricSpec{"nccl_triage_coordinator_leader", "gauge", "",
               "1 when this replica leads (always without coordinator.leader_election), 0 on a "
               "standby, whose fault and remediation series are empty."},
    MetricSpec{"nccl_triage_remediation_actions_total", "counter", "action,mode,result",
               "Remediation API calls on nodes, by action (taint, cordon, release, event), "
               "remediation.mode and result (ok, dry_run, conflict, error)."},
    MetricSpec{"nccl_triage_remediation_nodes", "gauge", "state",
               "Nodes by remediation state after the last sweep: tainted (carrying "
               "nccl-triage's taint), held_back (confirmed faulty, left alone by the circuit "
               "breaker), would_taint (dry-run)."},
    MetricSpec{"nccl_triage_remediation_breaker_open", "gauge", "",
               "1 when the last sweep's remediation held confirmed faulty nodes back "
               "(remediation.max_nodes or max_percent reached), else 0."},
    MetricSpec{"nccl_triage_validation_unvalidated_nodes", "gauge", "",
               "Nodes carrying nccl-triage.io/unvalidated after the last sweep: joined or "
               "rebooted, not yet through their probes (validation.new_nodes)."},
    MetricSpec{"nccl_triage_validation_breaker_open", "gauge", "",
               "1 when the last sweep left a joined or rebooted node untainted because "
               "validation.max_nodes or max_percent was reached, else 0."},
    MetricSpec{"nccl_triage_incidents_total", "counter", "class,cause",
               "Incidents nccl-triage triage concluded, by class and cause (cause empty: none)."},
    MetricSpec{"nccl_triage_rail_probe_success", "gauge", "node,rail,device,port",
               "Last sweep: 1 when the node's rail passed its IB probe with a peer, 0 when it "
               "failed with every peer it met."},
    MetricSpec{"nccl_triage_rail_probe_failures", "gauge", "node,rail,device,port",
               "Last sweep: the peers the node's rail failed its IB probe with."},
};

// The declared spec of `name`, found at compile time: a name missing from kSpecs does not build
// (exporter/metric_spec.h), never a family registered without its help.
consteval const MetricSpec& Spec(std::string_view name) { return DeclaredSpec(kSpecs, name); }

prometheus::Family<prometheus::Gauge>& GaugeFamily(prometheus::Registry& r, const MetricSpec& s) {
  return prometheus::BuildGauge().Name(std::string(s.name)).Help(std::string(s.help)).Register(r);
}

prometheus::Family<prometheus::Counter>& CounterFamily(prometheus::Registry& r,
                                                       const MetricSpec& s) {
  return prometheus::BuildCounter().Name(std::string(s.name)).Help(std::string(s.help)).Register(r);
}

}  // namespace

std::span<const MetricSpec> CoordinatorMetricSpecs() { return kSpecs; }

CoordinatorMetrics::CoordinatorMetrics() : registry_(std::make_shared<prometheus::Registry>()) {
  auto& r = *registry_;
  agents_ = &GaugeFamily(r, Spec("nccl_triage_coordinator_agents_connected")).Add({});
  sweeps_ = &CounterFamily(r, Spec("nccl_triage_coordinator_sweeps_total")).Add({});
  constexpr const MetricSpec& kDuration = Spec("nccl_triage_coordinator_sweep_duration_seconds");
  sweep_duration_ = &prometheus::BuildHistogram()
                         .Name(std::string(kDuration.name))
                         .Help(std::string(kDuration.help))
                         .Register(r)
                         .Add({}, prometheus::Histogram::BucketBoundaries{0.1, 0.5, 1, 5, 15, 60,
                                                                          300, 900, 3600});
  probes_ = &CounterFamily(r, Spec("nccl_triage_coordinator_probes_total"));
  localised_family_ = &GaugeFamily(r, Spec("nccl_triage_coordinator_localised_faults"));
  localised_node_ = &localised_family_->Add({{"kind", "node"}});
  localised_link_ = &localised_family_->Add({{"kind", "link"}});
  unprobed_ = std::make_unique<GaugeSeries>(
      GaugeFamily(r, Spec("nccl_triage_coordinator_node_unprobed_sweeps")));
  probe_unavailable_ = std::make_unique<GaugeSeries>(
      GaugeFamily(r, Spec("nccl_triage_coordinator_probe_unavailable_nodes")));
  SetProbeUnavailable({});
  fault_ = std::make_unique<GaugeSeries>(GaugeFamily(r, Spec("nccl_triage_coordinator_fault")));
  fault_since_ = std::make_unique<GaugeSeries>(
      GaugeFamily(r, Spec("nccl_triage_fault_since_timestamp_seconds")));
  pairs_tested_ = &GaugeFamily(r, Spec("nccl_triage_coordinator_pairs_tested")).Add({});
  pairs_total_ = &GaugeFamily(r, Spec("nccl_triage_coordinator_pairs_total")).Add({});
  last_sweep_ =
      &GaugeFamily(r, Spec("nccl_triage_coordinator_last_sweep_timestamp_seconds")).Add({});
  incidents_ = &CounterFamily(r, Spec("nccl_triage_incidents_total"));
  rail_success_ =
      std::make_unique<GaugeSeries>(GaugeFamily(r, Spec("nccl_triage_rail_probe_success")));
  rail_failures_ =
      std::make_unique<GaugeSeries>(GaugeFamily(r, Spec("nccl_triage_rail_probe_failures")));
  remediation_actions_ = &CounterFamily(r, Spec("nccl_triage_remediation_actions_total"));
  auto& nodes = GaugeFamily(r, Spec("nccl_triage_remediation_nodes"));
  remediation_tainted_ = &nodes.Add({{"state", "tainted"}});
  remediation_held_back_ = &nodes.Add({{"state", "held_back"}});
  remediation_would_taint_ = &nodes.Add({{"state", "would_taint"}});
  remediation_breaker_ =
      &GaugeFamily(r, Spec("nccl_triage_remediation_breaker_open")).Add({});
  validation_unvalidated_ =
      &GaugeFamily(r, Spec("nccl_triage_validation_unvalidated_nodes")).Add({});
  validation_breaker_ = &GaugeFamily(r, Spec("nccl_triage_validation_breaker_open")).Add({});
  leader_ = &GaugeFamily(r, Spec("nccl_triage_coordinator_leader")).Add({});
  leader_->Set(1);
}

CoordinatorMetrics::~CoordinatorMetrics() = default;

void CoordinatorMetrics::SetAgentsConnected(size_t n) {
  std::lock_guard lock(mu_);
  agents_->Set(static_cast<double>(n));
}

void CoordinatorMetrics::CountProbe(std::string_view mode, std::string_view outcome) {
  std::lock_guard lock(mu_);
  probes_->Add({{"mode", std::string(mode)}, {"outcome", std::string(outcome)}}).Increment();
}

void CoordinatorMetrics::ObserveSweep(double seconds, int64_t finished_unix_ms) {
  std::lock_guard lock(mu_);
  sweeps_->Increment();
  sweep_duration_->Observe(seconds);
  last_sweep_->Set(static_cast<double>(finished_unix_ms) / 1000.0);
}

void CoordinatorMetrics::SetFaults(const std::vector<TrackedFault>& confirmed,
                                   int64_t now_unix_ms) {
  std::lock_guard lock(mu_);
  int nodes = 0;
  int links = 0;
  std::map<prometheus::Labels, double> since;
  for (const auto& t : confirmed) {
    const LocalisedFault& f = t.fault;
    const bool node = f.kind == FaultKind::kNode;
    (node ? nodes : links)++;
    prometheus::Labels labels = {{"kind", std::string(ToString(f.kind))},
                                 {"node", f.nodes.empty() ? "" : f.nodes[0]},
                                 {"peer", node || f.nodes.size() < 2 ? "" : f.nodes[1]},
                                 {"class", std::string(ToString(f.fault_class))},
                                 {"cause", f.causes.empty() ? "" : f.causes[0]}};
    fault_->Set(labels, 1);
    // The first time this fault (these labels) was seen confirmed; kept while it stays so.
    auto was = fault_since_unix_s_.find(labels);
    const double first =
        was != fault_since_unix_s_.end() ? was->second : static_cast<double>(now_unix_ms) / 1000.0;
    fault_since_->Set(labels, first);
    since.emplace(std::move(labels), first);
  }
  fault_since_unix_s_ = std::move(since);
  fault_->Sweep();
  fault_since_->Sweep();
  localised_node_->Set(nodes);
  localised_link_->Set(links);
}

void CoordinatorMetrics::SetUnprobedSweeps(const std::map<std::string, uint64_t>& by_node) {
  std::lock_guard lock(mu_);
  for (const auto& [node, sweeps] : by_node) {
    unprobed_->Set({{"node", node}}, static_cast<double>(sweeps));
  }
  unprobed_->Sweep();
}

void CoordinatorMetrics::SetProbeUnavailable(const std::map<std::string, size_t>& by_reason) {
  std::lock_guard lock(mu_);
  // The reasons the agents have are always served (0 when none): an alert can say "== 0".
  for (std::string_view reason : kProbeAvailabilityReasons) {
    if (reason == kProbesAvailable || reason == kProbesPending) continue;
    const std::string word(reason);
    if (!by_reason.contains(word)) probe_unavailable_->Set({{"reason", word}}, 0);
  }
  for (const auto& [reason, nodes] : by_reason) {
    probe_unavailable_->Set({{"reason", reason}}, static_cast<double>(nodes));
  }
  probe_unavailable_->Sweep();
}

void CoordinatorMetrics::SetCoverage(uint64_t tested, uint64_t total) {
  std::lock_guard lock(mu_);
  pairs_tested_->Set(static_cast<double>(tested));
  pairs_total_->Set(static_cast<double>(total));
}

void CoordinatorMetrics::CountIncident(std::string_view fault_class, std::string_view cause) {
  std::lock_guard lock(mu_);
  incidents_->Add({{"class", std::string(fault_class)}, {"cause", std::string(cause)}}).Increment();
}

void CoordinatorMetrics::SetRailProbes(const std::vector<PairOutcome>& pairs) {
  struct Tally {
    std::string device;
    int passed = 0;
    int failed = 0;
  };
  std::map<std::pair<std::string, int>, Tally> tally;
  for (const auto& p : pairs) {
    for (const auto& r : p.rails) {
      for (const std::string* node : {&r.pair.a, &r.pair.b}) {
        Tally& t = tally[{*node, r.rail}];
        t.device = r.device;
        (r.passed ? t.passed : t.failed)++;
      }
    }
  }
  std::lock_guard lock(mu_);
  for (const auto& [key, t] : tally) {
    const auto [device, port] = SplitRailPortName(t.device);
    const prometheus::Labels labels = {{"node", key.first},
                                       {"rail", std::to_string(key.second)},
                                       {"device", device},
                                       {"port", port > 0 ? std::to_string(port) : ""}};
    rail_success_->Set(labels, t.passed > 0 ? 1 : 0);
    rail_failures_->Set(labels, t.failed);
  }
  rail_success_->Sweep();
  rail_failures_->Sweep();
}

void CoordinatorMetrics::CountRemediation(std::string_view action, std::string_view mode,
                                          std::string_view result) {
  std::lock_guard lock(mu_);
  remediation_actions_
      ->Add({{"action", std::string(action)},
             {"mode", std::string(mode)},
             {"result", std::string(result)}})
      .Increment();
}

void CoordinatorMetrics::SetValidation(size_t unvalidated, bool breaker_open) {
  std::lock_guard lock(mu_);
  validation_unvalidated_->Set(static_cast<double>(unvalidated));
  validation_breaker_->Set(breaker_open ? 1 : 0);
}

void CoordinatorMetrics::SetRemediation(size_t tainted, size_t held_back, size_t would_taint,
                                        bool breaker_open) {
  std::lock_guard lock(mu_);
  remediation_tainted_->Set(static_cast<double>(tainted));
  remediation_held_back_->Set(static_cast<double>(held_back));
  remediation_would_taint_->Set(static_cast<double>(would_taint));
  remediation_breaker_->Set(breaker_open ? 1 : 0);
}

void CoordinatorMetrics::SetLeader(bool leading) {
  std::lock_guard lock(mu_);
  leader_->Set(leading ? 1 : 0);
}

std::string CoordinatorMetrics::Text() {
  std::lock_guard lock(mu_);
  return SerializeMetrics(registry_->Collect());
}

}  // namespace nccl_triage
