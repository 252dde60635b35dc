// A network partition between two nodes, made with real network namespaces: four
// `nccl-triage-server agent` processes, each in a namespace of its own joined by veth pairs to a
// bridge, talk to an in-process coordinator on the bridge's address; their probes (fake NCCL over
// real TCP) run between the namespaces. Cutting the route between two of them must come out as one
// pair fault of class architecture with cause net.connect (sockets fail too), not as two bad nodes.
//
// Needs root and iproute2 (CI runs as root); skipped with the reason otherwise.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/log.h"
#include "coordinator/server.h"
#include "probe/subprocess.h"
#include "support/fixture/fixture.h"

namespace nccl_triage {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

constexpr int kNodes = 4;

std::string IpTool() {
  for (const char* p : {"/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"}) {
    if (access(p, X_OK) == 0) return p;
  }
  return "";
}

int Sh(const std::string& cmd) {
  int rc = std::system((cmd + " >/dev/null 2>&1").c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

// The namespaces, the bridge and the veth pairs; torn down whatever happens.
class Namespaces {
 public:
  explicit Namespaces(std::string ip) : ip_(std::move(ip)) {
    const int id = static_cast<int>(getpid() % 100000);
    bridge_ = "ntb" + std::to_string(id);
    prefix_ = "10." + std::to_string(200 + id % 50) + "." + std::to_string((id / 50) % 250) + ".";
    for (int i = 0; i < kNodes; ++i)
      names_.push_back("nt" + std::to_string(id) + "-" + std::to_string(i));
  }
  ~Namespaces() {
    for (const auto& ns : names_) Sh(ip_ + " netns del " + ns);
    Sh(ip_ + " link del " + bridge_);
  }
  bool Up(std::string* error) {
    std::vector<std::string> cmds = {
        ip_ + " link add " + bridge_ + " type bridge",
        ip_ + " addr add " + prefix_ + "254/24 dev " + bridge_,
        ip_ + " link set " + bridge_ + " up",
    };
    for (int i = 0; i < kNodes; ++i) {
      const std::string& ns = names_[static_cast<size_t>(i)];
      const std::string host_end = bridge_ + "v" + std::to_string(i);
      cmds.push_back(ip_ + " netns add " + ns);
      cmds.push_back(ip_ + " link add " + host_end + " type veth peer name eth0 netns " + ns);
      cmds.push_back(ip_ + " link set " + host_end + " master " + bridge_ + " up");
      cmds.push_back(ip_ + " -n " + ns + " addr add " + Address(i) + "/24 dev eth0");
      cmds.push_back(ip_ + " -n " + ns + " link set eth0 up");
      cmds.push_back(ip_ + " -n " + ns + " link set lo up");
    }
    for (const auto& c : cmds) {
      if (Sh(c) != 0) {
        *error = "'" + c + "' failed";
        return false;
      }
    }
    return true;
  }
  // Cuts node a and node b apart, in both directions (each side has no route to the other).
  bool Partition(int a, int b) {
    return Sh(ip_ + " -n " + names_[static_cast<size_t>(a)] + " route add unreachable " +
              Address(b) + "/32") == 0 &&
           Sh(ip_ + " -n " + names_[static_cast<size_t>(b)] + " route add unreachable " +
              Address(a) + "/32") == 0;
  }
  std::string Address(int i) const { return prefix_ + std::to_string(i + 1); }
  std::string BridgeAddress() const { return prefix_ + "254"; }
  const std::string& Name(int i) const { return names_[static_cast<size_t>(i)]; }

 private:
  std::string ip_;
  std::string bridge_;
  std::string prefix_;
  std::vector<std::string> names_;
};

TEST(NetworkPartition, PairCutApartIsOneArchitecturePairFaultNotTwoBadNodes) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to create network namespaces";
  const std::string ip = IpTool();
  if (ip.empty()) GTEST_SKIP() << "iproute2 ('ip') is not installed";
  Namespaces net(ip);
  std::string error;
  if (!net.Up(&error)) GTEST_SKIP() << "cannot build the namespaces here: " << error;

  const fs::path work =
      (access("/dev/shm", W_OK) == 0 ? fs::path("/dev/shm") : fs::temp_directory_path()) /
      ("coord-netns-" + std::to_string(getpid()));
  fs::remove_all(work);
  struct Cleanup {
    fs::path p;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(p, ec);
    }
  } cleanup{work};

  std::ostringstream log_text;
  Logger log(log_text, LogLevel::kDebug);
  CoordinatorOptions co;
  co.config.coordinator.listen = net.BridgeAddress() + ":0";
  co.config.coordinator.http_listen.clear();
  co.config.coordinator.sweep_interval_seconds = 0;
  co.token = "netns-token";
  co.config.coordinator.hold_down = 1;
  co.config.probe.size_bytes = 64 << 10;
  co.config.probe.timeout_seconds = 15;
  co.report_grace = 3s;
  CoordinatorServer coordinator(co, log);
  ASSERT_TRUE(coordinator.Start().ok()) << log_text.str();

  const std::string fakes = FAKES_DIR;
  fs::create_directories(work);
  std::ofstream(work / "config.yaml")
      << "probe:\n"
      << "  nccl_library_paths: [\"" << fakes << "/lib/libnccl.so.2\"]\n"
      << "  cuda_library_paths: [\"" << fakes << "/lib/libcuda.so.1\"]\n"
      << "  size_bytes: 65536\n  iterations: 2\n  warmup_iterations: 1\n  timeout_seconds: 15\n"
      << "  socket_ifname: eth0\n  ib_hca: mlx5_0\n"
      << "  env_allowlist: [NCCL_FAKE_ROOT, NCCL_HOSTID, NCCL_SOCKET_RETRY_CNT]\n"
      << "agent:\n  interval_seconds: 600\n";

  std::vector<std::unique_ptr<Subprocess>> agents;
  for (int i = 0; i < kNodes; ++i) {
    const std::string node = "node-" + std::to_string(i);
    FixtureSpec spec = DgxA100Spec();
    spec.hostname = node;
    const fs::path root = work / node;
    ASSERT_TRUE(WriteFixture(spec, root.string()).ok());
    fs::create_directories(work / ("tmp-" + node));
    SubprocessOptions so;
    so.argv = {ip,
               "netns",
               "exec",
               net.Name(i),
               NCCL_TRIAGE_BINARY_DIR "/nccl-triage-server",
               "agent",
               "--config",
               (work / "config.yaml").string(),
               "--root",
               root.string(),
               "--node",
               node,
               "--listen",
               "127.0.0.1:0",
               "--coordinator",
               net.BridgeAddress() + ":" + std::to_string(coordinator.grpc_port())};
    so.env = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "NCCL_TRIAGE_TOKEN=netns-token",
              "NCCL_FAKE_ROOT=" + root.string(), "NCCL_HOSTID=" + node,
              // Fail a refused or unroutable connect at once instead of NCCL's ~60 s of retries.
              "NCCL_SOCKET_RETRY_CNT=1", "TMPDIR=" + (work / ("tmp-" + node)).string()};
    so.timeout = 120s;
    so.max_output_bytes = 64 << 10;
    auto p = Subprocess::Spawn(so);
    ASSERT_TRUE(p.ok()) << p.status().message();
    agents.push_back(std::move(*p));
  }
  ASSERT_TRUE(coordinator.WaitForAgents(kNodes, 30s))
      << "agents did not connect across the namespaces\n"
      << log_text.str();

