// Benchmark of the coordinator at cluster scale: thousands of agents on real gRPC streams.
//
// The coordinator runs in this process; the agents are simulated in a child process of this same
// binary (`--simulate-agents`), one stream and one TCP connection each, answering every probe
// assignment at once (zero-duration probes) the way a node with the injected faults would:
// rank 0 hands its unique id to the coordinator, rank 1 waits for the relay, and a faulty node's
// IB probe fails with its cause while its peer reports the remote error. So the coordinator's
// RSS is its own, and every message is a real gRPC message over loopback.
//
//   localise   N agents, F random node faults, one sweep: rounds, wall time, the coordinator
//              process's CPU time during the sweep, whether exactly the injected nodes were
//              localised, coordinator RSS; for each N of --nodes. With --rails R every agent has
//              R rails (mlx5_0..mlx5_{R-1}, one port each, the coordinator's probe.rails all),
//              every pair is probed once per rail after its IB probe (--parallel-rails P of a
//              pair at once, default 8 as probe.parallel_rails), and --rail-faults K more
//              nodes have one bad HCA each (rail 1..R-1; the pair's own IB probe runs on rail 0, as
//              probe.ib_hca pins it in the demo, so only the per-rail probes see it): each must be
//              localised to its node with the rail named
//   coverage   256 agents, 5 random link faults, sweeps until every pair has been probed: rounds
//              (255), pairs (32,640), every link found and nothing else, wall and coordinator CPU
//              time
//
// On a shared machine the wall times follow the load; the coordinator's CPU time much less.
//
// Usage: bench_coordinator [--nodes 64,512,4096] [--faults 1,10] [--rails 0] [--rail-faults 0]
//                          [--parallel-rails 8]
//                          [--coverage-nodes 256] [--links 5] [--seed S] [--skip-coverage]
//                          [--skip-localise]
#include <grpcpp/grpcpp.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "base/log.h"
#include "coordinator/server.h"
#include "nccl_triage/v1/agent.grpc.pb.h"
#include "wire/convert.h"

extern char** environ;

namespace nccl_triage {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

std::string NodeName(int i) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "n%05d", i);
  return buf;
}

// The faults of a run, drawn from the seed identically in both processes.
struct Faults {
  std::set<std::string> nodes;
  std::set<NodePair> links;
  std::map<std::string, int> rails;  // node -> its one bad rail
};

// The rails of the run's agents; 0: no rail table, no per-rail probes.
struct RailSetup {
  int rails = 0;
  int rail_faults = 0;
  int parallel = ProbeConfig{}.parallel_rails;  // probe.parallel_rails of agents and coordinator
};

Faults DrawFaults(int n, int node_faults, int link_faults, uint64_t seed, RailSetup rs = {}) {
  Faults f;
  std::mt19937_64 rng(seed);
  while (static_cast<int>(f.nodes.size()) < node_faults)
    f.nodes.insert(NodeName(static_cast<int>(rng() % n)));
  while (static_cast<int>(f.links.size()) < link_faults) {
    int a = static_cast<int>(rng() % n);
    int b = static_cast<int>(rng() % n);
    if (a == b || f.nodes.count(NodeName(a)) || f.nodes.count(NodeName(b))) continue;
    f.links.insert(NodePair(NodeName(a), NodeName(b)));
  }
  // After the node and link faults, so that a seed draws the same ones with and without rails.
  while (rs.rails > 1 && static_cast<int>(f.rails.size()) < rs.rail_faults) {
    std::string node = NodeName(static_cast<int>(rng() % n));
    if (f.nodes.count(node)) continue;
    f.rails.emplace(node, 1 + static_cast<int>(rng() % (rs.rails - 1)));
  }
  return f;
}

std::string Flag(const std::vector<std::string>& args, const std::string& name, std::string def) {
  for (size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] == name) return args[i + 1];
  }
  return def;
}
bool Has(const std::vector<std::string>& args, const std::string& name) {
  return std::find(args.begin(), args.end(), name) != args.end();
}
std::vector<int> IntList(const std::string& s) {
  std::vector<int> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(std::stoi(item));
  return out;
}

