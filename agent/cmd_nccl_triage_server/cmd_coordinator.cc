// `nccl-triage-server coordinator`: the coordinator Deployment. It accepts one gRPC session per
// agent (default 0.0.0.0:9501), sweeps every coordinator.sweep_interval_seconds and on POST /sweep,
// and serves /metrics /livez /readyz /status on its HTTP port (default 0.0.0.0:9502).
//
// The shared token comes from coordinator.token_file or the environment (NCCL_TRIAGE_TOKEN), none
// with coordinator.identity_only (agents then authenticate by node identity alone); TLS is on
// when coordinator.cert_file and key_file are set. Start-up errors (bad flags, unreadable
// configuration, token or certificate files, a port in use) end it with one line and exit code
// 2; SIGTERM and SIGINT stop it cleanly (exit 0).
#include <signal.h>

#include <cstdlib>
#include <iostream>

#include "base/files.h"
#include "base/flags.h"
#include "base/log.h"
#include "cmd_nccl_triage_server/http_auth_setup.h"
#include "cmd_nccl_triage_server/node_identity_setup.h"
#include "cmd_nccl_triage_server/server_cli.h"
#include "config/config_loader.h"
#include "coordinator/server.h"
#include "kube/kube_client.h"
#include "kube/leader_election.h"
#include "kube/leader_label.h"
#include "nccl_triage_version.h"

