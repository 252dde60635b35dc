// `nccl-triage-server agent`: the node agent (DaemonSet). Every agent.interval_seconds it gathers
// the node's snapshot, runs the host checks and publishes the report: Prometheus metrics and /livez
// /readyz /status on one HTTP server, and (inside Kubernetes) pod annotations, the optional
// NcclFabricReady node condition and events.
//
// Start-up is a list of steps that each either succeed or end the command with one clear line and
// exit code 2; teardown (stop the loop, the publisher and the server) always runs. SIGTERM and
// SIGINT stop it cleanly. With --once it runs a single cycle, prints the report JSON (the shape of
// `check --format json`) and exits like `check` does (0 ok, 1 a check failed, 2 could not look).
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>

#include "base/clock.h"
#include "base/flags.h"
#include "base/log.h"
#include "classify/rule_files.h"
#include "cmd_nccl_triage_server/http_auth_setup.h"
#include "cmd_nccl_triage_server/server_cli.h"
#include "config/config_loader.h"
#include "coordinator_client/session.h"
#include "core/config.h"
#include "core/json_text.h"
#include "core/report.h"
#include "daemon/agent.h"
#include "daemon/node_loop_parts.h"
#include "daemon/probe_adapter.h"
#include "exporter/agent_http.h"
#include "exporter/http_server.h"
#include "exporter/kube_publisher.h"
#include "exporter/metrics.h"
#include "host/gatherer.h"
#include "kernel/kernel_monitor.h"
#include "kube/cleanup.h"
#include "kube/kube_client.h"
#include "kube/node_labels.h"
#include "kubelet/pod_resources_client.h"
#include "nccl_triage_version.h"
#include "probe/runner.h"
#include "state/agent_state.h"
#include "workload/view.h"

extern char** environ;

namespace nccl_triage {
namespace {

constexpr const char* kUsage =
    "usage: nccl-triage-server agent [--config FILE] [--root DIR] [--standalone]\n"
    "                                [--listen ADDR:PORT] [--coordinator HOST:PORT] [--node NAME]\n"
    "                                [--once] [--log-format text|json]\n"
    "  Runs the node agent: checks every agent.interval_seconds, serves /metrics /livez /readyz\n"
    "  /status (default 0.0.0.0:9500), and inside Kubernetes annotates its own pod (POD_NAME,\n"
    "  POD_NAMESPACE) and optionally writes the NcclFabricReady node condition and events\n"
    "  (credentials: the pod's service account, or $NCCL_TRIAGE_SERVICE_ACCOUNT_DIR laid out so).\n"
    "  --root DIR     read the node from DIR instead of / (a fixture tree)\n"
    "  --standalone   no coordinator: checks and local verdicts only\n"
    "  --node NAME    node name (default: $NODE_NAME, else the hostname under the root)\n"
    "  --once         one cycle, print the report JSON, exit 0 (ok) / 1 (a check failed)\n"
    "  --log-format   text (default) or json: one JSON object per line on stderr\n";

struct AgentFlags {
  std::optional<std::string> config;
  std::string root = "/";
  bool standalone = false;
  std::optional<std::string> listen;
  std::optional<std::string> coordinator;
  std::optional<std::string> node;
  bool once = false;
  bool help = false;
  std::string log_format = "text";
};

StatusOr<AgentFlags> ParseFlags(const std::vector<std::string>& args) {
  AgentFlags f;
  Status s = FlagParser()
                 .Switch({"--help", "-h"}, &f.help)
                 .Switch({"--standalone"}, &f.standalone)
                 .Switch({"--once"}, &f.once)
                 .String({"--config"}, &f.config)
                 .String({"--listen"}, &f.listen)
                 .String({"--coordinator"}, &f.coordinator)
                 .String({"--node"}, &f.node)
                 .String({"--root"}, &f.root)
                 .Choice({"--log-format"}, &f.log_format, {"text", "json"})
                 .Parse(args);
  if (!s.ok()) return s;
  return f;
}

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

std::map<std::string, std::string> ProcessEnvironment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string kv(*e);
    size_t eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return env;
}

// Blocks SIGTERM/SIGINT in this thread (and so in every thread it starts) while alive, so that
// the main thread can wait for them with sigwait; restores the mask afterwards.
class SignalBlock {
 public:
  SignalBlock() {
    sigemptyset(&set_);
    sigaddset(&set_, SIGTERM);
    sigaddset(&set_, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set_, &old_);
  }
  ~SignalBlock() { pthread_sigmask(SIG_SETMASK, &old_, nullptr); }
  int Wait() {
    int sig = 0;
    sigwait(&set_, &sig);
    return sig;
  }

