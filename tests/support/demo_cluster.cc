#include "support/demo_cluster.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <map>
#include <nlohmann/json.hpp>
#include <ostream>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "base/clock.h"
#include "base/log.h"
#include "coordinator_client/session.h"
#include "core/catalogue.h"
#include "core/decision.h"
#include "daemon/agent.h"
#include "daemon/node_loop_parts.h"
#include "daemon/probe_adapter.h"
#include "exporter/agent_http.h"
#include "exporter/http_server.h"
#include "exporter/metrics.h"
#include "host/gatherer.h"
#include "probe/runner.h"
#include "state/agent_state.h"
#include "support/fixture/fixture.h"

namespace nccl_triage {
namespace fs = std::filesystem;

namespace {

constexpr const char* kSwitchLabel = "nccl-triage.io/demo-switch";
constexpr const char* kNodeKinds[] = {"port_down",       "sm_offline",    "memlock",
                                      "no_rdma_devices", "rate_degraded", "shm_small",
                                      "nccl_version",    "no_nccl"};
constexpr const char* kLinkKinds[] = {"pkey_mismatch", "cable"};
constexpr const char* kRailKinds[] = {"mr_register", "port_down", "rate"};
constexpr int kDemoRails = 8;  // the DGX A100 fixture: mlx5_0..mlx5_7, one port each

std::string NodeName(int i) { return "node-" + std::to_string(i); }

int NodeIndex(const std::string& name) {
  if (name.rfind("node-", 0) != 0) return -1;
  try {
    return std::stoi(name.substr(5));
  } catch (...) {
    return -1;
  }
}

std::optional<int> ParseIndex(std::string_view s, int nodes) {
  if (s.empty() || s.size() > 6) return std::nullopt;
  int v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  if (v >= nodes) return std::nullopt;
  return v;
}

template <size_t N>
std::string Alternatives(const char* const (&kinds)[N]) {
  std::string s;
  for (const char* k : kinds) s += (s.empty() ? "" : "|") + std::string(k);
  return s;
}

// The ids a pair verdict is explained by, most specific first: a cross-node finding names the
// reason two nodes cannot talk, where the NCCL log only sees the symptom (a fabric timeout).
std::string MainCause(const std::vector<std::string>& causes) {
  for (const auto& c : causes) {
    const CauseInfo* info = FindCause(c);
    if (info != nullptr && info->kind == CauseKind::kCrossNode) return c;
  }
  return causes.empty() ? "" : causes.front();
}

Status Stopped() { return Unavailable("stopped"); }

enum class Waited { kDone, kStopped, kTimedOut };

// Waits in slices of a tenth of a second, so that a stop request is seen within one.
Waited WaitUnlessStopped(const std::function<bool(std::chrono::milliseconds)>& wait,
                         std::chrono::seconds limit, const std::stop_token& stop) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (true) {
    if (stop.stop_requested()) return Waited::kStopped;
    if (wait(std::chrono::milliseconds(100))) return Waited::kDone;
    if (std::chrono::steady_clock::now() >= deadline) return Waited::kTimedOut;
  }
}

}  // namespace

std::vector<std::string> DefaultDemoFaults(int nodes) {
  if (nodes >= 7) return {"node:2:port_down", "link:4-6:cable"};
  if (nodes >= 4) {
    return {"node:1:port_down",
            "link:" + std::to_string(nodes - 2) + "-" + std::to_string(nodes - 1) + ":cable"};
  }
  return {"node:" + std::to_string(std::max(nodes - 1, 0)) + ":port_down"};
}

