// The agent's side of the session: back-off, the unique-id relay and verdicts through the real
// coordinator, and the closed set of assignments, busy GPUs and cancellation against a scripted
// coordinator. AgentServices is a fake: no child processes here.
#include "coordinator_client/session.h"

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <fstream>
#include <functional>
#include <mutex>
#include <sstream>
#include <thread>

#include "base/log.h"
#include "coordinator/server.h"
#include "core/rails.h"
#include "host/gatherer.h"
#include "nccl_triage/v1/agent.grpc.pb.h"
#include "coordinator/raw_agent.h"
#include "wire/convert.h"

namespace nccl_triage {
namespace {

using namespace std::chrono_literals;

// The wire keeps which causes NCCL's diagnostics report named: the coordinator names them on a
// pair whose probes passed.
TEST(ProbeReportWire, ACauseKeepsItsDiagnosticsMark) {
  ProbeResult r;
  r.mode = ProbeMode::kIb;
  r.outcome = ProbeOutcome::kPass;
  Classification c;
  ClassifiedCause diag, plain;
  diag.cause = "gpu.p2p";
  diag.diagnostics = true;
  plain.cause = "net.connect";
  c.causes = {diag, plain};
  r.classification = c;
  const ProbeResult back = FromProbeReport(ToProbeReport(r, "p1"), ProbeMode::kIb, 0, "peer");
  ASSERT_TRUE(back.classification.has_value());
  ASSERT_EQ(back.classification->causes.size(), 2u);
  EXPECT_TRUE(back.classification->causes[0].diagnostics);
  EXPECT_FALSE(back.classification->causes[1].diagnostics);
}

class FakeServices final : public AgentServices {
 public:
  explicit FakeServices(std::string node) : node_(std::move(node)), state_(node_, "test", 0) {
    auto report = std::make_shared<NodeReport>();
    report->node = node_;
    report_ = report;
    snapshot_ = std::make_shared<NodeSnapshot>();
  }

  const std::string& NodeName() const override { return node_; }
  const Config& config() const override { return config_; }
  AgentState& state() override { return state_; }
  std::shared_ptr<const NodeReport> LatestReport() const override {
    std::lock_guard lock(mu_);
    return report_;
  }
  std::shared_ptr<const NodeSnapshot> LatestSnapshot() const override {
    std::lock_guard lock(mu_);
    return snapshot_;
  }
  uint64_t WaitForCycle(uint64_t, std::stop_token) override { return 1; }
  ProbeResult RunProbe(const ProbeAssignment& a, std::stop_token stop) override {
    {
      std::lock_guard lock(mu_);
      probes_++;
      cv_.notify_all();
    }
    ProbeResult r;
    r.mode = a.mode;
    r.rank = a.rank;
    r.peer = a.peer;
    r.outcome = ProbeOutcome::kPass;
    r.transport = a.mode == ProbeMode::kIb ? "NET/IB" : "NET/Socket";
    if (run_probe) return run_probe(a, stop);
    return r;
  }
  void SetPairVerdict(const std::string& peer, const PairVerdict& v) override {
    std::lock_guard lock(mu_);
    pairs_[peer] = v;
    cv_.notify_all();
  }
  void RemovePeer(const std::string& peer) override {
    std::lock_guard lock(mu_);
    pairs_.erase(peer);
  }
  void SetNodeVerdict(std::optional<NodeVerdict> v) override {
    std::lock_guard lock(mu_);
    node_verdict_ = v;
    cv_.notify_all();
  }
  void SetCoordinatorStatus(std::string status) override {
    std::lock_guard lock(mu_);
    statuses_.push_back(std::move(status));
    cv_.notify_all();
  }

  void SetReport(NodeReport report) {
    std::lock_guard lock(mu_);
    report_ = std::make_shared<NodeReport>(std::move(report));
  }
  void SetSnapshot(NodeSnapshot snapshot) {
    std::lock_guard lock(mu_);
    snapshot_ = std::make_shared<NodeSnapshot>(std::move(snapshot));
  }
  void SetGpuHolder() { SetGpuHolders({{4242, "python3", "/dev/nvidia0", true}}); }
  void SetGpuHolders(std::vector<DeviceHolder> holders, std::vector<GpuInfo> gpus = {}) {
    std::lock_guard lock(mu_);
    auto s = std::make_shared<NodeSnapshot>();
    s->gpu_holders = std::move(holders);
    s->gpus = std::move(gpus);
    snapshot_ = s;
  }
  bool WaitFor(const std::function<bool()>& pred, std::chrono::milliseconds timeout) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, pred);
  }
  std::optional<NodeVerdict> node_verdict() {
    std::lock_guard lock(mu_);
    return node_verdict_;
  }
  std::map<std::string, PairVerdict> pairs() {
    std::lock_guard lock(mu_);
    return pairs_;
  }
  std::vector<std::string> statuses() {
    std::lock_guard lock(mu_);
    return statuses_;
  }

  Config config_;
  std::function<ProbeResult(const ProbeAssignment&, std::stop_token)> run_probe;
  std::atomic<int> probes_{0};
  std::map<std::string, PairVerdict> pairs_;
  std::optional<NodeVerdict> node_verdict_;
  std::vector<std::string> statuses_;

 private:
  std::string node_;
  AgentState state_;
  std::shared_ptr<const NodeReport> report_;
  std::shared_ptr<const NodeSnapshot> snapshot_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
};

// Runs a CoordinatorSession for `services` on a thread until destroyed.
struct RunningSession {
  RunningSession(SessionOptions o, FakeServices& services) : log(text) {
    session = std::make_unique<CoordinatorSession>(std::move(o), log);
    thread = std::jthread([this, &services](std::stop_token st) { session->Run(services, st); });
  }
  ~RunningSession() {
    thread.request_stop();
    thread.join();
  }
  std::ostringstream text;
  Logger log;
  std::unique_ptr<CoordinatorSession> session;
  std::jthread thread;
};

