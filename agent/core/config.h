// Config: the typed, effective configuration of nccl-triage, as plain values with defaults.
//
// config/ loads it strictly from YAML (unknown keys rejected with their line) and dumps it back
// (--dump-config). Every default below is documented in the README's configuration table; a test
// checks that the table and the dumped defaults agree. Nothing here reads the environment.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/reflect.h"

namespace nccl_triage {

// What the node is expected to look like. Unset means "derive from the node itself".
struct ExpectConfig {
  std::optional<int> hcas;                    // number of HCAs (IB devices) expected
  std::optional<double> rate_gbps;            // every port at least this rate
  std::optional<uint16_t> pkey;               // PKey value (without the membership bit) expected
  std::optional<uint64_t> memlock_min_bytes;  // unset: memlock must be unlimited
  uint64_t nofile_min = 65536;
  uint64_t shm_min_bytes = 1ull << 30;        // 1 GiB
  std::optional<std::string> socket_ifname;   // NCCL_SOCKET_IFNAME to validate (comma list)
  std::optional<int> ib_gid_index;            // NCCL_IB_GID_INDEX to validate on RoCE ports
  std::optional<std::string> gpu_driver_min;  // e.g. "535.0"; unset: derived from GPU generation
  // Port counters (ib.port_errors): a counter rising faster than this per hour fails.
  double port_error_rate_per_hour = 10.0;

  friend bool operator==(const ExpectConfig&, const ExpectConfig&) = default;
};

struct ChecksConfig {
  std::vector<std::string> disabled;         // check ids that are not run
  uint64_t mr_register_bytes = 64ull << 20;  // size of the live ibv_reg_mr test per HCA
  // A port that flapped (left ACTIVE between polls, link_downed rose, or the kernel logged it
  // down) is held bad until it has been stable this long, then released (core/port_history.h).
  int flap_stable_seconds = 600;

  friend bool operator==(const ChecksConfig&, const ChecksConfig&) = default;
};

// The most probes an agent runs at once (probe.parallel_rails): a DGX has 8 rails, and more than
// 16 children of NCCL each would only crowd the node.
inline constexpr int kMaxParallelRails = 16;

struct ProbeConfig {
  std::vector<std::string> nccl_library_paths;  // tried first, in order, before the default search
  std::vector<std::string> cuda_library_paths;
  std::optional<std::string> socket_ifname;  // for the socket probe; unset: default-route iface
  std::optional<std::string> ib_hca;         // NCCL_IB_HCA for the IB probe (one rail)
  // Per-rail IB probes (core/rail_selection.h): "all", a count N per sweep, or a list of rails
  // and HCAs. Unset: one IB probe, NCCL's choice of HCAs (or ib_hca).
  std::optional<std::string> rails;
  // How many rail probes of one pair run at once, each on its own GPU of both nodes (the agent
  // says its own in the hello; the coordinator takes the smallest of the two nodes' and its own).
  // 1: one after the other.
  int parallel_rails = 8;
  uint64_t size_bytes = 64ull << 20;
  int warmup_iterations = 2;
  int iterations = 10;
  int timeout_seconds = 120;
  std::vector<std::string> env_allowlist;  // extra NCCL_* variables passed to the child
  double busbw_min_fraction = 0.5;  // IB busbw below this fraction of the port rate: degraded
  bool allow_when_gpus_busy = false;
  bool nccl_diagnostics = true;  // NCCL_RUN_DIAGNOSTICS=1 in the child where NCCL is 2.31+

  friend bool operator==(const ProbeConfig&, const ProbeConfig&) = default;
};

struct AgentConfig {
  std::string listen = "0.0.0.0:9500";
  int interval_seconds = 60;
  std::optional<std::string> coordinator;  // "host:port"; unset: standalone
  std::optional<std::string> token_file;
  std::optional<std::string> ca_file;              // TLS to the coordinator when set
  std::optional<std::string> identity_token_file;  // projected SA token for the coordinator
  bool annotate_pod = true;
  bool node_condition = false;
  bool events = false;
  bool workloads = true;
  // Metric families the agent does not export, e.g. nccl_triage_ib_port_errors_total (which
  // node_exporter's infiniband collector exports too).
  std::vector<std::string> metrics_disabled;

  friend bool operator==(const AgentConfig&, const AgentConfig&) = default;
};

struct CoordinatorConfig {
  std::string listen = "0.0.0.0:9501";       // gRPC
  std::string http_listen = "0.0.0.0:9502";  // metrics, /status, /sweep
  int sweep_interval_seconds = 900;
  int hold_down = 2;           // a verdict must repeat this many sweeps to confirm
  std::string topology_label;  // e.g. "topology.kubernetes.io/rack"; empty: random
  std::optional<std::string> token_file;
  std::optional<std::string> cert_file;
  std::optional<std::string> key_file;
  int heartbeat_timeout_seconds = 30;
  // Bind each agent's node name to its pod's service-account token (TokenReview).
  bool verify_node_identity = false;
  std::string agent_service_account;  // "namespace:name" of the agents' service account
  // Accept agents by their node identity alone: no shared token is read or asked for (needs
  // verify_node_identity); Triage, RecordIncident and POST /sweep, which only a shared token
  // authorises, are refused.
  bool identity_only = false;
  // Leader election between coordinator replicas on a Lease (kube/leader_election.h); client-go's
  // default timings.
  bool leader_election = false;
  std::string lease_name = "nccl-triage-coordinator";
  int lease_duration_seconds = 15;
  int renew_deadline_seconds = 10;
  int retry_period_seconds = 2;