StatusOr<DemoFault> ParseDemoFault(std::string_view spec, int nodes) {
  DemoFault f;
  f.spec = std::string(spec);
  auto first = spec.find(':');
  auto second = first == std::string_view::npos ? first : spec.find(':', first + 1);
  if (second == std::string_view::npos) {
    return InvalidArgument("fault '" + f.spec +
                           "': expected node:I:KIND, link:I-J:KIND or rail:I:K:KIND");
  }
  std::string_view scope = spec.substr(0, first);
  std::string_view where = spec.substr(first + 1, second - first - 1);
  f.what = std::string(spec.substr(second + 1));
  if (scope == "node") {
    f.kind = FaultKind::kNode;
    auto i = ParseIndex(where, nodes);
    if (!i) {
      return InvalidArgument("fault '" + f.spec + "': node index must be 0.." +
                             std::to_string(nodes - 1));
    }
    f.a = *i;
    if (std::find(std::begin(kNodeKinds), std::end(kNodeKinds), f.what) == std::end(kNodeKinds)) {
      return InvalidArgument("fault '" + f.spec + "': node fault kind must be one of " +
                             Alternatives(kNodeKinds));
    }
    return f;
  }
  if (scope == "link") {
    f.kind = FaultKind::kLink;
    auto dash = where.find('-');
    auto a =
        dash == std::string_view::npos ? std::nullopt : ParseIndex(where.substr(0, dash), nodes);
    auto b =
        dash == std::string_view::npos ? std::nullopt : ParseIndex(where.substr(dash + 1), nodes);
    if (!a || !b || *a == *b) {
      return InvalidArgument("fault '" + f.spec +
                             "': link needs two different node indices I-J in 0.." +
                             std::to_string(nodes - 1));
    }
    f.a = std::min(*a, *b);
    f.b = std::max(*a, *b);
    if (std::find(std::begin(kLinkKinds), std::end(kLinkKinds), f.what) == std::end(kLinkKinds)) {
      return InvalidArgument("fault '" + f.spec + "': link fault kind must be one of " +
                             Alternatives(kLinkKinds));
    }
    return f;
  }
  if (scope == "rail") {
    f.kind = FaultKind::kNode;
    auto i = ParseIndex(where, nodes);
    const auto colon = f.what.find(':');
    auto k = colon == std::string::npos
                 ? std::nullopt
                 : ParseIndex(std::string_view(f.what).substr(0, colon), kDemoRails);
    if (!i || !k) {
      return InvalidArgument("fault '" + f.spec + "': rail needs I:K, node I in 0.." +
                             std::to_string(nodes - 1) + " and rail K in 0.." +
                             std::to_string(kDemoRails - 1));
    }
    f.a = *i;
    f.rail = *k;
    f.what = f.what.substr(colon + 1);
    if (std::find(std::begin(kRailKinds), std::end(kRailKinds), f.what) == std::end(kRailKinds)) {
      return InvalidArgument("fault '" + f.spec + "': rail fault kind must be one of " +
                             Alternatives(kRailKinds));
    }
    return f;
  }
  return InvalidArgument("fault '" + f.spec + "': scope must be node, link or rail");
}

std::string FindFakesDir(const std::string& self_exe) {
  fs::path dir = fs::path(self_exe).parent_path();
  for (const fs::path& candidate :
       {dir / "tests" / "fakes", dir / "fakes", dir / ".." / "tests" / "fakes"}) {
    std::error_code ec;
    if (fs::exists(candidate / "lib" / "libnccl.so.2", ec) &&
        fs::exists(candidate / "lib" / "libcuda.so.1", ec)) {
      return fs::weakly_canonical(candidate, ec).string();
    }
  }
  return "";
}

// ------------------------------------------------------------------------------------ one node

class DemoCluster::Node {
 public:
  Node(int index, std::string root, Config config, ProbeRunnerOptions probe_options,
       SessionOptions session, Logger& log, bool serve)
      : index_(index),
        name_(NodeName(index)),
        root_(std::move(root)),
        state_(name_, "demo", clock_.NowUnixMs()) {
    GatherOptions gather_options;
    gather_options.root = root_;
    gather_options.node_name = name_;
    GatherFn gather = MakeRootGatherFn(gather_options);
    JudgeFn judge = MakeBuiltinJudgeFn(config);
    AgentOptions options;
    options.node = name_;
    options.interval = std::chrono::minutes(10);  // one check cycle is enough for the demo
    options.config = config;
    agent_ = std::make_unique<Agent>(options, gather, judge, state_, clock_, log);
    auto runner = std::make_shared<const ProbeRunner>(config.probe, probe_options);
    agent_->SetProbeRunner(MakeRunnerProbeFn(runner));
    // As the agent command does: the libraries are checked before the session's hello.
    agent_->SetLibraryCheck([runner] { return runner->CheckLibraries(); });
    agent_->SetCoordinatorLink(std::make_unique<CoordinatorSession>(std::move(session), log));
    if (serve) {
      metrics_ = std::make_unique<AgentMetrics>(state_, "demo");
      http_ = std::make_unique<HttpServer>(&log, 2);
      InstallAgentEndpoints(*http_, state_, *metrics_);
    }
  }