void RaiseFdLimit() {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
}

// CPU time (user + system) of this process: the coordinator's own, the agents run in a child.
double CpuSeconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  auto s = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
  return s(ru.ru_utime) + s(ru.ru_stime);
}

double StatusKb(const char* key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) == 0) return std::stod(line.substr(std::strlen(key)));
  }
  return 0;
}

// ------------------------------------------------------------------ simulated agents (child)

class Simulation;

class SimAgent final : public grpc::ClientBidiReactor<v1::AgentMessage, v1::CoordinatorMessage> {
 public:
  SimAgent(Simulation* sim, v1::Coordinator::Stub* stub, std::string node, const std::string& token,
           int rails, int parallel)
      : sim_(sim), node_(std::move(node)) {
    ctx_.AddMetadata("authorization", "Bearer " + token);
    stub->async()->Session(&ctx_, this);
    v1::AgentMessage hello;
    hello.mutable_hello()->set_protocol_version(kProtocolVersion);
    hello.mutable_hello()->set_node(node_);
    hello.mutable_hello()->set_parallel_probes(static_cast<uint32_t>(parallel));
    v1::NodeSummary* summary = hello.mutable_hello()->mutable_summary();
    summary->set_arch("x86_64");
    // A DGX H100's rail table: HCA k on GPU k's PCIe switch, 400 Gb/s NDR ports.
    for (int k = 0; k < rails; ++k) {
      v1::Rail* r = summary->add_rails();
      r->set_index(static_cast<uint32_t>(k));
      r->set_device("mlx5_" + std::to_string(k));
      r->set_port(1);
      r->set_active(true);
      r->set_rate_gbps(400);
      char bus[32];
      std::snprintf(bus, sizeof(bus), "%04x:%02x:00.0", static_cast<unsigned>(k / 8),
                    static_cast<unsigned>(0x18 + 0x10 * (k % 8)));
      r->set_gpu_bus_id(bus);
    }
    Send(std::move(hello));
    StartRead(&in_);
    // Heartbeats are written from the main thread, outside gRPC's callbacks: the hold keeps the
    // call (and OnDone) alive until the read side has ended and no write can start any more.
    // Without it a heartbeat could start a write on a call gRPC was already freeing.
    AddHold();
    StartCall();
  }

  void Send(v1::AgentMessage m) {
    std::lock_guard lock(mu_);
    if (done_) return;
    out_.push_back(std::move(m));
    if (!writing_) {
      writing_ = true;
      StartWrite(&out_.front());
    }
  }

  void Heartbeat() {
    v1::AgentMessage m;
    m.mutable_heartbeat()->set_sent_at_unix_ms(1);
    Send(std::move(m));
  }

  void OnWriteDone(bool ok) override {
    std::lock_guard lock(mu_);
    out_.pop_front();
    if (ok && !out_.empty()) {
      StartWrite(&out_.front());
    } else {
      writing_ = false;
    }
  }

  void OnReadDone(bool ok) override;
  void OnDone(const grpc::Status&) override {
    std::lock_guard lock(mu_);
    done_ = true;
  }
  void Cancel() { ctx_.TryCancel(); }

 private:
  Simulation* sim_;
  std::string node_;
  grpc::ClientContext ctx_;
  v1::CoordinatorMessage in_;
  std::mutex mu_;
  std::deque<v1::AgentMessage> out_;
  bool writing_ = false;
  bool done_ = false;
  std::map<std::string, v1::ProbeAssignment> waiting_;  // rank 1: probe id -> assignment
};

class Simulation {
 public:
  Simulation(Faults faults) : faults_(std::move(faults)) {}

