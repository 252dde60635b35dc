#include "exporter/metrics.h"

#include <prometheus/text_serializer.h>

#include <algorithm>
#include <array>
#include <sstream>
#include <stdexcept>
#include <tuple>

#include "base/utf8.h"
#include "core/rails.h"

namespace nccl_triage {
namespace {

constexpr std::array kSpecs = {
    MetricSpec{"nccl_triage_node_verdict", "gauge", "class,basis,pool",
               "Verdict on this node, one-hot over class; basis is checks (a prediction from the "
               "host checks) or probes (confirmed by NCCL probes); pool is the config.pools entry "
               "the node matched (absent when none).",
               "the node's verdict, one-hot over `healthy`, `architecture`, `ib_resource`, "
               "`unknown`; `basis` is `checks` (a prediction from the host checks) or `probes` "
               "(the coordinator's verdict from NCCL probes, which wins when present); `pool` is "
               "the [`config.pools`](configuration.md#node-pools) entry the node matched (absent "
               "when none)"},
    MetricSpec{"nccl_triage_check_status", "gauge", "check,class,status",
               "Status of each host check, one-hot over status; class is where the fix lives.",
               "each host check, one-hot over `pass`, `warn`, `fail`, `skip`; `class` is where "
               "the fix lives"},
    MetricSpec{"nccl_triage_ib_port_state", "gauge", "device,port,state",
               "Logical state of each InfiniBand/RoCE port as the kernel names it, one-hot.",
               "each port's logical state as the kernel names it, one-hot over `DOWN`, `INIT`, "
               "`ARMED`, `ACTIVE`, `ACTIVE_DEFER` (another value the kernel reports is added as "
               "its own series)"},
    MetricSpec{"nccl_triage_ib_port_physical_state", "gauge", "device,port,state",
               "Physical state of each port as the kernel names it, one-hot.",
               "each port's physical state, one-hot over `Sleep`, `Polling`, `Disabled`, "
               "`PortConfigurationTraining`, `LinkUp`, `LinkErrorRecovery`, `Phy Test`"},
    MetricSpec{"nccl_triage_ib_port_rate_bytes_per_second", "gauge", "device,port",
               "Negotiated rate of each port in bytes per second.",
               "negotiated rate (`200 Gb/sec (4X HDR)` is 25e9)"},
    MetricSpec{"nccl_triage_ib_port_errors_total", "counter", "device,port,counter",
               "The port's sysfs error counters (ports/<n>/counters/<counter>).",
               "the port's sysfs error counters as the kernel counts them (`symbol_error`, "
               "`link_downed`, `link_error_recovery`, `port_rcv_errors`, "
               "`port_rcv_remote_physical_errors`, `port_rcv_switch_relay_errors`, "
               "`port_rcv_constraint_errors`, `port_xmit_discards`, "
               "`port_xmit_constraint_errors`, `local_link_integrity_errors`, "
               "`excessive_buffer_overrun_errors`, `VL15_dropped`, those present)"},
    MetricSpec{"nccl_triage_ib_expected_bytes_per_second", "gauge", "",
               "What one port of this node should carry: expect.rate_gbps, else the highest "
               "port rate on the node.",
               "what one port should carry: `expect.rate_gbps` when set, else the highest port "
               "rate of the node (for bus-bandwidth alerts)"},
    MetricSpec{"nccl_triage_memlock_limit_bytes", "gauge", "",
               "Soft RLIMIT_MEMLOCK of the agent's container in bytes (+Inf when unlimited).",
               "the agent container's soft `RLIMIT_MEMLOCK`; `+Inf` when unlimited"},
    MetricSpec{"nccl_triage_shm_size_bytes", "gauge", "", "Size of the /dev/shm tmpfs in bytes.",
               "size of the `/dev/shm` tmpfs (half of RAM when mounted without `size=`)"},
    MetricSpec{"nccl_triage_probe_success", "gauge", "peer,mode",
               "1 when the last probe with this peer and mode passed, else 0.",
               "1 when the last probe with this peer and mode (`socket`, `ib`) passed, else 0; a "
               "rail's IB probe never stands for the pair's `ib` (the agent keeps it apart: "
               "`rail_probes` in its `/status`, with `rail` and `ib_hca`, and "
               "`nccl_triage_rail_last_probe_*` below; the localised per-rail series are the "
               "coordinator's `nccl_triage_rail_probe_*`)"},
    MetricSpec{"nccl_triage_probe_busbw_bytes_per_second", "gauge", "peer,mode",
               "Bus bandwidth of the last probe with this peer and mode.",
               "bus bandwidth of that probe"},
    MetricSpec{"nccl_triage_rail_last_probe_success", "gauge", "rail,device,port",
               "1 when the last per-rail IB probe on this rail of the node passed (with whichever "
               "peer), else 0.",
               "1 when the last per-rail IB probe on this rail of the node passed, whichever peer "
               "it was with, else 0; one series per rail (8 on a DGX), present once the "
               "coordinator's sweeps probe rails (`probe.rails`). The agent's raw view: which end "
               "of a failed rail is at fault is the coordinator's localised "
               "`nccl_triage_rail_probe_*`; every (peer, rail) result is in `/status` "
               "`rail_probes`"},
    MetricSpec{"nccl_triage_rail_last_probe_busbw_bytes_per_second", "gauge", "rail,device,port",
               "Bus bandwidth of the last per-rail IB probe on this rail of the node.",
               "bus bandwidth of that probe (against the rail's port rate ÷ 8)"},
    MetricSpec{"nccl_triage_probe_duration_seconds", "histogram", "mode",
               "Wall time of each probe, start of the child to its result.",
               "wall time of every probe (buckets 0.5 s to 300 s)"},
    MetricSpec{"nccl_triage_pair_verdict", "gauge", "peer,class",
               "Coordinator's verdict on the pair (this node, peer), one-hot over class.",
               "the coordinator's verdict on the pair (this node, peer), one-hot over the four "
               "classes"},
    MetricSpec{"nccl_triage_last_check_timestamp_seconds", "gauge", "",
               "Unix time the last check cycle finished.",
               "Unix time the last check cycle finished (absent before the first)"},
    MetricSpec{"nccl_triage_last_probe_timestamp_seconds", "gauge", "",
               "Unix time the last probe result was recorded.",
               "Unix time the last probe result was recorded (absent before the first)"},
    MetricSpec{"nccl_triage_build_info", "gauge", "version", "Always 1; the agent's version.",
               "always 1; the agent's version"},
    MetricSpec{"nccl_triage_nccl_info", "gauge", "version",
               "Always 1; the NCCL version the last probe loaded.",
               "always 1; the NCCL version the last probe loaded (absent before a probe)"},
    MetricSpec{"nccl_triage_probe_available", "gauge", "reason,pool",
               "1 when this node's probes can run (reason ok), else 0 with why: pending (not "
               "checked yet), no_nccl, no_cuda, no_gpu, error.",
               "1 when this node's probes can run (`reason=\"ok\"`), else 0 and `reason` says "
               "why: `pending` (not checked yet), `no_nccl`, `no_cuda`, `no_gpu` (causes "
               "`probe.no_nccl`, `probe.no_cuda`, `probe.no_gpu`), `error` (the check could not "
               "start); one series. Set by the agent's start-up library check, then by every "
               "probe, and checked again after each cycle while it is not ok or pending; the "
               "agent tells the coordinator too, which then leaves the node out of its sweeps"},
    MetricSpec{"nccl_triage_workload_check_status", "gauge", "namespace,pod,container,check,status",
               "Status of each workload check on each GPU container on this node, one-hot over "
               "status.",
               "each workload check on each GPU container of the node, one-hot over `pass`, "
               "`warn`, `fail`, `skip`"},
    MetricSpec{"nccl_triage_job_ranks_unresponsive", "gauge", "namespace,pod",
               "Ranks of the GPU pod's NCCL job whose process did not answer the last RAS query "
               "(the communicator that misses the most); ras.enabled only.",
               "ranks of the pod's NCCL job whose process did not answer its RAS thread at the "
               "last query (stopped, wedged, or lost less than 60 s ago), in the communicator "
               "that misses the most; present while the pod's last query was answered "
               "([`ras.enabled`](ras.md#in-the-agent))"},
    MetricSpec{"nccl_triage_job_ranks_dead", "gauge", "namespace,pod",
               "Ranks of the GPU pod's NCCL job whose process the RAS network considers dead "
               "(the communicator that misses the most); ras.enabled only.",
               "ranks whose process NCCL's RAS network considers dead (lost for 60 s), in the "
               "communicator that misses the most"},
    MetricSpec{"nccl_triage_job_collective_lag", "gauge", "namespace,pod",
               "Largest spread of one collective's launch counts between the ranks of one "
               "communicator at the last RAS query; ras.enabled only.",
               "the largest spread (highest minus lowest) of one collective's launch counts among "
               "the ranks of one communicator at the last query; a running job shows 0 to 2, a "
               "rank stuck in its own code falls behind and stays there"},
    MetricSpec{"nccl_triage_job_ras_last_answer_timestamp_seconds", "gauge", "namespace,pod",
               "Unix time the GPU pod's RAS port last answered a query.",
               "Unix time the pod's RAS port last answered (the age of the three gauges above)"},
    MetricSpec{"nccl_triage_job_diagnostics_findings", "gauge", "namespace,pod,causes",
               "Findings that name a fault in the last NCCL diagnostics report of the GPU pod's RAS "
               "port (failed checks, not settings that merely differ); ras.diagnostics only.",
               "findings that name a fault in the last diagnostics report of the pod's RAS port "
               "(NCCL 2.31+, [`ras.diagnostics`](ras.md#diagnostics)): checks NCCL reports "
               "failed, judged by the classifier's rules; a setting that differs between ranks "
               "is in the annotation but not counted (jobs set some per rank on purpose); "
               "`causes` lists the cause ids of every finding, comma-separated; present once a "
               "report was read"},
    MetricSpec{"nccl_triage_job_ras_queries_total", "counter", "outcome",
               "RAS queries the agent sent since it started, by outcome: ok, refused, timeout, "
               "protocol_error, error.",
               "RAS queries since the agent started, by `outcome`: `ok` (a report was read), "
               "`refused` (nothing listens, or the connection was closed or reset), `timeout` "
               "(no report within `ras.timeout_ms`), `protocol_error` (not a RAS server, or a "
               "report that does not parse), `error` (the pod's network namespace could not be "
               "entered)"},
    MetricSpec{"nccl_triage_kernel_link_down_total", "counter", "device,port",
               "HCA port downs the kernel logged since the agent started (mlx5 `Link DOWN`); its "
               "increase over an hour is the port's link flaps.",
               "HCA port downs the kernel logged since the agent started (mlx5 `Link DOWN`); "
               "`increase(...[1h])` is the port's link flaps (see \"Kernel log\")"},
    MetricSpec{"nccl_triage_kernel_xid_total", "counter", "code",
               "NVIDIA Xid errors the kernel logged since the agent started, by Xid code.",
               "NVIDIA Xid errors the kernel logged since the agent started, by Xid code (at most "
               "256 codes; see `nccl_triage_kernel_events_dropped_total`)"},
    MetricSpec{"nccl_triage_kernel_events_dropped_total", "counter", "reason",
               "Kernel-log events not counted under a key of the kernel counters: key_limit (the "
               "family already has 256 series), invalid_code (an Xid code that is not one).",
               "kernel-log events the per-key counters above did not count: `key_limit` (the "
               "port or Xid family already holds 256 series, so a flood of distinct keys cannot "
               "grow `/metrics`), `invalid_code` (an Xid line whose code is not a number in "
               "0..999); absent until one is dropped"},
};

// The declared spec of `name`, found at compile time: a name missing from kSpecs does not build
// (metric_spec.h), so no family is registered with another's help or left out at run time.
consteval const MetricSpec& Spec(std::string_view name) { return DeclaredSpec(kSpecs, name); }

// An empty counter family of the contract, named and described by its spec.
prometheus::MetricFamily CounterFamily(const MetricSpec& spec) {
  prometheus::MetricFamily family;
  family.name = std::string(spec.name);
  family.help = std::string(spec.help);
  family.type = prometheus::MetricType::Counter;
  return family;
}

std::unique_ptr<GaugeSeries> NewGauge(prometheus::Registry& registry, const MetricSpec& spec) {
  auto& family = prometheus::BuildGauge()
                     .Name(std::string(spec.name))
                     .Help(std::string(spec.help))
                     .Register(registry);
  return std::make_unique<GaugeSeries>(family);
}

constexpr std::array kProbeModes = {ProbeMode::kSocket, ProbeMode::kIb};

}  // namespace

std::span<const MetricSpec> AgentMetricSpecs() { return kSpecs; }

const MetricSpec& FindMetricSpec(std::span<const MetricSpec> specs, std::string_view name) {
  for (const auto& s : specs) {
    if (s.name == name) return s;
  }
  throw std::logic_error("metric " + std::string(name) + " is not declared in its MetricSpec table");
}

void GaugeSeries::Set(const prometheus::Labels& labels, double value) {
  auto it = series_.find(labels);
  if (it == series_.end()) {
    it = series_.emplace(labels, Entry{&family_.Add(labels), false}).first;
  }
  it->second.gauge->Set(value);
  it->second.seen = true;
}

void GaugeSeries::SetOneHot(prometheus::Labels labels, const std::string& state_label,
                            std::span<const std::string_view> states, std::string_view current) {
  bool known = false;
  for (std::string_view s : states) {
    labels[state_label] = std::string(s);
    Set(labels, s == current ? 1 : 0);
    known |= s == current;
  }
  if (!known && !current.empty()) {
    labels[state_label] = std::string(current);
    Set(labels, 1);
  }
}

void GaugeSeries::Sweep() {
  for (auto it = series_.begin(); it != series_.end();) {
    if (!it->second.seen) {
      family_.Remove(it->second.gauge);
      it = series_.erase(it);
    } else {
      it->second.seen = false;
      ++it;
    }
  }
}

void SanitizeLabelValues(std::vector<prometheus::MetricFamily>& families) {
  for (auto& family : families) {
    for (auto& metric : family.metric) {
      for (auto& label : metric.label) {
        if (!IsValidUtf8(label.value)) label.value = SanitizeUtf8(label.value);
      }
    }
  }
}

std::string SerializeMetrics(const std::vector<prometheus::MetricFamily>& families) {
  prometheus::TextSerializer serializer;
  std::ostringstream out;
  const bool clean = std::all_of(families.begin(), families.end(), [](const auto& family) {
    return std::all_of(family.metric.begin(), family.metric.end(), [](const auto& metric) {
      return std::all_of(metric.label.begin(), metric.label.end(),
                         [](const auto& label) { return IsValidUtf8(label.value); });
    });
  });
  if (clean) {
    serializer.Serialize(out, families);
  } else {
    std::vector<prometheus::MetricFamily> copy = families;
    SanitizeLabelValues(copy);
    serializer.Serialize(out, copy);
  }
  return out.str();
}

// The sysfs error counters as a Prometheus counter family, replaced wholesale at each refresh.
class AgentMetrics::PortCounters final : public prometheus::Collectable {
 public:
  void Update(const SnapshotSummary* summary) {
    prometheus::MetricFamily family = CounterFamily(Spec("nccl_triage_ib_port_errors_total"));
    if (summary) {
      for (const auto& port : summary->ports) {
        for (const auto& [counter, value] : port.error_counters) {
          prometheus::ClientMetric m;
          m.label = {
              {"counter", counter}, {"device", port.device}, {"port", std::to_string(port.port)}};
          m.counter.value = static_cast<double>(value);
          family.metric.push_back(std::move(m));
        }
      }
    }
    std::lock_guard lock(mu_);
    family_ = std::move(family);
  }
  std::vector<prometheus::MetricFamily> Collect() const override {
    std::lock_guard lock(mu_);
    return {family_};
  }