TEST(ReconnectDelay, DoublesFromTheInitialDelayUpToTheCapWithEqualJitter) {
  for (int attempt = 0; attempt < 12; ++attempt) {
    const double d = std::min(500.0 * (1 << attempt), 30'000.0);
    auto lo = ReconnectDelay(attempt, 500ms, 30s, 0.0);
    auto hi = ReconnectDelay(attempt, 500ms, 30s, 0.999999);
    EXPECT_EQ(lo.count(), static_cast<int64_t>(d / 2)) << attempt;
    EXPECT_NEAR(static_cast<double>(hi.count()), d, 1.0) << attempt;
  }
  EXPECT_LE(ReconnectDelay(1000, 500ms, 30s, 0.5), 30s);
}

// A real coordinator on a free port, sweeping only on demand, and the options of its sessions.
struct LiveCoordinator {
  LiveCoordinator() : log(text), server(Options(), log) {
    Status s = server.Start();
    EXPECT_TRUE(s.ok()) << s.message();
    session.target = "127.0.0.1:" + std::to_string(server.grpc_port());
    session.token = "t0ken";
  }
  static CoordinatorOptions Options() {
    CoordinatorOptions co;
    co.config.coordinator.listen = "127.0.0.1:0";
    co.config.coordinator.http_listen.clear();
    co.config.coordinator.sweep_interval_seconds = 0;
    co.token = "t0ken";
    return co;
  }
  std::ostringstream text;
  Logger log;
  CoordinatorServer server;
  SessionOptions session;
};

TEST(CoordinatorSession, RelaysTheUniqueIdAndStoresTheVerdictsItIsPushed) {
  LiveCoordinator c;
  CoordinatorServer& server = c.server;
  const std::string id(128, '\x5a');
  std::atomic<int> relayed_ok{0};
  auto probe = [&](const ProbeAssignment& a, std::stop_token stop) {
    ProbeResult r;
    r.mode = a.mode;
    r.rank = a.rank;
    r.transport = a.mode == ProbeMode::kIb ? "NET/IB" : "NET/Socket";
    r.nccl_version = "2.28.9";
    if (a.rank == 0) {
      a.publish_unique_id(BytesToHex(id));
      r.outcome = ProbeOutcome::kPass;
    } else {
      auto got = a.await_unique_id(stop);
      r.outcome = got && *got == BytesToHex(id) ? ProbeOutcome::kPass : ProbeOutcome::kFail;
      if (r.outcome == ProbeOutcome::kPass) relayed_ok++;
    }
    return r;
  };
  FakeServices a("node-a");
  FakeServices b("node-b");
  a.run_probe = probe;
  b.run_probe = probe;
  const SessionOptions& so = c.session;
  RunningSession sa(so, a);
  RunningSession sb(so, b);
  ASSERT_TRUE(server.WaitForAgents(2, 10s));
  uint64_t n = server.RequestSweep();
  ASSERT_TRUE(server.WaitForSweep(n, 10s));
  EXPECT_EQ(relayed_ok.load(), 2);  // socket and IB, each relayed to rank 1
  ASSERT_TRUE(
      a.WaitFor([&] { return a.node_verdict_.has_value() && a.pairs_.count("node-b"); }, 5s));
  EXPECT_EQ(a.node_verdict()->fault_class, FaultClass::kHealthy);
  EXPECT_EQ(a.node_verdict()->basis, Basis::kProbes);
  EXPECT_EQ(a.pairs().at("node-b").fault_class, FaultClass::kHealthy);
  auto statuses = a.statuses();
  EXPECT_NE(std::find(statuses.begin(), statuses.end(), "connected to " + so.target),
            statuses.end());
}

// Core's class rule at both ends: a node whose checks all skipped is unknown in its agent's own
// report, and the coordinator, judging the same checks, must not push it back as healthy.
TEST(CoordinatorSession, ANodeWhereNoCheckPassedIsUnknownAtTheCoordinatorAsAtTheAgent) {
  LiveCoordinator c;
  CoordinatorServer& server = c.server;
  auto finding = [](CheckStatus status) {
    return Finding{.check = "ib.hca_present",
                   .fault_class = FaultClass::kIbResource,
                   .status = status,
                   .message = "as the check saw it"};
  };
  FakeServices a("node-a");
  FakeServices b("node-b");
  a.SetReport(MakeReport("node-a", {finding(CheckStatus::kSkip)}, 1));
  b.SetReport(MakeReport("node-b", {finding(CheckStatus::kPass)}, 1));
  ASSERT_EQ(a.LatestReport()->fault_class, FaultClass::kUnknown);
  ASSERT_EQ(b.LatestReport()->fault_class, FaultClass::kHealthy);
  // No probe runs, so no probe verdict: what the coordinator publishes comes from the checks.
  auto refuse = [](const ProbeAssignment& as, std::stop_token) {
    ProbeResult r;
    r.mode = as.mode;
    r.rank = as.rank;
    r.peer = as.peer;
    r.outcome = ProbeOutcome::kNotRun;
    r.detail = "GPUs busy";
    return r;
  };
  a.run_probe = refuse;
  b.run_probe = refuse;
  RunningSession sa(c.session, a);
  RunningSession sb(c.session, b);
  ASSERT_TRUE(server.WaitForAgents(2, 10s));
  auto view = server.View();
  EXPECT_EQ(view.nodes.at("node-a").fault_class, FaultClass::kUnknown);
  EXPECT_EQ(view.nodes.at("node-b").fault_class, FaultClass::kHealthy);

  uint64_t n = server.RequestSweep();
  ASSERT_TRUE(server.WaitForSweep(n, 10s));
  ASSERT_TRUE(a.WaitFor([&] { return a.node_verdict_.has_value(); }, 5s));
  ASSERT_TRUE(b.WaitFor([&] { return b.node_verdict_.has_value(); }, 5s));
  EXPECT_EQ(a.node_verdict()->fault_class, FaultClass::kUnknown) << a.node_verdict()->reason;
  EXPECT_EQ(a.node_verdict()->basis, Basis::kChecks);
  EXPECT_EQ(b.node_verdict()->fault_class, FaultClass::kHealthy) << b.node_verdict()->reason;
  EXPECT_EQ(server.View().nodes.at("node-a").fault_class, FaultClass::kUnknown);
}

// The agent's probe availability travels in its summary: a node without NCCL is never assigned
// a probe and is told a verdict that is not healthy; a node still pending is probed.
TEST(CoordinatorSession, ANodeWithoutNcclSaysSoAndIsNeverAssignedAProbe) {
  LiveCoordinator c;
  CoordinatorServer& server = c.server;
  auto pass = [](const ProbeAssignment& as, std::stop_token stop) {
    ProbeResult r;
    r.mode = as.mode;
    r.rank = as.rank;
    r.transport = as.mode == ProbeMode::kIb ? "NET/IB" : "NET/Socket";
    if (as.rank == 0) {
      as.publish_unique_id(std::string(256, 'a'));
    } else if (!as.await_unique_id(stop)) {
      r.outcome = ProbeOutcome::kFail;
      return r;
    }
    r.outcome = ProbeOutcome::kPass;
    return r;
  };
  FakeServices a("node-a");
  FakeServices b("node-b");
  FakeServices blind("node-c");
  a.run_probe = pass;
  b.run_probe = pass;
  std::atomic<int> blind_probes{0};
  blind.run_probe = [&](const ProbeAssignment& as, std::stop_token stop) {
    ++blind_probes;
    return pass(as, stop);
  };
  ProbeAvailability none;
  none.reason = "no_nccl";
  none.cause = "probe.no_nccl";
  none.detail = "libnccl.so.2: not found";
  blind.state().SetProbeAvailability(none);
  RunningSession sa(c.session, a);
  RunningSession sb(c.session, b);
  RunningSession sc(c.session, blind);
  ASSERT_TRUE(server.WaitForAgents(3, 10s));
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(server.WaitForSweep(server.RequestSweep(), 10s));
  EXPECT_EQ(blind_probes.load(), 0);
  EXPECT_GT(a.probes_.load(), 0);
  auto view = server.View();
  for (const auto& agent : view.agents) {
    ASSERT_TRUE(agent.info.probe.has_value()) << agent.info.name;
    EXPECT_EQ(agent.info.probe->reason, agent.info.name == "node-c" ? "no_nccl" : "pending");
  }
  ASSERT_TRUE(blind.WaitFor([&] { return blind.node_verdict_.has_value(); }, 5s));
  EXPECT_EQ(blind.node_verdict()->fault_class, FaultClass::kUnknown);
  EXPECT_EQ(blind.node_verdict()->causes.front(), "probe.no_nccl");
  EXPECT_EQ(view.nodes.at("node-a").fault_class, FaultClass::kHealthy);
}

TEST(CoordinatorSession, KeepsReconnectingWithBackOffWhileNobodyListens) {
  FakeServices a("node-a");
  SessionOptions so;
  so.target = "127.0.0.1:1";  // nothing there
  so.backoff_initial = 20ms;
  so.backoff_max = 80ms;
  auto start = std::chrono::steady_clock::now();
  {
    RunningSession s(so, a);
    ASSERT_TRUE(a.WaitFor(
        [&] {
          return std::count_if(a.statuses_.begin(), a.statuses_.end(), [](const std::string& x) {
                   return x.rfind("reconnecting in", 0) == 0;
                 }) >= 3;
        },
        10s));
  }
  // Stop is prompt even in the middle of a back-off.
  EXPECT_LT(std::chrono::steady_clock::now() - start, 8s);
  EXPECT_EQ(a.statuses().back(), "stopped");
}

// A coordinator that follows a script: welcome, then whatever the test sends, recording reports.
class ScriptedCoordinator final : public v1::Coordinator::Service {
 public:
  grpc::Status Session(
      grpc::ServerContext* ctx,
      grpc::ServerReaderWriter<v1::CoordinatorMessage, v1::AgentMessage>* stream) override {
    v1::AgentMessage hello;
    if (!stream->Read(&hello) || !hello.has_hello()) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "hello");
    }
    {
      std::lock_guard lock(mu_);
      hello_ = hello.hello();
    }
    v1::CoordinatorMessage w;
    w.mutable_welcome()->set_protocol_version(1);
    stream->Write(w);
    std::thread reader([&] {
      v1::AgentMessage m;
      while (stream->Read(&m)) {
        std::lock_guard lock(mu_);
        if (m.has_probe_report()) reports_.push_back(m.probe_report());
        cv_.notify_all();
      }
    });
    for (;;) {
      std::unique_lock lock(mu_);
      cv_.wait_for(lock, 50ms);
      if (close_) {
        close_ = false;
        lock.unlock();
        ctx->TryCancel();
        break;
      }
      while (!outbox_.empty()) {
        v1::CoordinatorMessage m = outbox_.front();
        outbox_.pop_front();
        stream->Write(m);
      }
      if (ctx->IsCancelled() || stopping_) break;
    }
    reader.join();
    return grpc::Status::OK;
  }

  void Send(v1::CoordinatorMessage m) {
    std::lock_guard lock(mu_);
    outbox_.push_back(std::move(m));
    cv_.notify_all();
  }
  void CloseStream() {
    std::lock_guard lock(mu_);
    close_ = true;
  }
  void Stop() {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  std::optional<v1::Hello> hello() {
    std::lock_guard lock(mu_);
    return hello_;
  }
  std::optional<v1::ProbeReport> WaitReport(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mu_);
    if (!cv_.wait_for(lock, timeout, [&] { return !reports_.empty(); })) return std::nullopt;
    auto r = reports_.front();
    reports_.erase(reports_.begin());
    return r;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<v1::CoordinatorMessage> outbox_;
  std::vector<v1::ProbeReport> reports_;
  std::optional<v1::Hello> hello_;
  bool close_ = false;
  bool stopping_ = false;
};

