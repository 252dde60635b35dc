// The configuration keys: name, type, meaning, range, the Config member each sets and the kind
// of its value (config_kinds.h), in the order the documentation lists them. Adding a field to
// core/config.h means adding its line here, then `make generate`: the documentation's key table,
// the chart's values.schema.json and values.yaml's config comments are written from this table
// (test docs.generated).
#include <array>
#include <cmath>

#include "config/config_kinds.h"
#include "config/config_schema.h"
#include "core/rails.h"

namespace nccl_triage {
namespace config_internal {
namespace {

constexpr std::array kSpecs = {
    // expect: what the node should look like
    Key<Optional<Int>, &Config::expect, &ExpectConfig::hcas>(
        {"expect.hcas", "integer",
         "number of HCAs the node must have (ib.hca_present); unset: any number"},
        0, 1024),
    Key<Optional<Double>, &Config::expect, &ExpectConfig::rate_gbps>(
        {"expect.rate_gbps", "number",
         "every ACTIVE port at least this rate in Gb/s (ib.port_rate); unset: the fastest port of "
         "the same HCA type and link layer"},
        0, kMaxPortRateGbps),
    Key<Optional<Pkey>, &Config::expect, &ExpectConfig::pkey>(
        {"expect.pkey", "pkey",
         "partition key every InfiniBand port must hold as a full member (ib.pkey), e.g. 0x0001; "
         "the membership bit is ignored; unset: the key at index 0 is judged"},
        0, 0xffff),
    Key<Optional<Bytes>, &Config::expect, &ExpectConfig::memlock_min_bytes>(
        {"expect.memlock_min_bytes", "bytes",
         "floor for the locked-memory limit (limits.memlock); unset: it must be unlimited"}),
    Key<Uint, &Config::expect, &ExpectConfig::nofile_min>(
        {"expect.nofile_min", "integer", "floor for the open-files limit (limits.nofile)"}),
    Key<Bytes, &Config::expect, &ExpectConfig::shm_min_bytes>(
        {"expect.shm_min_bytes", "bytes", "floor for the size of /dev/shm (shm.size)"}),
    Key<Optional<String>, &Config::expect, &ExpectConfig::socket_ifname>(
        {"expect.socket_ifname", "string",
         "NCCL_SOCKET_IFNAME value to validate with NCCL's syntax: prefixes, ^ to exclude, = for "
         "exact names (net.socket_ifname); unset: not checked"}),
    Key<Optional<Int>, &Config::expect, &ExpectConfig::ib_gid_index>(
        {"expect.ib_gid_index", "integer",
         "NCCL_IB_GID_INDEX to validate on RoCE ports: the entry must exist and be RoCE v2 "
         "(ib.gid); unset: any RoCE v2 GID with an address"},
        0, 65535),
    Key<Optional<Version>, &Config::expect, &ExpectConfig::gpu_driver_min>(
        {"expect.gpu_driver_min", "version",
         "minimum NVIDIA driver, e.g. \"550.54\" (versions.cuda_driver); unset: derived from the "
         "GPU generation"}),
    Key<Double, &Config::expect, &ExpectConfig::port_error_rate_per_hour>(
        {"expect.port_error_rate_per_hour", "number",
         "a link error counter rising faster than this per hour fails ib.port_errors"},
        0, 1e12),
    // checks
    Key<CheckIds, &Config::checks, &ChecksConfig::disabled>(
        {"checks.disabled", "list of check ids", "checks that are not run (reported as skip)"}),
    Key<Bytes, &Config::checks, &ChecksConfig::mr_register_bytes>(
        {"checks.mr_register_bytes", "bytes",
         "size of the live ibv_reg_mr test per HCA (ib.mr_register)"},
        4096, 1e15),
    Key<Int, &Config::checks, &ChecksConfig::flap_stable_seconds>(
        {"checks.flap_stable_seconds", "integer",
         "a port that flapped (it left ACTIVE between two polls, its link_downed counter rose, or "
         "the kernel logged it down) is held bad (ib.port_errors, kernel.link_flap) until it has "
         "been up and stable this long, then released"},
        0, 604800),
    // probe
    Key<StringList, &Config::probe, &ProbeConfig::nccl_library_paths>(
        {"probe.nccl_library_paths", "list of strings",
         "libnccl.so.2 paths tried first, in order, before the default search"}),
    Key<StringList, &Config::probe, &ProbeConfig::cuda_library_paths>(
        {"probe.cuda_library_paths", "list of strings",
         "libcuda.so.1 paths tried first, in order, before the default search"}),
    Key<Optional<String>, &Config::probe, &ProbeConfig::socket_ifname>(
        {"probe.socket_ifname", "string",
         "NCCL_SOCKET_IFNAME of the probes; unset: the default-route interface"}),
    Key<Optional<String>, &Config::probe, &ProbeConfig::ib_hca>(
        {"probe.ib_hca", "string", "NCCL_IB_HCA of the IB probe (one rail); unset: NCCL's choice"}),
    Key<Optional<Rails>, &Config::probe, &ProbeConfig::rails>(
        {"probe.rails", "all, N or a list",
         "per-rail IB probes of `probe --pair-local` and, in the coordinator's configuration, of "
         "its sweeps: every rail, the first N (the next N each sweep), or a list of rails and "
         "HCAs (0,3 or mlx5_3,mlx5_5); unset: one IB probe, NCCL's choice of HCAs"}),
    Key<Int, &Config::probe, &ProbeConfig::parallel_rails>(
        {"probe.parallel_rails", "integer",
         "how many rail probes of one pair run at once, each on its own GPU of both nodes (rails "
         "that share a GPU wait); the coordinator uses the smallest of its own and the two "
         "agents' values; 1: one after the other"},
        1, kMaxParallelRails),
    Key<Bytes, &Config::probe, &ProbeConfig::size_bytes>(
        {"probe.size_bytes", "bytes", "all-reduce buffer size of a probe"},
        4, 1e13),
    Key<Int, &Config::probe, &ProbeConfig::warmup_iterations>(
        {"probe.warmup_iterations", "integer", "all-reduce iterations before timing"},
        0, 1e6),
    Key<Int, &Config::probe, &ProbeConfig::iterations>(
        {"probe.iterations", "integer", "timed all-reduce iterations"},
        1, 1e6),
    Key<Int, &Config::probe, &ProbeConfig::timeout_seconds>(
        {"probe.timeout_seconds", "integer",
         "wall-clock limit of one probe child; it is killed with its process group after it"},
        1, 86400),
    Key<NcclEnvNames, &Config::probe, &ProbeConfig::env_allowlist>(
        {"probe.env_allowlist", "list of NCCL_* names",
         "extra NCCL_* variables passed from the agent's environment to the probe child; any "
         "other name (AWS_SECRET_ACCESS_KEY, LD_PRELOAD) is refused"}),
    Key<Double, &Config::probe, &ProbeConfig::busbw_min_fraction>(
        {"probe.busbw_min_fraction", "number",
         "IB bus bandwidth below this fraction of the rate of the ports the probe used is "
         "degraded (ib.bandwidth); judged by the coordinator when the probes it assigns are at "
         "least 32 MiB (assignments take the step at or below `probe.size_bytes` of 64 KiB, 1 "
         "MiB, 64 MiB, 1 GiB: so from 64 MiB on), and by `probe --pair-local` when its `--size` "
         "is at least 32 MiB"},
        0, 1),
    Key<Bool, &Config::probe, &ProbeConfig::allow_when_gpus_busy>(
        {"probe.allow_when_gpus_busy", "bool",
         "probe even when every GPU is busy (a workload process with a CUDA context holds it; "
         "system holders never count: nvidia-persistenced, nv-hostengine, dcgm-exporter, the "
         "device plugin, gpu-feature-discovery, nvidia-smi, the agent's own children); with an "
         "idle GPU the probe runs there anyway"}),
    Key<Bool, &Config::probe, &ProbeConfig::nccl_diagnostics>(
        {"probe.nccl_diagnostics", "bool",
         "where the probe's NCCL is 2.31 or newer, run it with NCCL_RUN_DIAGNOSTICS=1: NCCL "
         "checks GPU peer access and the network during init and prints a report, whose failed "
         "checks (gpu.p2p, ib.nic_mismatch, ...) the verdict names even when the probes pass; "
         "NCCL_RUN_DIAGNOSTICS in probe.env_allowlist takes precedence. Older NCCL is run as "
         "before"}),
    // agent
    Key<Listen, &Config::agent, &AgentConfig::listen>(
        {"agent.listen", "host:port", "address of the agent's metrics and status HTTP server"}),
    Key<Int, &Config::agent, &AgentConfig::interval_seconds>(
        {"agent.interval_seconds", "integer", "seconds between two snapshots and check runs"},
        1, 86400),
    Key<Optional<String>, &Config::agent, &AgentConfig::coordinator>(
        {"agent.coordinator", "string",
         "coordinator address host:port; unset: standalone (checks only)"}),
    Key<Optional<String>, &Config::agent, &AgentConfig::token_file>(
        {"agent.token_file", "string", "file holding the token shared with the coordinator"}),
    Key<Optional<String>, &Config::agent, &AgentConfig::ca_file>(
        {"agent.ca_file", "string", "CA bundle for TLS to the coordinator; unset: plaintext"}),
    Key<Optional<String>, &Config::agent, &AgentConfig::identity_token_file>(
        {"agent.identity_token_file", "string",
         "the pod's service-account token projected for the audience nccl-triage, sent to a "
         "coordinator that checks node identities (re-read at every connect); unset: none"}),
    Key<Bool, &Config::agent, &AgentConfig::annotate_pod>(
        {"agent.annotate_pod", "bool",
         "annotate the agent's pod and affected workload pods (nccl-triage.io/*)"}),
    Key<Bool, &Config::agent, &AgentConfig::node_condition>(
        {"agent.node_condition", "bool", "write the NcclFabricReady node condition"}),
    Key<Bool, &Config::agent, &AgentConfig::events>(
        {"agent.events", "bool", "emit Kubernetes events when a verdict changes"}),
    Key<Bool, &Config::agent, &AgentConfig::workloads>(
        {"agent.workloads", "bool", "judge the GPU workload containers on the node"}),
    Key<AgentMetricNames, &Config::agent, &AgentConfig::metrics_disabled>(
        {"agent.metrics_disabled", "list of metric names",
         "metric families not exported, e.g. `[nccl_triage_ib_port_errors_total]` "
         "(node_exporter's infiniband collector exports the port counters too); an unknown name "
         "stops the agent at start-up"}),
    // coordinator
    Key<Listen, &Config::coordinator, &CoordinatorConfig::listen>(
        {"coordinator.listen", "host:port", "gRPC address the agents connect to"}),
    Key<Listen, &Config::coordinator, &CoordinatorConfig::http_listen>(
        {"coordinator.http_listen", "host:port",
         "address of the coordinator's metrics, /status and /sweep"}),
    Key<Int, &Config::coordinator, &CoordinatorConfig::sweep_interval_seconds>(
        {"coordinator.sweep_interval_seconds", "integer",
         "seconds between two sweeps of probe pairs"},
        1, 1e7),
    Key<Int, &Config::coordinator, &CoordinatorConfig::hold_down>(
        {"coordinator.hold_down", "integer", "sweeps a verdict must repeat before it is confirmed"},
        1, 1000),
    Key<String, &Config::coordinator, &CoordinatorConfig::topology_label>(
        {"coordinator.topology_label", "string",
         "node label used to pair nodes across racks; empty: random pairing"}),
    Key<Optional<String>, &Config::coordinator, &CoordinatorConfig::token_file>(
        {"coordinator.token_file", "string", "file holding the token the agents must present"}),
    Key<Optional<String>, &Config::coordinator, &CoordinatorConfig::cert_file>(
        {"coordinator.cert_file", "string",
         "TLS certificate of the gRPC server; unset: plaintext"}),
    Key<Optional<String>, &Config::coordinator, &CoordinatorConfig::key_file>(
        {"coordinator.key_file", "string", "TLS private key of the gRPC server"}),
    Key<Int, &Config::coordinator, &CoordinatorConfig::heartbeat_timeout_seconds>(
        {"coordinator.heartbeat_timeout_seconds", "integer",
         "an agent silent this long is considered gone"},
        1, 86400),
    Key<Bool, &Config::coordinator, &CoordinatorConfig::verify_node_identity>(
        {"coordinator.verify_node_identity", "bool",
         "require each agent's identity token and accept its hello only for the node the API "
         "server binds that token to (TokenReview; needs coordinator.agent_service_account)"}),
    Key<String, &Config::coordinator, &CoordinatorConfig::agent_service_account>(
        {"coordinator.agent_service_account", "string",
         "the agents' service account as namespace:name; identity tokens of any other are "
         "refused"}),
    Key<Bool, &Config::coordinator, &CoordinatorConfig::identity_only>(
        {"coordinator.identity_only", "bool",
         "accept agents by their identity token alone, with no shared token (none may be set): "
         "needs verify_node_identity; Triage, RecordIncident and POST /sweep, which only a shared "
         "token authorises, are refused"}),
    Key<Bool, &Config::coordinator, &CoordinatorConfig::leader_election>(
        {"coordinator.leader_election", "bool",
         "elect one leader among the coordinator replicas on a coordination.k8s.io/v1 Lease in "
         "the pod's namespace: only the leader sweeps, remediates and accepts agents, the others "
         "stand by, ready, and refuse agents; the leader labels its pod "
         "nccl-triage.io/coordinator-role=leader, which the chart's Service selects (needed with "
         "more than one replica)"}),
    Key<String, &Config::coordinator, &CoordinatorConfig::lease_name>(
        {"coordinator.lease_name", "string", "name of the leader election's Lease"}),
    Key<Int, &Config::coordinator, &CoordinatorConfig::lease_duration_seconds>(
        {"coordinator.lease_duration_seconds", "integer",
         "how long a follower waits, from when it last saw the Lease change, before it takes the "
         "Lease over; more than renew_deadline_seconds"},
        2, 3600),
    Key<Int, &Config::coordinator, &CoordinatorConfig::renew_deadline_seconds>(
        {"coordinator.renew_deadline_seconds", "integer",
         "a leader that has not renewed the Lease for this long stops leading; more than 1.2 x "
         "retry_period_seconds"},
        2, 3600),
    Key<Int, &Config::coordinator, &CoordinatorConfig::retry_period_seconds>(
        {"coordinator.retry_period_seconds", "integer",
         "seconds between two tries to acquire or renew the Lease"},
        1, 3600),
    // server: the HTTP endpoints of the agent and of the coordinator
    Key<HttpAuth, &Config::server, &ServerConfig::auth>(
        {"server.auth", "string",
         "who may read /metrics and /status: kubernetes asks the API server for every bearer "
         "token (TokenReview, then SubjectAccessReview for get on the path: 401, 403, or 503 when "
         "it cannot be asked); none serves anyone who reaches the port (/livez and /readyz are "
         "always open)"}),
    // remediation: what the coordinator does about a confirmed node fault
    Key<RemediationModeKind, &Config::remediation, &RemediationConfig::mode>(
        {"remediation.mode", "mode",
         "off, dry-run (events, metrics and /status say what would be done), taint (the "
         "NoSchedule taint nccl-triage.io/fault=<class> on each node with a confirmed fault) or "
         "cordon (that taint and a cordon)"}),
    Key<Int, &Config::remediation, &RemediationConfig::max_nodes>(
        {"remediation.max_nodes", "integer",
         "circuit breaker: at most this many nodes remediated at once"},
        0, 100000),
    Key<Double, &Config::remediation, &RemediationConfig::max_percent>(
        {"remediation.max_percent", "number",
         "circuit breaker: at most this percentage of the nodes of one pool, rounded down"},
        0, 100),
    Key<Int, &Config::remediation, &RemediationConfig::recover_after_seconds>(
        {"remediation.recover_after_seconds", "integer",
         "a remediated node without a confirmed fault for this long gets its taint (and cordon) "
         "removed"},
        0, 1e8),
    Key<String, &Config::remediation, &RemediationConfig::pool_label>(
        {"remediation.pool_label", "string",
         "node label whose value names a node's pool for max_percent; empty: one pool"}),
    Key<Int, &Config::remediation, &RemediationConfig::node_resync_seconds>(
        {"remediation.node_resync_seconds", "integer",
         "the coordinator reads the nodes (for remediation and validation.new_nodes) from a "
         "watch, and lists them all again this often, and whenever the watch breaks in a way it "
         "cannot resume from"},
        60, 1e7),
    // validation: nodes that join or reboot are kept off NCCL jobs until their probes pass
    Key<Bool, &Config::validation, &ValidationConfig::new_nodes>(
        {"validation.new_nodes", "bool",
         "a node that joins or reboots (a new status.nodeInfo.bootID) carries the NoSchedule "
         "taint nccl-triage.io/unvalidated until its first socket and IB probes pass; nodes "
         "present when it is turned on are not tainted"}),
    Key<Int, &Config::validation, &ValidationConfig::timeout_seconds>(
        {"validation.timeout_seconds", "integer",
         "the taint nccl-triage.io/unvalidated is removed after this long even without passing "
         "probes (with a Warning event)"},
        60, 1e7),
    Key<Int, &Config::validation, &ValidationConfig::max_nodes>(
        {"validation.max_nodes", "integer",
         "breaker: at most this many nodes carry nccl-triage.io/unvalidated at once"},
        0, 100000),
    Key<Double, &Config::validation, &ValidationConfig::max_percent>(
        {"validation.max_percent", "number",
         "breaker: at most this percentage of the nodes carry nccl-triage.io/unvalidated at once, "
         "rounded down (at least one while above 0)"},
        0, 100),
    Key<LabelMap, &Config::validation, &ValidationConfig::node_selector>(
        {"validation.node_selector", "mapping",
         "only nodes whose labels hold every label: value pair here are validated (the nodes the "
         "agent runs on); empty: every node. The chart fills it from agent.nodeSelector when it "
         "is left empty"}),
    // classify
    Key<StringList, &Config::classify, &ClassifyConfig::rule_files>(
        {"classify.rule_files", "list of strings",
         "rule files for the NCCL log classifier, loaded at start-up on top of the shipped "
         "classify-rules.yaml (a rule with a known id replaces it); one that does not load stops "
         "the program with a one-line error naming the rule"}),
    // kernel: the host's kernel log
    Key<Bool, &Config::kernel, &KernelConfig::enabled>(
        {"kernel.enabled", "bool",
         "the agent follows the host's kernel log (<root>/dev/kmsg) and judges link flaps, cable "
         "events, PCIe AER and NVIDIA Xids of the last 24 hours"}),
    Key<String, &Config::kernel, &KernelConfig::state_dir>(
        {"kernel.state_dir", "string",
         "directory where the agent keeps its place in the kernel log (kmsg.cursor) and what it "
         "remembers of its ports in this boot (ports.state) across restarts; empty: not kept (a "
         "restarted agent counts the whole ring buffer again in its metrics, and judges its first "
         "poll's ports without knowing which were up before)"}),
    Key<Int, &Config::kernel, &KernelConfig::link_flaps_per_hour>(
        {"kernel.link_flaps_per_hour", "integer",
         "an HCA port that goes down this many times within one hour fails kernel.link_flap "
         "(fewer downs warn)"},
        1, 100000),
    // ras: the agent's query of NCCL's RAS port in each GPU pod (NCCL 2.24+)
    Key<Bool, &Config::ras, &RasConfig::enabled>(
        {"ras.enabled", "bool",
         "the agent asks NCCL's RAS port (NCCL_RAS_ADDR, in the pod's network namespace) of each "
         "GPU pod on the node that maps NCCL 2.24 or later, and exports which ranks stopped "
         "answering (nccl_triage_job_*); needs agent.workloads"}),
    Key<Int, &Config::ras, &RasConfig::interval_seconds>(
        {"ras.interval_seconds", "integer",
         "a pod's RAS port is asked at most once in this many seconds (and at most once per "
         "workload pass, which follows agent.interval_seconds)"},
        10, 86400),
    Key<Int, &Config::ras, &RasConfig::timeout_ms>(
        {"ras.timeout_ms", "integer",
         "one query, from connect to the end of the report; NCCL answers after asking every "
         "process of the job, up to 5 s per leg for silent ones"},
        100, 120000),
    Key<Int, &Config::ras, &RasConfig::max_pods_per_cycle>(
        {"ras.max_pods_per_cycle", "integer",
         "pods asked in one workload pass, one connection at a time; the others wait for the next "
         "pass, the longest-waiting first"},
        1, 1000),
    Key<Int, &Config::ras, &RasConfig::cycle_budget_ms>(
        {"ras.cycle_budget_ms", "integer",
         "no query starts once a pass's queries have taken this long (a query that starts gets at "
         "most the time left)"},
        100, 600000),
    Key<Bool, &Config::ras, &RasConfig::diagnostics>(
        {"ras.diagnostics", "bool",
         "NCCL 2.31+: after a pod's status answer the agent also asks its RAS port for NCCL's "
         "diagnostics report (GPU inventory, driver, ECC, NVLink, NCCL_* settings compared across "
         "ranks), judges it with the classifier's rules and exports the findings "
         "(nccl_triage_job_diagnostics_findings, annotation nccl-triage.io/nccl-ras-diagnostics); "
         "an NCCL before 2.31 is not asked again"}),
    Key<Int, &Config::ras, &RasConfig::diagnostics_interval_seconds>(
        {"ras.diagnostics_interval_seconds", "integer",
         "a pod's RAS port is asked for the diagnostics report at most once in this many seconds "
         "(a busy answer is retried at the next status query)"},
        60, 604800),
};

}  // namespace

std::span<const KeySpec> KeySpecs() { return kSpecs; }

}  // namespace config_internal

std::vector<ConfigKeySchema> ConfigKeySchemas(const ConfigSchemaContext& context) {
  const Config defaults;
  std::vector<ConfigKeySchema> out;
  for (const config_internal::KeySpec& s : config_internal::KeySpecs()) {
    ConfigKeySchema k;
    k.info = s.info;
    k.kind = s.kind->name;
    k.optional = s.kind->optional;
    if (std::isfinite(s.min)) {
      k.min = s.min;
    } else if (s.kind->is_unsigned) {
      k.min = 0;  // the type's own bound
    }
    if (std::isfinite(s.max)) k.max = s.max;
    k.default_json = s.value_json(defaults).dump();
    config_internal::Json schema = s.kind->schema(context);
    if (k.min) schema["minimum"] = config_internal::JsonNumber(*k.min);
    if (k.max) schema["maximum"] = config_internal::JsonNumber(*k.max);
    k.json_schema = schema.dump();
    k.pattern = s.kind->pattern;
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