  // Before the partition the namespaces must reach each other; a host whose bridge traffic is
  // filtered cannot run this test.
  uint64_t first = coordinator.RequestSweep();
  ASSERT_TRUE(coordinator.WaitForSweep(first, 60s));
  {
    auto view = coordinator.View();
    ASSERT_FALSE(view.pairs.empty());
    bool any_pass = false;
    for (const auto& p : view.pairs) any_pass |= p.judgement.status == PairStatus::kPass;
    if (!any_pass) GTEST_SKIP() << "traffic between the namespaces is filtered on this host";
  }

  ASSERT_TRUE(net.Partition(0, 1));
  // Enough sweeps for the round-robin to reach pair 0-1 (n-1 rounds) and localise it.
  bool reached = false;
  for (int s = 0; s < kNodes + 1 && !reached; ++s) {
    uint64_t n = coordinator.RequestSweep();
    ASSERT_TRUE(coordinator.WaitForSweep(n, 60s)) << log_text.str();
    for (const auto& t : coordinator.View().faults) reached |= t.fault.kind == FaultKind::kLink;
  }
  auto view = coordinator.View();
  ASSERT_EQ(view.faults.size(), 1u) << log_text.str();
  const LocalisedFault& f = view.faults[0].fault;
  EXPECT_EQ(f.kind, FaultKind::kLink);
  EXPECT_EQ(f.nodes, (std::vector<std::string>{"node-0", "node-1"}));
  EXPECT_EQ(f.fault_class, FaultClass::kArchitecture);
  ASSERT_FALSE(f.causes.empty());
  EXPECT_EQ(f.causes[0], "net.connect");
  for (const auto& p : view.pairs) {
    if (p.pair == NodePair("node-0", "node-1")) {
      EXPECT_NE(p.judgement.socket, ProbeOutcome::kPass);
      EXPECT_NE(p.judgement.ib, ProbeOutcome::kPass);
      EXPECT_EQ(p.localisation, PairLocalisation::kLink);
    }
  }
  for (const auto& [node, v] : view.nodes) {
    EXPECT_EQ(v.fault_class, FaultClass::kHealthy) << node << ": " << v.reason;
  }
  // SIGTERM: each agent stops its loop and session cleanly; the group kill is the backstop.
  for (auto& a : agents) ::kill(a->pid(), SIGTERM);
  for (auto& a : agents) a->Wait();
  coordinator.Stop();
}

}  // namespace
}  // namespace nccl_triage