  v1::AgentMessage ReportFor(const std::string& node, const v1::ProbeAssignment& a) const {
    v1::AgentMessage m;
    v1::ProbeReport* r = m.mutable_probe_report();
    r->set_probe_id(a.probe_id());
    r->set_duration_seconds(0);
    const bool ib = a.mode() == v1::PROBE_MODE_IB;
    r->set_transport(ib ? "NET/IB" : "NET/Socket");
    // The pair's own IB probe runs on rail 0 (probe.ib_hca mlx5_0); a rail probe on its rail.
    const int rail = a.has_rail() ? static_cast<int>(a.rail()) : 0;
    auto rail_bad = [&](const std::string& n) {
      auto it = faults_.rails.find(n);
      return it != faults_.rails.end() && it->second == rail;
    };
    const bool me_bad = faults_.nodes.count(node) > 0 || rail_bad(node);
    const bool peer_bad = faults_.nodes.count(a.peer()) > 0 || rail_bad(a.peer());
    const bool link_bad = faults_.links.count(NodePair(node, a.peer())) > 0;
    if (!ib || (!me_bad && !peer_bad && !link_bad)) {
      r->set_outcome(v1::PROBE_OUTCOME_PASS);
      r->set_busbw_bytes_per_second(20e9);
      r->set_log_class(v1::FAULT_CLASS_HEALTHY);
      return m;
    }
    r->set_outcome(v1::PROBE_OUTCOME_FAIL);
    r->set_nccl_result(me_bad || link_bad ? 5 : 6);
    r->set_log_class(v1::FAULT_CLASS_IB_RESOURCE);
    v1::Cause* c = r->add_causes();
    c->set_cause(me_bad ? "ib.port_state" : link_bad ? "ib.fabric" : "peer.exited");
    c->set_fault_class(v1::FAULT_CLASS_IB_RESOURCE);
    return m;
  }

  void Handle(SimAgent* agent, const std::string& node, const v1::CoordinatorMessage& msg,
              std::map<std::string, v1::ProbeAssignment>& waiting) {
    switch (msg.body_case()) {
      case v1::CoordinatorMessage::kWelcome:
        welcomed_++;
        break;
      case v1::CoordinatorMessage::kAssignment: {
        const auto& a = msg.assignment();
        if (a.rank() == 0) {
          v1::AgentMessage id;
          id.mutable_unique_id()->set_probe_id(a.probe_id());
          id.mutable_unique_id()->set_id(std::string(kUniqueIdBytes, '\x42'));
          agent->Send(std::move(id));
          agent->Send(ReportFor(node, a));
        } else {
          waiting[a.probe_id()] = a;
        }
        break;
      }
      case v1::CoordinatorMessage::kUniqueId: {
        auto it = waiting.find(msg.unique_id().probe_id());
        if (it != waiting.end()) {
          agent->Send(ReportFor(node, it->second));
          waiting.erase(it);
        }
        break;
      }
      case v1::CoordinatorMessage::kCancel:
        waiting.erase(msg.cancel().probe_id());
        break;
      default:
        break;
    }
  }

  std::atomic<int> welcomed_{0};

 private:
  Faults faults_;
};

void SimAgent::OnReadDone(bool ok) {
  if (!ok) {
    {
      std::lock_guard lock(mu_);
      done_ = true;  // no write starts after this
    }
    RemoveHold();
    return;
  }
  sim_->Handle(this, node_, in_, waiting_);
  StartRead(&in_);
}

// The child: N agents until killed.
int RunSimulatedAgents(const std::vector<std::string>& args) {
  RaiseFdLimit();
  const std::string target = Flag(args, "--target", "");
  const std::string token = Flag(args, "--token", "");
  const int n = std::stoi(Flag(args, "--n", "0"));
  const RailSetup rs{std::stoi(Flag(args, "--rails", "0")),
                     std::stoi(Flag(args, "--rail-faults", "0")),
                     std::stoi(Flag(args, "--parallel-rails", "8"))};
  Faults f = DrawFaults(n, std::stoi(Flag(args, "--node-faults", "0")),
                        std::stoi(Flag(args, "--link-faults", "0")),
                        std::stoull(Flag(args, "--seed", "1")), rs);
  Simulation sim(f);
  std::vector<std::unique_ptr<v1::Coordinator::Stub>> stubs;
  std::vector<std::unique_ptr<SimAgent>> agents;
  for (int i = 0; i < n; ++i) {
    // One connection per agent, as separate nodes have.
    grpc::ChannelArguments ca;
    ca.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    ca.SetInt("nccl_triage.bench.agent", i);  // distinct args: no channel sharing
    stubs.push_back(v1::Coordinator::NewStub(
        grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), ca)));
    agents.push_back(std::make_unique<SimAgent>(&sim, stubs.back().get(), NodeName(i), token,
                                                rs.rails, rs.parallel));
  }
  // Heartbeats until the parent kills this process.
  for (;;) {
    std::this_thread::sleep_for(5s);
    for (auto& a : agents) a->Heartbeat();
  }
}