 private:
  mutable std::mutex mu_;
  prometheus::MetricFamily family_;
};

// The kernel-log counters, read from their source at each collection.
class AgentMetrics::KernelCounters final : public prometheus::Collectable {
 public:
  explicit KernelCounters(KernelCountsSource source) : source_(std::move(source)) {}
  std::vector<prometheus::MetricFamily> Collect() const override {
    const kernel::KernelCounts now = source_();
    auto add = [](prometheus::MetricFamily& f, std::vector<prometheus::ClientMetric::Label> labels,
                  int64_t value) {
      prometheus::ClientMetric m;
      m.label = std::move(labels);
      m.counter.value = static_cast<double>(value);
      f.metric.push_back(std::move(m));
    };
    auto downs = CounterFamily(Spec("nccl_triage_kernel_link_down_total"));
    for (const auto& [key, n] : now.link_downs) {
      const size_t slash = key.rfind('/');
      add(downs, {{"device", key.substr(0, slash)}, {"port", key.substr(slash + 1)}}, n);
    }
    auto xids = CounterFamily(Spec("nccl_triage_kernel_xid_total"));
    for (const auto& [code, n] : now.xids) add(xids, {{"code", std::to_string(code)}}, n);
    auto dropped = CounterFamily(Spec("nccl_triage_kernel_events_dropped_total"));
    for (const auto& [reason, n] : now.dropped) add(dropped, {{"reason", reason}}, n);
    return {std::move(downs), std::move(xids), std::move(dropped)};
  }