  friend bool operator==(const CoordinatorConfig&, const CoordinatorConfig&) = default;
};

// The HTTP endpoints of the agent and of the coordinator (exporter/http_auth.h).
inline constexpr const char* kHttpAuthKubernetes = "kubernetes";
inline constexpr const char* kHttpAuthNone = "none";
struct ServerConfig {
  // Who may read /metrics and /status: "kubernetes" (a bearer token the API server accepts and
  // authorizes) or "none" (anyone who reaches the port). The chart sets kubernetes; the binary's
  // default keeps a process started by hand, outside a cluster, readable.
  std::string auth = kHttpAuthNone;

  friend bool operator==(const ServerConfig&, const ServerConfig&) = default;
};

// What the coordinator does about a confirmed node fault (planner/remediation.h): nothing, say
// what it would do (events, metrics, /status), taint the node NoSchedule, or taint and cordon it.
enum class RemediationMode { kOff, kDryRun, kTaint, kCordon };
constexpr auto NamesOf(Type<RemediationMode>) {
  return std::array{Named(RemediationMode::kOff, "off"), Named(RemediationMode::kDryRun, "dry-run"),
                    Named(RemediationMode::kTaint, "taint"),
                    Named(RemediationMode::kCordon, "cordon")};
}

// Remediation of confirmed node faults by the coordinator (docs/remediation.md). A fault is
// confirmed over coordinator.hold_down sweeps before it is acted on.
struct RemediationConfig {
  RemediationMode mode = RemediationMode::kOff;
  int max_nodes = 2;           // circuit breaker: nodes remediated at once, cluster-wide
  double max_percent = 10.0;   // circuit breaker: % of the nodes of one pool (rounded down)
  int recover_after_seconds = 3600;  // healthy this long before our taint/cordon is removed
  std::string pool_label;      // node label whose value names the pool; empty: one pool
  int node_resync_seconds = 3600;  // the nodes are watched, and listed whole this often

  friend bool operator==(const RemediationConfig&, const RemediationConfig&) = default;
};

// Validation of nodes that join or reboot (docs/remediation.md, "Validating new and rebooted
// nodes"): the taint nccl-triage.io/unvalidated until a node's first probes pass.
struct ValidationConfig {
  bool new_nodes = false;
  int timeout_seconds = 1800;  // the taint goes after this long even without passing probes
  int max_nodes = 10;          // breaker: nodes carrying the taint at once
  double max_percent = 10.0;   // breaker: % of the nodes (rounded down, at least one)
  // Only nodes whose labels hold every pair are validated; empty: every node.
  std::map<std::string, std::string> node_selector;

  friend bool operator==(const ValidationConfig&, const ValidationConfig&) = default;
};

struct ClassifyConfig {
  // The user's rule files for the log classifier, on top of the shipped one (classify/rule_files.h).
  std::vector<std::string> rule_files;

  friend bool operator==(const ClassifyConfig&, const ClassifyConfig&) = default;
};

// A node pool (config `pools`): the nodes whose labels hold every selector pair are judged by the
// pool's expectations instead of the top-level `expect`. A pool's `expect` starts from the
// top-level one (the loader applies the pool's keys over it), so it is complete. The pool's name
// labels the node's metrics.
struct PoolConfig {
  std::string name;
  std::map<std::string, std::string> selector;  // node label -> value, all must match
  ExpectConfig expect;

  friend bool operator==(const PoolConfig&, const PoolConfig&) = default;
};

// Whether `labels` hold every label: value pair of `selector` (a nodeSelector; an empty one is
// held by every node). Pure.
bool LabelsHold(const std::map<std::string, std::string>& selector,
                const std::map<std::string, std::string>& labels);

// The first pool (in configuration order) whose selector the node's labels satisfy; null when
// none does (the node then uses the top-level expect). Pure.
const PoolConfig* SelectPool(const std::vector<PoolConfig>& pools,
                             const std::map<std::string, std::string>& node_labels);

// The kernel log (kernel/kernel_judge.h).
struct KernelConfig {
  bool enabled = true;          // the agent follows <root>/dev/kmsg
  std::string state_dir = "/var/lib/nccl-triage";  // where its cursor survives restarts
  int link_flaps_per_hour = 3;  // port downs within one hour that fail kernel.link_flap

  friend bool operator==(const KernelConfig&, const KernelConfig&) = default;
};

// The agent's periodic query of NCCL's RAS port in each GPU pod (workload/ras_watch.h,
// docs/ras.md). Opt-in: the query connects into the pod's network namespace.
struct RasConfig {
  bool enabled = false;
  int interval_seconds = 60;      // no pod is asked twice within this
  int timeout_ms = 10000;         // one query, connect to the end of the report
  int max_pods_per_cycle = 4;     // pods asked in one workload pass (one connection at a time)
  int cycle_budget_ms = 30000;    // no query starts after this much of a pass's RAS time
  // NCCL 2.31+: also send DIAGNOSTICS after a pod's status answer, at most once per interval.
  bool diagnostics = false;
  int diagnostics_interval_seconds = 3600;

  friend bool operator==(const RasConfig&, const RasConfig&) = default;
};

struct Config {
  ExpectConfig expect;
  ChecksConfig checks;
  ProbeConfig probe;
  AgentConfig agent;
  CoordinatorConfig coordinator;
  ServerConfig server;
  RemediationConfig remediation;
  ValidationConfig validation;
  ClassifyConfig classify;
  std::vector<PoolConfig> pools;  // in order: the first match wins
  KernelConfig kernel;
  RasConfig ras;

  friend bool operator==(const Config&, const Config&) = default;
};

}  // namespace nccl_triage
