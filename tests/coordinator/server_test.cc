// The coordinator server against hand-driven agent streams: authentication, malformed messages,
// heartbeats, deadlines and agents that go away mid-probe. Every wait is bounded.
#include "coordinator/server.h"

#include <arpa/inet.h>
#include <grpcpp/generic/generic_stub.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>
#include <vector>

#include "base/log.h"
#include "coordinator/remediation_stage.h"
#include "exporter/http_auth.h"
#include "exporter/live_util.h"
#include "raw_agent.h"
#include "support/fake_kube_client.h"

namespace nccl_triage {
namespace {

using namespace std::chrono_literals;
using testing_util::RawAgent;
using Body = v1::CoordinatorMessage::BodyCase;
using ::nccl_triage::testing::ConnectFrom;
using ::nccl_triage::testing::WaitFor;

struct Coordinator {
  explicit Coordinator(CoordinatorOptions o = {}) : log(text, LogLevel::kDebug) {
    CoordinatorConfig& cc = o.config.coordinator;
    cc.listen = "127.0.0.1:0";
    // The file's default HTTP port is not for tests: no HTTP server unless a test asks.
    if (cc.http_listen == CoordinatorConfig{}.http_listen) cc.http_listen.clear();
    cc.sweep_interval_seconds = 0;
    if (o.token.empty() && !cc.identity_only) o.token = "right-token";
    server = std::make_unique<CoordinatorServer>(o, log);
    Status s = server->Start();
    EXPECT_TRUE(s.ok()) << s.message();
    target = "127.0.0.1:" + std::to_string(server->grpc_port());
    token = o.token;
  }
  std::unique_ptr<RawAgent> Agent(const std::string& node) {
    auto a = std::make_unique<RawAgent>(target, token);
    EXPECT_TRUE(a->Send(RawAgent::Hello(node)));
    EXPECT_TRUE(a->Next(Body::kWelcome, 5s).has_value()) << node << " got no welcome";
    return a;
  }
  std::ostringstream text;
  Logger log;
  std::unique_ptr<CoordinatorServer> server;
  std::string target;
  std::string token;
};

v1::AgentMessage Report(const std::string& probe_id, v1::ProbeOutcome outcome) {
  v1::AgentMessage m;
  m.mutable_probe_report()->set_probe_id(probe_id);
  m.mutable_probe_report()->set_outcome(outcome);
  m.mutable_probe_report()->set_transport("NET/IB");
  return m;
}

// Plays one well-behaved agent until `done`: answers every assignment with a pass, relaying the
// unique id; `ib_busbw` and `ib_port` shape the IB reports (the port NCCL's channels used).
void Play(RawAgent& a, const std::atomic<bool>& done, double ib_busbw = 0,
          const std::string& ib_port = "") {
  while (!done) {
    auto m = a.Next(Body::kAssignment, 50ms);
    if (!m) continue;
    const auto& as = m->assignment();
    if (as.rank() == 0) {
      v1::AgentMessage id;
      id.mutable_unique_id()->set_probe_id(as.probe_id());
      id.mutable_unique_id()->set_id(std::string(128, 'x'));
      a.Send(id);
    } else {
      EXPECT_TRUE(a.Next(Body::kUniqueId, 5s).has_value());
    }
    v1::AgentMessage report = Report(as.probe_id(), v1::PROBE_OUTCOME_PASS);
    if (as.mode() == v1::PROBE_MODE_IB) {
      report.mutable_probe_report()->set_busbw_bytes_per_second(ib_busbw);
      if (!ib_port.empty()) report.mutable_probe_report()->add_ib_ports(ib_port);
    } else {
      report.mutable_probe_report()->set_transport("NET/Socket");
    }
    a.Send(report);
  }
}

// An agent whose node has one 200 Gb/s HCA port (25 GB/s) and a slower one it did not use.
v1::AgentMessage HelloWithPorts(const std::string& node, double rate_gbps = 200) {
  v1::AgentMessage m = RawAgent::Hello(node);
  auto* hca = m.mutable_hello()->mutable_summary()->add_hcas();
  hca->set_name("mlx5_0");
  auto* port = hca->add_ports();
  port->set_num(1);
  port->set_link_layer("InfiniBand");
  port->set_rate_gbps(rate_gbps);
  port->set_state("ACTIVE");
  port->set_phys_state("LinkUp");
  return m;
}

// The coordinator as the server command builds it, with the default configuration.
PairJudgement SweepWithIbBusbw(double ib_busbw, std::string& log_text, double rate_gbps = 200) {
  Config config;
  Coordinator c({.config = config});
  RawAgent a(c.target, c.token), b(c.target, c.token);
  EXPECT_TRUE(a.Send(HelloWithPorts("node-a", rate_gbps)));
  EXPECT_TRUE(b.Send(HelloWithPorts("node-b", rate_gbps)));
  EXPECT_TRUE(c.server->WaitForAgents(2, 5s));
  uint64_t n = c.server->RequestSweep();
  std::atomic<bool> done{false};
  std::thread pa([&] { Play(a, done, ib_busbw, "mlx5_0:1"); });
  std::thread pb([&] { Play(b, done, ib_busbw, "mlx5_0:1"); });
  EXPECT_TRUE(c.server->WaitForSweep(n, 10s));
  done = true;
  pa.join();
  pb.join();
  log_text = c.text.str();
  auto view = c.server->View();
  EXPECT_EQ(view.pairs.size(), 1u);
  return view.pairs.empty() ? PairJudgement{} : view.pairs[0].judgement;
}

TEST(CoordinatorAuth, WrongTokenIsRejectedWithAClearLogLine) {
  Coordinator c;
  RawAgent wrong(c.target, "not-the-token");
  wrong.Send(RawAgent::Hello("intruder"));
  auto status = wrong.WaitEnd(5s);
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(status->error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_NE(c.text.str().find("rejected agent session from"), std::string::npos) << c.text.str();
  EXPECT_NE(c.text.str().find("wrong token"), std::string::npos);
  EXPECT_EQ(c.server->ConnectedAgents(), 0u);
}

TEST(CoordinatorAuth, MissingTokenIsRejectedAndTheRightOneAccepted) {
  Coordinator c;
  RawAgent none(c.target, "");
  none.Send(RawAgent::Hello("anonymous"));
  auto status = none.WaitEnd(5s);
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(status->error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_NE(c.text.str().find("no token"), std::string::npos);
  auto ok = c.Agent("node-a");
  EXPECT_TRUE(c.server->WaitForAgents(1, 5s));
}

TEST(CoordinatorMessages, FirstMessageMustBeAHello) {
  Coordinator c;
  RawAgent a(c.target, c.token);
  v1::AgentMessage hb;
  hb.mutable_heartbeat()->set_sent_at_unix_ms(1);
  a.Send(hb);
  auto status = a.WaitEnd(5s);
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(status->error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status->error_message().find("hello"), std::string::npos);
}

TEST(CoordinatorMessages, HelloWithAnUnusableNodeNameIsRejected) {
  Coordinator c;
  for (std::string name :
       {std::string(""), std::string("a/b"), std::string(300, 'n'), std::string("bad\nname"),
        std::string("--nccl-lib"), std::string("Node-B"), std::string("node_b"),
        std::string("node-"), std::string("a..b")}) {
    RawAgent a(c.target, c.token);
    a.Send(RawAgent::Hello(name));
    auto status = a.WaitEnd(5s);
    ASSERT_TRUE(status.has_value());
    EXPECT_EQ(status->error_code(), grpc::StatusCode::INVALID_ARGUMENT) << name;
  }
  EXPECT_EQ(c.server->ConnectedAgents(), 0u);
}

TEST(CoordinatorMessages, OtherProtocolVersionIsRefusedWithTheReason) {
  Coordinator c;
  RawAgent a(c.target, c.token);
  v1::AgentMessage hello = RawAgent::Hello("node-a");
  hello.mutable_hello()->set_protocol_version(2);
  a.Send(hello);
  auto status = a.WaitEnd(5s);
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(status->error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_NE(status->error_message().find("speaks 1"), std::string::npos);
}

TEST(CoordinatorMessages, HarmlessMalformedMessagesAreIgnoredAndTheStreamSurvives) {
  Coordinator c;
  auto a = c.Agent("node-a");
  auto b = c.Agent("node-b");
  a->Send(v1::AgentMessage{});  // no body
  v1::AgentMessage id;
  id.mutable_unique_id()->set_probe_id("no-such-probe");
  id.mutable_unique_id()->set_id("short");
  a->Send(id);
  a->Send(Report("no-such-probe", v1::PROBE_OUTCOME_PASS));
  v1::AgentMessage hb;
  hb.mutable_heartbeat()->mutable_summary()->add_findings()->set_check("not.in.catalogue");
  a->Send(hb);
  // Still served: a sweep reaches both streams and completes.
  uint64_t n = c.server->RequestSweep();
  std::atomic<bool> done{false};
  std::thread pa([&] { Play(*a, done); });
  std::thread pb([&] { Play(*b, done); });
  EXPECT_TRUE(c.server->WaitForSweep(n, 10s));
  done = true;
  pa.join();
  pb.join();
  EXPECT_EQ(c.server->ConnectedAgents(), 2u);
  auto view = c.server->View();
  ASSERT_EQ(view.pairs.size(), 1u);
  EXPECT_EQ(view.pairs[0].judgement.status, PairStatus::kPass);
}

// gRPC cannot parse them: the read fails and the coordinator ends that stream cleanly.
// A hello whose node name is not UTF-8 does not parse (proto3 strings are UTF-8); the stream
// ended with status OK, as if the agent had been served.
TEST(CoordinatorMessages, AHelloThatIsNotUtf8EndsTheStreamWithAnError) {
  Coordinator c;
  RawAgent a(c.target, c.token);
  a.Send(RawAgent::Hello("node-\xff\xfe"));
  auto status = a.WaitEnd(5s);
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(status->error_code(), grpc::StatusCode::INVALID_ARGUMENT) << status->error_message();
  EXPECT_NE(status->error_message().find("UTF-8"), std::string::npos);
  EXPECT_EQ(c.server->ConnectedAgents(), 0u);
}

TEST(CoordinatorMessages, BytesThatAreNotAMessageCloseOnlyThatStream) {
  Coordinator c;
  auto good = c.Agent("node-good");
  grpc::GenericStub generic(grpc::CreateChannel(c.target, grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  ctx.AddMetadata("authorization", "Bearer " + c.token);
  grpc::CompletionQueue cq;
  auto call = generic.PrepareCall(&ctx, "/nccl_triage.v1.Coordinator/Session", &cq);
  void* tag = nullptr;
  bool ok = false;
  call->StartCall(reinterpret_cast<void*>(1));
  ASSERT_TRUE(cq.Next(&tag, &ok));
  grpc::Slice junk(std::string("\xff\xff\xff\xff\x0f not protobuf at all"));
  grpc::ByteBuffer buf(&junk, 1);
  call->Write(buf, reinterpret_cast<void*>(2));
  ASSERT_TRUE(cq.Next(&tag, &ok));
  grpc::Status status;
  call->Finish(&status, reinterpret_cast<void*>(3));
  auto deadline = std::chrono::system_clock::now() + 5s;
  bool finished = false;
  while (!finished) {
    auto r = cq.AsyncNext(&tag, &ok, deadline);
    ASSERT_NE(r, grpc::CompletionQueue::TIMEOUT) << "the stream was not closed";
    if (r == grpc::CompletionQueue::SHUTDOWN) break;
    finished = tag == reinterpret_cast<void*>(3);
  }
  cq.Shutdown();
  while (cq.Next(&tag, &ok)) {
  }
  // The well-behaved agent is untouched.
  EXPECT_EQ(c.server->ConnectedAgents(), 1u);
  v1::AgentMessage hb;
  hb.mutable_heartbeat()->set_sent_at_unix_ms(2);
  EXPECT_TRUE(good->Send(hb));
}

// A TCP connection to 127.0.0.1:port that sends nothing, reads waiting 300 ms; -1 on failure.
int SilentConnection(int port) {
  int fd = ConnectFrom(port, "127.0.0.1", 1);
  timeval tv{0, 300'000};
  if (fd >= 0) ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  return fd;
}

// Whether the coordinator closed `fd` (recv sees the end) within the socket's 300 ms timeout.
bool ClosedByServer(int fd) {
  char c;
  return ::recv(fd, &c, 1, 0) == 0;
}

// The gRPC port had no connection cap: 18,000 silent connections took the coordinator from 20 to
// 320 MB. Connections above the cap are closed at once, and the port serves again when some go.
TEST(CoordinatorLimits, ConnectionsAboveTheCapAreClosedAtOnceAndAgentsStillConnectLater) {
  CoordinatorOptions o;
  o.max_connections = 3;
  Coordinator c(o);
  const int port = c.server->grpc_port();
  std::vector<int> held;
  for (int i = 0; i < 3; ++i) {
    held.push_back(SilentConnection(port));
    ASSERT_GE(held.back(), 0);
  }
  for (int i = 0; i < 3; ++i) {
    int extra = SilentConnection(port);
    ASSERT_GE(extra, 0);  // the kernel accepts; the coordinator closes
    EXPECT_TRUE(WaitFor([&] { return ClosedByServer(extra); }, 5s)) << "connection " << i;
    ::close(extra);
  }
  for (int fd : held) EXPECT_FALSE(ClosedByServer(fd));  // those within the cap stay open
  for (int fd : held) ::close(fd);
  // The closes are noticed; an agent is served again.
  std::unique_ptr<RawAgent> agent;
  ASSERT_TRUE(WaitFor(
      [&] {
        int probe = SilentConnection(port);
        const bool open = probe >= 0 && !ClosedByServer(probe);
        if (probe >= 0) ::close(probe);
        return open;
      },
      5s));
  agent = c.Agent("node-after-flood");
  EXPECT_EQ(c.server->ConnectedAgents(), 1u);
}

// A connection that never says anything is closed when its handshake time is over, so that
// silent connections do not stay until the cap is reached.
TEST(CoordinatorLimits, ASilentConnectionIsClosedAfterTheHandshakeTimeout) {
  CoordinatorOptions o;
  o.handshake_timeout = 500ms;
  o.idle_connection_timeout = 1000ms;
  Coordinator c(o);
  int fd = SilentConnection(c.server->grpc_port());
  ASSERT_GE(fd, 0);
  EXPECT_FALSE(ClosedByServer(fd));
  EXPECT_TRUE(WaitFor([&] { return ClosedByServer(fd); }, 30s));
  ::close(fd);
}

TEST(CoordinatorLiveness, SilentAgentIsDroppedAfterTheHeartbeatTimeout) {
  CoordinatorOptions o;
  o.config.coordinator.heartbeat_timeout_seconds = 2;
  Coordinator c(o);
  auto a = c.Agent("node-quiet");
  EXPECT_EQ(c.server->ConnectedAgents(), 1u);
  auto status = a->WaitEnd(6s);
  ASSERT_TRUE(status.has_value()) << "not dropped";
  EXPECT_EQ(status->error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(c.server->ConnectedAgents(), 0u);
  EXPECT_NE(c.text.str().find("no heartbeat"), std::string::npos);
}

TEST(CoordinatorLiveness, ASecondSessionOfTheSameNodeReplacesTheFirst) {
  Coordinator c;
  auto first = c.Agent("node-a");
  auto second = c.Agent("node-a");
  auto status = first->WaitEnd(5s);
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(status->error_code(), grpc::StatusCode::ALREADY_EXISTS);
  EXPECT_EQ(c.server->ConnectedAgents(), 1u);
}

// The deadlines themselves are PairRun's (pair_run_test.cc, on a timeline of its own); this is
// their wiring: the sweep thread acts on a deadline and the agents are told to cancel.
TEST(CoordinatorDeadlines, APeerSilentAfterItsPartnerFailedIsCancelledWhenItsGraceEnds) {
  CoordinatorOptions o;
  o.peer_failed_grace = 100ms;
  Coordinator c(o);
  auto a = c.Agent("node-a");
  auto b = c.Agent("node-b");
  uint64_t n = c.server->RequestSweep();
  for (int phase = 0; phase < 2; ++phase) {  // socket, then IB
    auto as_a = a->Next(Body::kAssignment, 5s);
    auto as_b = b->Next(Body::kAssignment, 5s);
    ASSERT_TRUE(as_a && as_b) << "phase " << phase;
    RawAgent& rank0 = as_a->assignment().rank() == 0 ? *a : *b;
    RawAgent& rank1 = as_a->assignment().rank() == 0 ? *b : *a;
    const auto& id0 = (as_a->assignment().rank() == 0 ? as_a : as_b)->assignment().probe_id();
    const auto& id1 = (as_a->assignment().rank() == 0 ? as_b : as_a)->assignment().probe_id();
    v1::AgentMessage uid;
    uid.mutable_unique_id()->set_probe_id(id0);
    uid.mutable_unique_id()->set_id(std::string(128, 'x'));
    rank0.Send(uid);
    ASSERT_TRUE(rank1.Next(Body::kUniqueId, 5s).has_value());
    // Rank 0 fails without naming a cause; rank 1 never reports.
    rank0.Send(Report(id0, v1::PROBE_OUTCOME_FAIL));
    auto cancel = rank1.Next(Body::kCancel, 5s);
    ASSERT_TRUE(cancel.has_value()) << "phase " << phase;
    EXPECT_EQ(cancel->cancel().probe_id(), id1);
    EXPECT_NE(cancel->cancel().reason().find("did not report within 100 ms"), std::string::npos)
        << cancel->cancel().reason();
  }
  EXPECT_TRUE(c.server->WaitForSweep(n, 10s));
  EXPECT_EQ(c.server->OutstandingProbes(), 0u);
  auto view = c.server->View();
  ASSERT_EQ(view.pairs.size(), 1u);
  EXPECT_EQ(view.pairs[0].judgement.socket, ProbeOutcome::kFail);
  EXPECT_EQ(view.pairs[0].judgement.ib, ProbeOutcome::kFail);
}

TEST(CoordinatorDeadlines, AgentLostMidProbeMakesThePairInconclusiveAndCancelsItsPeerAtOnce) {
  CoordinatorOptions o;
  o.config.probe.timeout_seconds = 60;  // the peer must not wait for this
  Coordinator c(o);
  auto a = c.Agent("node-a");
  auto b = c.Agent("node-b");
  uint64_t n = c.server->RequestSweep();
  auto as_a = a->Next(Body::kAssignment, 5s);
  auto as_b = b->Next(Body::kAssignment, 5s);
  ASSERT_TRUE(as_a && as_b);
  const auto lost_at = std::chrono::steady_clock::now();
  a->Cancel();  // node-a goes away mid-probe
  auto cancel = b->Next(Body::kCancel, 5s);
  ASSERT_TRUE(cancel.has_value()) << "the peer's probe was not cancelled";
  EXPECT_EQ(cancel->cancel().probe_id(), as_b->assignment().probe_id());
  EXPECT_NE(cancel->cancel().reason().find("node-a disconnected"), std::string::npos);
  EXPECT_LT(std::chrono::steady_clock::now() - lost_at, 3s);
  EXPECT_TRUE(c.server->WaitForSweep(n, 10s));
  EXPECT_EQ(c.server->OutstandingProbes(), 0u);
  auto view = c.server->View();
  ASSERT_FALSE(view.pairs.empty());
  EXPECT_EQ(view.pairs[0].judgement.status, PairStatus::kInconclusive);
  EXPECT_TRUE(view.faults.empty());
}

// A node with four rails, each HCA beside a GPU of its own; `parallel` > 0: the hello says how
// many probes the agent runs at once (0: an agent from before that field).
v1::AgentMessage HelloWithRails(const std::string& node, uint32_t parallel) {
  v1::AgentMessage m = RawAgent::Hello(node);
  for (uint32_t k = 0; k < 4; ++k) {
    v1::Rail* r = m.mutable_hello()->mutable_summary()->add_rails();
    r->set_index(k);
    r->set_device("mlx5_" + std::to_string(k));
    r->set_port(1);
    r->set_active(true);
    r->set_rate_gbps(200);
    r->set_gpu_bus_id("0000:" + std::to_string(10 + k) + ":00.0");
  }
  if (parallel > 0) m.mutable_hello()->set_parallel_probes(parallel);
  return m;
}

// One sweep of two such nodes with probe.rails all: the most rail assignments either agent held
// at once. Each agent takes what arrives within 300 ms, then reports every probe passed (rank 1
// without waiting for the relay, which the coordinator allows), so rails the coordinator runs
// together arrive in one batch and rails it runs in turn one by one.
int MostRailsAtOnce(uint32_t parallel_a, uint32_t parallel_b) {
  CoordinatorOptions o;
  o.config.probe.rails = "all";
  Coordinator c(o);
  RawAgent a(c.target, c.token), b(c.target, c.token);
  EXPECT_TRUE(a.Send(HelloWithRails("node-a", parallel_a)));
  EXPECT_TRUE(b.Send(HelloWithRails("node-b", parallel_b)));
  EXPECT_TRUE(c.server->WaitForAgents(2, 5s));
  const uint64_t n = c.server->RequestSweep();
  std::atomic<bool> done{false};
  std::atomic<int> most{0};
  auto play = [&](RawAgent& agent) {
    while (!done) {
      std::vector<v1::ProbeAssignment> batch;
      while (auto m = agent.Next(Body::kAssignment, batch.empty() ? 50ms : 300ms)) {
        batch.push_back(m->assignment());
      }
      int rails = 0;
      for (const auto& as : batch) {
        rails += as.has_rail() ? 1 : 0;
        if (as.rank() == 0) {
          v1::AgentMessage id;
          id.mutable_unique_id()->set_probe_id(as.probe_id());
          id.mutable_unique_id()->set_id(std::string(128, 'x'));
          agent.Send(id);
        }
        v1::AgentMessage report = Report(as.probe_id(), v1::PROBE_OUTCOME_PASS);
        if (as.mode() == v1::PROBE_MODE_SOCKET) {
          report.mutable_probe_report()->set_transport("NET/Socket");
        }
        agent.Send(report);
      }
      for (int seen = most.load(); rails > seen && !most.compare_exchange_weak(seen, rails);) {
      }
    }
  };
  std::thread pa([&] { play(a); });
  std::thread pb([&] { play(b); });
  EXPECT_TRUE(c.server->WaitForSweep(n, 20s));
  done = true;
  pa.join();
  pb.join();
  auto view = c.server->View();
  EXPECT_TRUE(view.faults.empty());
  return most.load();
}

TEST(CoordinatorRails, RailsRunSideBySideUpToWhatBothAgentsSaidInTheirHellos) {
  EXPECT_EQ(MostRailsAtOnce(8, 8), 4) << "all four rails, each on its own GPUs";
  EXPECT_EQ(MostRailsAtOnce(8, 2), 2) << "node-b runs two probes at once";
  EXPECT_EQ(MostRailsAtOnce(8, 0), 1) << "an agent that does not say gets one at a time";
}

TEST(CoordinatorPredictions, CrossNodeChecksPredictBrokenPairsBeforeAnyProbe) {
  Coordinator c;
  auto hello = [](const std::string& node, const std::string& nccl) {
    v1::AgentMessage m = RawAgent::Hello(node);
    m.mutable_hello()->mutable_summary()->set_nccl_version(nccl);
    return m;
  };
  RawAgent a(c.target, c.token), b(c.target, c.token), d(c.target, c.token);
  a.Send(hello("node-a", "2.28.9"));
  b.Send(hello("node-b", "2.28.9"));
  d.Send(hello("node-old", "2.18.1"));
  ASSERT_TRUE(c.server->WaitForAgents(3, 5s));
  auto view = c.server->View();
  EXPECT_TRUE(view.pairs.empty());  // nothing probed yet
  ASSERT_EQ(view.predicted.size(), 2u);
  for (const auto& [pair, v] : view.predicted) {
    EXPECT_TRUE(pair.Has("node-old"));
    EXPECT_EQ(v.basis, Basis::kChecks);
    EXPECT_EQ(v.fault_class, FaultClass::kArchitecture);
    EXPECT_EQ(v.causes, std::vector<std::string>{"pair.version_skew"});
  }
  auto j = ToJson(view);
  EXPECT_EQ(j["predicted"].size(), 2u);
}

TEST(CoordinatorBandwidth, ByDefaultASlowIbPairIsDegradedAgainstThePortsItUsed) {
  std::string log;
  PairJudgement slow = SweepWithIbBusbw(5e9, log);  // 5 GB/s on a 25 GB/s port
  EXPECT_EQ(slow.status, PairStatus::kFail) << log;
  EXPECT_EQ(slow.verdict.fault_class, FaultClass::kIbResource);
  ASSERT_FALSE(slow.verdict.causes.empty());
  EXPECT_EQ(slow.verdict.causes[0], "ib.bandwidth");
  EXPECT_TRUE(slow.verdict.degraded);
  EXPECT_NE(slow.verdict.reason.find("5.00 GB/s is below 50% of 25.00 GB/s"), std::string::npos)
      << slow.verdict.reason;
  EXPECT_NE(slow.verdict.reason.find("node-a: mlx5_0:1 200 Gb/s"), std::string::npos)
      << slow.verdict.reason;

  PairJudgement fast = SweepWithIbBusbw(23e9, log);
  EXPECT_EQ(fast.status, PairStatus::kPass) << fast.verdict.reason;
  EXPECT_FALSE(fast.verdict.degraded);
}

// A hello claiming a 1e308 Gb/s port made the expected busbw absurd, and a healthy pair failed
// ib.bandwidth. A rate no port has is unknown: the pair is not judged on its bandwidth.
TEST(CoordinatorBandwidth, AnAbsurdPortRateInAHelloIsUnknownAndFailsNoHealthyPair) {
  std::string log;
  PairJudgement p = SweepWithIbBusbw(23e9, log, 1e308);
  EXPECT_EQ(p.status, PairStatus::kPass) << p.verdict.reason << "\n" << log;
  EXPECT_FALSE(p.verdict.degraded);
}

TEST(CoordinatorBandwidth, SmallProbesAreNotJudgedOnBandwidth) {
  Config config;
  config.probe.size_bytes = 256 << 10;  // latency-bound
  EXPECT_FALSE(PairJudgeOptions(config.probe).check_bandwidth);
  EXPECT_TRUE(PairJudgeOptions(ProbeConfig{}).check_bandwidth);
  // 48 MiB is above the bound, but the agents are assigned the 1 MiB step below it.
  config.probe.size_bytes = 48ull << 20;
  EXPECT_EQ(ProbeSizeBytes(ProbeSizeFor(config.probe.size_bytes)), 1u << 20);
  EXPECT_FALSE(PairJudgeOptions(config.probe).check_bandwidth);
  config.probe.size_bytes = 64ull << 20;
  EXPECT_TRUE(PairJudgeOptions(config.probe).check_bandwidth);
}

TEST(CoordinatorRemediation, OptionsComeFromTheRemediationSection) {
  Config config;
  EXPECT_EQ(RemediationStageOptionsFromConfig(config).remediation.policy.mode,
            RemediationMode::kOff);
  config.remediation.mode = RemediationMode::kCordon;
  config.remediation.max_nodes = 4;
  config.remediation.max_percent = 7.5;
  config.remediation.recover_after_seconds = 90;
  config.remediation.pool_label = "nvidia.com/gpu.product";
  const RemediatorOptions r = RemediationStageOptionsFromConfig(config).remediation;
  EXPECT_EQ(r.policy.mode, RemediationMode::kCordon);
  EXPECT_EQ(r.policy.max_nodes, 4);
  EXPECT_EQ(r.policy.max_percent, 7.5);
  EXPECT_EQ(r.policy.healthy_ms, 90'000);
  EXPECT_EQ(r.pool_label, "nvidia.com/gpu.product");
}

TEST(CoordinatorRemediation, WithoutAKubeClientNothingIsPlannedAndStatusSaysSo) {
  CoordinatorOptions o;
  o.config.coordinator.listen = "127.0.0.1:0";
  o.config.remediation.mode = RemediationMode::kTaint;  // no client: remediation stays off
  std::ostringstream out;
  Logger log(out);
  CoordinatorServer c(o, log);
  EXPECT_FALSE(c.View(false).remediation.has_value());
  EXPECT_FALSE(ToJson(c.View(false)).contains("remediation"));
}

TEST(CoordinatorMetrics, ANodeLeftOutBecauseItsGpusAreBusyCountsItsSweeps) {
  Coordinator c;
  auto a = c.Agent("node-a");
  auto b = c.Agent("node-b");
  RawAgent busy(c.target, c.token);
  v1::AgentMessage hello = RawAgent::Hello("node-c");
  hello.mutable_hello()->mutable_summary()->set_gpus_busy(true);
  ASSERT_TRUE(busy.Send(hello));
  ASSERT_TRUE(c.server->WaitForAgents(3, 5s));
  std::atomic<bool> done{false};
  std::thread pa([&] { Play(*a, done); });
  std::thread pb([&] { Play(*b, done); });
  for (int sweep = 0; sweep < 2; ++sweep) {
    EXPECT_TRUE(c.server->WaitForSweep(c.server->RequestSweep(), 10s));
  }
  done = true;
  pa.join();
  pb.join();
  std::string m = c.server->MetricsText();
  EXPECT_NE(m.find("nccl_triage_coordinator_node_unprobed_sweeps{node=\"node-c\"} 2"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("nccl_triage_coordinator_node_unprobed_sweeps{node=\"node-a\"} 0"),
            std::string::npos)
      << m;
}

// A hello whose summary says whether the node's probes can run (NodeSummary.probe).
v1::AgentMessage HelloWithProbe(const std::string& node, bool available, const std::string& reason,
                                const std::string& evidence) {
  v1::AgentMessage m = RawAgent::Hello(node);
  auto* probe = m.mutable_hello()->mutable_summary()->mutable_probe();
  probe->set_available(available);
  probe->set_reason(reason);
  probe->set_evidence(evidence);
  return m;
}

// A heartbeat carrying a new summary with `probe` set as given.
v1::AgentMessage HeartbeatWithProbe(bool available, const std::string& reason,
                                    const std::string& evidence) {
  v1::AgentMessage m;
  v1::NodeSummary* summary = m.mutable_heartbeat()->mutable_summary();
  summary->set_arch("x86_64");
  summary->mutable_probe()->set_available(available);
  summary->mutable_probe()->set_reason(reason);
  summary->mutable_probe()->set_evidence(evidence);
  return m;
}

// What an agent that answers nothing receives until `done`: the peers of its assignments and
// the node verdicts it is pushed.
struct Received {
  std::vector<std::string> assigned_peers;
  std::vector<v1::NodeVerdict> verdicts;
};
Received Collect(RawAgent& a, const std::atomic<bool>& done) {
  Received r;
  while (!done) {
    auto m = a.NextAny(50ms);
    if (!m) continue;
    if (m->has_assignment()) r.assigned_peers.push_back(m->assignment().peer());
    if (m->has_verdicts()) r.verdicts.push_back(m->verdicts().node());
  }
  return r;
}

const nlohmann::json* StatusEntry(const nlohmann::json& list, const std::string& node) {
  for (const auto& e : list) {
    if (e["node"] == node) return &e;
  }
  return nullptr;
}

// An agent that says it has no NCCL is never paired; /status shows why, per node, and its
// verdict is not healthy. Agents that do not say (before NodeSummary.probe) read as unknown and
// are probed as before.
TEST(CoordinatorProbeAvailability, ANodeWithoutNcclIsShownInStatusAndGetsNoPairs) {
  Coordinator c;
  RawAgent a(c.target, c.token), b(c.target, c.token), blind(c.target, c.token);
  ASSERT_TRUE(a.Send(RawAgent::Hello("node-a")));
  ASSERT_TRUE(b.Send(RawAgent::Hello("node-b")));
  ASSERT_TRUE(blind.Send(HelloWithProbe("node-c", false, "no_nccl",
                                        "libnccl.so.2: not found in /usr/lib/x86_64-linux-gnu")));
  ASSERT_TRUE(c.server->WaitForAgents(3, 5s));
  std::atomic<bool> done{false};
  std::thread pa([&] { Play(a, done); });
  std::thread pb([&] { Play(b, done); });
  Received to_blind;
  std::thread pc([&] { to_blind = Collect(blind, done); });
  for (int sweep = 0; sweep < 3; ++sweep) {
    EXPECT_TRUE(c.server->WaitForSweep(c.server->RequestSweep(), 10s)) << c.text.str();
  }
  done = true;
  pa.join();
  pb.join();
  pc.join();
  EXPECT_TRUE(to_blind.assigned_peers.empty())
      << "node-c was assigned a probe with " << to_blind.assigned_peers.front();

  CoordinatorView view = c.server->View();
  ASSERT_EQ(view.pairs.size(), 1u);  // a with b, every sweep; nothing with c
  EXPECT_EQ(view.pairs[0].pair, NodePair("node-a", "node-b"));
  const PublishedNodeVerdict& v = view.nodes.at("node-c");
  EXPECT_NE(v.fault_class, FaultClass::kHealthy);
  EXPECT_EQ(v.fault_class, FaultClass::kUnknown);
  EXPECT_EQ(v.basis, Basis::kChecks);
  ASSERT_FALSE(v.causes.empty());
  EXPECT_EQ(v.causes[0], "probe.no_nccl");
  EXPECT_NE(v.reason.find("probes cannot run on this node (no_nccl: libnccl.so.2: not found"),
            std::string::npos)
      << v.reason;
  EXPECT_NE(v.reason.find("left out of the sweeps"), std::string::npos) << v.reason;
  for (const char* node : {"node-a", "node-b"}) {
    EXPECT_EQ(view.nodes.at(node).fault_class, FaultClass::kHealthy) << node;
    EXPECT_EQ(view.nodes.at(node).basis, Basis::kProbes) << node;
  }

  const nlohmann::json j = ToJson(view);
  const nlohmann::json* node_c = StatusEntry(j["nodes"], "node-c");
  ASSERT_NE(node_c, nullptr) << j.dump(2);
  EXPECT_EQ((*node_c)["class"], "unknown");
  EXPECT_EQ((*node_c)["probe"]["available"], false);
  EXPECT_EQ((*node_c)["probe"]["reason"], "no_nccl");
  EXPECT_EQ((*node_c)["probe"]["evidence"], "libnccl.so.2: not found in /usr/lib/x86_64-linux-gnu");
  const nlohmann::json* agent_c = StatusEntry(j["agents"], "node-c");
  ASSERT_NE(agent_c, nullptr);
  EXPECT_EQ((*agent_c)["probe"]["reason"], "no_nccl");
  const nlohmann::json* node_a = StatusEntry(j["nodes"], "node-a");
  ASSERT_NE(node_a, nullptr);
  EXPECT_TRUE((*node_a)["probe"]["available"].is_null()) << node_a->dump();
  EXPECT_EQ((*node_a)["probe"]["reason"], "unknown");

  // The blind node's agent is told its verdict too, and the coordinator counts it.
  while (auto m = blind.Next(Body::kVerdicts, 200ms)) {
    to_blind.verdicts.push_back(m->verdicts().node());
  }
  ASSERT_FALSE(to_blind.verdicts.empty());
  for (const v1::NodeVerdict& told : to_blind.verdicts) {
    EXPECT_EQ(told.fault_class(), v1::FAULT_CLASS_UNKNOWN);
    ASSERT_GT(told.causes_size(), 0);
    EXPECT_EQ(told.causes(0), "probe.no_nccl");
  }
  const std::string m = c.server->MetricsText();
  EXPECT_NE(m.find("nccl_triage_coordinator_probe_unavailable_nodes{reason=\"no_nccl\"} 1"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("nccl_triage_coordinator_probe_unavailable_nodes{reason=\"no_gpu\"} 0"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("nccl_triage_coordinator_node_unprobed_sweeps{node=\"node-c\"} 0"),
            std::string::npos)
      << "left out for its probes, not for busy GPUs\n"
      << m;
  EXPECT_NE(c.text.str().find("agent node-c: probes cannot run on this node (no_nccl"),
            std::string::npos)
      << c.text.str();
}

// A node healthy from its probes that then says its probes cannot run (a heartbeat's summary)
// loses that verdict at once, without waiting for a sweep, and is paired again once it can.
TEST(CoordinatorProbeAvailability, ANodeThatLosesItsGpuIsNotHealthyAndIsPairedAgainOnceBack) {
  Coordinator c;
  auto a = c.Agent("node-a");
  auto b = c.Agent("node-b");
  auto sweep = [&](std::vector<std::string>* b_peers) {
    std::atomic<bool> done{false};
    std::thread pa([&] { Play(*a, done); });
    std::thread pb([&] {
      if (b_peers != nullptr) {
        *b_peers = Collect(*b, done).assigned_peers;
      } else {
        Play(*b, done);
      }
    });
    EXPECT_TRUE(c.server->WaitForSweep(c.server->RequestSweep(), 10s)) << c.text.str();
    done = true;
    pa.join();
    pb.join();
  };
  sweep(nullptr);
  ASSERT_EQ(c.server->View().nodes.at("node-b").fault_class, FaultClass::kHealthy);

  ASSERT_TRUE(b->Send(HeartbeatWithProbe(false, "no_gpu", "cuInit: CUDA_ERROR_NO_DEVICE (100)")));
  ASSERT_TRUE(WaitFor(
      [&] { return c.server->View().nodes.at("node-b").fault_class != FaultClass::kHealthy; },
      5s));
  PublishedNodeVerdict v = c.server->View().nodes.at("node-b");
  EXPECT_EQ(v.fault_class, FaultClass::kUnknown);
  EXPECT_EQ(v.causes, std::vector<std::string>{"probe.no_gpu"});
  bool pushed = false;  // the sweep's healthy verdict may still be queued before it
  while (auto m = b->Next(Body::kVerdicts, 5s)) {
    if (m->verdicts().node().fault_class() == v1::FAULT_CLASS_UNKNOWN) {
      pushed = true;
      break;
    }
  }
  EXPECT_TRUE(pushed) << "node-b was not told its new verdict";

  std::vector<std::string> b_peers;
  sweep(&b_peers);
  EXPECT_TRUE(b_peers.empty()) << "node-b was assigned a probe while its probes cannot run";
  EXPECT_NE(c.server->View().nodes.at("node-b").fault_class, FaultClass::kHealthy);

  ASSERT_TRUE(b->Send(HeartbeatWithProbe(true, "ok", "NCCL 2.28.9 on NVIDIA H100 80GB HBM3")));
  ASSERT_TRUE(WaitFor(
      [&] {
        return c.server->View().nodes.at("node-b").reason.find("probes can run again") !=
               std::string::npos;
      },
      5s));
  EXPECT_NE(c.text.str().find("agent node-b: probes can run again (ok)"), std::string::npos);
  sweep(nullptr);
  v = c.server->View().nodes.at("node-b");
  EXPECT_EQ(v.fault_class, FaultClass::kHealthy) << v.reason;
  EXPECT_EQ(v.basis, Basis::kProbes);
}

// A triage asked about a node whose probes cannot run does not probe it, says why, and takes
// it as no reference: the job's other node is probed with a node that can probe.
TEST(CoordinatorProbeAvailability, ATriageReportsANodeThatCannotProbeAsUnavailable) {
  Coordinator c;
  RawAgent a(c.target, c.token), b(c.target, c.token), blind(c.target, c.token),
      blind_ref(c.target, c.token);
  ASSERT_TRUE(a.Send(RawAgent::Hello("node-a")));
  ASSERT_TRUE(b.Send(RawAgent::Hello("node-b")));
  ASSERT_TRUE(blind.Send(HelloWithProbe("node-c", false, "no_gpu", "cuInit: no device")));
  ASSERT_TRUE(blind_ref.Send(HelloWithProbe("node-0", false, "no_cuda", "libcuda.so.1")));
  ASSERT_TRUE(c.server->WaitForAgents(4, 5s));
  std::atomic<bool> done{false};
  std::thread pa([&] { Play(a, done); });
  std::thread pb([&] { Play(b, done); });
  Received to_blind, to_blind_ref;
  std::thread pc([&] { to_blind = Collect(blind, done); });
  std::thread p0([&] { to_blind_ref = Collect(blind_ref, done); });
  auto stub = v1::Coordinator::NewStub(
      grpc::CreateChannel(c.target, grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 20s);
  ctx.AddMetadata("authorization", "Bearer " + c.token);
  v1::TriageRequest request;
  request.add_nodes("node-a");
  request.add_nodes("node-c");
  v1::TriageAnswer answer;
  grpc::Status s = stub->Triage(&ctx, request, &answer);
  done = true;
  pa.join();
  pb.join();
  pc.join();
  p0.join();
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_EQ(answer.nodes_size(), 2);
  EXPECT_EQ(answer.nodes(0).state(), "good") << answer.nodes(0).reason();
  EXPECT_EQ(answer.nodes(1).state(), "unavailable");
  EXPECT_EQ(answer.nodes(1).reason(),
            "probes cannot run on this node (no_gpu: cuInit: no device): not probed");
  EXPECT_EQ(std::vector<std::string>(answer.references().begin(), answer.references().end()),
            std::vector<std::string>{"node-b"});
  EXPECT_TRUE(to_blind.assigned_peers.empty());
  EXPECT_TRUE(to_blind_ref.assigned_peers.empty());
}

// "pending" (the agent has not checked yet) is no reason to leave a node out.
TEST(CoordinatorProbeAvailability, ANodeWhoseAgentHasNotCheckedYetIsPaired) {
  Coordinator c;
  RawAgent a(c.target, c.token), b(c.target, c.token);
  ASSERT_TRUE(a.Send(HelloWithProbe("node-a", false, "pending", "")));
  ASSERT_TRUE(b.Send(HelloWithProbe("node-b", true, "ok", "NCCL 2.28.9")));
  ASSERT_TRUE(c.server->WaitForAgents(2, 5s));
  std::atomic<bool> done{false};
  std::thread pa([&] { Play(a, done); });
  std::thread pb([&] { Play(b, done); });
  EXPECT_TRUE(c.server->WaitForSweep(c.server->RequestSweep(), 10s));
  done = true;
  pa.join();
  pb.join();
  CoordinatorView view = c.server->View();
  EXPECT_EQ(view.pairs.size(), 1u);
  EXPECT_EQ(view.nodes.at("node-a").fault_class, FaultClass::kHealthy);
}

TEST(CoordinatorMetrics, ServesTheContractNamesAfterASweep) {
  CoordinatorOptions o;
  o.config.coordinator.http_listen = "127.0.0.1:0";
  Coordinator c(o);
  auto a = c.Agent("node-a");
  auto b = c.Agent("node-b");
  uint64_t n = c.server->RequestSweep();
  std::atomic<bool> done{false};
  std::thread pa([&] { Play(*a, done); });
  std::thread pb([&] { Play(*b, done); });
  EXPECT_TRUE(c.server->WaitForSweep(n, 10s));
  done = true;
  pa.join();
  pb.join();
  std::string m = c.server->MetricsText();
  for (const char* name :
       {"nccl_triage_coordinator_agents_connected 2", "nccl_triage_coordinator_sweeps_total 1",
        "nccl_triage_coordinator_sweep_duration_seconds_count 1",
        "nccl_triage_coordinator_probes_total{mode=\"ib\",outcome=\"pass\"} 1",
        "nccl_triage_coordinator_probes_total{mode=\"socket\",outcome=\"pass\"} 1",
        "nccl_triage_coordinator_localised_faults{kind=\"node\"} 0",
        "nccl_triage_coordinator_pairs_tested 1", "nccl_triage_coordinator_pairs_total 1",
        "nccl_triage_coordinator_last_sweep_timestamp_seconds"}) {
    EXPECT_NE(m.find(name), std::string::npos) << name << "\n" << m;
  }
  EXPECT_GT(c.server->http_port(), 0);
}

// Tokens of the test: each binds its bearer to one node.
class MapIdentity final : public NodeIdentity {
 public:
  StatusOr<std::string> NodeOf(const std::string& token) override {
    if (token == "api-down") return Unavailable("TokenReview: connection refused");
    auto it = nodes_.find(token);
    if (it == nodes_.end()) return InvalidArgument("identity token not accepted");
    return it->second;
  }

 private:
  std::map<std::string, std::string> nodes_ = {{"id-a", "node-a"}, {"id-b", "node-b"}};
};

// With one shared token, a second hello as node-b evicted the real agent and
// the two flapped. With identities on, a hello is accepted only for the node the bearer's
// identity token binds it to.
TEST(CoordinatorIdentity, AHelloMustNameTheNodeOfTheIdentityToken) {
  CoordinatorOptions o;
  o.identity = std::make_shared<MapIdentity>();
  Coordinator c(o);
  RawAgent b(c.target, c.token, "id-b");
  ASSERT_TRUE(b.Send(RawAgent::Hello("node-b")));
  ASSERT_TRUE(b.Next(Body::kWelcome, 5s).has_value());

  // A holder of the shared token and of node-a's identity poses as node-b: refused, and the
  // real node-b keeps its session.
  RawAgent impostor(c.target, c.token, "id-a");
  impostor.Send(RawAgent::Hello("node-b"));
  auto refused = impostor.WaitEnd(5s);
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_NE(refused->error_message().find("identity token is of node node-a"), std::string::npos);
  EXPECT_EQ(c.server->ConnectedAgents(), 1u);
  EXPECT_EQ(c.server->View(false).agents.at(0).info.name, "node-b");

  // No identity, an unknown one, and an API server that cannot answer (the agent retries).
  for (auto [identity, code] : {std::pair{"", grpc::StatusCode::UNAUTHENTICATED},
                                std::pair{"forged", grpc::StatusCode::UNAUTHENTICATED},
                                std::pair{"api-down", grpc::StatusCode::UNAVAILABLE}}) {
    RawAgent a(c.target, c.token, identity);
    a.Send(RawAgent::Hello("node-a"));
    auto end = a.WaitEnd(5s);
    ASSERT_TRUE(end.has_value()) << identity;
    EXPECT_EQ(end->error_code(), code) << identity;
  }
  EXPECT_NE(c.text.str().find("identity: identity token not accepted"), std::string::npos);
  EXPECT_EQ(c.server->ConnectedAgents(), 1u);
}

// Identity-only mode: no shared token exists, and the identity token is an agent's whole
// authentication. Each refusal names its reason to the agent and in one log line.
TEST(CoordinatorIdentityOnly, AnAgentIsAcceptedOnlyWithAnIdentityTokenOfItsNode) {
  CoordinatorOptions o;
  o.identity = std::make_shared<MapIdentity>();
  o.config.coordinator.identity_only = true;
  Coordinator c(o);
  ASSERT_TRUE(c.token.empty());
  EXPECT_NE(c.text.str().find("identity-only mode: agents are accepted by their node identity"),
            std::string::npos)
      << c.text.str();
  EXPECT_EQ(c.text.str().find("no token configured"), std::string::npos) << c.text.str();

  // node-b's identity token, no shared token: accepted.
  RawAgent b(c.target, "", "id-b");
  ASSERT_TRUE(b.Send(RawAgent::Hello("node-b")));
  ASSERT_TRUE(b.Next(Body::kWelcome, 5s).has_value());

  // node-a's identity token, hello as node-b: refused, and node-b keeps its session.
  RawAgent impostor(c.target, "", "id-a");
  impostor.Send(RawAgent::Hello("node-b"));
  auto wrong_node = impostor.WaitEnd(5s);
  ASSERT_TRUE(wrong_node.has_value());
  EXPECT_EQ(wrong_node->error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_NE(wrong_node->error_message().find("identity token is of node node-a"),
            std::string::npos);

  // Nothing, and a shared token without an identity token (whatever its value): refused, saying
  // that this mode takes identity tokens only.
  for (const std::string shared : {"", "right-token", "any-token"}) {
    RawAgent a(c.target, shared);
    a.Send(RawAgent::Hello("node-a"));
    auto end = a.WaitEnd(5s);
    ASSERT_TRUE(end.has_value()) << shared;
    EXPECT_EQ(end->error_code(), grpc::StatusCode::UNAUTHENTICATED) << shared;
    EXPECT_EQ(end->error_message(),
              "identity: no identity token (identity-only mode: an agent needs "
              "agent.identity_token_file; a shared token is not accepted)")
        << shared;
  }
  // A forged identity token, with a shared token beside it: refused as forged.
  RawAgent forged(c.target, "right-token", "forged");
  forged.Send(RawAgent::Hello("node-a"));
  auto end = forged.WaitEnd(5s);
  ASSERT_TRUE(end.has_value());
  EXPECT_EQ(end->error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(end->error_message(), "identity: identity token not accepted");

  const std::string log = c.text.str();
  EXPECT_NE(log.find(": identity: no identity token (identity-only mode: an agent needs "
                     "agent.identity_token_file; a shared token is not accepted)"),
            std::string::npos)
      << log;
  EXPECT_EQ(c.server->ConnectedAgents(), 1u);
  EXPECT_EQ(c.server->View(false).agents.at(0).info.name, "node-b");
}

// What only a shared token authorised is refused with the reason, whatever token comes with it.
TEST(CoordinatorIdentityOnly, TriageAndIncidentRecordsAreRefusedWithTheReason) {
  CoordinatorOptions o;
  o.identity = std::make_shared<MapIdentity>();
  o.config.coordinator.identity_only = true;
  o.config.coordinator.http_listen = "127.0.0.1:0";
  Coordinator c(o);
  auto stub = v1::Coordinator::NewStub(
      grpc::CreateChannel(c.target, grpc::InsecureChannelCredentials()));
  for (const std::string token : {"", "right-token"}) {
    grpc::ClientContext triage_ctx;
    triage_ctx.set_deadline(std::chrono::system_clock::now() + 5s);
    if (!token.empty()) triage_ctx.AddMetadata("authorization", "Bearer " + token);
    triage_ctx.AddMetadata("x-nccl-triage-identity", "id-a");
    v1::TriageRequest request;
    request.add_nodes("node-a");
    v1::TriageAnswer answer;
    grpc::Status s = stub->Triage(&triage_ctx, request, &answer);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED) << token;
    EXPECT_NE(s.error_message().find("identity-only mode"), std::string::npos) << s.error_message();

    grpc::ClientContext incident_ctx;
    incident_ctx.set_deadline(std::chrono::system_clock::now() + 5s);
    if (!token.empty()) incident_ctx.AddMetadata("authorization", "Bearer " + token);
    v1::IncidentRecorded recorded;
    s = stub->RecordIncident(&incident_ctx, v1::IncidentRecord(), &recorded);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED) << token;
  }
  EXPECT_NE(c.text.str().find("rejected triage request from "), std::string::npos);
  EXPECT_NE(c.text.str().find(": identity-only mode has no shared token to authorise it"),
            std::string::npos);
  httplib::Client http("127.0.0.1", c.server->http_port());
  auto r = http.Post("/sweep", httplib::Headers{{"Authorization", "Bearer right-token"}}, "",
                     "text/plain");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 403);
}

TEST(CoordinatorIdentityOnly, DoesNotStartWithoutTheIdentityCheck) {
  std::ostringstream text;
  Logger log(text);
  CoordinatorOptions o;
  o.config.coordinator.listen = "127.0.0.1:0";
  o.config.coordinator.http_listen.clear();
  o.config.coordinator.sweep_interval_seconds = 0;
  o.config.coordinator.identity_only = true;
  CoordinatorServer server(o, log);
  Status s = server.Start();
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.message(),
            "coordinator.identity_only needs coordinator.verify_node_identity: without it no "
            "agent would be authenticated");
}

// 3,000 hellos with made-up names were all kept, and /status grew for good.
// Nodes that left are forgotten after node_expiry; the table holds at most max_nodes, a new name
// evicting the node disconnected longest, refused while every node is connected.
TEST(CoordinatorNodeTable, ExpiresNodesThatLeftAndIsCapped) {
  CoordinatorOptions o;
  o.max_nodes = 3;
  o.node_expiry = 300ms;
  Coordinator c(o);
  auto names = [&] {
    std::vector<std::string> out;
    for (const auto& a : c.server->View(false).agents) out.push_back(a.info.name);
    return out;
  };
  auto a = c.Agent("node-a");
  auto b = c.Agent("node-b");
  auto d = c.Agent("node-c");
  RawAgent extra(c.target, c.token);
  extra.Send(RawAgent::Hello("node-made-up"));
  auto refused = extra.WaitEnd(5s);
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(names(), (std::vector<std::string>{"node-a", "node-b", "node-c"}));

  a.reset();  // node-a leaves: the next new name takes its place
  ASSERT_TRUE(testing::WaitFor([&] { return c.server->ConnectedAgents() == 2; }, 5s));
  auto e = c.Agent("node-e");
  EXPECT_EQ(names(), (std::vector<std::string>{"node-b", "node-c", "node-e"}));

  b.reset();
  d.reset();
  e.reset();
  // Housekeeping runs every second: all three are gone within the expiry and a round of it.
  EXPECT_TRUE(testing::WaitFor([&] { return names().empty(); }, 5s)) << names().size();
  EXPECT_TRUE(ToJson(c.server->View(true))["agents"].empty());
}

// `curl -X POST coordinator:PORT/sweep` answered 202 and swept every idle GPU
// node. Only the holder of the coordinator's token may ask now.
TEST(CoordinatorHttp, SweepNeedsTheCoordinatorsBearerToken) {
  CoordinatorOptions o;
  o.config.coordinator.http_listen = "127.0.0.1:0";
  Coordinator c(o);
  httplib::Client http("127.0.0.1", c.server->http_port());
  auto none = http.Post("/sweep");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->status, 401);
  EXPECT_EQ(none->get_header_value("WWW-Authenticate"), "Bearer realm=\"nccl-triage\"");
  auto wrong = http.Post("/sweep", httplib::Headers{{"Authorization", "Bearer right-tokem"}}, "",
                         "text/plain");
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong->status, 401);
  auto basic = http.Post("/sweep", httplib::Headers{{"Authorization", "Basic right-token"}}, "",
                         "text/plain");
  ASSERT_TRUE(basic);
  EXPECT_EQ(basic->status, 401);
  auto right = http.Post("/sweep", httplib::Headers{{"Authorization", "Bearer " + c.token}}, "",
                         "text/plain");
  ASSERT_TRUE(right);
  EXPECT_EQ(right->status, 202) << right->body;
  // The refused requests asked for nothing: this is the first sweep.
  EXPECT_EQ(nlohmann::json::parse(right->body)["sweep"], 1);
  // The health probes need no token.
  EXPECT_EQ(http.Get("/livez")->status, 200);
}

TEST(CoordinatorHttp, SweepIsRefusedWhenTheCoordinatorHasNoToken) {
  std::ostringstream text;
  Logger log(text);
  CoordinatorOptions o;
  o.config.coordinator.listen = "127.0.0.1:0";
  o.config.coordinator.http_listen = "127.0.0.1:0";
  o.config.coordinator.sweep_interval_seconds = 0;
  CoordinatorServer server(o, log);
  ASSERT_TRUE(server.Start().ok());
  httplib::Client http("127.0.0.1", server.http_port());
  auto r = http.Post("/sweep", httplib::Headers{{"Authorization", "Bearer "}}, "", "text/plain");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 403);
  EXPECT_NE(r->body.find("no token"), std::string::npos);
}

// server.auth: kubernetes: /metrics and /status answer only a reader the API server allows;
// /sweep keeps its own token and the health probes stay open.
TEST(CoordinatorHttp, MetricsAndStatusNeedATokenTheApiServerAllows) {
  FakeKubeClient kube;
  kube.SetTokenUsers({{"reader", {{"username", "system:serviceaccount:monitoring:prometheus"}}},
                      {"stranger", {{"username", "system:serviceaccount:jobs:default"}}}});
  kube.SetNonResourceGrants({"system:serviceaccount:monitoring:prometheus get /metrics",
                             "system:serviceaccount:monitoring:prometheus get /status"});
  CoordinatorOptions o;
  o.config.coordinator.http_listen = "127.0.0.1:0";
  o.http_authorizer = std::make_shared<HttpAuthorizer>(kube);
  Coordinator c(o);
  httplib::Client http("127.0.0.1", c.server->http_port());
  auto with = [](const std::string& token) {
    return httplib::Headers{{"Authorization", "Bearer " + token}};
  };
  EXPECT_EQ(http.Get("/metrics")->status, 401);
  EXPECT_EQ(http.Get("/status")->status, 401);
  EXPECT_EQ(http.Get("/metrics", with("stranger"))->status, 403);
  EXPECT_EQ(http.Get("/metrics", with("reader"))->status, 200);
  auto status = http.Get("/status", with("reader"));
  ASSERT_TRUE(status);
  EXPECT_EQ(status->status, 200);
  EXPECT_TRUE(nlohmann::json::parse(status->body).is_object());
  EXPECT_EQ(http.Get("/livez")->status, 200);
  EXPECT_EQ(http.Get("/readyz")->status, 200);
  // The sweep's own token, not a reader's, and no review of it.
  EXPECT_EQ(http.Post("/sweep", with("reader"), "", "text/plain")->status, 401);
  EXPECT_EQ(http.Post("/sweep", with(c.token), "", "text/plain")->status, 202);
  EXPECT_EQ(kube.CallCount("CreateSubjectAccessReview"), 3u);  // stranger, reader twice (paths)
}

}  // namespace
}  // namespace nccl_triage