 private:
  KernelCountsSource source_;
};

std::string UnknownMetricFamilies(std::span<const std::string> disabled) {
  std::string unknown;
  for (const auto& name : disabled) {
    bool known = false;
    for (const auto& s : kSpecs) known |= s.name == name;
    if (!known) unknown += (unknown.empty() ? "" : ", ") + name;
  }
  return unknown;
}

bool AgentMetrics::Enabled(std::string_view family) const {
  return std::find(disabled_.begin(), disabled_.end(), family) == disabled_.end();
}

AgentMetrics::AgentMetrics(const AgentState& state, std::string version,
                           std::vector<std::string> disabled)
    : state_(state),
      disabled_(std::move(disabled)),
      registry_(std::make_shared<prometheus::Registry>()),
      port_counters_(std::make_shared<PortCounters>()) {
  auto& r = *registry_;
  node_verdict_ = NewGauge(r, Spec("nccl_triage_node_verdict"));
  check_status_ = NewGauge(r, Spec("nccl_triage_check_status"));
  port_state_ = NewGauge(r, Spec("nccl_triage_ib_port_state"));
  port_phys_state_ = NewGauge(r, Spec("nccl_triage_ib_port_physical_state"));
  port_rate_ = NewGauge(r, Spec("nccl_triage_ib_port_rate_bytes_per_second"));
  expected_bw_ = NewGauge(r, Spec("nccl_triage_ib_expected_bytes_per_second"));
  memlock_ = NewGauge(r, Spec("nccl_triage_memlock_limit_bytes"));
  shm_ = NewGauge(r, Spec("nccl_triage_shm_size_bytes"));
  probe_success_ = NewGauge(r, Spec("nccl_triage_probe_success"));
  probe_busbw_ = NewGauge(r, Spec("nccl_triage_probe_busbw_bytes_per_second"));
  rail_success_ = NewGauge(r, Spec("nccl_triage_rail_last_probe_success"));
  rail_busbw_ = NewGauge(r, Spec("nccl_triage_rail_last_probe_busbw_bytes_per_second"));
  constexpr const MetricSpec& kDuration = Spec("nccl_triage_probe_duration_seconds");
  probe_duration_ = &prometheus::BuildHistogram()
                         .Name(std::string(kDuration.name))
                         .Help(std::string(kDuration.help))
                         .Register(r);
  const prometheus::Histogram::BucketBoundaries buckets = {0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300};
  for (ProbeMode mode : kProbeModes) {
    probe_duration_by_mode_[mode] =
        &probe_duration_->Add({{"mode", std::string(ToString(mode))}}, buckets);
  }
  pair_verdict_ = NewGauge(r, Spec("nccl_triage_pair_verdict"));
  last_check_ = NewGauge(r, Spec("nccl_triage_last_check_timestamp_seconds"));
  last_probe_ = NewGauge(r, Spec("nccl_triage_last_probe_timestamp_seconds"));
  build_info_ = NewGauge(r, Spec("nccl_triage_build_info"));
  nccl_info_ = NewGauge(r, Spec("nccl_triage_nccl_info"));
  workload_status_ = NewGauge(r, Spec("nccl_triage_workload_check_status"));
  probe_available_ = NewGauge(r, Spec("nccl_triage_probe_available"));
  job_unresponsive_ = NewGauge(r, Spec("nccl_triage_job_ranks_unresponsive"));
  job_dead_ = NewGauge(r, Spec("nccl_triage_job_ranks_dead"));
  job_lag_ = NewGauge(r, Spec("nccl_triage_job_collective_lag"));
  job_answered_ = NewGauge(r, Spec("nccl_triage_job_ras_last_answer_timestamp_seconds"));
  job_diagnostics_ = NewGauge(r, Spec("nccl_triage_job_diagnostics_findings"));
  build_info_->Set({{"version", std::move(version)}}, 1);
}

AgentMetrics::~AgentMetrics() = default;

void AgentMetrics::SetKernelCounts(KernelCountsSource source) {
  std::lock_guard lock(mu_);
  kernel_counters_ = std::make_shared<KernelCounters>(std::move(source));
  cached_generation_.reset();
}

void AgentMetrics::RefreshLocked(const AgentStateView& view) {
  // Verdict.
  NodeVerdict verdict = view.Verdict();
  prometheus::Labels node_labels;  // the pool, when the node is in one
  if (!view.pool.empty()) node_labels["pool"] = view.pool;
  prometheus::Labels verdict_labels = node_labels;
  verdict_labels["basis"] = std::string(ToString(verdict.basis));
  node_verdict_->SetOneHot(verdict_labels, "class", kVerdictClasses, ToString(verdict.fault_class));
  node_verdict_->Sweep();
  prometheus::Labels available_labels = node_labels;
  available_labels["reason"] = view.probe_availability.reason;
  probe_available_->Set(available_labels, view.probe_availability.available() ? 1 : 0);
  probe_available_->Sweep();

  // Checks: one series set per check id, worst status when a check reported several findings.
  if (view.report) {
    std::map<std::string, const Finding*> worst;
    for (const auto& f : view.report->findings) {
      auto [it, inserted] = worst.emplace(f.check, &f);
      if (!inserted && Severity(f.status) > Severity(it->second->status)) it->second = &f;
    }
    for (const auto& [check, f] : worst) {
      check_status_->SetOneHot({{"check", check}, {"class", std::string(ToString(f->fault_class))}},
                               "status", kCheckStatuses, ToString(f->status));
    }
  }
  check_status_->Sweep();

  // Ports and limits from the last snapshot.
  const SnapshotSummary* summary = view.summary.get();
  if (summary) {
    for (const auto& p : summary->ports) {
      prometheus::Labels labels = {{"device", p.device}, {"port", std::to_string(p.port)}};
      if (!p.state.empty()) port_state_->SetOneHot(labels, "state", kPortStates, p.state);
      if (!p.phys_state.empty()) {
        port_phys_state_->SetOneHot(labels, "state", kPortPhysicalStates, p.phys_state);
      }
      if (p.rate_bytes_per_second) port_rate_->Set(labels, *p.rate_bytes_per_second);
    }
    if (summary->expected_ib_bytes_per_second) {
      expected_bw_->Set({}, *summary->expected_ib_bytes_per_second);
    }
    if (summary->memlock_limit_bytes) memlock_->Set({}, *summary->memlock_limit_bytes);
    if (summary->shm_size_bytes) shm_->Set({}, *summary->shm_size_bytes);
  }
  const bool port_errors = Enabled(Spec("nccl_triage_ib_port_errors_total").name);
  port_counters_->Update(port_errors ? summary : nullptr);
  for (GaugeSeries* g : {port_state_.get(), port_phys_state_.get(), port_rate_.get(),
                         expected_bw_.get(), memlock_.get(), shm_.get()}) {
    g->Sweep();
  }

  // Probes and pair verdicts from the coordinator link.
  for (const auto& [key, rec] : view.probes) {
    prometheus::Labels labels = {{"peer", key.first}, {"mode", std::string(ToString(key.second))}};
    probe_success_->Set(labels, rec->result.outcome == ProbeOutcome::kPass ? 1 : 0);
    probe_busbw_->Set(labels, rec->result.busbw_bytes_per_second);
  }
  probe_success_->Sweep();
  probe_busbw_->Sweep();
  // Rails: the last IB probe on each rail, whichever peer it was with (one series per rail, not
  // per pair; /status keeps every (peer, rail)). Which end of a failed rail is at fault is the
  // coordinator's to say (nccl_triage_rail_probe_*, localised).
  std::map<int, const ProbeRecord*> last_on_rail;
  for (const auto& [key, rec] : view.rail_probes) {
    auto [it, inserted] = last_on_rail.emplace(rec->rail, rec.get());
    if (!inserted && rec->recorded_at_unix_ms > it->second->recorded_at_unix_ms) {
      it->second = rec.get();
    }
  }
  // The rail table the cycle's summary already holds (the rails' names as the Hello sends them).
  static const std::vector<Rail> kNoRails;
  const std::vector<Rail>& table = summary ? summary->rails : kNoRails;
  for (const auto& [rail, rec] : last_on_rail) {
    const int index = rail;  // clang before 16 cannot capture a structured binding
    auto row = std::find_if(table.begin(), table.end(),
                            [index](const Rail& r) { return r.index == index; });
    // A rail the table no longer lists (an HCA gone since) keeps its number, not its name.
    prometheus::Labels labels = {{"rail", std::to_string(rail)},
                                 {"device", row != table.end() ? row->device : ""},
                                 {"port", row != table.end() ? std::to_string(row->port) : ""}};
    rail_success_->Set(labels, rec->result.outcome == ProbeOutcome::kPass ? 1 : 0);
    rail_busbw_->Set(labels, rec->result.busbw_bytes_per_second);
  }
  rail_success_->Sweep();
  rail_busbw_->Sweep();
  for (const auto& obs : state_.ProbeObservationsAfter(observed_probe_seq_)) {
    probe_duration_by_mode_[obs.mode]->Observe(obs.duration_seconds);
    observed_probe_seq_ = std::max(observed_probe_seq_, obs.seq);
  }
  for (const auto& [peer, rec] : view.pairs) {
    pair_verdict_->SetOneHot({{"peer", peer}}, "class", kVerdictClasses,
                             ToString(rec->verdict.fault_class));
  }
  pair_verdict_->Sweep();

  // Freshness and versions.
  if (view.ready) {
    last_check_->Set({}, static_cast<double>(view.cycle.last_finished_unix_ms) / 1000.0);
  }
  last_check_->Sweep();
  if (view.last_probe_unix_ms > 0) {
    last_probe_->Set({}, static_cast<double>(view.last_probe_unix_ms) / 1000.0);
  }
  last_probe_->Sweep();
  std::string nccl = view.NcclVersion();
  if (!nccl.empty()) nccl_info_->Set({{"version", nccl}}, 1);
  nccl_info_->Sweep();

  // Workloads.
  for (const auto& w : *view.workloads) {
    workload_status_->SetOneHot({{"namespace", w.ns},
                                 {"pod", w.pod},
                                 {"container", w.container},
                                 {"check", w.finding.check}},
                                "status", kCheckStatuses, ToString(w.finding.status));
  }
  workload_status_->Sweep();

  // NCCL jobs, from their RAS ports.
  for (const auto& j : *view.ras_jobs) {
    const prometheus::Labels labels = {{"namespace", j.ns}, {"pod", j.pod}};
    job_unresponsive_->Set(labels, j.ranks_unresponsive);
    job_dead_->Set(labels, j.ranks_dead);
    job_lag_->Set(labels, static_cast<double>(j.collective_lag));
    job_answered_->Set(labels, static_cast<double>(j.answered_at_unix_ms) / 1000.0);
    if (j.diagnostics_findings >= 0) {
      job_diagnostics_->Set({{"namespace", j.ns}, {"pod", j.pod}, {"causes", j.diagnostics_causes}},
                            j.diagnostics_findings);
    }
  }
  for (GaugeSeries* g : {job_unresponsive_.get(), job_dead_.get(), job_lag_.get(),
                         job_answered_.get(), job_diagnostics_.get()}) {
    g->Sweep();
  }
  ras_queries_ = view.ras_queries;
}

std::vector<prometheus::MetricFamily> AgentMetrics::CollectLocked() const {
  std::vector<prometheus::MetricFamily> families;
  for (auto& f : registry_->Collect()) {
    if (Enabled(f.name)) families.push_back(std::move(f));
  }
  if (Enabled(Spec("nccl_triage_ib_port_errors_total").name)) {
    for (auto& f : port_counters_->Collect()) families.push_back(std::move(f));
  }
  if (!ras_queries_.empty()) {
    auto queries = CounterFamily(Spec("nccl_triage_job_ras_queries_total"));
    for (const auto& [outcome, n] : ras_queries_) {
      prometheus::ClientMetric m;
      m.label = {{"outcome", outcome}};
      m.counter.value = static_cast<double>(n);
      queries.metric.push_back(std::move(m));
    }
    if (Enabled(queries.name)) families.push_back(std::move(queries));
  }
  if (kernel_counters_) {
    for (auto& f : kernel_counters_->Collect()) {
      if (Enabled(f.name)) families.push_back(std::move(f));
    }
  }
  std::sort(families.begin(), families.end(),
            [](const auto& a, const auto& b) { return a.name < b.name; });
  SanitizeLabelValues(families);
  return families;
}

std::vector<prometheus::MetricFamily> AgentMetrics::Collect() {
  AgentStateView view = state_.View();
  std::lock_guard lock(mu_);
  RefreshLocked(view);
  return CollectLocked();
}

std::string AgentMetrics::Scrape() {
  AgentStateView view = state_.View();
  std::lock_guard lock(mu_);
  // Every series is a function of the state, so an unchanged generation means an unchanged text
  // (Prometheus usually scrapes several times per check cycle).
  if (cached_generation_ && *cached_generation_ == view.generation) return cached_text_;
  RefreshLocked(view);
  cached_text_ = SerializeMetrics(CollectLocked());
  cached_generation_ = view.generation;
  return cached_text_;
}

std::string AgentMetrics::SerializeOnly() {
  std::lock_guard lock(mu_);
  return SerializeMetrics(CollectLocked());
}

}  // namespace nccl_triage