struct Scripted {
  Scripted() {
    grpc::ServerBuilder b;
    b.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    b.RegisterService(&service);
    server = b.BuildAndStart();
  }
  ~Scripted() {
    service.Stop();
    server->Shutdown(std::chrono::system_clock::now() + 2s);
  }
  SessionOptions Options() {
    SessionOptions o;
    o.target = "127.0.0.1:" + std::to_string(port);
    o.backoff_initial = 20ms;
    o.backoff_max = 100ms;
    return o;
  }
  ScriptedCoordinator service;
  std::unique_ptr<grpc::Server> server;
  int port = 0;
};

v1::CoordinatorMessage Assignment(const std::string& id, v1::ProbeMode mode = v1::PROBE_MODE_SOCKET,
                                  v1::ProbeSize size = v1::PROBE_SIZE_64KIB, uint32_t rank = 0,
                                  const std::string& peer = "node-b") {
  v1::CoordinatorMessage m;
  auto* a = m.mutable_assignment();
  a->set_probe_id(id);
  a->set_peer(peer);
  a->set_mode(mode);
  a->set_rank(rank);
  a->set_size(size);
  a->set_deadline_seconds(5);
  return m;
}

// Sends `m` and expects its report to be a skip whose reason contains `reason`.
void ExpectSkipped(Scripted& c, const v1::CoordinatorMessage& m, const std::string& reason) {
  c.service.Send(m);
  auto r = c.service.WaitReport(5s);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->outcome(), v1::PROBE_OUTCOME_NOT_RUN);
  EXPECT_NE(r->skipped_reason().find(reason), std::string::npos) << r->skipped_reason();
}