 private:
  sigset_t set_{};
  sigset_t old_{};
};

// The configuration file (or the defaults) and the log classifier's rules (the shipped file and
// classify.rule_files).
StatusOr<Config> LoadAgentConfig(const AgentFlags& flags) {
  Config config;
  if (flags.config) {
    auto loaded = LoadConfigFile(*flags.config);
    if (!loaded.ok()) return loaded.status();
    config = std::move(loaded).value();
  }
  if (Status rules = LoadAndActivateRules(config.classify.rule_files); !rules.ok()) return rules;
  return config;
}

// Gathers from the root; the kubelet's GPU assignments join the snapshot, for the busy-GPU gate
// (core/gpu_holders.h): a GPU assigned to a container is never probed, even before its job opens it.
GatherFn MakeAgentGather(const AgentFlags& flags, const std::string& node, const Config& config) {
  GatherOptions gather_options;
  gather_options.root = flags.root;
  gather_options.node_name = node;
  gather_options.mr_register_bytes = config.checks.mr_register_bytes;
  GatherFn gather = MakeRootGatherFn(gather_options);
  if (const std::string socket = workload::PodResourcesSocketUnder(flags.root); !socket.empty()) {
    auto kubelet = std::make_shared<workload::GrpcPodResources>(socket);
    gather = [gather = std::move(gather), kubelet]() -> StatusOr<NodeSnapshot> {
      auto snapshot = gather();
      if (snapshot.ok()) workload::ReadGpuAllocations(*kubelet, *snapshot);
      return snapshot;
    };
  }
  return gather;
}

// The Kubernetes client, when running in a pod and something needs it (publication, or the
// node's labels); `error` says why there is none when one was wanted.
struct KubeAccess {
  std::unique_ptr<KubeClient> client;
  std::string error;
  std::string host;          // KUBERNETES_SERVICE_HOST: empty outside a pod
  bool publishes = false;    // annotations, the node condition or events are on
};

KubeAccess ConnectKube(const Config& config, bool needs_node_labels) {
  KubeAccess k;
  k.publishes = config.agent.annotate_pod || config.agent.node_condition || config.agent.events;
  k.host = Env("KUBERNETES_SERVICE_HOST");
  if ((!k.publishes && !needs_node_labels) || k.host.empty()) return k;
  InClusterOptions kube_options;
  kube_options.host = k.host;
  std::string kube_port = Env("KUBERNETES_SERVICE_PORT");
  kube_options.port = kube_port.empty() ? 443 : std::atoi(kube_port.c_str());
  // Outside a pod (a test, a bench): a directory laid out as the pod's service-account mount.
  if (std::string dir = Env("NCCL_TRIAGE_SERVICE_ACCOUNT_DIR"); !dir.empty()) {
    kube_options.service_account_dir = dir;
  }
  auto client = InClusterKubeClient::Create(kube_options);
  if (client.ok()) {
    k.client = std::move(client).value();
  } else {
    k.error = client.status().message();
  }
  return k;
}

// Whether anything needs the node's labels: config.pools, or the topology label reported to a
// coordinator.
bool NeedsNodeLabels(const Config& config, const AgentFlags& flags) {
  const bool coordinator = !flags.standalone && (flags.coordinator || config.agent.coordinator);
  return !config.pools.empty() || (coordinator && !config.coordinator.topology_label.empty());
}

// The node's labels, read once at start-up for both that need them (one GET of the Node, with
// retries). An empty result with `error` set when they are needed and cannot be read.
NodeLabelsRead ReadNodeLabelsOnce(bool needed, const std::string& node, const KubeAccess& kube) {
  NodeLabelsRead read;
  if (!needed) return read;
  if (node.empty()) {
    read.error = "no node name (NODE_NAME or --node)";
  } else if (!kube.client) {
    read.error = kube.host.empty() ? "not running in Kubernetes" : kube.error;
  } else {
    read = ReadNodeLabels(*kube.client, node,
                          [](std::chrono::seconds s) { std::this_thread::sleep_for(s); });
  }
  return read;
}

// The node pool (config.pools): its expectations replace the top-level ones in `config`. A node
// whose labels cannot be read is judged by the top-level expect, and says so. Returns the pool's
// name, empty for none.
std::string ApplyNodePool(Config& config, const std::string& node, const NodeLabelsRead& labels,
                          Logger& log) {
  if (config.pools.empty()) return "";
  if (!labels.ok()) {
    log.Warn("agent", "node pools ignored, the top-level expect applies: cannot read the "
                      "node's labels (" + labels.error + ")");
    return "";
  }
  if (const PoolConfig* chosen = SelectPool(config.pools, labels.labels)) {
    config.expect = chosen->expect;
    log.Info("agent", "node pool " + chosen->name + ": its expect applies");
    return chosen->name;
  }
  log.Info("agent", "node " + node + " is in no pool: the top-level expect applies");
  return "";
}

// The kernel log joins the checks: its findings are judged on the same snapshot each cycle.
// Sets `monitor` (for the metrics' counters) when the kernel log is on.
JudgeFn WithKernelLog(JudgeFn judge, const Config& config, const std::string& root,
                      Clock& clock, std::shared_ptr<kernel::KernelMonitor>& monitor) {
  if (!config.kernel.enabled) return judge;
  kernel::KernelMonitorOptions kernel_options;
  kernel_options.root = root;
  kernel_options.state_dir = config.kernel.state_dir;
  kernel_options.link_flaps_per_hour = config.kernel.link_flaps_per_hour;
  kernel_options.flap_stable_ms = int64_t{config.checks.flap_stable_seconds} * 1000;
  monitor = std::make_shared<kernel::KernelMonitor>(kernel_options);
  return [judge = std::move(judge), monitor, &clock](const NodeSnapshot& now,
                                                     const NodeSnapshot* previous) {
    std::vector<Finding> findings = judge(now, previous);
    for (Finding& f : monitor->Judge(now, clock.NowUnixMs())) findings.push_back(std::move(f));
    return findings;
  };
}

// --once: one cycle, the report as JSON on stdout, the check's exit code.
int RunOneCycle(Agent& agent, AgentState& state, const std::string& root, CliContext& ctx,
                Logger& log) {
  std::shared_ptr<const NodeReport> report = agent.RunCycle();
  std::string error = state.View().cycle.last_error;
  if (!error.empty()) {
    ctx.err << "nccl-triage-server agent: " << error << "\n";
    return 2;
  }
  std::string causes;
  for (const std::string& c : report->causes) causes += (causes.empty() ? "" : ", ") + c;
  log.Info("agent", "one cycle on " + root + ": " + std::string(ToString(report->fault_class)) +
                        ", " + std::to_string(report->findings.size()) + " findings" +
                        (causes.empty() ? std::string() : ", failing: " + causes));
  ctx.out << DumpJson(ToJson(*report), 2) << "\n";
  return ExitCodeFor(*report);
}

// Probes, run only when a coordinator assigns them: the probe child is the small executable
// beside this one (it holds the `probe` subcommand and loads NCCL; the server never does).
Status SetUpProbes(Agent& agent, const Config& config, const AgentFlags& flags,
                   const std::string& self_exe, Logger& log) {
  ProbeRunnerOptions probe_options;
  probe_options.child_exe = SiblingExe(self_exe, "nccl-triage");
  if (::access(probe_options.child_exe.c_str(), X_OK) != 0) {
    log.Error("agent", "probe child " + probe_options.child_exe +
                           " is not executable: probes will fail as unavailable (install "
                           "nccl-triage beside nccl-triage-server)");
  }
  probe_options.root = flags.root;
  probe_options.parent_env = ProcessEnvironment();
  // A fresh private folder: a fixed name under $TMPDIR could have been made by another user
  // beforehand, and the probe child (root) would write into it.
  auto dir = MakePrivateWorkDir(probe_options.parent_env);
  if (!dir.ok()) return InvalidArgument("probe logs: " + dir.status().message());
  probe_options.work_dir = *dir;
  auto probe_runner = std::make_shared<const ProbeRunner>(config.probe, probe_options);
  agent.SetProbeRunner(MakeRunnerProbeFn(probe_runner));
  agent.SetIntraNodeProbe(MakeIntraNodeFn(probe_runner, config.probe.allow_when_gpus_busy));
  agent.SetLibraryCheck([probe_runner] { return probe_runner->CheckLibraries(); });
  return Status::Ok();
}

// Kubernetes publication (annotations, the node condition, events), when running in a pod.
std::unique_ptr<KubePublisher> StartPublisher(Agent& agent, const Config& config,
                                              const std::string& node, const KubeAccess& kube,
                                              Clock& clock, Logger& log) {
  if (!kube.publishes) return nullptr;
  if (kube.host.empty()) {
    log.Info("kube", "not running in Kubernetes (no KUBERNETES_SERVICE_HOST): no annotations");
    return nullptr;
  }
  if (!kube.client) {
    log.Warn("kube", "no Kubernetes publication: " + kube.error);
    return nullptr;
  }
  KubePublisherOptions p;
  p.node = node;
  p.pod_namespace = Env("POD_NAMESPACE");
  p.pod_name = Env("POD_NAME");
  p.annotate_pod = config.agent.annotate_pod;
  p.node_condition = config.agent.node_condition && !node.empty();
  p.events = config.agent.events && !node.empty();
  if (p.annotate_pod && (p.pod_name.empty() || p.pod_namespace.empty())) {
    log.Warn("kube", "POD_NAME/POD_NAMESPACE not set: the agent's pod is not annotated");
  }
  auto publisher = std::make_unique<KubePublisher>(*kube.client, p, clock, log);
  agent.AddSink(publisher.get());
  publisher->Start();
  return publisher;
}

// The coordinator session, with the node's topology label (from the labels read at start-up).
Status ConnectCoordinator(Agent& agent, const Config& config, const AgentFlags& flags,
                          const NodeLabelsRead& node_labels, Logger& log) {
  std::optional<std::string> coordinator = flags.coordinator;
  if (!coordinator) coordinator = config.agent.coordinator;
  if (!coordinator || flags.standalone) return Status::Ok();
  std::map<std::string, std::string> labels;
  const std::string& topology = config.coordinator.topology_label;
  if (!topology.empty() && !node_labels.ok()) {
    log.Warn("agent", "topology label " + topology + " not reported: cannot read the node's "
                      "labels (" + node_labels.error + ")");
  } else if (!topology.empty()) {
    auto it = node_labels.labels.find(topology);
    if (it != node_labels.labels.end()) labels[it->first] = it->second;
  }
  auto link = MakeCoordinatorLink(*coordinator, config, Env("NCCL_TRIAGE_TOKEN"), labels,
                                  NCCL_TRIAGE_VERSION, log);
  if (!link.ok()) return link.status();
  agent.SetCoordinatorLink(std::move(link).value());
  log.Info("agent", "coordinator session to " + *coordinator);
  return Status::Ok();
}

// The workload view (the users' GPU pods on this node, read through /proc/<pid>): a pass after
// every cycle on its own thread; annotations only with agent.annotate_pod.
std::unique_ptr<workload::WorkloadMonitor> StartWorkloads(Agent& agent, AgentState& state,
                                                          const Config& config,
                                                          const AgentFlags& flags,
                                                          const std::string& node,
                                                          KubeClient* kube, Clock& clock,
                                                          Logger& log) {
  if (!config.agent.workloads) return nullptr;
  workload::WorkloadMonitorOptions w;
  w.node = node;
  w.scanner.root = flags.root;
  w.scanner.self_pid = flags.root == "/" ? static_cast<int>(::getpid()) : 0;
  w.config = config;
  w.annotate = config.agent.annotate_pod;
  std::unique_ptr<workload::PodResourcesSource> pod_resources;
  const std::string socket = workload::PodResourcesSocketUnder(flags.root);
  if (!socket.empty()) {
    pod_resources = std::make_unique<workload::GrpcPodResources>(socket);
    log.Info("workload", "device assignments from the kubelet's pod-resources socket " + socket);
  }
  auto workloads =
      workload::MakeWorkloadMonitor(w, &state, kube, std::move(pod_resources), clock, log);
  agent.AddSink(workloads.get());
  workloads->Start();
  return workloads;
}

// The files the agent keeps in kernel.state_dir (each written through a ".tmp" beside it).
constexpr const char* kStateFiles[] = {"kmsg.cursor", "ports.state"};

// When the release is being uninstalled, the agent's files on the host go with it: the chart's
// pre-delete hook (`cleanup --stop`) marks the agents' pods before it deletes their DaemonSet,
// and an agent that finds its own pod marked as it stops removes its state files and, when it can,
// the directory (the hostPath volume's mount point here, removable from the host's view of the
// filesystem through pid 1's root when the pod shares the host's PID namespace). A restart, a
// rollout or an eviction leaves them: the kernel-log cursor must survive those.
void RemoveStateIfUninstalling(const Config& config, const std::string& node,
                               const KubeAccess& kube, Logger& log) {
  const std::string dir = config.kernel.state_dir;
  const std::string pod = Env("POD_NAME");
  const std::string ns = Env("POD_NAMESPACE");
  if (dir.empty() || !kube.client || pod.empty() || ns.empty() || node.empty()) return;
  const KubeResponse r = kube.client->ListPods("spec.nodeName=" + node);
  const nlohmann::json list = nlohmann::json::parse(r.body, nullptr, false);
  if (!r.ok() || !list.is_object()) {
    log.Warn("agent", "cannot tell whether the release is being uninstalled (list pods: " +
                          r.Describe() + "): " + dir + " stays");
    return;
  }
  if (!PodMarkedUninstalling(list, ns, pod)) return;
  std::error_code ec;
  for (const char* name : kStateFiles) {
    std::filesystem::remove(dir + "/" + name, ec);
    std::filesystem::remove(dir + "/" + name + ".tmp", ec);
  }
  // Only an empty directory is removed: anything else in it is not ours.
  bool gone = std::filesystem::remove(dir, ec);
  if (!gone) gone = std::filesystem::remove("/proc/1/root" + dir, ec);
  const std::string what =
      gone ? " and the directory" : " (the directory stays: " + ec.message() + ")";
  log.Info("agent", "the release is being uninstalled: removed the state files in " + dir + what);
}

}  // namespace