  Status Start() {
    if (http_) {
      auto port = http_->Start("127.0.0.1", 0);
      if (!port.ok()) return port.status();
      port_ = *port;
    }
    thread_ = std::jthread([this](std::stop_token st) { agent_->Run(st); });
    return Status::Ok();
  }

  // Cancels what the agent does (its probe's children are killed here, by the runner's stop
  // callback) without waiting for its thread.
  void RequestStop() {
    if (thread_.joinable()) thread_.request_stop();
  }

  void Stop() {
    if (thread_.joinable()) {
      thread_.request_stop();
      thread_.join();
    }
    if (http_) http_->Stop();
  }

  ~Node() { Stop(); }

  const std::string& name() const { return name_; }
  int port() const { return port_; }
  AgentState& state() { return state_; }
  const AgentState& state() const { return state_; }

 private:
  int index_;
  std::string name_;
  std::string root_;
  SystemClock clock_;
  AgentState state_;
  std::unique_ptr<Agent> agent_;
  std::unique_ptr<AgentMetrics> metrics_;
  std::unique_ptr<HttpServer> http_;
  int port_ = 0;
  std::jthread thread_;
};

// ------------------------------------------------------------------------------------ cluster

DemoCluster::DemoCluster(DemoOptions options, Logger& log)
    : options_(std::move(options)), log_(log) {
  std::random_device rd;
  std::mt19937_64 rng((static_cast<uint64_t>(rd()) << 32) ^ rd());
  std::ostringstream token;
  token << std::hex << rng() << rng();
  token_ = token.str();
}

DemoCluster::~DemoCluster() { Stop(); }

CoordinatorServer& DemoCluster::coordinator() { return *coordinator_; }