TEST(CoordinatorSession, RefusesAssignmentsOutsideTheClosedSet) {
  Scripted c;
  FakeServices a("node-a");
  RunningSession s(c.Options(), a);
  struct Case {
    v1::CoordinatorMessage m;
  };
  std::vector<v1::CoordinatorMessage> bad = {
      Assignment("p1", v1::PROBE_MODE_UNSPECIFIED),
      Assignment("p2", v1::PROBE_MODE_IB, static_cast<v1::ProbeSize>(99)),
      Assignment("p3", v1::PROBE_MODE_IB, v1::PROBE_SIZE_1MIB, 7),
      Assignment("p4", v1::PROBE_MODE_IB, v1::PROBE_SIZE_1MIB, 0, "; rm -rf /"),
      Assignment("p5", v1::PROBE_MODE_IB, v1::PROBE_SIZE_1MIB, 0, "node-a"),  // itself
      Assignment("p6", v1::PROBE_MODE_IB, v1::PROBE_SIZE_1MIB, 0, "--nccl-lib"),
      Assignment("p7", v1::PROBE_MODE_IB, v1::PROBE_SIZE_1MIB, 0, "Node-B"),
      Assignment("p8", v1::PROBE_MODE_IB, v1::PROBE_SIZE_1MIB, 0, "node_b"),
  };
  for (auto& m : bad) {
    c.service.Send(m);
    auto r = c.service.WaitReport(5s);
    ASSERT_TRUE(r.has_value()) << m.assignment().probe_id();
    EXPECT_EQ(r->probe_id(), m.assignment().probe_id());
    EXPECT_EQ(r->outcome(), v1::PROBE_OUTCOME_NOT_RUN);
    EXPECT_NE(r->skipped_reason().find("closed set"), std::string::npos) << r->skipped_reason();
  }
  EXPECT_EQ(a.probes_.load(), 0);
  // A valid one runs, with the size from the enum and the deadline clamped to the config.
  ProbeAssignment seen;
  a.run_probe = [&](const ProbeAssignment& pa, std::stop_token) {
    seen = pa;
    ProbeResult r;
    r.outcome = ProbeOutcome::kPass;
    return r;
  };
  a.config_.probe.timeout_seconds = 3;
  c.service.Send(Assignment("ok", v1::PROBE_MODE_IB, v1::PROBE_SIZE_1MIB, 1));
  auto r = c.service.WaitReport(5s);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->outcome(), v1::PROBE_OUTCOME_PASS);
  EXPECT_EQ(seen.size_bytes, 1u << 20);
  EXPECT_EQ(seen.timeout_seconds, 3);
  EXPECT_EQ(seen.rank, 1);
  EXPECT_EQ(seen.mode, ProbeMode::kIb);
}

TEST(CoordinatorSession, ARailThisNodeDoesNotHaveOrASocketRailIsUnavailableNotRun) {
  Scripted c;
  FakeServices a("node-a");  // its snapshot has no HCAs: no rail table
  RunningSession s(c.Options(), a);
  v1::CoordinatorMessage ib = Assignment("r3", v1::PROBE_MODE_IB);
  ib.mutable_assignment()->set_rail(3);
  c.service.Send(ib);
  auto r = c.service.WaitReport(5s);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->outcome(), v1::PROBE_OUTCOME_UNAVAILABLE);
  EXPECT_EQ(r->detail(), "rail 3: this node has 0 rail(s)");
  v1::CoordinatorMessage socket = Assignment("s3", v1::PROBE_MODE_SOCKET);
  socket.mutable_assignment()->set_rail(3);
  c.service.Send(socket);
  r = c.service.WaitReport(5s);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->outcome(), v1::PROBE_OUTCOME_UNAVAILABLE);
  EXPECT_NE(r->detail().find("IB probe only"), std::string::npos) << r->detail();
  EXPECT_EQ(a.probes_.load(), 0);
}

TEST(CoordinatorSession, NeverProbesWhileAnotherProcessHoldsTheGpus) {
  Scripted c;
  FakeServices a("node-a");
  a.SetGpuHolder();
  RunningSession s(c.Options(), a);
  ExpectSkipped(c, Assignment("busy"), "skipped: GPUs busy (python3");
  EXPECT_EQ(a.probes_.load(), 0);
}

