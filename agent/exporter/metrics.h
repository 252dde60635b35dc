// AgentMetrics: the agent's Prometheus metrics (names and labels fixed by the runtime contract and
// listed in the README), refreshed from the AgentState at every scrape.
//
// The AgentState is the one source of truth; metrics are a view of it, so a probe result or a
// verdict set by the coordinator link shows up at the next scrape without anyone pushing it.
// State-like metrics are one-hot gauges in the kube-state-metrics style: every state of the label
// is present with value 0 or 1. Series of ports, peers, checks and pods that vanished from the
// state are removed. ib_port_errors_total is a Prometheus counter whose value is the sysfs counter
// itself (a custom Collectable: prometheus-cpp counters can only be incremented).
//
// Thread safety: Scrape(), Refresh() and Collect() may be called from any thread; they serialise
// on an internal mutex. The AgentState must outlive this object.
#pragma once

#include <prometheus/collectable.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "exporter/metric_spec.h"
#include "kernel/kernel_judge.h"
#include "state/agent_state.h"

namespace nccl_triage {

std::span<const MetricSpec> AgentMetricSpecs();

// The spec named `name` in `specs`, for names read at run time; throws std::logic_error for a
// name that is not declared. Names written in the code go through DeclaredSpec (metric_spec.h).
const MetricSpec& FindMetricSpec(std::span<const MetricSpec> specs, std::string_view name);

// The values each one-hot state label takes (others seen on a node are added as they appear).
inline constexpr std::string_view kVerdictClasses[] = {"healthy", "architecture", "ib_resource",
                                                       "unknown"};
inline constexpr std::string_view kCheckStatuses[] = {"pass", "warn", "fail", "skip"};
inline constexpr std::string_view kPortStates[] = {"DOWN", "INIT", "ARMED", "ACTIVE",
                                                   "ACTIVE_DEFER"};
inline constexpr std::string_view kPortPhysicalStates[] = {
    "Sleep",  "Polling",           "Disabled", "PortConfigurationTraining",
    "LinkUp", "LinkErrorRecovery", "Phy Test"};

// Keeps the series of one gauge family equal to a desired set: Set() marks a label set present in
// this round, Sweep() removes every series that was not Set() since the previous Sweep().
// Not thread-safe on its own (AgentMetrics serialises).
class GaugeSeries {
 public:
  explicit GaugeSeries(prometheus::Family<prometheus::Gauge>& family) : family_(family) {}
  void Set(const prometheus::Labels& labels, double value);
  // Every state in `states` with 0, `current` with 1 (added when it is not one of `states`).
  void SetOneHot(prometheus::Labels labels, const std::string& state_label,
                 std::span<const std::string_view> states, std::string_view current);
  void Sweep();
  size_t size() const { return series_.size(); }

 private:
  struct Entry {
    prometheus::Gauge* gauge = nullptr;
    bool seen = false;
  };
  prometheus::Family<prometheus::Gauge>& family_;
  std::map<prometheus::Labels, Entry> series_;
};

// Label values come from the host and its users (device, pod and container names, kernel-log
// keys): each that is not UTF-8 is replaced by its SanitizeUtf8 form (base/utf8.h), as the text
// format requires. CollectLocked() and SerializeMetrics() apply it to everything they return.
void SanitizeLabelValues(std::vector<prometheus::MetricFamily>& families);

// Serialises families in the Prometheus text format (0.0.4), label values sanitised.
std::string SerializeMetrics(const std::vector<prometheus::MetricFamily>& families);

// The names of `disabled` that are not agent metric families ("" when all are): the agent refuses
// to start on a misspelt agent.metrics_disabled rather than export everything silently.
std::string UnknownMetricFamilies(std::span<const std::string> disabled);

// What the kernel-log counters read at each collection (kernel/kernel_monitor.h): totals since the
// agent started.
using KernelCountsSource = std::function<kernel::KernelCounts()>;

class AgentMetrics {
 public:
  // Families named in `disabled` are neither refreshed nor served (a config switch for series a
  // fleet does not want: per-port counters, per-peer probe gauges).
  AgentMetrics(const AgentState& state, std::string version,
               std::vector<std::string> disabled = {});
  ~AgentMetrics();
  AgentMetrics(const AgentMetrics&) = delete;
  AgentMetrics& operator=(const AgentMetrics&) = delete;

  // The nccl_triage_kernel_* counters, read from `source` at each collection (thread-safe; the
  // agent follows the kernel log in its cycle, so the cached text of a generation stays right).
  // Without a source those families are absent.
  void SetKernelCounts(KernelCountsSource source);

  // Refresh from the state, then serialise: the body of GET /metrics. While the state's
  // generation has not moved, the previous text is returned as it is.
  std::string Scrape();
  // Refresh from the state, then collect (tests and the benchmark look at the families).
  std::vector<prometheus::MetricFamily> Collect();
  // Only the serialisation of what the last refresh left (the benchmark's "serialise alone").
  std::string SerializeOnly();

 private:
  class PortCounters;
  class KernelCounters;
  void RefreshLocked(const AgentStateView& view);
  std::vector<prometheus::MetricFamily> CollectLocked() const;

  bool Enabled(std::string_view family) const;

  const AgentState& state_;
  const std::vector<std::string> disabled_;
  std::mutex mu_;
  std::shared_ptr<prometheus::Registry> registry_;
  std::shared_ptr<PortCounters> port_counters_;
  std::shared_ptr<KernelCounters> kernel_counters_;  // guarded by mu_
  uint64_t observed_probe_seq_ = 0;
  std::map<std::string, uint64_t> ras_queries_;  // from the last refresh
  std::optional<uint64_t> cached_generation_;  // the state generation cached_text_ shows
  std::string cached_text_;

  prometheus::Family<prometheus::Histogram>* probe_duration_ = nullptr;
  std::map<ProbeMode, prometheus::Histogram*> probe_duration_by_mode_;
  std::unique_ptr<GaugeSeries> node_verdict_, check_status_, port_state_, port_phys_state_,
      port_rate_, expected_bw_, memlock_, shm_, probe_success_, probe_busbw_, rail_success_,
      rail_busbw_, pair_verdict_, last_check_, last_probe_, build_info_, nccl_info_,
      workload_status_, probe_available_, job_unresponsive_, job_dead_, job_lag_, job_answered_,
      job_diagnostics_;
};

}  // namespace nccl_triage