Status DemoCluster::Start() {
  if (options_.nodes < 2 || options_.nodes > 256) {
    return InvalidArgument("--nodes must be between 2 and 256");
  }
  if (options_.fakes_dir.empty()) {
    return NotFound(
        "the fake libcuda/libnccl were not found next to the binary (build the tree "
        "with tests enabled: they are in <build>/tests/fakes)");
  }
  std::error_code ec;
  fs::create_directories(options_.work_dir, ec);
  if (ec) return Unavailable("cannot create " + options_.work_dir + ": " + ec.message());

  // The coordinator.
  CoordinatorOptions co;
  CoordinatorConfig& cc = co.config.coordinator;
  ProbeConfig& probe = co.config.probe;  // the coordinator's; the agents' below
  cc.listen = options_.coordinator_listen;
  cc.http_listen = options_.serve_http ? "127.0.0.1:0" : "";
  co.token = token_;
  cc.sweep_interval_seconds = 0;  // on demand: the demo drives the sweeps
  cc.hold_down = options_.hold_down;
  cc.topology_label = kSwitchLabel;
  const bool rate_fault = std::any_of(options_.faults.begin(), options_.faults.end(),
                                      [](const DemoFault& f) { return f.what == "rate"; });
  // Latency-bound unless asked (or a rate fault needs bandwidth judged): the demo is about
  // verdicts, and loopback carries bandwidth only at the demo's 1X SDR port rate.
  probe.size_bytes = options_.probe_size_bytes > 0 ? options_.probe_size_bytes
                     : rate_fault                  ? kDemoBandwidthProbeBytes
                                                   : 64 << 10;
  // Whether busbw is judged follows from the size by the coordinator's own rule.
  const bool check_bandwidth = PairJudgeOptions(probe).check_bandwidth;
  if (check_bandwidth) {
    // Loopback on a loaded machine may carry a healthy rail well under its port rate (the probe
    // children compete for the CPU); the slowed rail carries a sixteenth of it (a PCIe link at x1
    // of x16), so an eighth tells them apart with room on both sides.
    probe.busbw_min_fraction = kDemoBusbwMinFraction;
  }
  // Ports loopback can carry at their rate whenever bandwidth is judged or a rail is slowed.
  const bool slow_ports = check_bandwidth || rate_fault;
  probe.timeout_seconds = options_.probe_timeout_seconds;
  co.report_grace = std::chrono::seconds(5);
  co.peer_failed_grace = std::chrono::seconds(2);
  co.seed = options_.seed;
  co.version = "demo";
  co.config.remediation = options_.remediation;
  co.config.validation = options_.validation;
  co.kube = options_.kube;
  co.state_namespace = "default";
  co.state_configmap = options_.state_configmap;
  const bool rail_faults = std::any_of(options_.faults.begin(), options_.faults.end(),
                                       [](const DemoFault& f) { return f.rail >= 0; });
  if (options_.rails || rail_faults) {
    probe.rails = options_.rail_list.empty() ? "all" : options_.rail_list;
  }
  // With bandwidth judged every probe moves 64 MiB through loopback twice, and on a small
  // machine eight pairs of eight rails at once (128 probe children) took longer than the probe
  // deadline: timeouts and peers that exited, confirmed as fabric faults of healthy nodes. One
  // rail after the other keeps the children a loaded CPU can carry.
  probe.parallel_rails = options_.parallel_rails > 0 ? options_.parallel_rails
                         : check_bandwidth           ? 1
                                                     : ProbeConfig{}.parallel_rails;
  coordinator_ = std::make_unique<CoordinatorServer>(co, log_);
  Status started = coordinator_->Start();
  if (!started.ok()) return started;
  coordinator_options_ = co;
  coordinator_options_.config.coordinator.listen =
      "127.0.0.1:" + std::to_string(coordinator_->grpc_port());

  // Per-node faults, then the link faults, which need both ends.
  std::map<int, FixtureFaults> node_faults;
  std::map<int, bool> old_nccl;
  std::map<int, bool> no_nccl;
  std::map<int, std::vector<std::string>> unreachable;
  std::map<int, std::vector<uint16_t>> pkeys;
  for (const auto& f : options_.faults) {
    if (f.rail >= 0) {
      FixtureFaults& ff = node_faults[f.a];
      if (f.what == "mr_register") ff.mr_register_fails = f.rail;
      if (f.what == "port_down") ff.port_down = f.rail;
      if (f.what == "rate") ff.slow_data_path = f.rail;
    } else if (f.kind == FaultKind::kNode) {
      FixtureFaults& ff = node_faults[f.a];
      if (f.what == "port_down") ff.port_down = 0;  // mlx5_0: the rail the probes use
      if (f.what == "sm_offline") ff.sm_offline = true;
      if (f.what == "memlock") ff.memlock = Limit{false, 64 << 10};
      if (f.what == "no_rdma_devices") ff.no_rdma_devices = true;
      if (f.what == "rate_degraded") ff.rate_degraded = 0;
      if (f.what == "shm_small") ff.shm_bytes = 64ull << 20;
      if (f.what == "nccl_version") {
        ff.nccl_version = "2.12.12";
        old_nccl[f.a] = true;
      }
      if (f.what == "no_nccl") no_nccl[f.a] = true;
    } else if (f.what == "cable") {
      unreachable[f.a].push_back(NodeName(f.b));
      unreachable[f.b].push_back(NodeName(f.a));
    } else if (f.what == "pkey_mismatch") {
      // Both ends become limited members of the default partition and full members of
      // partitions of their own; every other node stays a full member of the default one.
      pkeys[f.a] = {0x7fff, static_cast<uint16_t>(0x8010 + f.a)};
      pkeys[f.b] = {0x7fff, static_cast<uint16_t>(0x8010 + f.b)};
    }
  }

  const std::string probe_exe = options_.probe_exe;
  for (int i = 0; i < options_.nodes; ++i) {
    if (stopped()) return Stopped();
    if (options_.busy_nodes.count(i) > 0) {
      node_faults[i].ib_busy = true;
      node_faults[i].gpus_in_use = true;  // every GPU has a CUDA job: none is idle for a probe
    }
    FixtureSpec spec = DgxA100Spec();
    if (slow_ports) {
      for (auto& h : spec.hcas) {
        for (auto& p : h.ports) p.rate = "2.5 Gb/sec (1X SDR)";
      }
    }
    spec = ApplyFaults(std::move(spec), node_faults[i]);
    if (options_.ib_data_gbps > 0) {  // after a fault's own rate, which comes first
      std::ostringstream rate;
      rate << options_.ib_data_gbps;
      for (const auto& h : spec.hcas) spec.ib_data_gbps.push_back(h.name + "=" + rate.str());
    }
    spec.hostname = NodeName(i);
    spec.scenario = "demo-" + NodeName(i);
    if (pkeys.count(i)) {
      for (auto& h : spec.hcas) {
        for (auto& p : h.ports) p.pkeys = pkeys[i];
      }
    }
    const std::string root = (fs::path(options_.work_dir) / NodeName(i)).string();
    Status written = WriteFixture(spec, root);
    if (!written.ok()) return written;
    if (unreachable.count(i)) {
      // Not part of a Linux root: what the fake NCCL's fabric cannot reach from this node.
      const std::string meta_path = root + "/fixture.json";
      std::ifstream in(meta_path);
      nlohmann::json meta = nlohmann::json::parse(in, nullptr, false);
      if (meta.is_discarded()) meta = nlohmann::json::object();
      meta["ib_unreachable"] = unreachable[i];
      std::ofstream(meta_path) << meta.dump(2) << "\n";
    }

    Config config;
    // no_nccl: a path with no library, and no default search: the probe child finds no NCCL.
    const char* nccl_dir = no_nccl[i] ? "none" : old_nccl[i] ? "old" : "lib";
    config.probe.nccl_library_paths = {
        (fs::path(options_.fakes_dir) / nccl_dir / "libnccl.so.2").string()};
    config.probe.cuda_library_paths = {
        (fs::path(options_.fakes_dir) / "lib" / "libcuda.so.1").string()};
    config.probe.size_bytes = probe.size_bytes;
    config.probe.busbw_min_fraction = probe.busbw_min_fraction;
    config.probe.iterations = check_bandwidth ? 1 : 2;  // a slowed 64 MiB run takes 3 s
    // The fake NCCL's device time is the model's: a warm-up would only move the data once more.
    config.probe.warmup_iterations = check_bandwidth ? 0 : 1;
    config.probe.timeout_seconds = options_.probe_timeout_seconds;
    config.probe.socket_ifname = "lo";
    config.probe.ib_hca = "mlx5_0";
    config.probe.parallel_rails = probe.parallel_rails;
    // All "nodes" share this host: NCCL_HOSTID gives each its own host identity, as separate
    // machines have (otherwise NCCL sees two ranks on one GPU of one host).
    config.probe.env_allowlist = {"NCCL_FAKE_ROOT", "NCCL_HOSTID"};

    ProbeRunnerOptions po;
    po.child_exe = probe_exe;
    po.root = root;
    po.work_dir = (fs::path(options_.work_dir) / "probes" / NodeName(i)).string();
    po.default_library_search = false;
    po.parent_env = {
        {"PATH", "/usr/bin:/bin"}, {"NCCL_FAKE_ROOT", root}, {"NCCL_HOSTID", NodeName(i)}};
    for (const auto& [k, v] : options_.node_env[i]) {
      po.parent_env[k] = v;
      config.probe.env_allowlist.push_back(k);
    }

    SessionOptions so;
    so.target = "127.0.0.1:" + std::to_string(coordinator_->grpc_port());
    so.token = token_;
    so.version = "demo";
    so.labels[kSwitchLabel] = i < (options_.nodes + 1) / 2 ? "switch-a" : "switch-b";
    so.backoff_initial = std::chrono::milliseconds(100);
    so.backoff_max = std::chrono::seconds(2);
    so.heartbeat = std::chrono::seconds(2);
    so.seed = options_.seed + static_cast<uint64_t>(i) + 1;

    nodes_.push_back(std::make_unique<Node>(i, root, config, po, so, log_, options_.serve_http));
  }
  for (auto& n : nodes_) {
    Status s = n->Start();
    if (!s.ok()) return s;
  }
  const Waited agents = WaitUnlessStopped(
      [this](std::chrono::milliseconds t) {
        return coordinator_->WaitForAgents(static_cast<size_t>(options_.nodes), t);
      },
      std::chrono::seconds(60), options_.stop);
  if (agents == Waited::kStopped) return Stopped();
  if (agents == Waited::kTimedOut) {
    return DeadlineExceeded("only " + std::to_string(coordinator_->ConnectedAgents()) + " of " +
                            std::to_string(options_.nodes) + " agents connected within 60 s");
  }
  return Status::Ok();
}