TEST(CoordinatorSession, PersistencedAndDcgmHoldingEveryGpuDoNotBlockProbes) {
  // A production node: persistence mode and dcgm-exporter keep every /dev/nvidiaN open.
  Scripted c;
  FakeServices a("node-a");
  std::vector<DeviceHolder> holders;
  for (int gpu = 0; gpu < 8; ++gpu) {
    const std::string dev = "/dev/nvidia" + std::to_string(gpu);
    holders.push_back({1201, "nvidia-persiste", dev});
    holders.push_back({2202, "dcgm-exporter", dev});
    holders.push_back({2203, "nv-hostengine", dev});
  }
  a.SetGpuHolders(holders);
  RunningSession s(c.Options(), a);
  c.service.Send(Assignment("production"));
  auto r = c.service.WaitReport(5s);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->outcome(), v1::PROBE_OUTCOME_PASS) << r->skipped_reason();
  EXPECT_EQ(a.probes_.load(), 1);

  // Without a GPU list, a training process (a CUDA context) on one GPU blocks, and is named.
  holders.push_back({4242, "python3", "/dev/nvidia3", true});
  a.SetGpuHolders(holders);
  ExpectSkipped(c, Assignment("job"), "python3 pid 4242 holds /dev/nvidia3");
}

TEST(CoordinatorSession, AJobOnGpu0OnlyMakesTheProbeRunOnGpu1) {
  Scripted c;
  FakeServices a("node-a");
  std::vector<GpuInfo> gpus;
  std::vector<DeviceHolder> holders;
  for (int i = 0; i < 8; ++i) {
    GpuInfo g;
    g.bdf = "0000:" + std::string(i < 4 ? "0" : "8") + std::to_string(i) + ":00.0";
    g.minor = i;
    gpus.push_back(g);
    holders.push_back({1201, "nvidia-persiste", "/dev/nvidia" + std::to_string(i)});
  }
  holders.push_back({5150, "python3", "/dev/nvidia0", true});
  a.SetGpuHolders(holders, gpus);
  std::string used;
  a.run_probe = [&used](const ProbeAssignment& pa, std::stop_token) {
    used = pa.gpu_bus_id;
    ProbeResult r;
    r.outcome = ProbeOutcome::kPass;
    return r;
  };
  RunningSession s(c.Options(), a);
  c.service.Send(Assignment("gpu1"));
  auto r = c.service.WaitReport(5s);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->outcome(), v1::PROBE_OUTCOME_PASS) << r->skipped_reason();
  EXPECT_EQ(used, "0000:01:00.0");

  // Every GPU with a job: skipped, the first job named.
  for (int i = 1; i < 8; ++i)
    holders.push_back({5151, "python3", "/dev/nvidia" + std::to_string(i), true});
  a.SetGpuHolders(holders, gpus);
  ExpectSkipped(c, Assignment("all-busy"), "python3 pid 5150 holds /dev/nvidia0");
}

// ib-busy: a DGX A100 where python3 (pid 31337) has a CUDA context on GPU 0 and pt_main_thread
// (pid 31338) on GPU 1; rails 0 and 1 sit next to those GPUs, rail 2 next to an idle one.
GatherOptions IbBusy() {
  GatherOptions options;
  options.root = std::string(NCCL_TRIAGE_FIXTURE_DIR) + "/ib-busy";
  return options;
}

TEST(CoordinatorSession, ARailProbesOnItsNearestGpuAndIsSkippedWhenAJobHoldsThatGpu) {
  auto snapshot = GatherSnapshot(IbBusy());
  ASSERT_TRUE(snapshot.ok()) << snapshot.status().message();
  const std::vector<Rail> table = RailTable(*snapshot);
  ASSERT_GE(table.size(), 3u);
  ASSERT_FALSE(table[2].gpu_bdf.empty());
  Scripted c;
  FakeServices a("node-a");
  a.SetSnapshot(*snapshot);
  ProbeAssignment seen;
  a.run_probe = [&seen](const ProbeAssignment& pa, std::stop_token) {
    seen = pa;
    ProbeResult r;
    r.outcome = ProbeOutcome::kPass;
    return r;
  };
  RunningSession s(c.Options(), a);
  v1::CoordinatorMessage rail0 = Assignment("rail0", v1::PROBE_MODE_IB);
  rail0.mutable_assignment()->set_rail(0);
  c.service.Send(rail0);
  auto r = c.service.WaitReport(5s);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->outcome(), v1::PROBE_OUTCOME_NOT_RUN);
  EXPECT_EQ(r->skipped_reason(),
            "skipped: GPU " + table[0].gpu_bdf + " busy (python3 pid 31337 holds /dev/nvidia0)");
  EXPECT_EQ(a.probes_.load(), 0);

  v1::CoordinatorMessage rail2 = Assignment("rail2", v1::PROBE_MODE_IB);
  rail2.mutable_assignment()->set_rail(2);
  c.service.Send(rail2);
  r = c.service.WaitReport(5s);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->outcome(), v1::PROBE_OUTCOME_PASS) << r->skipped_reason();
  EXPECT_EQ(seen.gpu_bus_id, table[2].gpu_bdf);
  EXPECT_EQ(seen.tag, "rail2");
  EXPECT_EQ(seen.rail, 2);  // the agent records it apart from the pair's IB probe
  ASSERT_TRUE(seen.ib_hca.has_value());
  EXPECT_NE(seen.ib_hca->find(table[2].device), std::string::npos) << *seen.ib_hca;

  // Without a rail the same node probes on its first idle GPU, which is neither 0 nor 1.
  c.service.Send(Assignment("plain", v1::PROBE_MODE_IB));
  r = c.service.WaitReport(5s);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->outcome(), v1::PROBE_OUTCOME_PASS) << r->skipped_reason();
  EXPECT_FALSE(seen.gpu_bus_id.empty());
  EXPECT_NE(seen.gpu_bus_id, table[0].gpu_bdf);
  EXPECT_NE(seen.gpu_bus_id, table[1].gpu_bdf);
  EXPECT_FALSE(seen.ib_hca.has_value());
  EXPECT_EQ(seen.rail, -1);
}

