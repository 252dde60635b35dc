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
#include "config/config_loader.h"
#include "coordinator_client/session.h"
#include "core/config.h"
#include "core/report.h"
#include "daemon/agent.h"
#include "daemon/node_loop_parts.h"
#include "daemon/probe_adapter.h"
#include "exporter/agent_http.h"
#include "exporter/http_server.h"
#include "exporter/kube_publisher.h"
#include "exporter/metrics.h"
#include "host/gatherer.h"
#include "kube/kube_client.h"
#include "kubelet/pod_resources_client.h"
#include "nccl_triage_version.h"
#include "probe/runner.h"
#include "server/server_cli.h"
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

}  // namespace

int RunAgentCommand(CliContext& ctx) {
  auto flags_or = ParseFlags(ctx.args);
  if (!flags_or.ok()) {
    ctx.err << "nccl-triage-server agent: " << flags_or.status().message() << "\n";
    return 2;
  }
  AgentFlags flags = *flags_or;
  if (flags.help) {
    ctx.out << kUsage;
    return 0;
  }

  // Step: configuration.
  Config config;
  if (flags.config) {
    auto loaded = LoadConfigFile(*flags.config);
    if (!loaded.ok()) {
      ctx.err << "nccl-triage-server agent: " << loaded.status().message() << "\n";
      return 2;
    }
    config = std::move(loaded).value();
  }
  std::string listen = flags.listen.value_or(config.agent.listen);
  auto address = ParseListenAddress(listen);
  if (!address.ok()) {
    ctx.err << "nccl-triage-server agent: " << address.status().message() << "\n";
    return 2;
  }
  std::error_code ec;
  if (!std::filesystem::is_directory(flags.root, ec)) {
    ctx.err << "nccl-triage-server agent: root '" << flags.root << "' is not a directory\n";
    return 2;
  }

  Logger log(ctx.err, LogLevel::kInfo,
             flags.log_format == "json" ? LogFormat::kJson : LogFormat::kText);
  SystemClock clock;
  std::string node = flags.node.value_or(Env("NODE_NAME"));

  // Step: the loop's parts (gather from the root, judge with the built-in checks).
  GatherOptions gather_options;
  gather_options.root = flags.root;
  gather_options.node_name = node;
  gather_options.mr_register_bytes = config.checks.mr_register_bytes;
  GatherFn gather = MakeRootGatherFn(gather_options);
  // The kubelet's GPU assignments join the snapshot, for the busy-GPU gate (core/gpu_holders.h):
  // a GPU assigned to a container is never probed, even before its job opens it.
  if (const std::string socket = workload::PodResourcesSocketUnder(flags.root); !socket.empty()) {
    auto kubelet = std::make_shared<workload::GrpcPodResources>(socket);
    gather = [gather = std::move(gather), kubelet]() -> StatusOr<NodeSnapshot> {
      auto snapshot = gather();
      if (snapshot.ok()) workload::ReadGpuAllocations(*kubelet, *snapshot);
      return snapshot;
    };
  }
  JudgeFn judge = MakeBuiltinJudgeFn(config);

  AgentState state(node, NCCL_TRIAGE_VERSION, clock.NowUnixMs());
  AgentOptions options;
  options.node = node;
  options.interval = std::chrono::seconds(std::max(1, config.agent.interval_seconds));
  options.config = config;
  Agent agent(options, gather, judge, state, clock, log);

  if (flags.once) {
    std::shared_ptr<const NodeReport> report = agent.RunCycle();
    std::string error = state.View().cycle.last_error;
    if (!error.empty()) {
      ctx.err << "nccl-triage-server agent: " << error << "\n";
      return 2;
    }
    std::string causes;
    for (const std::string& c : report->causes) causes += (causes.empty() ? "" : ", ") + c;
    log.Info("agent", "one cycle on " + flags.root + ": " +
                          std::string(ToString(report->fault_class)) + ", " +
                          std::to_string(report->findings.size()) + " findings" +
                          (causes.empty() ? std::string() : ", failing: " + causes));
    ctx.out << ToJson(*report).dump(2) << "\n";
    return ExitCodeFor(*report);
  }

  // Step: probes (run only when a coordinator assigns them).
  ProbeRunnerOptions probe_options;
  // The probe child is the small executable beside this one (it holds the `probe` subcommand and
  // loads NCCL; the server never does).
  probe_options.child_exe = SiblingExe(ctx.self_exe, "nccl-triage");
  if (::access(probe_options.child_exe.c_str(), X_OK) != 0) {
    log.Error("agent", "probe child " + probe_options.child_exe +
                           " is not executable: probes will fail as unavailable (install "
                           "nccl-triage beside nccl-triage-server)");
  }
  probe_options.root = flags.root;
  probe_options.work_dir = (std::filesystem::temp_directory_path() / "nccl-triage-probes").string();
  probe_options.parent_env = ProcessEnvironment();
  auto probe_runner = std::make_shared<const ProbeRunner>(config.probe, probe_options);
  agent.SetProbeRunner(MakeRunnerProbeFn(probe_runner));
  agent.SetIntraNodeProbe(MakeIntraNodeFn(probe_runner, config.probe.allow_when_gpus_busy));

  // Step: metrics and HTTP endpoints.
  SignalBlock signals;
  if (std::string unknown = UnknownMetricFamilies(config.agent.metrics_disabled);
      !unknown.empty()) {
    ctx.err << "nccl-triage-server agent: agent.metrics_disabled names no agent metric family: "
            << unknown << " (the families are listed in the README, \"Metrics\")\n";
    return 2;
  }
  AgentMetrics metrics(state, NCCL_TRIAGE_VERSION, config.agent.metrics_disabled);
  HttpServer server(&log);
  InstallAgentEndpoints(server, state, metrics);
  auto port = server.Start(address->first, address->second);
  if (!port.ok()) {
    ctx.err << "nccl-triage-server agent: " << port.status().message() << "\n";
    return 2;
  }
  log.Info("agent", "serving /metrics /livez /readyz /status on " + address->first + ":" +
                        std::to_string(*port) + " (root " + flags.root + ")");

  // Step: Kubernetes publication, when running in a pod.
  std::unique_ptr<KubeClient> kube;
  std::unique_ptr<KubePublisher> publisher;
  bool wants_kube = config.agent.annotate_pod || config.agent.node_condition || config.agent.events;
  std::string kube_host = Env("KUBERNETES_SERVICE_HOST");
  if (wants_kube && !kube_host.empty()) {
    InClusterOptions kube_options;
    kube_options.host = kube_host;
    std::string kube_port = Env("KUBERNETES_SERVICE_PORT");
    kube_options.port = kube_port.empty() ? 443 : std::atoi(kube_port.c_str());
    // Outside a pod (a test, a bench): a directory laid out as the pod's service-account mount.
    if (std::string dir = Env("NCCL_TRIAGE_SERVICE_ACCOUNT_DIR"); !dir.empty()) {
      kube_options.service_account_dir = dir;
    }
    auto client = InClusterKubeClient::Create(kube_options);
    if (!client.ok()) {
      log.Warn("kube", "no Kubernetes publication: " + client.status().message());
    } else {
      kube = std::move(client).value();
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
      publisher = std::make_unique<KubePublisher>(*kube, p, clock, log);
      agent.AddSink(publisher.get());
      publisher->Start();
    }
  } else if (wants_kube) {
    log.Info("kube", "not running in Kubernetes (no KUBERNETES_SERVICE_HOST): no annotations");
  }

  // Step: the coordinator session (after the Kubernetes client: it reads the topology label).
  std::optional<std::string> coordinator = flags.coordinator;
  if (!coordinator) coordinator = config.agent.coordinator;
  if (coordinator && !flags.standalone) {
    std::map<std::string, std::string> labels;
    if (kube && !config.coordinator.topology_label.empty() && !node.empty()) {
      for (auto& [k, v] : NodeLabelsFromJson(kube->GetNode(node).body)) {
        if (k == config.coordinator.topology_label) labels[k] = v;
      }
    }
    auto link = MakeCoordinatorLink(*coordinator, config, Env("NCCL_TRIAGE_TOKEN"), labels,
                                    NCCL_TRIAGE_VERSION, log);
    if (!link.ok()) {
      ctx.err << "nccl-triage-server agent: " << link.status().message() << "\n";
      return 2;
    }
    agent.SetCoordinatorLink(std::move(link).value());
    log.Info("agent", "coordinator session to " + *coordinator);
  }

  // Step: the workload view (the users' GPU pods on this node, read through /proc/<pid>): a pass
  // after every cycle on its own thread; annotations only with agent.annotate_pod.
  std::unique_ptr<workload::WorkloadMonitor> workloads;
  if (config.agent.workloads) {
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
    workloads =
        workload::MakeWorkloadMonitor(w, &state, kube.get(), std::move(pod_resources), clock, log);
    agent.AddSink(workloads.get());
    workloads->Start();
  }

  // Run until SIGTERM/SIGINT; teardown always runs.
  std::jthread loop([&agent](std::stop_token stop) { agent.Run(stop); });
  int sig = signals.Wait();
  log.Info("agent", std::string("stopping on ") + (sig == SIGINT ? "SIGINT" : "SIGTERM"));
  loop.request_stop();
  loop.join();
  if (workloads) workloads->Stop();
  if (publisher) publisher->Stop();
  server.Stop();
  return 0;
}

}  // namespace nccl_triage