// ------------------------------------------------------------------ the coordinator (parent)

int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  int port = ntohs(addr.sin_port);
  close(fd);
  return port;
}

struct Child {
  pid_t pid = -1;
  ~Child() {
    if (pid > 0) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
  }
};

// Runs this binary again with `args` and the run's rail setup; -1 when it cannot start.
pid_t SpawnSelf(const std::string& self, const std::vector<std::string>& args, RailSetup rs) {
  std::vector<std::string> argv = {self};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.insert(argv.end(),
              {"--rails", std::to_string(rs.rails), "--rail-faults", std::to_string(rs.rail_faults),
               "--parallel-rails", std::to_string(rs.parallel)});
  std::vector<char*> cargv;
  for (auto& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  pid_t pid = -1;
  if (posix_spawn(&pid, self.c_str(), nullptr, nullptr, cargv.data(), environ) != 0) return -1;
  return pid;
}

pid_t SpawnAgents(const std::string& self, int port, int n, int node_faults, int link_faults,
                  uint64_t seed, RailSetup rs) {
  return SpawnSelf(
      self,
      {"--simulate-agents", "--target", "127.0.0.1:" + std::to_string(port), "--token",
       "bench-token", "--n", std::to_string(n), "--node-faults", std::to_string(node_faults),
       "--link-faults", std::to_string(link_faults), "--seed", std::to_string(seed)},
      rs);
}

struct Setup {
  std::unique_ptr<CoordinatorServer> server;
  Child child;
  double connect_seconds = 0;
};

bool StartCluster(Setup& s, Logger& log, const std::string& self, int n, int node_faults,
                  int link_faults, uint64_t seed, int hold_down, RailSetup rs = {}) {
  const int port = FreePort();
  CoordinatorOptions o;
  CoordinatorConfig& cc = o.config.coordinator;
  cc.listen = "127.0.0.1:" + std::to_string(port);
  cc.http_listen.clear();
  o.token = "bench-token";
  cc.sweep_interval_seconds = 0;
  cc.hold_down = hold_down;
  cc.heartbeat_timeout_seconds = 120;
  o.config.probe.size_bytes = 64 << 10;
  o.config.probe.timeout_seconds = 30;
  o.seed = seed;
  if (rs.rails > 0) o.config.probe.rails = "all";
  o.config.probe.parallel_rails = rs.parallel;
  s.server = std::make_unique<CoordinatorServer>(o, log);
  if (!s.server->Start().ok()) return false;
  auto t0 = Clock::now();
  s.child.pid = SpawnAgents(self, port, n, node_faults, link_faults, seed, rs);
  if (s.child.pid < 0) return false;
  if (!s.server->WaitForAgents(static_cast<size_t>(n), 120s)) {
    std::cerr << "only " << s.server->ConnectedAgents() << " of " << n << " agents connected\n";
    return false;
  }
  s.connect_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return true;
}

// One row of the localise table, in a process of its own so that its RSS is this run's only.
int LocaliseOne(const std::string& self, int n, int f, uint64_t seed, RailSetup rs) {
  int status = 0;
  {
    {
      std::ostringstream sink;
      Logger log(sink, LogLevel::kWarn);
      Setup s;
      if (!StartCluster(s, log, self, n, f, 0, seed, 1, rs)) return 1;
      Faults want = DrawFaults(n, f, 0, seed, rs);
      auto t0 = Clock::now();
      const double cpu0 = CpuSeconds();
      uint64_t id = s.server->RequestSweep();
      if (!s.server->WaitForSweep(id, 300s)) return 1;
      double secs = std::chrono::duration<double>(Clock::now() - t0).count();
      const double cpu = CpuSeconds() - cpu0;
      CoordinatorView v = s.server->View(false);
      std::set<std::string> got;
      int wrong = 0;
      for (const auto& t : v.faults) {
        const std::string& node = t.fault.nodes[0];
        auto rail = want.rails.find(node);
        // A bad HCA is the node's fault, its reason naming the rail: "rail 5 (mlx5_5/1) ...".
        const bool rail_named =
            rail != want.rails.end() &&
            t.fault.reason.find("rail " + std::to_string(rail->second) + " (mlx5_" +
                                std::to_string(rail->second) + "/1)") != std::string::npos;
        if (t.fault.kind == FaultKind::kNode && (want.nodes.count(node) || rail_named)) {
          got.insert(node);
        } else {
          ++wrong;
        }
      }
      const int injected = f + static_cast<int>(want.rails.size());
      const double rss = StatusKb("VmRSS:") / 1024.0;
      std::printf("%8d %5d %7d %11zu %7d %10.2f %10.2f %10.2f %8zu/%-3d %14d %10.1f %10.1f\n", n,
                  rs.rails, f, want.rails.size(), v.last_sweep_rounds, secs, cpu, s.connect_seconds,
                  got.size(), injected, wrong, rss, StatusKb("VmHWM:") / 1024.0);
      std::fflush(stdout);
      if (static_cast<int>(got.size()) != injected || wrong != 0 || v.last_sweep_rounds > 3) {
        status = 1;
        // What was missed and what was reported instead, with the coordinator's reasons.
        for (const auto& node : want.nodes) {
          if (!got.count(node)) std::fprintf(stderr, "  missed: %s (node fault)\n", node.c_str());
        }
        for (const auto& [node, rail] : want.rails) {
          if (!got.count(node)) {
            std::fprintf(stderr, "  missed: %s rail %d: %s\n", node.c_str(), rail,
                         v.nodes.count(node) ? v.nodes.at(node).reason.c_str() : "-");
          }
        }
        for (const auto& t : v.faults) {
          if (!got.count(t.fault.nodes[0])) {
            std::fprintf(stderr, "  reported: %s: %s\n", t.fault.nodes[0].c_str(),
                         t.fault.reason.c_str());
          }
        }
      }
      s.server->Stop();
    }
  }
  return status;
}

int Localise(const std::string& self, const std::vector<int>& sizes, const std::vector<int>& faults,
             uint64_t seed, RailSetup rs) {
  std::printf("localise: one sweep, zero-duration probes, hold_down 1 (confirmed in the sweep)\n");
  std::printf("%8s %5s %7s %11s %7s %10s %10s %10s %12s %14s %10s %10s\n", "nodes", "rails",
              "faults", "rail_faults", "rounds", "sweep_s", "sweep_cpu_s", "connect_s", "localised",
              "false_reports", "rss_MB", "peak_MB");
  std::fflush(stdout);
  int status = 0;
  for (int n : sizes) {
    for (int f : faults) {
      const pid_t pid = SpawnSelf(
          self,
          {"--localise-one", std::to_string(n), std::to_string(f), "--seed", std::to_string(seed)},
          rs);
      if (pid < 0) return 1;
      int ws = 0;
      waitpid(pid, &ws, 0);
      if (!WIFEXITED(ws) || WEXITSTATUS(ws) != 0) status = 1;
    }
  }
  std::printf("(rss: coordinator process after the sweep; peak: its VmHWM)\n\n");
  return status;
}

int Coverage(const std::string& self, int n, int links, uint64_t seed) {
  std::ostringstream sink;
  Logger log(sink, LogLevel::kWarn);
  Setup s;
  if (!StartCluster(s, log, self, n, 0, links, seed, 2)) return 1;
  Faults want = DrawFaults(n, 0, links, seed);
  const uint64_t total = static_cast<uint64_t>(n) * static_cast<uint64_t>(n - 1) / 2;
  auto t0 = Clock::now();
  const double cpu0 = CpuSeconds();
  int sweeps = 0;
  int rounds = 0;
  for (;;) {
    uint64_t id = s.server->RequestSweep();
    if (!s.server->WaitForSweep(id, 120s)) return 1;
    ++sweeps;
    CoordinatorView v = s.server->View(false);
    rounds += v.last_sweep_rounds;
    bool pending = false;
    for (const auto& t : v.faults) pending |= !t.confirmed;
    if (v.coverage_cycles >= 1 && !pending) break;
    if (sweeps > 2 * n) return 1;
  }
  double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  const double cpu = CpuSeconds() - cpu0;
  CoordinatorView v = s.server->View();
  const uint64_t probed = v.pairs_concluded;
  std::set<NodePair> got;
  int wrong = 0;
  for (const auto& t : v.faults) {
    NodePair p =
        t.fault.nodes.size() == 2 ? NodePair(t.fault.nodes[0], t.fault.nodes[1]) : NodePair();
    if (t.fault.kind == FaultKind::kLink && want.links.count(p) && t.confirmed) {
      got.insert(p);
    } else {
      ++wrong;
    }
  }
  std::printf("coverage: %d agents, %d random link faults, hold_down 2\n", n, links);
  std::printf(
      "  sweeps %d (round-robin rounds %d, all rounds incl. re-pairing %d), pairs probed %llu of "
      "%llu\n",
      sweeps, sweeps, rounds, static_cast<unsigned long long>(probed),
      static_cast<unsigned long long>(total));
  std::printf(
      "  links found %zu of %d, false reports %d, wall %.2f s, coordinator CPU %.2f s, coordinator "
      "RSS %.1f MB\n\n",
      got.size(), links, wrong, secs, cpu, StatusKb("VmRSS:") / 1024.0);
  s.server->Stop();
  return got.size() == want.links.size() && wrong == 0 && probed == total ? 0 : 1;
}

int Main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (Has(args, "--simulate-agents")) return RunSimulatedAgents(args);
  RaiseFdLimit();
  char self[4096] = {};
  ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
  const std::string exe = len > 0 ? std::string(self, static_cast<size_t>(len)) : argv[0];
  const uint64_t seed = std::stoull(Flag(args, "--seed", "7"));
  const RailSetup rs{std::stoi(Flag(args, "--rails", "0")),
                     std::stoi(Flag(args, "--rail-faults", "0")),
                     std::stoi(Flag(args, "--parallel-rails", "8"))};
  if (rs.rails < 0 || rs.rails > 64 || rs.rail_faults < 0 || (rs.rail_faults > 0 && rs.rails < 2) ||
      rs.parallel < 1 || rs.parallel > kMaxParallelRails) {
    std::cerr << "bench_coordinator: --rails is 0..64; --rail-faults needs --rails 2 or more; "
                 "--parallel-rails is 1..16\n";
    return 2;
  }
  if (args.size() >= 3 && args[0] == "--localise-one") {
    return LocaliseOne(exe, std::stoi(args[1]), std::stoi(args[2]), seed, rs);
  }
  int status = 0;
  if (!Has(args, "--skip-localise")) {
    status |= Localise(exe, IntList(Flag(args, "--nodes", "64,512,4096")),
                       IntList(Flag(args, "--faults", "1,10")), seed, rs);
  }
  if (!Has(args, "--skip-coverage")) {
    status |= Coverage(exe, std::stoi(Flag(args, "--coverage-nodes", "256")),
                       std::stoi(Flag(args, "--links", "5")), seed);
  }
  return status;
}

}  // namespace
}  // namespace nccl_triage

int main(int argc, char** argv) { return nccl_triage::Main(argc, argv); }