// The kubelet assigned rail 2's GPU to a container whose job has not opened it yet: the rail is
// skipped, naming the container; with the assignment gone the same rail runs on that GPU.
TEST(CoordinatorSession, ARailWhoseGpuTheKubeletAssignedIsSkippedNamingTheContainer) {
  auto snapshot = GatherSnapshot(IbBusy());
  ASSERT_TRUE(snapshot.ok()) << snapshot.status().message();
  const std::vector<Rail> table = RailTable(*snapshot);
  ASSERT_GE(table.size(), 3u);
  auto gpu = std::find_if(snapshot->gpus.begin(), snapshot->gpus.end(),
                          [&](const GpuInfo& g) { return g.bdf == table[2].gpu_bdf; });
  ASSERT_NE(gpu, snapshot->gpus.end());
  ASSERT_FALSE(gpu->uuid.empty());
  snapshot->gpu_allocations =
      std::vector<GpuAllocation>{{"ml/train-0/worker", "nvidia.com/gpu", gpu->uuid}};
  Scripted c;
  FakeServices a("node-a");
  a.SetSnapshot(*snapshot);
  RunningSession s(c.Options(), a);
  v1::CoordinatorMessage rail2 = Assignment("rail2", v1::PROBE_MODE_IB);
  rail2.mutable_assignment()->set_rail(2);
  ExpectSkipped(c, rail2,
                "skipped: GPU " + table[2].gpu_bdf +
                    " busy (assigned to ml/train-0/worker (nvidia.com/gpu))");
  EXPECT_EQ(a.probes_.load(), 0);

  snapshot->gpu_allocations = std::vector<GpuAllocation>{};
  a.SetSnapshot(*snapshot);
  c.service.Send(rail2);
  auto r = c.service.WaitReport(5s);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->outcome(), v1::PROBE_OUTCOME_PASS) << r->skipped_reason();
}

TEST(CoordinatorSession, ProbesWhenGpusAreBusyIfTheConfigAllowsIt) {
  Scripted c;
  FakeServices a("node-a");
  a.SetGpuHolder();
  a.config_.probe.allow_when_gpus_busy = true;
  RunningSession s(c.Options(), a);
  c.service.Send(Assignment("allowed"));
  auto r = c.service.WaitReport(5s);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->outcome(), v1::PROBE_OUTCOME_PASS);
  EXPECT_EQ(a.probes_.load(), 1);
}

// A probe that blocks until its stop token fires (at most 20 s), records that it was stopped and
// returns "not run" with `detail`.
std::function<ProbeResult(const ProbeAssignment&, std::stop_token)> ProbeThatWaitsForItsStop(
    std::atomic<bool>& stopped, std::string detail) {
  return [&stopped, detail](const ProbeAssignment&, std::stop_token stop) {
    std::mutex m;
    std::condition_variable_any cv;
    std::unique_lock lock(m);
    cv.wait_for(lock, stop, 20s, [] { return false; });
    stopped = stop.stop_requested();
    ProbeResult r;
    r.outcome = ProbeOutcome::kNotRun;
    r.detail = detail;
    return r;
  };
}

v1::CoordinatorMessage Cancel(const std::string& probe_id, const std::string& reason) {
  v1::CoordinatorMessage cancel;
  cancel.mutable_cancel()->set_probe_id(probe_id);
  cancel.mutable_cancel()->set_reason(reason);
  return cancel;
}

TEST(CoordinatorSession, CancelStopsTheRunningProbe) {
  Scripted c;
  FakeServices a("node-a");
  std::atomic<bool> stopped{false};
  a.run_probe = ProbeThatWaitsForItsStop(stopped, "cancelled");
  RunningSession s(c.Options(), a);
  c.service.Send(Assignment("long"));
  ASSERT_TRUE(a.WaitFor([&] { return a.probes_.load() == 1; }, 5s));
  auto t0 = std::chrono::steady_clock::now();
  c.service.Send(Cancel("long", "peer lost"));
  auto r = c.service.WaitReport(5s);
  ASSERT_TRUE(r.has_value());
  EXPECT_TRUE(stopped.load());
  EXPECT_EQ(r->outcome(), v1::PROBE_OUTCOME_NOT_RUN);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 3s);
}