StatusOr<DemoReport> DemoCluster::Run() {
  const uint64_t pairs_total =
      static_cast<uint64_t>(options_.nodes) * static_cast<uint64_t>(options_.nodes - 1) / 2;
  // Enough for a full coverage cycle (n-1 rounds, n for odd n), then hold-down confirmations.
  const uint64_t limit = options_.rounds > 0
                             ? static_cast<uint64_t>(options_.rounds)
                             : static_cast<uint64_t>(options_.nodes + options_.hold_down + 2);
  while (sweeps_ < limit) {
    const uint64_t n = coordinator_->RequestSweep();
    const Waited swept = WaitUnlessStopped(
        [this, n](std::chrono::milliseconds t) { return coordinator_->WaitForSweep(n, t); },
        std::chrono::seconds(300), options_.stop);
    if (swept == Waited::kStopped) return Stopped();
    if (swept == Waited::kTimedOut) {
      return DeadlineExceeded("sweep " + std::to_string(n) + " did not finish within 300 s");
    }
    ++sweeps_;
    CoordinatorView view = coordinator_->View(false);
    const uint64_t covered = view.pairs_concluded;
    size_t confirmed = 0;
    size_t pending = 0;
    for (const auto& t : view.faults) (t.confirmed ? confirmed : pending)++;
    if (options_.progress) {
      options_.progress("sweep " + std::to_string(sweeps_) + ": " +
                        std::to_string(view.last_sweep_rounds) + " round(s), " +
                        std::to_string(covered) + "/" + std::to_string(pairs_total) +
                        " pairs covered, " + std::to_string(confirmed) + " fault(s) confirmed" +
                        (pending ? ", " + std::to_string(pending) + " awaiting confirmation" : ""));
    }
    if (options_.rounds == 0 && covered >= pairs_total && pending == 0) break;
  }
  return Report();
}