namespace nccl_triage {
namespace {

constexpr const char* kUsage =
    "usage: nccl-triage-server coordinator [--config FILE] [--listen ADDR:PORT] [--http-listen "
    "ADDR:PORT]\n"
    "                                      [--log-format text|json]\n"
    "  Pairs the agents, has every pair run a socket and an IB probe, localises faults to a node\n"
    "  or a link. gRPC for agents on --listen (default 0.0.0.0:9501); /metrics /livez /readyz\n"
    "  /status and POST /sweep on --http-listen (default 0.0.0.0:9502).\n"
    "  Token: coordinator.token_file, else $NCCL_TRIAGE_TOKEN. TLS: coordinator.cert_file and\n"
    "  coordinator.key_file. coordinator.verify_node_identity asks the API server with the pod's\n"
    "  service account (or $NCCL_TRIAGE_SERVICE_ACCOUNT_DIR laid out so); with\n"
    "  coordinator.identity_only it is the agents' only authentication (no shared token).\n"
    "  coordinator.leader_election: one leader among the replicas on a Lease in $POD_NAMESPACE,\n"
    "  held as $POD_NAME; the others are ready standbys that refuse agents until they lead.\n"
    "  With $NCCL_TRIAGE_COORDINATOR_POD_SELECTOR the leader labels its pod\n"
    "  nccl-triage.io/coordinator-role=leader (the Service's selector) and clears it elsewhere.\n"
    "  --log-format text (default) or json: one JSON object per line on stderr\n";

}  // namespace

int RunCoordinatorCommand(CliContext& ctx) {
  std::optional<std::string> config_path, listen, http_listen;
  bool help = false;
  std::string log_format = "text";
  Status parsed = FlagParser()
                      .Switch({"--help", "-h"}, &help)
                      .Choice({"--log-format"}, &log_format, {"text", "json"})
                      .String({"--config"}, &config_path)
                      .String({"--listen"}, &listen)
                      .String({"--http-listen"}, &http_listen)
                      .Parse(ctx.args);
  if (!parsed.ok()) {
    ctx.err << "nccl-triage-server coordinator: " << parsed.message() << "\n";
    return 2;
  }
  if (help) {
    ctx.out << kUsage;
    return 0;
  }

  Config config;
  if (config_path) {
    auto loaded = LoadConfigFile(*config_path);
    if (!loaded.ok()) {
      ctx.err << "nccl-triage-server coordinator: " << loaded.status().message() << "\n";
      return 2;
    }
    config = *loaded;
  }
  if (listen) config.coordinator.listen = *listen;
  if (http_listen) config.coordinator.http_listen = *http_listen;
  CoordinatorOptions options{.config = config};
  options.version = NCCL_TRIAGE_VERSION;
  if (config.coordinator.identity_only) {
    // A token set beside it would say that something is meant to present one: refuse the mix.
    if (config.coordinator.token_file || std::getenv("NCCL_TRIAGE_TOKEN") != nullptr) {
      ctx.err << "nccl-triage-server coordinator: coordinator.identity_only uses no shared token: "
                 "unset coordinator.token_file and NCCL_TRIAGE_TOKEN\n";
      return 2;
    }
  } else if (config.coordinator.token_file) {
    auto token = ReadTokenFile(*config.coordinator.token_file);
    if (!token.ok()) {
      ctx.err << "nccl-triage-server coordinator: " << token.status().message() << "\n";
      return 2;
    }
    options.token = *token;
  } else if (const char* env = std::getenv("NCCL_TRIAGE_TOKEN"); env != nullptr) {
    options.token = TrimToken(env);
  }
  if (config.coordinator.cert_file.has_value() != config.coordinator.key_file.has_value()) {
    ctx.err
        << "nccl-triage-server coordinator: TLS needs both coordinator.cert_file and key_file\n";
    return 2;
  }
  if (config.coordinator.cert_file) {
    auto cert = ReadWholeFile(*config.coordinator.cert_file, "certificate");
    auto key = ReadWholeFile(*config.coordinator.key_file, "key");
    if (!cert.ok() || !key.ok()) {
      ctx.err << "nccl-triage-server coordinator: "
              << (!cert.ok() ? cert.status().message() : key.status().message()) << "\n";
      return 2;
    }
    options.cert_pem = *cert;
    options.key_pem = *key;
  }

  auto env = [](const char* name) {
    const char* v = std::getenv(name);
    return std::string(v ? v : "");
  };
  auto identity = SetUpNodeIdentity(
      config, {.kube_host = env("KUBERNETES_SERVICE_HOST"),
               .kube_port = env("KUBERNETES_SERVICE_PORT"),
               .agent_service_account = env("NCCL_TRIAGE_AGENT_SERVICE_ACCOUNT"),
               .service_account_dir = env("NCCL_TRIAGE_SERVICE_ACCOUNT_DIR")});
  if (!identity.ok()) {
    ctx.err << "nccl-triage-server coordinator: " << identity.status().message() << "\n";
    return 2;
  }
  options.identity = identity->identity;
  auto auth = SetUpHttpAuth(config, {.kube_host = env("KUBERNETES_SERVICE_HOST"),
                                     .kube_port = env("KUBERNETES_SERVICE_PORT"),
                                     .service_account_dir = env("NCCL_TRIAGE_SERVICE_ACCOUNT_DIR")});
  if (!auth.ok()) {
    ctx.err << "nccl-triage-server coordinator: " << auth.status().message() << "\n";
    return 2;
  }
  options.http_authorizer = auth->authorizer;
  if (config.remediation.mode != RemediationMode::kOff || config.validation.new_nodes) {
    // Its own client: remediation's patches need not wait behind the agents' TokenReviews.
    const std::string host = env("KUBERNETES_SERVICE_HOST");
    const std::string port = env("KUBERNETES_SERVICE_PORT");
    InClusterOptions in_cluster{.host = host, .port = port.empty() ? 443 : std::atoi(port.c_str())};
    if (const std::string dir = env("NCCL_TRIAGE_SERVICE_ACCOUNT_DIR"); !dir.empty()) {
      in_cluster.service_account_dir = dir;  // as for the identity and HTTP reviews above
    }
    auto kube = InClusterKubeClient::Create(in_cluster);
    if (!kube.ok()) {
      ctx.err << "nccl-triage-server coordinator: remediation.mode "
              << ToString(config.remediation.mode)
              << " needs the Kubernetes API: " << kube.status().message() << "\n";
      return 2;
    }
    options.kube = std::shared_ptr<KubeClient>(std::move(kube).value());
    // The chart names the ConfigMap that keeps the faults across restarts (state_store.h).
    options.state_configmap = env("NCCL_TRIAGE_STATE_CONFIGMAP");
    options.state_namespace = env("POD_NAMESPACE");
    if (options.state_namespace.empty()) options.state_namespace = "default";
  }

  // Tests only (server.h, CoordinatorOptions::test_hold_dir).
  options.test_hold_dir = env("NCCL_TRIAGE_TEST_HOLD_DIR");

  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigset_t old;
  pthread_sigmask(SIG_BLOCK, &set, &old);  // before any thread starts: they inherit the mask

  Logger log(ctx.err, LogLevel::kInfo, log_format == "json" ? LogFormat::kJson : LogFormat::kText);
  // Leader election: a client of its own (a renewal must not wait behind remediation's patches)
  // whose requests time out at half the renew deadline, so one hung request cannot use it all.
  SystemClock election_clock;
  std::unique_ptr<KubeClient> election_kube;
  std::unique_ptr<KubeClient> label_kube;
  if (config.coordinator.leader_election) {
    const CoordinatorConfig& c = config.coordinator;
    const std::string port = env("KUBERNETES_SERVICE_PORT");
    InClusterOptions in_cluster{.host = env("KUBERNETES_SERVICE_HOST"),
                                .port = port.empty() ? 443 : std::atoi(port.c_str())};
    if (const std::string dir = env("NCCL_TRIAGE_SERVICE_ACCOUNT_DIR"); !dir.empty()) {
      in_cluster.service_account_dir = dir;
    }
    LeaderElectionOptions election{.lease_namespace = env("POD_NAMESPACE"),
                                   .lease_name = c.lease_name,
                                   .identity = env("POD_NAME"),
                                   .lease_duration = std::chrono::seconds(c.lease_duration_seconds),
                                   .renew_deadline = std::chrono::seconds(c.renew_deadline_seconds),
                                   .retry_period = std::chrono::seconds(c.retry_period_seconds)};
    auto access = InClusterAccess(in_cluster);
    if (access.ok() && election.lease_namespace.empty()) {
      election.lease_namespace = access->default_namespace;
    }
    if (election.identity.empty()) election.identity = env("HOSTNAME");
    Status valid = access.ok() ? ValidateLeaderElection(election) : access.status();
    KubeTimeouts timeouts;
    timeouts.connect = timeouts.read = timeouts.write =
        std::chrono::duration_cast<std::chrono::milliseconds>(election.renew_deadline / 2);
    timeouts.user_agent = "nccl-triage-coordinator/leader-election";
    auto client = valid.ok() ? InClusterKubeClient::Connect(*access, timeouts)
                             : StatusOr<std::unique_ptr<InClusterKubeClient>>(valid);
    if (!client.ok()) {
      ctx.err << "nccl-triage-server coordinator: coordinator.leader_election: "
              << client.status().message() << "\n";
      return 2;
    }
    election_kube = std::move(client).value();
    options.leader =
        std::make_shared<LeaderElector>(*election_kube, election, log, election_clock);
    // The leader's pod label, which the chart's Service selects with more than one replica (the
    // chart names the release's coordinator pods). A client of its own: a pod patch may wait on
    // admission webhooks, and the renewals must not wait behind it.
    if (const std::string selector = env("NCCL_TRIAGE_COORDINATOR_POD_SELECTOR");
        !selector.empty()) {
      LeaderLabelOptions labels{.pod_namespace = election.lease_namespace,
                                .pod_name = election.identity,
                                .pod_selector = selector,
                                .retry = election.retry_period};
      Status label_valid = ValidateLeaderLabel(labels);
      KubeTimeouts label_timeouts;
      label_timeouts.user_agent = "nccl-triage-coordinator/leader-label";
      auto label_client = label_valid.ok()
                              ? InClusterKubeClient::Connect(*access, label_timeouts)
                              : StatusOr<std::unique_ptr<InClusterKubeClient>>(label_valid);
      if (!label_client.ok()) {
        ctx.err << "nccl-triage-server coordinator: the leader label: "
                << label_client.status().message() << "\n";
        return 2;
      }
      label_kube = std::move(label_client).value();
      options.leader_label = std::make_shared<LeaderPodLabel>(
          *label_kube, labels, [leader = options.leader] { return leader->IsLeader(); }, log,
          election_clock);
    }
  }
  int rc = 0;
  {
    CoordinatorServer server(options, log);
    if (!config.coordinator.http_listen.empty()) log.Info("coordinator", DescribeHttpAuth(config));
    Status s = server.Start();
    if (!s.ok()) {
      ctx.err << "nccl-triage-server coordinator: " << s.message() << "\n";
      rc = 2;
    } else {
      int sig = 0;
      sigwait(&set, &sig);
      log.Info("coordinator", std::string("stopping on ") + (sig == SIGINT ? "SIGINT" : "SIGTERM"));
      server.Stop();
    }
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return rc;
}

}  // namespace nccl_triage