TEST(CoordinatorSession, RunsUpToItsParallelProbesAtOnceAndSaysHowManyInItsHello) {
  Scripted c;
  FakeServices a("node-a");
  a.config_.probe.parallel_rails = 2;
  std::mutex mu;
  std::set<std::string> running, stopped;
  a.run_probe = [&](const ProbeAssignment& pa, std::stop_token stop) {
    {
      std::lock_guard lock(mu);
      running.insert(pa.peer);
    }
    std::mutex m;
    std::condition_variable_any cv;
    std::unique_lock lock(m);
    cv.wait_for(lock, stop, 20s, [] { return false; });
    std::lock_guard guard(mu);
    running.erase(pa.peer);
    if (stop.stop_requested()) stopped.insert(pa.peer);
    return ProbeResult{.outcome = ProbeOutcome::kNotRun, .detail = "cancelled"};
  };
  // The peers whose probes run, once they are `want` (the fake counts a probe before it runs).
  auto running_becomes = [&](const std::set<std::string>& want) {
    for (auto until = std::chrono::steady_clock::now() + 5s;
         std::chrono::steady_clock::now() < until; std::this_thread::sleep_for(5ms)) {
      std::lock_guard lock(mu);
      if (running == want) return true;
    }
    return false;
  };
  RunningSession s(c.Options(), a);
  c.service.Send(Assignment("r0", v1::PROBE_MODE_IB, v1::PROBE_SIZE_1MIB, 0, "node-b"));
  c.service.Send(Assignment("r1", v1::PROBE_MODE_IB, v1::PROBE_SIZE_1MIB, 0, "node-c"));
  ASSERT_TRUE(running_becomes({"node-b", "node-c"})) << "two run at once";
  ASSERT_TRUE(c.service.hello().has_value());
  EXPECT_EQ(c.service.hello()->parallel_probes(), 2u);

  // Two more wait for a worker (a probe the coordinator cancelled may still be ending); a fifth
  // is refused at once, as is an id already running or waiting.
  c.service.Send(Assignment("r2", v1::PROBE_MODE_IB, v1::PROBE_SIZE_1MIB, 0, "node-d"));
  c.service.Send(Assignment("r3", v1::PROBE_MODE_IB, v1::PROBE_SIZE_1MIB, 0, "node-e"));
  c.service.Send(Assignment("r4", v1::PROBE_MODE_IB, v1::PROBE_SIZE_1MIB, 0, "node-f"));
  auto r = c.service.WaitReport(5s);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->probe_id(), "r4");
  EXPECT_EQ(r->outcome(), v1::PROBE_OUTCOME_NOT_RUN);
  EXPECT_EQ(r->skipped_reason(), "busy: 2 probe(s) already wait (probe.parallel_rails)");
  for (const char* id : {"r1", "r2"}) {
    c.service.Send(Assignment(id, v1::PROBE_MODE_IB, v1::PROBE_SIZE_1MIB, 0, "node-c"));
    r = c.service.WaitReport(5s);
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->probe_id(), id);
    EXPECT_EQ(r->skipped_reason(), "busy: this probe id already runs");
  }
  EXPECT_TRUE(running_becomes({"node-b", "node-c"})) << "the waiting ones have not started";

  // A cancel stops its own probe only; the freed worker takes the next waiting assignment.
  c.service.Send(Cancel("r1", "peer lost"));
  r = c.service.WaitReport(5s);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->probe_id(), "r1");
  EXPECT_TRUE(running_becomes({"node-b", "node-d"}));
  c.service.Send(Cancel("r0", "over"));
  r = c.service.WaitReport(5s);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->probe_id(), "r0");
  EXPECT_TRUE(running_becomes({"node-d", "node-e"}));
  c.service.Send(Cancel("r2", "over"));
  c.service.Send(Cancel("r3", "over"));
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(c.service.WaitReport(5s).has_value());
  std::lock_guard lock(mu);
  EXPECT_EQ(stopped, (std::set<std::string>{"node-b", "node-c", "node-d", "node-e"}));
}

// Node verdicts were taken unfiltered (pair verdicts were filtered): cause ids
// outside the catalogue and a 3 MiB reason went into /status (6.3 MB) and the annotations.
TEST(CoordinatorSession, FiltersAHostileNodeVerdictAndBoundsPairsAndCancelReasons) {
  Scripted c;
  FakeServices a("node-a");
  std::atomic<bool> stopped{false};
  a.run_probe = ProbeThatWaitsForItsStop(stopped, "cancelled");
  RunningSession s(c.Options(), a);
  v1::CoordinatorMessage m;
  v1::Verdicts* v = m.mutable_verdicts();
  v->mutable_node()->set_fault_class(v1::FAULT_CLASS_IB_RESOURCE);
  v->mutable_node()->set_basis(v1::BASIS_PROBES);
  v->mutable_node()->add_causes("ib.port_state");
  v->mutable_node()->add_causes("rm -rf /");
  for (int i = 0; i < 100; ++i) v->mutable_node()->add_causes("limits.memlock");
  // 3 MiB of three-byte characters: the cut must not split one.
  std::string reason;
  for (int i = 0; i < (1 << 20); ++i) reason += "\xe2\x82\xac";
  v->mutable_node()->set_reason(reason);
  for (int i = 0; i < 1000; ++i) {
    v1::PairVerdict* p = v->add_pairs();
    p->set_peer("node-" + std::to_string(i));
    p->set_fault_class(v1::FAULT_CLASS_HEALTHY);
  }
  for (const char* bad : {"--nccl-lib", "Node-B", "node_b", "-node", "node-", "a..b"}) {
    v1::PairVerdict* p = v->add_pairs();
    p->set_peer(bad);
    p->set_fault_class(v1::FAULT_CLASS_HEALTHY);
  }
  c.service.Send(m);
  ASSERT_TRUE(a.WaitFor([&] { return a.node_verdict_.has_value(); }, 5s));
  NodeVerdict nv = *a.node_verdict();
  EXPECT_EQ(nv.fault_class, FaultClass::kIbResource);
  ASSERT_FALSE(nv.causes.empty());
  EXPECT_EQ(nv.causes.front(), "ib.port_state");
  EXPECT_LE(nv.causes.size(), 16u);
  for (const auto& cause : nv.causes) EXPECT_NE(cause, "rm -rf /");
  EXPECT_LE(nv.reason.size(), 512u);
  EXPECT_EQ(nv.reason.size() % 3, 0u) << "a character was split";
  auto pairs = a.pairs();
  EXPECT_LE(pairs.size(), 256u);
  for (const auto& [peer, verdict] : pairs) {
    EXPECT_EQ(peer.rfind("node-", 0), 0u) << peer;
  }

  // A cancel with a reason of megabytes is logged bounded.
  c.service.Send(Assignment("long"));
  ASSERT_TRUE(a.WaitFor([&] { return a.probes_.load() == 1; }, 5s));
  c.service.Send(Cancel("long", std::string(3 << 20, 'r')));
  ASSERT_TRUE(c.service.WaitReport(5s).has_value());
  EXPECT_LT(s.text.str().size(), 8192u) << s.text.str().substr(0, 300);
}

