// The configuration keys: name, type, meaning and range, in the order the documentation lists
// them. Adding a field to core/config.h means adding its line here, then `make generate`: the
// documentation's key table, the chart's values.schema.json and values.yaml's config comments are
// written from this table (test docs.generated).
#include <array>
#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>

#include "config/config_schema.h"
#include "core/rails.h"

namespace nccl_triage {
namespace config_internal {
namespace {

#define NT_FIELD(path) [](Config& c) -> void* { return &c.path; }

constexpr std::array kSpecs = {
    // expect: what the node should look like
    KeySpec{{"expect.hcas", "integer",
             "number of HCAs the node must have (ib.hca_present); unset: any number"},
            KeyKind::kOptInt,
            NT_FIELD(expect.hcas),
            0,
            1024},
    KeySpec{{"expect.rate_gbps", "number",
             "every ACTIVE port at least this rate in Gb/s (ib.port_rate); unset: the fastest port "
             "of the same HCA type and link layer"},
            KeyKind::kOptDouble,
            NT_FIELD(expect.rate_gbps),
            0,
            kMaxPortRateGbps},
    KeySpec{{"expect.pkey", "pkey",
             "partition key every InfiniBand port must hold as a full member (ib.pkey), e.g. "
             "0x0001; the membership bit is ignored; unset: the key at index 0 is judged"},
            KeyKind::kOptPkey,
            NT_FIELD(expect.pkey),
            0,
            0xffff},
    KeySpec{{"expect.memlock_min_bytes", "bytes",
             "floor for the locked-memory limit (limits.memlock); unset: it must be unlimited"},
            KeyKind::kOptBytes,
            NT_FIELD(expect.memlock_min_bytes)},
    KeySpec{{"expect.nofile_min", "integer", "floor for the open-files limit (limits.nofile)"},
            KeyKind::kUint,
            NT_FIELD(expect.nofile_min)},
    KeySpec{{"expect.shm_min_bytes", "bytes", "floor for the size of /dev/shm (shm.size)"},
            KeyKind::kBytes,
            NT_FIELD(expect.shm_min_bytes)},
    KeySpec{{"expect.socket_ifname", "string",
             "NCCL_SOCKET_IFNAME value to validate with NCCL's syntax: prefixes, ^ to exclude, = "
             "for exact names (net.socket_ifname); unset: not checked"},
            KeyKind::kOptString,
            NT_FIELD(expect.socket_ifname)},
    KeySpec{{"expect.ib_gid_index", "integer",
             "NCCL_IB_GID_INDEX to validate on RoCE ports: the entry must exist and be RoCE v2 "
             "(ib.gid); unset: any RoCE v2 GID with an address"},
            KeyKind::kOptInt,
            NT_FIELD(expect.ib_gid_index),
            0,
            65535},
    KeySpec{{"expect.gpu_driver_min", "version",
             "minimum NVIDIA driver, e.g. \"550.54\" (versions.cuda_driver); unset: derived from "
             "the GPU generation"},
            KeyKind::kOptVersion,
            NT_FIELD(expect.gpu_driver_min)},
    KeySpec{{"expect.port_error_rate_per_hour", "number",
             "a link error counter rising faster than this per hour fails ib.port_errors"},
            KeyKind::kDouble,
            NT_FIELD(expect.port_error_rate_per_hour),
            0,
            1e12},
    // checks
    KeySpec{{"checks.disabled", "list of check ids", "checks that are not run (reported as skip)"},
            KeyKind::kCheckIds,
            NT_FIELD(checks.disabled)},
    KeySpec{{"checks.mr_register_bytes", "bytes",
             "size of the live ibv_reg_mr test per HCA (ib.mr_register)"},
            KeyKind::kBytes,
            NT_FIELD(checks.mr_register_bytes),
            4096,
            1e15},
    KeySpec{{"checks.flap_stable_seconds", "integer",
             "a port that flapped (it left ACTIVE between two polls, its link_downed counter "
             "rose, or the kernel logged it down) is held bad (ib.port_errors, kernel.link_flap) "
             "until it has been up and stable this long, then released"},
            KeyKind::kInt,
            NT_FIELD(checks.flap_stable_seconds),
            0,
            604800},
    // probe
    KeySpec{{"probe.nccl_library_paths", "list of strings",
             "libnccl.so.2 paths tried first, in order, before the default search"},
            KeyKind::kStringList,
            NT_FIELD(probe.nccl_library_paths)},
    KeySpec{{"probe.cuda_library_paths", "list of strings",
             "libcuda.so.1 paths tried first, in order, before the default search"},
            KeyKind::kStringList,
            NT_FIELD(probe.cuda_library_paths)},
    KeySpec{{"probe.socket_ifname", "string",
             "NCCL_SOCKET_IFNAME of the probes; unset: the default-route interface"},
            KeyKind::kOptString,
            NT_FIELD(probe.socket_ifname)},
    KeySpec{
        {"probe.ib_hca", "string", "NCCL_IB_HCA of the IB probe (one rail); unset: NCCL's choice"},
        KeyKind::kOptString,
        NT_FIELD(probe.ib_hca)},
    KeySpec{{"probe.rails", "all, N or a list",
             "per-rail IB probes of `probe --pair-local` and, in the coordinator's configuration, "
             "of its sweeps: every rail, the first N (the next N each sweep), or a list of rails "
             "and HCAs (0,3 or mlx5_3,mlx5_5); unset: one IB probe, NCCL's choice of HCAs"},
            KeyKind::kOptRails,
            NT_FIELD(probe.rails)},
    KeySpec{{"probe.parallel_rails", "integer",
             "how many rail probes of one pair run at once, each on its own GPU of both nodes "
             "(rails that share a GPU wait); the coordinator uses the smallest of its own and "
             "the two agents' values; 1: one after the other"},
            KeyKind::kInt,
            NT_FIELD(probe.parallel_rails),
            1,
            kMaxParallelRails},
    KeySpec{{"probe.size_bytes", "bytes", "all-reduce buffer size of a probe"},
            KeyKind::kBytes,
            NT_FIELD(probe.size_bytes),
            4,
            1e13},
    KeySpec{{"probe.warmup_iterations", "integer", "all-reduce iterations before timing"},
            KeyKind::kInt,
            NT_FIELD(probe.warmup_iterations),
            0,
            1e6},
    KeySpec{{"probe.iterations", "integer", "timed all-reduce iterations"},
            KeyKind::kInt,
            NT_FIELD(probe.iterations),
            1,
            1e6},
    KeySpec{{"probe.timeout_seconds", "integer",
             "wall-clock limit of one probe child; it is killed with its process group after it"},
            KeyKind::kInt,
            NT_FIELD(probe.timeout_seconds),
            1,
            86400},
    KeySpec{{"probe.env_allowlist", "list of NCCL_* names",
             "extra NCCL_* variables passed from the agent's environment to the probe child; "
             "any other name (AWS_SECRET_ACCESS_KEY, LD_PRELOAD) is refused"},
            KeyKind::kNcclEnvNames,
            NT_FIELD(probe.env_allowlist)},
    KeySpec{{"probe.busbw_min_fraction", "number",
             "IB bus bandwidth below this fraction of the rate of the ports the probe used is "
             "degraded (ib.bandwidth); judged by the coordinator when the probes it assigns are "
             "at least 32 MiB (assignments take the step at or below `probe.size_bytes` of 64 "
             "KiB, 1 MiB, 64 MiB, 1 GiB: so from 64 MiB on), and by `probe --pair-local` when its "
             "`--size` is at least 32 MiB"},
            KeyKind::kDouble,
            NT_FIELD(probe.busbw_min_fraction),
            0,
            1},
    KeySpec{{"probe.allow_when_gpus_busy", "bool",
             "probe even when every GPU is busy (a workload process with a CUDA context holds it; "
             "system holders never count: nvidia-persistenced, nv-hostengine, dcgm-exporter, the "
             "device plugin, gpu-feature-discovery, nvidia-smi, the agent's own children); with an "
             "idle GPU the probe runs there anyway"},
            KeyKind::kBool,
            NT_FIELD(probe.allow_when_gpus_busy)},
    KeySpec{{"probe.nccl_diagnostics", "bool",
             "where the probe's NCCL is 2.31 or newer, run it with NCCL_RUN_DIAGNOSTICS=1: NCCL "
             "checks GPU peer access and the network during init and prints a report, whose "
             "failed checks (gpu.p2p, ib.nic_mismatch, ...) the verdict names even when the "
             "probes pass; NCCL_RUN_DIAGNOSTICS in probe.env_allowlist takes precedence. Older "
             "NCCL is run as before"},
            KeyKind::kBool,
            NT_FIELD(probe.nccl_diagnostics)},
    // agent
    KeySpec{{"agent.listen", "host:port", "address of the agent's metrics and status HTTP server"},
            KeyKind::kListen,
            NT_FIELD(agent.listen)},
    KeySpec{{"agent.interval_seconds", "integer", "seconds between two snapshots and check runs"},
            KeyKind::kInt,
            NT_FIELD(agent.interval_seconds),
            1,
            86400},
    KeySpec{{"agent.coordinator", "string",
             "coordinator address host:port; unset: standalone (checks only)"},
            KeyKind::kOptString,
            NT_FIELD(agent.coordinator)},
    KeySpec{{"agent.token_file", "string", "file holding the token shared with the coordinator"},
            KeyKind::kOptString,
            NT_FIELD(agent.token_file)},
    KeySpec{{"agent.ca_file", "string", "CA bundle for TLS to the coordinator; unset: plaintext"},
            KeyKind::kOptString,
            NT_FIELD(agent.ca_file)},
    KeySpec{{"agent.identity_token_file", "string",
             "the pod's service-account token projected for the audience nccl-triage, sent to a "
             "coordinator that checks node identities (re-read at every connect); unset: none"},
            KeyKind::kOptString,
            NT_FIELD(agent.identity_token_file)},
    KeySpec{{"agent.annotate_pod", "bool",
             "annotate the agent's pod and affected workload pods (nccl-triage.io/*)"},
            KeyKind::kBool,
            NT_FIELD(agent.annotate_pod)},
    KeySpec{{"agent.node_condition", "bool", "write the NcclFabricReady node condition"},
            KeyKind::kBool,
            NT_FIELD(agent.node_condition)},
    KeySpec{{"agent.events", "bool", "emit Kubernetes events when a verdict changes"},
            KeyKind::kBool,
            NT_FIELD(agent.events)},
    KeySpec{{"agent.workloads", "bool", "judge the GPU workload containers on the node"},
            KeyKind::kBool,
            NT_FIELD(agent.workloads)},
    KeySpec{{"agent.metrics_disabled", "list of metric names",
             "metric families not exported, e.g. `[nccl_triage_ib_port_errors_total]` "
             "(node_exporter's infiniband collector exports the port counters too); an unknown "
             "name stops the agent at start-up"},
            KeyKind::kStringList,
            NT_FIELD(agent.metrics_disabled)},
    // coordinator
    KeySpec{{"coordinator.listen", "host:port", "gRPC address the agents connect to"},
            KeyKind::kListen,
            NT_FIELD(coordinator.listen)},
    KeySpec{{"coordinator.http_listen", "host:port",
             "address of the coordinator's metrics, /status and /sweep"},
            KeyKind::kListen,
            NT_FIELD(coordinator.http_listen)},
    KeySpec{{"coordinator.sweep_interval_seconds", "integer",
             "seconds between two sweeps of probe pairs"},
            KeyKind::kInt,
            NT_FIELD(coordinator.sweep_interval_seconds),
            1,
            1e7},
    KeySpec{
        {"coordinator.hold_down", "integer", "sweeps a verdict must repeat before it is confirmed"},
        KeyKind::kInt,
        NT_FIELD(coordinator.hold_down),
        1,
        1000},
    KeySpec{{"coordinator.topology_label", "string",
             "node label used to pair nodes across racks; empty: random pairing"},
            KeyKind::kString,
            NT_FIELD(coordinator.topology_label)},
    KeySpec{{"coordinator.token_file", "string", "file holding the token the agents must present"},
            KeyKind::kOptString,
            NT_FIELD(coordinator.token_file)},
    KeySpec{
        {"coordinator.cert_file", "string", "TLS certificate of the gRPC server; unset: plaintext"},
        KeyKind::kOptString,
        NT_FIELD(coordinator.cert_file)},
    KeySpec{{"coordinator.key_file", "string", "TLS private key of the gRPC server"},
            KeyKind::kOptString,
            NT_FIELD(coordinator.key_file)},
    KeySpec{{"coordinator.heartbeat_timeout_seconds", "integer",
             "an agent silent this long is considered gone"},
            KeyKind::kInt,
            NT_FIELD(coordinator.heartbeat_timeout_seconds),
            1,
            86400},
    KeySpec{
        {"coordinator.verify_node_identity", "bool",
         "require each agent's identity token and accept its hello only for the node the "
         "API server binds that token to (TokenReview; needs coordinator.agent_service_account)"},
        KeyKind::kBool,
        NT_FIELD(coordinator.verify_node_identity)},
    KeySpec{{"coordinator.agent_service_account", "string",
             "the agents' service account as namespace:name; identity tokens of any other are "
             "refused"},
            KeyKind::kString,
            NT_FIELD(coordinator.agent_service_account)},
    KeySpec{{"coordinator.identity_only", "bool",
             "accept agents by their identity token alone, with no shared token (none may be "
             "set): needs verify_node_identity; Triage, RecordIncident and POST /sweep, which only "
             "a shared token authorises, are refused"},
            KeyKind::kBool,
            NT_FIELD(coordinator.identity_only)},
    KeySpec{{"coordinator.leader_election", "bool",
             "elect one leader among the coordinator replicas on a coordination.k8s.io/v1 Lease "
             "in the pod's namespace: only the leader sweeps, remediates and accepts agents, the "
             "others are live but not ready (needed with more than one replica)"},
            KeyKind::kBool,
            NT_FIELD(coordinator.leader_election)},
    KeySpec{{"coordinator.lease_name", "string", "name of the leader election's Lease"},
            KeyKind::kString,
            NT_FIELD(coordinator.lease_name)},
    KeySpec{{"coordinator.lease_duration_seconds", "integer",
             "how long a follower waits, from when it last saw the Lease change, before it takes "
             "the Lease over; more than renew_deadline_seconds"},
            KeyKind::kInt,
            NT_FIELD(coordinator.lease_duration_seconds),
            2,
            3600},
    KeySpec{{"coordinator.renew_deadline_seconds", "integer",
             "a leader that has not renewed the Lease for this long stops leading; more than 1.2 "
             "x retry_period_seconds"},
            KeyKind::kInt,
            NT_FIELD(coordinator.renew_deadline_seconds),
            2,
            3600},
    KeySpec{{"coordinator.retry_period_seconds", "integer",
             "seconds between two tries to acquire or renew the Lease"},
            KeyKind::kInt,
            NT_FIELD(coordinator.retry_period_seconds),
            1,
            3600},
    // server: the HTTP endpoints of the agent and of the coordinator
    KeySpec{{"server.auth", "string",
             "who may read /metrics and /status: kubernetes asks the API server for every bearer "
             "token (TokenReview, then SubjectAccessReview for get on the path: 401, 403, or 503 "
             "when it cannot be asked); none serves anyone who reaches the port (/livez and "
             "/readyz are always open)"},
            KeyKind::kHttpAuth,
            NT_FIELD(server.auth)},
    // remediation: what the coordinator does about a confirmed node fault
    KeySpec{{"remediation.mode", "mode",
             "off, dry-run (events, metrics and /status say what would be done), taint (the "
             "NoSchedule taint nccl-triage.io/fault=<class> on each node with a confirmed fault) "
             "or cordon (that taint and a cordon)"},
            KeyKind::kRemediationMode,
            NT_FIELD(remediation.mode)},
    KeySpec{{"remediation.max_nodes", "integer",
             "circuit breaker: at most this many nodes remediated at once"},
            KeyKind::kInt,
            NT_FIELD(remediation.max_nodes),
            0,
            100000},
    KeySpec{{"remediation.max_percent", "number",
             "circuit breaker: at most this percentage of the nodes of one pool, rounded down"},
            KeyKind::kDouble,
            NT_FIELD(remediation.max_percent),
            0,
            100},
    KeySpec{{"remediation.recover_after_seconds", "integer",
             "a remediated node without a confirmed fault for this long gets its taint (and "
             "cordon) removed"},
            KeyKind::kInt,
            NT_FIELD(remediation.recover_after_seconds),
            0,
            1e8},
    KeySpec{{"remediation.pool_label", "string",
             "node label whose value names a node's pool for max_percent; empty: one pool"},
            KeyKind::kString,
            NT_FIELD(remediation.pool_label)},
    KeySpec{{"remediation.node_resync_seconds", "integer",
             "the coordinator reads the nodes (for remediation and validation.new_nodes) from a "
             "watch, and lists them all again this often, and whenever the watch breaks in a way "
             "it cannot resume from"},
            KeyKind::kInt,
            NT_FIELD(remediation.node_resync_seconds),
            60,
            1e7},
    // validation: nodes that join or reboot are kept off NCCL jobs until their probes pass
    KeySpec{{"validation.new_nodes", "bool",
             "a node that joins or reboots (a new status.nodeInfo.bootID) carries the NoSchedule "
             "taint nccl-triage.io/unvalidated until its first socket and IB probes pass; nodes "
             "present when it is turned on are not tainted"},
            KeyKind::kBool,
            NT_FIELD(validation.new_nodes)},
    KeySpec{{"validation.timeout_seconds", "integer",
             "the taint nccl-triage.io/unvalidated is removed after this long even without "
             "passing probes (with a Warning event)"},
            KeyKind::kInt,
            NT_FIELD(validation.timeout_seconds),
            60,
            1e7},
    KeySpec{{"validation.max_nodes", "integer",
             "breaker: at most this many nodes carry nccl-triage.io/unvalidated at once"},
            KeyKind::kInt,
            NT_FIELD(validation.max_nodes),
            0,
            100000},
    KeySpec{{"validation.max_percent", "number",
             "breaker: at most this percentage of the nodes carry nccl-triage.io/unvalidated at "
             "once, rounded down (at least one while above 0)"},
            KeyKind::kDouble,
            NT_FIELD(validation.max_percent),
            0,
            100},
    KeySpec{{"validation.node_selector", "mapping",
             "only nodes whose labels hold every label: value pair here are validated (the "
             "nodes the agent runs on); empty: every node. The chart fills it from "
             "agent.nodeSelector when it is left empty"},
            KeyKind::kLabelMap,
            NT_FIELD(validation.node_selector)},
    // classify
    KeySpec{{"classify.rule_files", "list of strings",
             "rule files for the NCCL log classifier, loaded at start-up on top of the shipped "
             "classify-rules.yaml (a rule with a known id replaces it); one that does not load "
             "stops the program with a one-line error naming the rule"},
            KeyKind::kStringList,
            NT_FIELD(classify.rule_files)},
    // kernel: the host's kernel log
    KeySpec{{"kernel.enabled", "bool",
             "the agent follows the host's kernel log (<root>/dev/kmsg) and judges link flaps, "
             "cable events, PCIe AER and NVIDIA Xids of the last 24 hours"},
            KeyKind::kBool,
            NT_FIELD(kernel.enabled)},
    KeySpec{{"kernel.state_dir", "string",
             "directory where the agent keeps its place in the kernel log (kmsg.cursor) and what "
             "it remembers of its ports in this boot (ports.state) across restarts; empty: not "
             "kept (a restarted agent counts the whole ring buffer again in its metrics, and "
             "judges its first poll's ports without knowing which were up before)"},
            KeyKind::kString,
            NT_FIELD(kernel.state_dir)},
    KeySpec{{"kernel.link_flaps_per_hour", "integer",
             "an HCA port that goes down this many times within one hour fails kernel.link_flap "
             "(fewer downs warn)"},
            KeyKind::kInt,
            NT_FIELD(kernel.link_flaps_per_hour),
            1,
            100000},
    // ras: the agent's query of NCCL's RAS port in each GPU pod (NCCL 2.24+)
    KeySpec{{"ras.enabled", "bool",
             "the agent asks NCCL's RAS port (NCCL_RAS_ADDR, in the pod's network namespace) of "
             "each GPU pod on the node that maps NCCL 2.24 or later, and exports which ranks "
             "stopped answering (nccl_triage_job_*); needs agent.workloads"},
            KeyKind::kBool,
            NT_FIELD(ras.enabled)},
    KeySpec{{"ras.interval_seconds", "integer",
             "a pod's RAS port is asked at most once in this many seconds (and at most once per "
             "workload pass, which follows agent.interval_seconds)"},
            KeyKind::kInt,
            NT_FIELD(ras.interval_seconds),
            10,
            86400},
    KeySpec{{"ras.timeout_ms", "integer",
             "one query, from connect to the end of the report; NCCL answers after asking every "
             "process of the job, up to 5 s per leg for silent ones"},
            KeyKind::kInt,
            NT_FIELD(ras.timeout_ms),
            100,
            120000},
    KeySpec{{"ras.max_pods_per_cycle", "integer",
             "pods asked in one workload pass, one connection at a time; the others wait for the "
             "next pass, the longest-waiting first"},
            KeyKind::kInt,
            NT_FIELD(ras.max_pods_per_cycle),
            1,
            1000},
    KeySpec{{"ras.cycle_budget_ms", "integer",
             "no query starts once a pass's queries have taken this long (a query that starts "
             "gets at most the time left)"},
            KeyKind::kInt,
            NT_FIELD(ras.cycle_budget_ms),
            100,
            600000},
    KeySpec{{"ras.diagnostics", "bool",
             "NCCL 2.31+: after a pod's status answer the agent also asks its RAS port for "
             "NCCL's diagnostics report (GPU inventory, driver, ECC, NVLink, NCCL_* settings "
             "compared across ranks), judges it with the classifier's rules and exports the "
             "findings (nccl_triage_job_diagnostics_findings, annotation "
             "nccl-triage.io/nccl-ras-diagnostics); an NCCL before 2.31 is not asked again"},
            KeyKind::kBool,
            NT_FIELD(ras.diagnostics)},
    KeySpec{{"ras.diagnostics_interval_seconds", "integer",
             "a pod's RAS port is asked for the diagnostics report at most once in this many "
             "seconds (a busy answer is retried at the next status query)"},
            KeyKind::kInt,
            NT_FIELD(ras.diagnostics_interval_seconds),
            60,
            604800},
};

#undef NT_FIELD

}  // namespace

std::span<const KeySpec> KeySpecs() { return kSpecs; }

}  // namespace config_internal

namespace {

using config_internal::KeyKind;
using config_internal::KeySpec;

std::string_view KindName(KeyKind kind) {
  switch (kind) {
    case KeyKind::kInt:
    case KeyKind::kOptInt:
    case KeyKind::kUint:
      return "integer";
    case KeyKind::kBytes:
    case KeyKind::kOptBytes:
      return "bytes";
    case KeyKind::kDouble:
    case KeyKind::kOptDouble:
      return "number";
    case KeyKind::kBool:
      return "bool";
    case KeyKind::kString:
    case KeyKind::kOptString:
      return "string";
    case KeyKind::kListen:
      return "listen";
    case KeyKind::kStringList:
      return "string_list";
    case KeyKind::kCheckIds:
      return "check_ids";
    case KeyKind::kNcclEnvNames:
      return "nccl_env_names";
    case KeyKind::kOptPkey:
      return "pkey";
    case KeyKind::kOptVersion:
      return "version";
    case KeyKind::kOptRails:
      return "rails";
    case KeyKind::kHttpAuth:
      return "http_auth";
    case KeyKind::kRemediationMode:
      return "remediation_mode";
    case KeyKind::kLabelMap:
      return "label_map";
  }
  return "unknown";
}

bool IsOptional(KeyKind kind) {
  return kind == KeyKind::kOptInt || kind == KeyKind::kOptBytes || kind == KeyKind::kOptDouble ||
         kind == KeyKind::kOptString || kind == KeyKind::kOptPkey ||
         kind == KeyKind::kOptVersion || kind == KeyKind::kOptRails;
}

template <typename T>
nlohmann::json Opt(const std::optional<T>& o) {
  return o ? nlohmann::json(*o) : nlohmann::json(nullptr);
}

// The value `spec` holds in the default Config, typed as JSON.
nlohmann::json DefaultValue(const KeySpec& spec) {
  Config config;
  void* field = spec.field(config);
  switch (spec.kind) {
    case KeyKind::kInt:
      return *static_cast<int*>(field);
    case KeyKind::kOptInt:
      return Opt(*static_cast<std::optional<int>*>(field));
    case KeyKind::kUint:
    case KeyKind::kBytes:
      return *static_cast<uint64_t*>(field);
    case KeyKind::kOptBytes:
      return Opt(*static_cast<std::optional<uint64_t>*>(field));
    case KeyKind::kDouble:
      return *static_cast<double*>(field);
    case KeyKind::kOptDouble:
      return Opt(*static_cast<std::optional<double>*>(field));
    case KeyKind::kBool:
      return *static_cast<bool*>(field);
    case KeyKind::kString:
    case KeyKind::kListen:
    case KeyKind::kHttpAuth:
      return *static_cast<std::string*>(field);
    case KeyKind::kOptString:
    case KeyKind::kOptVersion:
    case KeyKind::kOptRails:
      return Opt(*static_cast<std::optional<std::string>*>(field));
    case KeyKind::kOptPkey:
      return Opt(*static_cast<std::optional<uint16_t>*>(field));
    case KeyKind::kRemediationMode:
      return std::string(ToString(*static_cast<RemediationMode*>(field)));
    case KeyKind::kStringList:
    case KeyKind::kNcclEnvNames:
    case KeyKind::kCheckIds:
      return *static_cast<std::vector<std::string>*>(field);
    case KeyKind::kLabelMap:
      return nlohmann::json(*static_cast<std::map<std::string, std::string>*>(field));
  }
  return nullptr;
}

bool IsUnsigned(KeyKind kind) {
  return kind == KeyKind::kUint || kind == KeyKind::kBytes || kind == KeyKind::kOptBytes;
}

}  // namespace

std::vector<ConfigKeySchema> ConfigKeySchemas() {
  std::vector<ConfigKeySchema> out;
  for (const KeySpec& s : config_internal::KeySpecs()) {
    ConfigKeySchema k;
    k.info = s.info;
    k.kind = KindName(s.kind);
    k.optional = IsOptional(s.kind);
    if (std::isfinite(s.min)) {
      k.min = s.min;
    } else if (IsUnsigned(s.kind)) {
      k.min = 0;  // the type's own bound
    }
    if (std::isfinite(s.max)) k.max = s.max;
    k.default_json = DefaultValue(s).dump();
    out.push_back(std::move(k));
  }
  return out;
}

std::vector<ConfigKeyInfo> ConfigKeys() {
  std::vector<ConfigKeyInfo> out;
  for (const auto& s : config_internal::KeySpecs()) out.push_back(s.info);
  return out;
}

}  // namespace nccl_triage