AgentStateView DemoCluster::NodeState(int index) const {
  return nodes_.at(static_cast<size_t>(index))->state().View();
}

DemoReport DemoCluster::Report() const {
  DemoReport r;
  r.nodes = options_.nodes;
  for (const auto& f : options_.faults) r.injected.push_back(f.spec);
  r.sweeps = sweeps_;
  r.pairs_total =
      static_cast<uint64_t>(options_.nodes) * static_cast<uint64_t>(options_.nodes - 1) / 2;
  CoordinatorView view = coordinator_->View();
  std::map<std::string, const CoordinatorView::Agent*> agents;
  for (const auto& a : view.agents) agents[a.info.name] = &a;
  for (int i = 0; i < options_.nodes; ++i) {
    DemoNode n;
    n.index = i;
    n.name = NodeName(i);
    auto it = view.nodes.find(n.name);
    if (it != view.nodes.end()) {
      n.fault_class = it->second.fault_class;
      n.basis = it->second.basis;
      n.causes = it->second.causes;
      n.reason = it->second.reason;
    }
    if (auto a = agents.find(n.name); a != agents.end()) {
      n.probes = std::string(ProbeAvailabilityReason(a->second->info));
    }
    r.node_results.push_back(std::move(n));
  }
  std::set<NodePair> probed;
  for (const auto& p : view.pairs) {
    DemoPair d;
    d.a = NodeIndex(p.pair.a);
    d.b = NodeIndex(p.pair.b);
    if (d.a > d.b) std::swap(d.a, d.b);
    d.socket = p.judgement.socket;
    d.ib = p.judgement.ib;
    d.fault_class = p.judgement.verdict.fault_class;
    d.basis = p.judgement.verdict.basis;
    d.causes = p.judgement.verdict.causes;
    d.localisation = p.localisation;
    if (p.judgement.status != PairStatus::kInconclusive) ++r.pairs_covered;
    probed.insert(p.pair);
    r.pairs.push_back(std::move(d));
  }
  // Pairs never probed (a short run): the cross-node checks' prediction, basis checks.
  for (int a = 0; a < options_.nodes; ++a) {
    for (int b = a + 1; b < options_.nodes; ++b) {
      NodePair key(NodeName(a), NodeName(b));
      if (probed.count(key)) continue;
      auto ia = agents.find(NodeName(a));
      auto ib = agents.find(NodeName(b));
      if (ia == agents.end() || ib == agents.end()) continue;
      PairVerdict v = PredictPair(ia->second->info, ib->second->info);
      DemoPair d;
      d.a = a;
      d.b = b;
      d.fault_class = v.fault_class;
      d.basis = Basis::kChecks;
      d.causes = v.causes;
      d.localisation = PairLocalisation::kInconclusive;
      r.pairs.push_back(std::move(d));
    }
  }
  std::sort(r.pairs.begin(), r.pairs.end(), [](const DemoPair& x, const DemoPair& y) {
    return std::tie(x.a, x.b) < std::tie(y.a, y.b);
  });

  std::set<int> localised_nodes;
  for (const auto& t : view.faults) {
    DemoLocalised f;
    f.kind = t.fault.kind;
    for (const auto& n : t.fault.nodes) f.nodes.push_back(NodeIndex(n));
    std::sort(f.nodes.begin(), f.nodes.end());
    f.fault_class = t.fault.fault_class;
    f.cause = f.kind == FaultKind::kLink ? MainCause(t.fault.causes)
                                         : (t.fault.causes.empty() ? "" : t.fault.causes.front());
    f.basis = Basis::kProbes;
    f.confirmed = t.confirmed;
    if (f.kind == FaultKind::kNode) localised_nodes.insert(f.nodes[0]);
    r.faults.push_back(std::move(f));
  }
  // A fault only a node's own checks can show (the pair probes pass): localised to that node by
  // its checks, marked basis "checks".
  for (const auto& n : r.node_results) {
    if (localised_nodes.count(n.index) || n.basis != Basis::kChecks) continue;
    if (n.fault_class != FaultClass::kArchitecture && n.fault_class != FaultClass::kIbResource) {
      continue;
    }
    DemoLocalised f;
    f.kind = FaultKind::kNode;
    f.nodes = {n.index};
    f.fault_class = n.fault_class;
    f.cause = n.causes.empty() ? "" : n.causes.front();
    f.basis = Basis::kChecks;
    f.confirmed = true;  // a check reads the node's state; nothing to hold down
    r.faults.push_back(std::move(f));
  }
  std::sort(r.faults.begin(), r.faults.end(), [](const DemoLocalised& x, const DemoLocalised& y) {
    return std::tie(x.kind, x.nodes) < std::tie(y.kind, y.nodes);
  });
  return r;
}