TEST(CoordinatorSession, ALostStreamCancelsTheRunningProbeAndReconnects) {
  Scripted c;
  FakeServices a("node-a");
  std::atomic<bool> stopped{false};
  a.run_probe = ProbeThatWaitsForItsStop(stopped, "cancelled");
  RunningSession s(c.Options(), a);
  c.service.Send(Assignment("orphan"));
  ASSERT_TRUE(a.WaitFor([&] { return a.probes_.load() == 1; }, 5s));
  c.service.CloseStream();
  auto deadline = std::chrono::steady_clock::now() + 5s;
  while (!stopped && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(10ms);
  EXPECT_TRUE(stopped.load()) << "the probe outlived its stream";
  EXPECT_TRUE(a.WaitFor(
      [&] {
        return std::count(a.statuses_.begin(), a.statuses_.end(),
                          "connected to " + c.Options().target) >= 2;
      },
      5s));
}

// A self-signed certificate for localhost / 127.0.0.1 (P-256), as PEM: {cert, key}.
std::pair<std::string, std::string> SelfSignedCertificate() {
  EVP_PKEY* key = EVP_EC_gen("P-256");
  X509* x = X509_new();
  X509_set_version(x, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
  X509_gmtime_adj(X509_getm_notBefore(x), -60);
  X509_gmtime_adj(X509_getm_notAfter(x), 3600);
  X509_set_pubkey(x, key);
  X509_NAME* name = X509_get_subject_name(x);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("localhost"), -1, -1, 0);
  X509_set_issuer_name(x, name);
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, x, x, nullptr, nullptr, 0);
  for (auto [nid, value] : {std::pair{NID_subject_alt_name, "DNS:localhost,IP:127.0.0.1"},
                            std::pair{NID_basic_constraints, "critical,CA:TRUE"}}) {
    X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
    X509_add_ext(x, ext, -1);
    X509_EXTENSION_free(ext);
  }
  X509_sign(x, key, EVP_sha256());
  auto pem = [](auto write) {
    BIO* bio = BIO_new(BIO_s_mem());
    write(bio);
    char* data = nullptr;
    long n = BIO_get_mem_data(bio, &data);
    std::string out(data, static_cast<size_t>(n));
    BIO_free(bio);
    return out;
  };
  std::string cert = pem([&](BIO* b) { PEM_write_bio_X509(b, x); });
  std::string k =
      pem([&](BIO* b) { PEM_write_bio_PrivateKey(b, key, nullptr, nullptr, 0, nullptr, nullptr); });
  X509_free(x);
  EVP_PKEY_free(key);
  return {cert, k};
}

TEST(CoordinatorTls, AgentsConnectOverTlsAndPlaintextIsRefused) {
  auto [cert, key] = SelfSignedCertificate();
  ASSERT_NE(cert.find("BEGIN CERTIFICATE"), std::string::npos);
  std::ostringstream text;
  Logger log(text);
  CoordinatorOptions co;
  co.config.coordinator.listen = "127.0.0.1:0";
  co.config.coordinator.http_listen.clear();
  co.config.coordinator.sweep_interval_seconds = 0;
  co.token = "tls-token";
  co.cert_pem = cert;
  co.key_pem = key;
  CoordinatorServer server(co, log);
  ASSERT_TRUE(server.Start().ok());
  FakeServices a("node-tls");
  SessionOptions so;
  so.target = "127.0.0.1:" + std::to_string(server.grpc_port());
  so.token = "tls-token";
  so.tls = true;
  so.ca_pem = cert;
  RunningSession s(so, a);
  EXPECT_TRUE(server.WaitForAgents(1, 10s)) << s.text.str();
  // A plaintext client does not get through.
  testing_util::RawAgent plain(so.target, "tls-token");
  plain.Send(testing_util::RawAgent::Hello("node-plain"));
  auto status = plain.WaitEnd(10s);
  ASSERT_TRUE(status.has_value());
  EXPECT_FALSE(status->ok());
  EXPECT_EQ(server.ConnectedAgents(), 1u);
}

// The agent's side of the identity check: it sends its projected token, read from the file at
// every connect, and a coordinator that checks identities accepts it for its own node only.
TEST(CoordinatorIdentity, TheAgentPresentsTheTokenOfItsFileAtEveryConnect) {
  class FileTokens final : public NodeIdentity {
   public:
    StatusOr<std::string> NodeOf(const std::string& token) override {
      if (token == "token-of-node-a") return std::string("node-a");
      return InvalidArgument("identity token not accepted");
    }
  };
  const std::string file = ::testing::TempDir() + "/identity-" + std::to_string(::getpid());
  std::ofstream(file) << "token-of-node-a\n";
  std::ostringstream text;
  Logger log(text);
  CoordinatorOptions co;
  co.config.coordinator.listen = "127.0.0.1:0";
  co.config.coordinator.http_listen.clear();
  co.config.coordinator.sweep_interval_seconds = 0;
  co.identity = std::make_shared<FileTokens>();
  CoordinatorServer server(co, log);
  ASSERT_TRUE(server.Start().ok());
  SessionOptions so;
  so.target = "127.0.0.1:" + std::to_string(server.grpc_port());
  so.backoff_initial = 20ms;
  so.backoff_max = 100ms;
  so.identity_token_file = file;
  {
    FakeServices a("node-a");
    RunningSession s(so, a);
    EXPECT_TRUE(server.WaitForAgents(1, 10s)) << s.text.str() << text.str();
  }
  for (int i = 0; i < 250 && server.ConnectedAgents() > 0; ++i) std::this_thread::sleep_for(20ms);
  ASSERT_EQ(server.ConnectedAgents(), 0u);
  // The token is of node-a: node-b's agent with it does not get in. Without the file, neither.
  {
    FakeServices b("node-b");
    RunningSession s(so, b);
    SessionOptions none = so;
    none.identity_token_file = file + ".missing";
    FakeServices c("node-c");
    RunningSession t(none, c);
    EXPECT_FALSE(server.WaitForAgents(1, 1500ms));
    EXPECT_NE(t.text.str().find("cannot read the identity token"), std::string::npos);
    // The refused agent says why in words, and what to look at (not the shared token).
    EXPECT_NE(s.text.str().find("rejected this agent: permission denied: hello as node-b"),
              std::string::npos)
        << s.text.str();
    EXPECT_NE(s.text.str().find("(check agent.identity_token_file and the node name)"),
              std::string::npos)
        << s.text.str();
  }
  EXPECT_NE(text.str().find("hello as node-b, but the identity token is of node node-a"),
            std::string::npos)
      << text.str();
  std::remove(file.c_str());
}

}  // namespace
}  // namespace nccl_triage