// Start-up is an ordered list of steps, each failing with one line and exit 2; the teardown runs
// in reverse once SIGTERM or SIGINT arrives.
int RunAgentCommand(CliContext& ctx) {
  auto flags_or = ParseFlags(ctx.args);
  if (!flags_or.ok()) {
    ctx.err << "nccl-triage-server agent: " << flags_or.status().message() << "\n";
    return 2;
  }
  const AgentFlags flags = *flags_or;
  if (flags.help) {
    ctx.out << kUsage;
    return 0;
  }
  auto fail = [&ctx](const std::string& message) {
    ctx.err << "nccl-triage-server agent: " << message << "\n";
    return 2;
  };

  auto config_or = LoadAgentConfig(flags);
  if (!config_or.ok()) return fail(config_or.status().message());
  Config config = std::move(config_or).value();
  auto address = ParseListenAddress(flags.listen.value_or(config.agent.listen));
  if (!address.ok()) return fail(address.status().message());
  // Who may read /metrics and /status (--once serves neither), before anything starts: they are
  // never served open instead.
  HttpAuthSetup auth;
  if (!flags.once) {
    auto setup = SetUpHttpAuth(config, {.kube_host = Env("KUBERNETES_SERVICE_HOST"),
                                        .kube_port = Env("KUBERNETES_SERVICE_PORT"),
                                        .service_account_dir =
                                            Env("NCCL_TRIAGE_SERVICE_ACCOUNT_DIR")});
    if (!setup.ok()) return fail(setup.status().message());
    auth = std::move(setup).value();
  }
  std::error_code ec;
  if (!std::filesystem::is_directory(flags.root, ec)) {
    return fail("root '" + flags.root + "' is not a directory");
  }

  Logger log(ctx.err, LogLevel::kInfo,
             flags.log_format == "json" ? LogFormat::kJson : LogFormat::kText);
  SystemClock clock;
  const std::string node = flags.node.value_or(Env("NODE_NAME"));

  // The loop's parts: gather from the root, judge with the built-in checks (by the node's pool)
  // and the kernel log.
  GatherFn gather = MakeAgentGather(flags, node, config);
  const bool needs_labels = NeedsNodeLabels(config, flags);
  const KubeAccess kube = ConnectKube(config, needs_labels);
  const NodeLabelsRead node_labels = ReadNodeLabelsOnce(needs_labels, node, kube);
  const std::string pool = ApplyNodePool(config, node, node_labels, log);
  std::shared_ptr<kernel::KernelMonitor> kernel_monitor;
  // The ports' memory lives beside the kernel-log cursor (kernel.state_dir). --once is a one-shot
  // check like `check`: it judges the ports as they are.
  auto port_memory = flags.once ? nullptr
                                : std::make_shared<PortMemory>(
                                      config.kernel.state_dir,
                                      int64_t{config.checks.flap_stable_seconds} * 1000);
  JudgeFn judge = WithKernelLog(MakeBuiltinJudgeFn(config, port_memory), config, flags.root, clock,
                                kernel_monitor);

  AgentState state(node, NCCL_TRIAGE_VERSION, clock.NowUnixMs());
  state.SetPool(pool);
  AgentOptions options;
  options.node = node;
  options.interval = std::chrono::seconds(std::max(1, config.agent.interval_seconds));
  options.config = config;
  Agent agent(options, gather, judge, state, clock, log);
  if (flags.once) return RunOneCycle(agent, state, flags.root, ctx, log);

  if (Status s = SetUpProbes(agent, config, flags, ctx.self_exe, log); !s.ok()) {
    return fail(s.message());
  }

  // Metrics and HTTP endpoints.
  SignalBlock signals;
  if (std::string unknown = UnknownMetricFamilies(config.agent.metrics_disabled);
      !unknown.empty()) {
    return fail("agent.metrics_disabled names no agent metric family: " + unknown +
                " (the families are listed in docs/metrics.md)");
  }
  AgentMetrics metrics(state, NCCL_TRIAGE_VERSION, config.agent.metrics_disabled);
  if (kernel_monitor) {
    metrics.SetKernelCounts([kernel_monitor] { return kernel_monitor->Counts(); });
  }
  HttpServer server(&log);
  InstallAgentEndpoints(server, state, metrics, auth.authorizer);
  auto port = server.Start(address->first, address->second);
  if (!port.ok()) return fail(port.status().message());
  log.Info("agent", "serving /metrics /livez /readyz /status on " + address->first + ":" +
                        std::to_string(*port) + " (root " + flags.root + ")");
  log.Info("agent", DescribeHttpAuth(config));

  std::unique_ptr<KubePublisher> publisher = StartPublisher(agent, config, node, kube, clock, log);
  if (Status s = ConnectCoordinator(agent, config, flags, node_labels, log); !s.ok()) {
    return fail(s.message());
  }
  std::unique_ptr<workload::WorkloadMonitor> workloads =
      StartWorkloads(agent, state, config, flags, node, kube.client.get(), clock, log);

  // Run until SIGTERM/SIGINT; teardown always runs.
  std::jthread loop([&agent](std::stop_token stop) { agent.Run(stop); });
  int sig = signals.Wait();
  log.Info("agent", std::string("stopping on ") + (sig == SIGINT ? "SIGINT" : "SIGTERM"));
  loop.request_stop();
  loop.join();
  if (workloads) workloads->Stop();
  if (publisher) publisher->Stop();
  RemoveStateIfUninstalling(config, node, kube, log);
  server.Stop();
  return 0;
}

}  // namespace nccl_triage