std::vector<std::string> DemoCluster::Urls() const {
  std::vector<std::string> urls;
  if (coordinator_ && coordinator_->http_port() > 0) {
    urls.push_back("coordinator  http://127.0.0.1:" + std::to_string(coordinator_->http_port()) +
                   "/metrics  /status  (POST /sweep -H 'Authorization: Bearer " + token_ + "')");
  }
  for (const auto& n : nodes_) {
    if (n->port() > 0) {
      urls.push_back(n->name() + std::string(13 - std::min<size_t>(12, n->name().size()), ' ') +
                     "http://127.0.0.1:" + std::to_string(n->port()) + "/metrics  /status");
    }
  }
  return urls;
}

void DemoCluster::StopNode(int index) {
  if (index >= 0 && index < static_cast<int>(nodes_.size()))
    nodes_[static_cast<size_t>(index)]->Stop();
}

Status DemoCluster::RestartCoordinator() {
  coordinator_->Stop();
  coordinator_ = std::make_unique<CoordinatorServer>(coordinator_options_, log_);
  return coordinator_->Start();
}

void DemoCluster::Stop() {
  for (auto& n : nodes_) n->RequestStop();  // all at once: no agent waits for another's probe
  for (auto& n : nodes_) n->Stop();
  nodes_.clear();
  if (coordinator_) coordinator_->Stop();
}

// ------------------------------------------------------------------------------------ output

nlohmann::json ToJson(const DemoReport& r) {
  nlohmann::json j;
  j["schema"] = "nccl-triage/demo/v1";
  j["injected"] = r.injected;
  j["sweeps"] = r.sweeps;
  j["pairs_covered"] = r.pairs_covered;
  j["pairs_total"] = r.pairs_total;
  j["nodes"] = nlohmann::json::array();
  for (const auto& n : r.node_results) {
    j["nodes"].push_back({{"index", n.index},
                          {"name", n.name},
                          {"class", ToString(n.fault_class)},
                          {"basis", ToString(n.basis)},
                          {"causes", n.causes},
                          {"probes", n.probes}});
  }
  j["pairs"] = nlohmann::json::array();
  for (const auto& p : r.pairs) {
    j["pairs"].push_back({{"a", p.a},
                          {"b", p.b},
                          {"socket", ToString(p.socket)},
                          {"ib", ToString(p.ib)},
                          {"class", ToString(p.fault_class)},
                          {"basis", ToString(p.basis)},
                          {"causes", p.causes},
                          {"localisation", ToString(p.localisation)}});
  }
  j["faults"] = nlohmann::json::array();
  for (const auto& f : r.faults) {
    j["faults"].push_back({{"kind", ToString(f.kind)},
                           {"nodes", f.nodes},
                           {"class", ToString(f.fault_class)},
                           {"cause", f.cause},
                           {"basis", ToString(f.basis)},
                           {"confirmed", f.confirmed}});
  }
  return j;
}

void PrintDemoTable(const DemoReport& r, std::ostream& out) {
  auto join = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : ",") + x;
    return s.empty() ? std::string("-") : s;
  };
  out << "nccl-triage demo: " << r.nodes
      << " nodes, injected: " << (r.injected.empty() ? std::string("nothing") : join(r.injected))
      << "\n";
  out << r.sweeps << " sweep(s), " << r.pairs_covered << "/" << r.pairs_total
      << " pairs probed to a conclusion\n\n";
  out << std::left << std::setw(10) << "NODE" << std::setw(14) << "CLASS" << std::setw(8) << "BASIS"
      << std::setw(10) << "PROBES"
      << "CAUSES\n";
  for (const auto& n : r.node_results) {
    out << std::setw(10) << n.name << std::setw(14) << ToString(n.fault_class) << std::setw(8)
        << ToString(n.basis) << std::setw(10) << n.probes << join(n.causes) << "\n";
  }
  out << "\n"
      << std::setw(8) << "PAIR" << std::setw(9) << "SOCKET" << std::setw(9) << "IB" << std::setw(14)
      << "CLASS" << std::setw(14) << "LOCALISED"
      << "CAUSES\n";
  for (const auto& p : r.pairs) {
    std::string pair = std::to_string(p.a) + "-" + std::to_string(p.b);
    out << std::setw(8) << pair << std::setw(9) << ToString(p.socket) << std::setw(9)
        << ToString(p.ib) << std::setw(14) << ToString(p.fault_class) << std::setw(14)
        << (p.basis == Basis::kChecks ? std::string("predicted")
                                      : std::string(ToString(p.localisation)))
        << join(p.causes) << "\n";
  }
  out << "\nFAULTS\n";
  if (r.faults.empty()) out << "  none\n";
  for (const auto& f : r.faults) {
    std::string where;
    for (int n : f.nodes) where += (where.empty() ? "node-" : " <-> node-") + std::to_string(n);
    out << "  " << std::setw(6) << ToString(f.kind) << std::setw(22) << where << std::setw(14)
        << ToString(f.fault_class) << std::setw(26) << f.cause
        << (f.basis == Basis::kChecks ? "node checks"
            : f.confirmed             ? "confirmed by probes"
                                      : "seen once, not confirmed")
        << "\n";
  }
}

}  // namespace nccl_triage
