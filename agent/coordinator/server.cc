#include "coordinator/server.h"

#include <grpcpp/grpcpp.h>
#include <openssl/crypto.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "base/log.h"
#include "coordinator/coordinator_metrics.h"
#include "core/catalogue.h"
#include "core/report.h"
#include "exporter/http_server.h"
#include "nccl_triage/v1/agent.grpc.pb.h"
#include "planner/cross_node.h"
#include "planner/schedule.h"
#include "wire/convert.h"

namespace nccl_triage {
namespace {

using SteadyClock = std::chrono::steady_clock;
constexpr size_t kMaxQueuedWrites = 4096;
constexpr size_t kMaxPairsPerVerdict = 64;
constexpr size_t kMaxHealthyPairsPerVerdict = 8;
constexpr size_t kMaxPairRecords = 200'000;

int64_t NowUnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

bool TokenMatches(const std::string& expected, std::string_view got) {
  if (got.size() != expected.size()) return false;
  return CRYPTO_memcmp(expected.data(), got.data(), expected.size()) == 0;
}

// The verdict of a node from its own checks only (basis checks): architecture before ib_resource.
CoordinatorView::Node ChecksVerdict(const NodeInfo& info, std::string reason) {
  CoordinatorView::Node v;
  v.basis = Basis::kChecks;
  bool arch = false;
  bool ib = false;
  for (const auto& f : info.findings) {
    if (f.status != CheckStatus::kFail) continue;
    v.causes.push_back(f.check);
    arch = arch || f.fault_class == FaultClass::kArchitecture;
    ib = ib || f.fault_class == FaultClass::kIbResource;
  }
  v.fault_class = arch ? FaultClass::kArchitecture
                  : ib ? FaultClass::kIbResource
                       : FaultClass::kHealthy;
  v.reason = std::move(reason);
  return v;
}

// A failed rank whose NCCL log names a cause other than a consequence of its peer's failure.
bool NamesSpecificCause(const ProbeResult& r) {
  if (!r.classification) return false;
  for (const auto& c : r.classification->causes) {
    if (!HasTrait(c.cause, kConsequenceOnly)) return true;
  }
  return false;
}

}  // namespace

CoordinatorOptions CoordinatorOptionsFromConfig(const Config& config) {
  CoordinatorOptions o;
  const CoordinatorConfig& c = config.coordinator;
  o.listen = c.listen;
  o.http_listen = c.http_listen;
  o.sweep_interval = std::chrono::seconds(std::max(c.sweep_interval_seconds, 0));
  o.hold_down = std::max(c.hold_down, 1);
  o.topology_label = c.topology_label;
  o.heartbeat_timeout = std::chrono::seconds(std::max(c.heartbeat_timeout_seconds, 2));
  o.heartbeat_interval_seconds = std::clamp(c.heartbeat_timeout_seconds / 4, 1, 30);
  o.probe_size_bytes = config.probe.size_bytes;
  o.probe_deadline_seconds = std::max(config.probe.timeout_seconds, 1);
  o.judge.busbw_min_fraction = config.probe.busbw_min_fraction;
  return o;
}

// ------------------------------------------------------------------------------------ streams

class CoordinatorServer::Impl {
 public:
  class Stream;

  Impl(CoordinatorOptions options, Logger& log);
  ~Impl();

  Status Start();
  void Stop();

  // gRPC entry point: a new agent stream (already rejected when the token is wrong).
  grpc::ServerBidiReactor<v1::AgentMessage, v1::CoordinatorMessage>* NewStream(
      grpc::CallbackServerContext* ctx);

  // Stream events (from gRPC threads).
  bool OnMessage(Stream* stream, const v1::AgentMessage& msg);
  void OnStreamEnd(Stream* stream, const std::string& why);

  uint64_t RequestSweep();
  bool WaitForSweep(uint64_t number, std::chrono::milliseconds timeout);
  bool WaitForAgents(size_t n, std::chrono::milliseconds timeout);
  size_t ConnectedAgents() const;
  size_t OutstandingProbes() const;
  CoordinatorView View(bool with_pairs) const;
  std::string MetricsText() const { return metrics_.Text(); }

  int grpc_port_ = 0;
  int http_port_ = 0;

 private:
  struct Agent {
    Stream* stream = nullptr;
    NodeInfo info;
    std::string peer;
    SteadyClock::time_point last_seen;
  };

  struct Slot {
    std::string node;
    std::string probe_id;
    std::optional<ProbeResult> result;
  };

  // One pair being probed: the socket phase, then the IB phase.
  struct PairRun {
    NodePair pair;
    std::string rank0;
    std::string rank1;
    ProbeMode mode = ProbeMode::kSocket;
    Slot slot[2];
    bool relayed = false;
    SteadyClock::time_point deadline;
    // Set when one rank failed: the other gets a short grace to report its own log (it often
    // holds the specific cause), then it is cancelled; it cannot pass any more.
    std::optional<SteadyClock::time_point> peer_failed_deadline;
    PairProbes probes;
    bool done = false;
  };

  struct ProbeRef {
    PairRun* run = nullptr;
    int slot = 0;
  };

  class Service final : public v1::Coordinator::CallbackService {
   public:
    explicit Service(Impl* impl) : impl_(impl) {}
    grpc::ServerBidiReactor<v1::AgentMessage, v1::CoordinatorMessage>* Session(
        grpc::CallbackServerContext* ctx) override {
      return impl_->NewStream(ctx);
    }

   private:
    Impl* impl_;
  };

  void SweepLoop(std::stop_token stop);
  void RunOneSweep();
  void RunRoundLocked(std::unique_lock<std::mutex>& lock, const std::vector<NodePair>& pairs,
                      std::vector<std::unique_ptr<PairRun>>& runs);
  void StartPhaseLocked(PairRun& run, ProbeMode mode);
  void FinishPhaseLocked(PairRun& run, const std::string& lost);
  void CancelSlotLocked(Slot& slot, const std::string& reason);
  void CancelUnreportedLocked(PairRun& run, const std::string& reason);
  void OnUniqueIdLocked(const std::string& node, const v1::UniqueId& id);
  void OnReportLocked(const std::string& node, const v1::ProbeReport& report);
  void DisconnectLocked(const std::string& node, const std::string& why);
  void HousekeepingLocked();
  void PublishLocked(const SweepResult& result);
  void SendVerdictsLocked(const std::string& node);
  v1::NodeVerdict NodeVerdictProtoLocked(const std::string& node) const;
  bool IncompatibleLocked(const std::string& a, const std::string& b) const;
  void SetupHttp();

  CoordinatorOptions options_;
  Logger& log_;
  mutable CoordinatorMetrics metrics_;
  Service service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<HttpServer> http_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  bool started_ = false;
  std::map<std::string, Agent> agents_;          // connected, by node
  std::map<Stream*, std::string> stream_nodes_;  // streams that said hello
  std::map<std::string, NodeInfo> known_;        // every node ever seen
  std::map<std::string, std::string> last_peer_;
  std::map<std::string, ProbeRef> probes_;  // outstanding probe ids
  uint64_t probe_counter_ = 0;
  uint64_t sweeps_requested_ = 0;
  uint64_t sweeps_started_ = 0;
  uint64_t sweeps_done_ = 0;
  int last_sweep_rounds_ = 0;
  int current_round_ = 0;
  std::unique_ptr<Sweep> sweep_;
  CoverageSchedule schedule_;
  HoldDown hold_down_;
  std::map<NodePair, CoordinatorView::Pair> pair_records_;
  // node -> its pair records (pointers into pair_records_, whose nodes are stable).
  std::map<std::string, std::map<NodePair, const CoordinatorView::Pair*>> pairs_by_node_;
  std::map<std::string, CoordinatorView::Node> node_verdicts_;
  std::jthread sweep_thread_;
};

// One agent's stream. Reads one message at a time; writes go through a queue (the callback API
// allows one outstanding write). Close() may be called from any thread; OnDone deletes it after
// the Impl has forgotten it.
class CoordinatorServer::Impl::Stream final
    : public grpc::ServerBidiReactor<v1::AgentMessage, v1::CoordinatorMessage> {
 public:
  Stream(Impl* impl, grpc::CallbackServerContext* ctx, std::optional<grpc::Status> reject)
      : impl_(impl), peer_(ctx->peer()) {
    if (reject) {
      std::lock_guard lock(wmu_);
      closed_ = true;
      Finish(*reject);
      return;
    }
    std::lock_guard lock(wmu_);
    StartRead(&in_);
  }

  const std::string& peer() const { return peer_; }

  void Send(v1::CoordinatorMessage msg) {
    std::lock_guard lock(wmu_);
    if (closed_) return;
    if (queue_.size() >= kMaxQueuedWrites) {
      // The agent does not read: drop it rather than grow without bound.
      CloseLocked(grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, "agent is not reading"));
      return;
    }
    queue_.push_back(std::move(msg));
    if (!writing_) {
      writing_ = true;
      StartWrite(&queue_.front());
    }
  }

  void Close(const grpc::Status& status) {
    std::lock_guard lock(wmu_);
    CloseLocked(status);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      impl_->OnStreamEnd(this, "stream closed");
      Close(grpc::Status::OK);
      return;
    }
    if (!impl_->OnMessage(this, in_)) return;
    std::lock_guard lock(wmu_);
    if (closed_) return;
    in_.Clear();
    StartRead(&in_);
  }

  void OnWriteDone(bool ok) override {
    std::lock_guard lock(wmu_);
    if (!queue_.empty()) queue_.pop_front();
    if (!ok) {
      queue_.clear();
      writing_ = false;
      if (!finished_) {
        finished_ = true;
        closed_ = true;
        Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "write failed"));
      }
      return;
    }
    if (!queue_.empty() && !closed_) {
      StartWrite(&queue_.front());
      return;
    }
    writing_ = false;
    if (closed_ && !finished_) {
      finished_ = true;
      Finish(final_status_);
    }
  }

  void OnDone() override {
    impl_->OnStreamEnd(this, "stream done");
    delete this;
  }

 private:
  void CloseLocked(const grpc::Status& status) {
    if (closed_) return;
    closed_ = true;
    final_status_ = status;
    if (!writing_) {
      finished_ = true;
      Finish(status);
    }
    // Otherwise OnWriteDone finishes once the pending write completes (pending ones are flushed
    // first so that a rejection's reason still reaches the agent).
  }

  Impl* impl_;
  std::string peer_;
  v1::AgentMessage in_;
  std::mutex wmu_;
  std::deque<v1::CoordinatorMessage> queue_;
  bool writing_ = false;
  bool closed_ = false;
  bool finished_ = false;
  grpc::Status final_status_;
};

// ------------------------------------------------------------------------------------ impl

CoordinatorServer::Impl::Impl(CoordinatorOptions options, Logger& log)
    : options_(std::move(options)),
      log_(log),
      service_(this),
      schedule_(options_.seed),
      hold_down_(options_.hold_down) {}

CoordinatorServer::Impl::~Impl() { Stop(); }

grpc::ServerBidiReactor<v1::AgentMessage, v1::CoordinatorMessage>*
CoordinatorServer::Impl::NewStream(grpc::CallbackServerContext* ctx) {
  if (!options_.token.empty()) {
    const auto& md = ctx->client_metadata();
    auto it = md.find("authorization");
    std::string_view got;
    if (it != md.end()) got = std::string_view(it->second.data(), it->second.size());
    constexpr std::string_view kBearer = "Bearer ";
    const bool bearer = got.substr(0, kBearer.size()) == kBearer;
    if (!bearer || !TokenMatches(options_.token, got.substr(kBearer.size()))) {
      log_.Warn("coordinator", "rejected agent session from " + ctx->peer() + ": " +
                                   (it == md.end() ? "no token" : "wrong token"));
      return new Stream(this, ctx,
                        grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                                     it == md.end() ? "missing token" : "invalid token"));
    }
  }
  std::lock_guard lock(mu_);
  if (stopping_) {
    return new Stream(this, ctx,
                      grpc::Status(grpc::StatusCode::UNAVAILABLE, "coordinator shutting down"));
  }
  return new Stream(this, ctx, std::nullopt);
}

Status CoordinatorServer::Impl::Start() {
  grpc::ServerBuilder builder;
  std::shared_ptr<grpc::ServerCredentials> creds;
  if (!options_.cert_pem.empty() && !options_.key_pem.empty()) {
    grpc::SslServerCredentialsOptions ssl;
    ssl.pem_key_cert_pairs.push_back({options_.key_pem, options_.cert_pem});
    creds = grpc::SslServerCredentials(ssl);
  } else {
    creds = grpc::InsecureServerCredentials();
  }
  if (options_.token.empty()) {
    log_.Warn("coordinator", "no token configured: agent sessions are not authenticated");
  }
  builder.AddListeningPort(options_.listen, creds, &grpc_port_);
  builder.RegisterService(&service_);
  // Notice dead peers even when no heartbeat is due.
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, 20'000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 10'000);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 5'000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.SetMaxReceiveMessageSize(4 << 20);
  server_ = builder.BuildAndStart();
  if (!server_ || grpc_port_ == 0) {
    return Unavailable("coordinator: cannot listen on " + options_.listen);
  }
  if (!options_.http_listen.empty()) {
    auto addr = ParseListenAddress(options_.http_listen);
    if (!addr.ok()) return addr.status();
    http_ = std::make_unique<HttpServer>(&log_);
    SetupHttp();
    auto port = http_->Start(addr->first, addr->second);
    if (!port.ok()) {
      server_->Shutdown(std::chrono::system_clock::now());
      return port.status();
    }
    http_port_ = *port;
  }
  {
    std::lock_guard lock(mu_);
    started_ = true;
  }
  sweep_thread_ = std::jthread([this](std::stop_token st) { SweepLoop(st); });
  log_.Info("coordinator", "listening for agents on port " + std::to_string(grpc_port_) +
                               (http_port_ ? ", HTTP on port " + std::to_string(http_port_) : ""));
  return Status::Ok();
}

void CoordinatorServer::Impl::Stop() {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    stopping_ = true;
    cv_.notify_all();
  }
  if (sweep_thread_.joinable()) {
    sweep_thread_.request_stop();
    sweep_thread_.join();
  }
  {
    std::lock_guard lock(mu_);
    for (auto& [node, agent] : agents_) {
      if (agent.stream) {
        agent.stream->Close(
            grpc::Status(grpc::StatusCode::UNAVAILABLE, "coordinator shutting down"));
      }
    }
    agents_.clear();
  }
  if (server_) server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  if (http_) http_->Stop();
}

void CoordinatorServer::Impl::SetupHttp() {
  http_->Get("/livez", [](const HttpRequest&) { return HttpReply{200, "text/plain", "ok\n"}; });
  http_->Get("/readyz", [this](const HttpRequest&) {
    std::lock_guard lock(mu_);
    return started_ && !stopping_ ? HttpReply{200, "text/plain", "ready\n"}
                                  : HttpReply{503, "text/plain", "not ready\n"};
  });
  http_->Get("/metrics", [this](const HttpRequest&) {
    return HttpReply{200, "text/plain; version=0.0.4; charset=utf-8", metrics_.Text()};
  });
  http_->Get("/status", [this](const HttpRequest&) {
    return HttpReply{200, "application/json", ToJson(View(true)).dump(2) + "\n"};
  });
  http_->Post("/sweep", [this](const HttpRequest&) {
    uint64_t n = RequestSweep();
    return HttpReply{202, "application/json",
                     nlohmann::json{{"sweep", n}, {"status", "requested"}}.dump() + "\n"};
  });
}

bool CoordinatorServer::Impl::OnMessage(Stream* stream, const v1::AgentMessage& msg) {
  std::lock_guard lock(mu_);
  auto known = stream_nodes_.find(stream);
  auto reject = [&](grpc::StatusCode code, const std::string& why) {
    log_.Warn("coordinator", "closing session from " + stream->peer() +
                                 (known != stream_nodes_.end() ? " (" + known->second + ")" : "") +
                                 ": " + why);
    if (known != stream_nodes_.end()) {
      const std::string node = known->second;
      DisconnectLocked(node, why);
    }
    stream->Close(grpc::Status(code, why));
    return false;
  };

  if (msg.has_hello()) {
    if (known != stream_nodes_.end()) {
      return reject(grpc::StatusCode::INVALID_ARGUMENT, "second hello on one session");
    }
    const v1::Hello& hello = msg.hello();
    if (hello.protocol_version() != kProtocolVersion) {
      return reject(grpc::StatusCode::FAILED_PRECONDITION,
                    "protocol version " + std::to_string(hello.protocol_version()) +
                        " not supported (this coordinator speaks " +
                        std::to_string(kProtocolVersion) + ")");
    }
    auto info = NodeInfoFromHello(hello, options_.topology_label);
    if (!info.ok()) return reject(grpc::StatusCode::INVALID_ARGUMENT, info.status().message());
    const std::string node = info->name;
    auto old = agents_.find(node);
    if (old != agents_.end()) {
      // The newest session wins: a restarted agent must not wait for the old one to time out.
      Stream* old_stream = old->second.stream;
      DisconnectLocked(node, "replaced by a new session from " + stream->peer());
      if (old_stream) {
        old_stream->Close(grpc::Status(grpc::StatusCode::ALREADY_EXISTS,
                                       "replaced by a new session of the same node"));
      }
    }
    Agent& a = agents_[node];
    a.stream = stream;
    a.info = *info;
    a.peer = stream->peer();
    a.last_seen = SteadyClock::now();
    known_[node] = *info;
    last_peer_[node] = stream->peer();
    stream_nodes_[stream] = node;
    v1::CoordinatorMessage welcome;
    welcome.mutable_welcome()->set_protocol_version(kProtocolVersion);
    welcome.mutable_welcome()->set_heartbeat_interval_seconds(
        static_cast<uint32_t>(options_.heartbeat_interval_seconds));
    stream->Send(std::move(welcome));
    if (node_verdicts_.count(node)) SendVerdictsLocked(node);
    metrics_.SetAgentsConnected(agents_.size());
    log_.Info("coordinator", "agent " + node + " connected from " + stream->peer());
    cv_.notify_all();
    return true;
  }
  if (known == stream_nodes_.end()) {
    return reject(grpc::StatusCode::INVALID_ARGUMENT, "the first message must be a hello");
  }
  const std::string node = known->second;
  auto agent = agents_.find(node);
  if (agent == agents_.end() || agent->second.stream != stream) return false;
  agent->second.last_seen = SteadyClock::now();
  switch (msg.body_case()) {
    case v1::AgentMessage::kHeartbeat:
      if (msg.heartbeat().has_summary()) {
        ApplySummary(msg.heartbeat().summary(), agent->second.info);
        known_[node] = agent->second.info;
      }
      break;
    case v1::AgentMessage::kUniqueId:
      OnUniqueIdLocked(node, msg.unique_id());
      break;
    case v1::AgentMessage::kProbeReport:
      OnReportLocked(node, msg.probe_report());
      break;
    default:
      log_.Warn("coordinator", "ignored an empty or unknown message from " + node);
      break;
  }
  return true;
}

void CoordinatorServer::Impl::OnStreamEnd(Stream* stream, const std::string& why) {
  std::lock_guard lock(mu_);
  auto it = stream_nodes_.find(stream);
  if (it == stream_nodes_.end()) return;
  const std::string node = it->second;
  stream_nodes_.erase(it);
  auto agent = agents_.find(node);
  if (agent != agents_.end() && agent->second.stream == stream) {
    agent->second.stream = nullptr;
    DisconnectLocked(node, why);
  }
}

void CoordinatorServer::Impl::DisconnectLocked(const std::string& node, const std::string& why) {
  auto agent = agents_.find(node);
  if (agent == agents_.end()) return;
  Stream* stream = agent->second.stream;
  if (stream) stream_nodes_.erase(stream);
  agents_.erase(agent);
  log_.Info("coordinator", "agent " + node + " disconnected: " + why);
  // Every probe it was part of is lost; its peer's child is cancelled now, not at the deadline.
  std::set<PairRun*> runs;
  for (const auto& [id, ref] : probes_) {
    if (ref.run->slot[0].node == node || ref.run->slot[1].node == node) runs.insert(ref.run);
  }
  for (PairRun* run : runs) {
    FinishPhaseLocked(*run, "agent " + node + " disconnected during the probe (" + why + ")");
  }
  if (sweep_) sweep_->RemoveNode(node);
  metrics_.SetAgentsConnected(agents_.size());
  cv_.notify_all();
}

void CoordinatorServer::Impl::HousekeepingLocked() {
  const auto now = SteadyClock::now();
  std::vector<std::string> silent;
  for (const auto& [node, a] : agents_) {
    if (now - a.last_seen > options_.heartbeat_timeout) silent.push_back(node);
  }
  for (const auto& node : silent) {
    Stream* stream = agents_[node].stream;
    DisconnectLocked(node, "no heartbeat for " +
                               std::to_string(options_.heartbeat_timeout.count() / 1000) + "s");
    if (stream) stream->Close(grpc::Status(grpc::StatusCode::UNAVAILABLE, "heartbeat timeout"));
  }
}

// ------------------------------------------------------------------------------------ probes

void CoordinatorServer::Impl::CancelSlotLocked(Slot& slot, const std::string& reason) {
  if (slot.probe_id.empty()) return;
  probes_.erase(slot.probe_id);
  if (!slot.result) {
    auto agent = agents_.find(slot.node);
    if (agent != agents_.end() && agent->second.stream) {
      v1::CoordinatorMessage m;
      m.mutable_cancel()->set_probe_id(slot.probe_id);
      m.mutable_cancel()->set_reason(reason);
      agent->second.stream->Send(std::move(m));
    }
  }
  slot.probe_id.clear();
}

void CoordinatorServer::Impl::StartPhaseLocked(PairRun& run, ProbeMode mode) {
  run.mode = mode;
  run.relayed = false;
  run.peer_failed_deadline.reset();
  run.slot[0] = {run.rank0, "", std::nullopt};
  run.slot[1] = {run.rank1, "", std::nullopt};
  ModeProbes& probes = mode == ProbeMode::kSocket ? run.probes.socket : run.probes.ib;
  probes.attempted = true;
  const uint64_t pid = ++probe_counter_;
  for (int r = 0; r < 2; ++r) {
    auto agent = agents_.find(run.slot[r].node);
    if (agent == agents_.end() || !agent->second.stream) {
      FinishPhaseLocked(run, "agent " + run.slot[r].node + " is not connected");
      return;
    }
  }
  const v1::ProbeSize size = ProbeSizeFor(options_.probe_size_bytes);
  for (int r = 0; r < 2; ++r) {
    Slot& slot = run.slot[r];
    slot.probe_id = "s" + std::to_string(sweeps_started_) + "-p" + std::to_string(pid) + "-" +
                    std::string(ToString(mode)) + "-r" + std::to_string(r);
    probes_[slot.probe_id] = {&run, r};
    v1::CoordinatorMessage m;
    v1::ProbeAssignment* a = m.mutable_assignment();
    a->set_probe_id(slot.probe_id);
    a->set_peer(run.slot[1 - r].node);
    a->set_mode(ToProto(mode));
    a->set_rank(static_cast<uint32_t>(r));
    a->set_size(size);
    a->set_deadline_seconds(static_cast<uint32_t>(options_.probe_deadline_seconds));
    a->set_sweep(sweeps_started_);
    a->set_round(static_cast<uint32_t>(current_round_));
    agents_[slot.node].stream->Send(std::move(m));
  }
  run.deadline = SteadyClock::now() + std::chrono::seconds(options_.probe_deadline_seconds) +
                 options_.report_grace;
}

void CoordinatorServer::Impl::FinishPhaseLocked(PairRun& run, const std::string& lost) {
  if (run.done) return;
  ModeProbes& probes = run.mode == ProbeMode::kSocket ? run.probes.socket : run.probes.ib;
  probes.attempted = true;
  probes.rank0 = run.slot[0].result;
  probes.rank1 = run.slot[1].result;
  probes.lost = lost;
  for (auto& slot : run.slot) {
    CancelSlotLocked(slot, lost.empty() ? "the probe is over" : lost);
  }
  std::string outcome = "lost";
  if (lost.empty()) outcome = std::string(ToString(MergeRanks(probes, run.mode).outcome));
  metrics_.CountProbe(ToString(run.mode), outcome);
  if (run.mode == ProbeMode::kSocket && lost.empty()) {
    StartPhaseLocked(run, ProbeMode::kIb);
    return;
  }
  run.done = true;
  cv_.notify_all();
}

void CoordinatorServer::Impl::OnUniqueIdLocked(const std::string& node, const v1::UniqueId& id) {
  auto it = probes_.find(id.probe_id());
  if (it == probes_.end() || it->second.run->slot[it->second.slot].node != node ||
      it->second.slot != 0) {
    log_.Warn("coordinator", "ignored a unique id from " + node + " for probe '" +
                                 id.probe_id().substr(0, 64) + "' it does not hold as rank 0");
    return;
  }
  PairRun& run = *it->second.run;
  if (id.id().size() != kUniqueIdBytes) {
    log_.Warn("coordinator", "malformed unique id from " + node + " (" +
                                 std::to_string(id.id().size()) + " bytes, want 128)");
    FinishPhaseLocked(run, "malformed unique id from " + node);
    return;
  }
  if (run.relayed) return;
  run.relayed = true;
  Slot& peer = run.slot[1];
  auto agent = agents_.find(peer.node);
  if (agent == agents_.end() || !agent->second.stream) {
    FinishPhaseLocked(run, "agent " + peer.node + " disconnected during the probe");
    return;
  }
  v1::CoordinatorMessage m;
  m.mutable_unique_id()->set_probe_id(peer.probe_id);
  m.mutable_unique_id()->set_id(id.id());
  agent->second.stream->Send(std::move(m));
}

void CoordinatorServer::Impl::OnReportLocked(const std::string& node,
                                             const v1::ProbeReport& report) {
  auto it = probes_.find(report.probe_id());
  if (it == probes_.end() || it->second.run->slot[it->second.slot].node != node) {
    // Late (the phase already ended) or not this node's: nothing to do.
    log_.Debug("coordinator", "ignored a report from " + node + " for probe '" +
                                  report.probe_id().substr(0, 64) + "'");
    return;
  }
  PairRun& run = *it->second.run;
  const int r = it->second.slot;
  Slot& slot = run.slot[r];
  slot.result = FromProbeReport(report, run.mode, r, run.slot[1 - r].node);
  probes_.erase(it);
  slot.probe_id.clear();
  Slot& other = run.slot[1 - r];
  if (other.result) {
    FinishPhaseLocked(run, "");
    return;
  }
  // The other rank cannot finish on its own when this one never got as far as the rendezvous:
  // a refusal (not run / unavailable) or rank 0 ending before it handed out a unique id.
  const ProbeOutcome o = slot.result->outcome;
  const bool refused = o == ProbeOutcome::kNotRun || o == ProbeOutcome::kUnavailable;
  if (refused || (r == 0 && !run.relayed)) {
    CancelUnreportedLocked(
        run, "peer " + node + " ended before the rendezvous: " + std::string(ToString(o)));
    return;
  }
  if (o != ProbeOutcome::kPass) {
    if (NamesSpecificCause(*slot.result)) {
      // This rank's log already says why; the other only waits for a peer that is gone.
      CancelUnreportedLocked(run, "peer " + node + " failed: " + std::string(ToString(o)));
      return;
    }
    run.peer_failed_deadline = SteadyClock::now() + options_.peer_failed_grace;
    cv_.notify_all();
  }
}

void CoordinatorServer::Impl::CancelUnreportedLocked(PairRun& run, const std::string& reason) {
  for (int r = 0; r < 2; ++r) {
    Slot& slot = run.slot[r];
    if (slot.result) continue;
    ProbeResult cancelled;
    cancelled.mode = run.mode;
    cancelled.rank = r;
    cancelled.peer = run.slot[1 - r].node;
    cancelled.outcome = ProbeOutcome::kNotRun;
    cancelled.detail = "cancelled: " + reason;
    CancelSlotLocked(slot, reason);
    slot.result = std::move(cancelled);
  }
  FinishPhaseLocked(run, "");
}

// ------------------------------------------------------------------------------------ sweeps

uint64_t CoordinatorServer::Impl::RequestSweep() {
  std::lock_guard lock(mu_);
  // A sweep already running does not answer a request made now: the next one does.
  sweeps_requested_ = std::max(sweeps_requested_, sweeps_started_ + 1);
  cv_.notify_all();
  return sweeps_requested_;
}

bool CoordinatorServer::Impl::WaitForSweep(uint64_t number, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, timeout, [&] { return sweeps_done_ >= number || stopping_; }) &&
         sweeps_done_ >= number;
}

bool CoordinatorServer::Impl::WaitForAgents(size_t n, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, timeout, [&] { return agents_.size() >= n || stopping_; }) &&
         agents_.size() >= n;
}

size_t CoordinatorServer::Impl::ConnectedAgents() const {
  std::lock_guard lock(mu_);
  return agents_.size();
}

size_t CoordinatorServer::Impl::OutstandingProbes() const {
  std::lock_guard lock(mu_);
  return probes_.size();
}

void CoordinatorServer::Impl::SweepLoop(std::stop_token stop) {
  auto next_auto = SteadyClock::now() + options_.sweep_interval;
  while (!stop.stop_requested()) {
    bool due = false;
    {
      std::unique_lock lock(mu_);
      auto wake = SteadyClock::now() + std::chrono::seconds(1);
      if (options_.sweep_interval.count() > 0) wake = std::min(wake, next_auto);
      cv_.wait_until(lock, wake, [&] { return stopping_ || sweeps_requested_ > sweeps_started_; });
      if (stopping_) return;
      HousekeepingLocked();
      due = sweeps_requested_ > sweeps_started_ ||
            (options_.sweep_interval.count() > 0 && SteadyClock::now() >= next_auto);
    }
    if (due) {
      RunOneSweep();
      next_auto = SteadyClock::now() + options_.sweep_interval;
    }
  }
}

bool CoordinatorServer::Impl::IncompatibleLocked(const std::string& a, const std::string& b) const {
  auto ia = known_.find(a);
  auto ib = known_.find(b);
  if (ia == known_.end() || ib == known_.end()) return false;
  return PredictedIncompatible(ia->second, ib->second);
}

void CoordinatorServer::Impl::RunRoundLocked(std::unique_lock<std::mutex>& lock,
                                             const std::vector<NodePair>& pairs,
                                             std::vector<std::unique_ptr<PairRun>>& runs) {
  for (const auto& p : pairs) {
    auto run = std::make_unique<PairRun>();
    run->pair = p;
    // Alternate which node creates the unique id, so both sides' rank-0 paths get exercised.
    const bool flip = (sweeps_started_ + static_cast<uint64_t>(current_round_)) % 2 == 1;
    run->rank0 = flip ? p.b : p.a;
    run->rank1 = flip ? p.a : p.b;
    run->probes.pair = p;
    runs.push_back(std::move(run));
  }
  for (auto& run : runs) StartPhaseLocked(*run, ProbeMode::kSocket);
  for (;;) {
    bool all_done = true;
    auto next = SteadyClock::now() + std::chrono::milliseconds(500);
    const auto now = SteadyClock::now();
    for (auto& run : runs) {
      if (run->done) continue;
      if (stopping_) {
        FinishPhaseLocked(*run, "coordinator shutting down");
        continue;
      }
      if (run->peer_failed_deadline && now >= *run->peer_failed_deadline) {
        CancelUnreportedLocked(*run, "the peer failed and this rank did not report within " +
                                         std::to_string(options_.peer_failed_grace.count()) +
                                         " ms");
        if (run->done) continue;
      }
      if (now >= run->deadline) {
        std::string missing;
        for (const auto& s : run->slot) {
          if (!s.result) missing += (missing.empty() ? "" : " and ") + s.node;
        }
        FinishPhaseLocked(*run, "no report from " + missing + " within the deadline");
        continue;
      }
      if (!run->done) {
        all_done = false;
        next = std::min(next, run->deadline);
        if (run->peer_failed_deadline) next = std::min(next, *run->peer_failed_deadline);
      }
    }
    if (all_done) return;
    cv_.wait_until(lock, next);
    HousekeepingLocked();
  }
}

void CoordinatorServer::Impl::RunOneSweep() {
  const auto started = SteadyClock::now();
  std::unique_lock lock(mu_);
  const uint64_t number = ++sweeps_started_;
  std::vector<std::pair<std::string, std::string>> members;
  SweepSetup setup;
  setup.number = number;
  for (const auto& [node, a] : agents_) {
    members.emplace_back(node, a.info.topology);
    if (!a.info.gpus_busy) setup.nodes.push_back(node);
  }
  schedule_.SetNodes(members);
  std::set<std::string> available(setup.nodes.begin(), setup.nodes.end());
  setup.round1 = schedule_.NextRound([&](const std::string& n) { return available.count(n) > 0; });
  setup.retest = hold_down_.LinksToRetest();
  setup.incompatible = [this](const std::string& a, const std::string& b) {
    return IncompatibleLocked(a, b);  // called from NextRound, with mu_ held
  };
  setup.max_rounds = options_.max_rounds;
  setup.seed = options_.seed + number;
  sweep_ = std::make_unique<Sweep>(setup);
  log_.Info("coordinator", "sweep " + std::to_string(number) + ": " +
                               std::to_string(setup.nodes.size()) + " nodes available, " +
                               std::to_string(setup.round1.size()) + " pairs in round 1");

  std::vector<std::unique_ptr<PairRun>> runs;
  for (;;) {
    std::vector<NodePair> pairs = sweep_->NextRound();
    if (pairs.empty() || stopping_) break;
    current_round_ = sweep_->round();
    runs.clear();
    RunRoundLocked(lock, pairs, runs);
    for (auto& run : runs) {
      const NodeInfo& a = known_[run->pair.a];
      const NodeInfo& b = known_[run->pair.b];
      sweep_->Record(run->pair, JudgePair(a, b, run->probes, options_.judge));
    }
  }
  SweepResult result = sweep_->Result();
  sweep_.reset();
  if (stopping_) return;
  // A node fault's causes: the node's own failing checks first. The NCCL log names the symptom
  // ("NET/IB : No device found"), the check the state behind it (the port is DOWN).
  for (auto& f : result.faults) {
    if (f.kind == FaultKind::kLink) {
      // A link fault: the cross-node check that explains it (no common PKey partition) before
      // the symptom the NCCL log shows (a fabric timeout).
      std::stable_partition(f.causes.begin(), f.causes.end(), [](const std::string& c) {
        const CauseInfo* info = FindCause(c);
        return info != nullptr && info->kind == CauseKind::kCrossNode;
      });
      continue;
    }
    const NodeInfo& info = known_[f.nodes[0]];
    std::stable_partition(f.causes.begin(), f.causes.end(), [&](const std::string& c) {
      return std::any_of(info.findings.begin(), info.findings.end(), [&](const Finding& x) {
        return x.check == c && x.status == CheckStatus::kFail;
      });
    });
    result.nodes[f.nodes[0]].causes = f.causes;
  }
  hold_down_.Apply(result);
  for (const auto& p : result.tested_pairs) schedule_.MarkTested(p);
  PublishLocked(result);
  last_sweep_rounds_ = result.rounds;
  sweeps_done_ = number;
  const double seconds = std::chrono::duration<double>(SteadyClock::now() - started).count();
  metrics_.ObserveSweep(seconds, NowUnixMs());
  metrics_.SetFaults(hold_down_.Confirmed());
  metrics_.SetCoverage(schedule_.pairs_tested(), schedule_.pairs_total());
  size_t suspected = hold_down_.All().size();
  log_.Info("coordinator", "sweep " + std::to_string(number) + " done in " +
                               std::to_string(result.rounds) + " round(s), " +
                               std::to_string(result.faults.size()) + " fault(s) seen, " +
                               std::to_string(hold_down_.Confirmed().size()) + " confirmed of " +
                               std::to_string(suspected) + " tracked");
  cv_.notify_all();
}

void CoordinatorServer::Impl::PublishLocked(const SweepResult& result) {
  for (const auto& p : result.pairs) {
    CoordinatorView::Pair rec;
    rec.pair = p.pair;
    rec.judgement = p.judgement;
    rec.localisation = p.localisation;
    rec.sweep = result.number;
    rec.round = p.round;
    auto& slot = pair_records_[p.pair];
    slot = std::move(rec);
    pairs_by_node_[p.pair.a][p.pair] = &slot;
    pairs_by_node_[p.pair.b][p.pair] = &slot;
  }
  if (pair_records_.size() > kMaxPairRecords) {
    // Bound the memory of a long-lived coordinator: forget the oldest healthy pairs first.
    std::vector<std::pair<uint64_t, NodePair>> healthy;
    for (const auto& [k, rec] : pair_records_) {
      if (rec.judgement.status == PairStatus::kPass) healthy.emplace_back(rec.sweep, k);
    }
    std::sort(healthy.begin(), healthy.end());
    for (size_t i = 0; i < healthy.size() && pair_records_.size() > kMaxPairRecords * 9 / 10; ++i) {
      const NodePair& k = healthy[i].second;
      pairs_by_node_[k.a].erase(k);
      pairs_by_node_[k.b].erase(k);
      pair_records_.erase(k);
    }
  }
  for (const auto& [node, outcome] : result.nodes) {
    const TrackedFault* tracked = hold_down_.FindNode(node);
    CoordinatorView::Node v;
    auto prev = node_verdicts_.find(node);
    if (tracked && tracked->confirmed) {
      v.fault_class = tracked->fault.fault_class;
      v.basis = Basis::kProbes;
      v.causes = tracked->fault.causes;
      v.reason = "node fault, confirmed over " + std::to_string(hold_down_.hold_down()) +
                 " sweeps: " + tracked->fault.reason;
      v.confirmed_fault = true;
    } else if (outcome.state == NodeState::kGood) {
      auto info = known_.find(node);
      CoordinatorView::Node checks =
          ChecksVerdict(info != known_.end() ? info->second : NodeInfo{}, "");
      if (checks.fault_class != FaultClass::kHealthy) {
        // The pair probes pass, but the node's own checks fail on something two ranks over the
        // network do not exercise (/dev/shm for ranks on one host, a degraded port among
        // several): the checks' prediction stands, marked as such.
        v = std::move(checks);
        v.reason = "probes pass (" + outcome.reason + ") but the node checks fail";
      } else {
        v.fault_class = FaultClass::kHealthy;
        v.basis = Basis::kProbes;
        v.reason = outcome.reason;
      }
    } else if (prev != node_verdicts_.end() && !prev->second.confirmed_fault) {
      v = prev->second;  // nothing new is confirmed: the published verdict stays
      if (tracked) {
        v.reason = "suspected node fault (seen " + std::to_string(tracked->seen) + " of " +
                   std::to_string(hold_down_.hold_down()) + " sweeps); " + v.reason;
      }
    } else {
      auto info = known_.find(node);
      v = ChecksVerdict(info != known_.end() ? info->second : NodeInfo{},
                        tracked ? "suspected node fault, awaiting confirmation; from node checks"
                                : "not localised by probes yet; from node checks");
    }
    v.state = outcome.state;
    node_verdicts_[node] = std::move(v);
  }
  // Confirmed faults of nodes that were not in this sweep keep their verdict (held down).
  for (const auto& [node, a] : agents_) SendVerdictsLocked(node);
}

v1::NodeVerdict CoordinatorServer::Impl::NodeVerdictProtoLocked(const std::string& node) const {
  v1::NodeVerdict out;
  auto it = node_verdicts_.find(node);
  if (it == node_verdicts_.end()) return out;
  const auto& v = it->second;
  out.set_fault_class(ToProto(v.fault_class));
  out.set_basis(ToProto(v.basis));
  for (const auto& c : v.causes) out.add_causes(c);
  out.set_reason(v.reason);
  out.set_confirmed(v.confirmed_fault || v.basis == Basis::kProbes);
  switch (v.state) {
    case NodeState::kNodeFault:
      out.set_localisation(v.confirmed_fault ? v1::LOCALISATION_NODE : v1::LOCALISATION_NONE);
      break;
    case NodeState::kInconclusive:
      out.set_localisation(v1::LOCALISATION_INCONCLUSIVE);
      break;
    default:
      out.set_localisation(v.confirmed_fault ? v1::LOCALISATION_NODE : v1::LOCALISATION_NONE);
      break;
  }
  return out;
}

void CoordinatorServer::Impl::SendVerdictsLocked(const std::string& node) {
  auto agent = agents_.find(node);
  if (agent == agents_.end() || !agent->second.stream) return;
  v1::CoordinatorMessage m;
  v1::Verdicts* v = m.mutable_verdicts();
  v->set_sweep(sweeps_done_ > 0 ? sweeps_done_ : sweeps_started_);
  *v->mutable_node() = NodeVerdictProtoLocked(node);
  auto pairs = pairs_by_node_.find(node);
  if (pairs != pairs_by_node_.end()) {
    // Every pair that is not healthy (most recent first), then the few most recent healthy ones:
    // the agent publishes one series per peer, so a node of a large cluster must not collect a
    // peer for every pair the round-robin ever gave it.
    std::vector<const CoordinatorView::Pair*> bad;
    std::vector<const CoordinatorView::Pair*> good;
    for (const auto& [k, rec] : pairs->second) {
      (rec->judgement.status == PairStatus::kPass ? good : bad).push_back(rec);
    }
    auto recent = [](const auto* x, const auto* y) { return x->sweep > y->sweep; };
    std::sort(bad.begin(), bad.end(), recent);
    if (good.size() > kMaxHealthyPairsPerVerdict) {
      std::nth_element(good.begin(), good.begin() + kMaxHealthyPairsPerVerdict, good.end(), recent);
      good.resize(kMaxHealthyPairsPerVerdict);
    }
    std::sort(good.begin(), good.end(), recent);
    std::vector<const CoordinatorView::Pair*> recs = bad;
    recs.insert(recs.end(), good.begin(), good.end());
    for (size_t i = 0; i < recs.size() && i < kMaxPairsPerVerdict; ++i) {
      const auto& rec = *recs[i];
      const TrackedFault* link = hold_down_.FindLink(rec.pair);
      *v->add_pairs() = ToProto(rec.pair.Other(node), rec.judgement.verdict, rec.judgement.socket,
                                rec.judgement.ib, rec.localisation, link && link->confirmed);
    }
  }
  agent->second.stream->Send(std::move(m));
}

CoordinatorView CoordinatorServer::Impl::View(bool with_pairs) const {
  std::lock_guard lock(mu_);
  CoordinatorView view;
  for (const auto& [node, info] : known_) {
    CoordinatorView::Agent a;
    a.info = info;
    auto it = agents_.find(node);
    a.connected = it != agents_.end();
    auto peer = last_peer_.find(node);
    if (peer != last_peer_.end()) a.peer = peer->second;
    view.agents.push_back(std::move(a));
  }
  for (const auto& [node, v] : node_verdicts_) view.nodes[node] = v;
  // Nodes never localised yet: what their own checks say.
  for (const auto& [node, info] : known_) {
    if (!view.nodes.count(node)) view.nodes[node] = ChecksVerdict(info, "not probed yet");
  }
  for (const auto& [k, rec] : pair_records_) {
    if (rec.judgement.status != PairStatus::kInconclusive) ++view.pairs_concluded;
    if (with_pairs) view.pairs.push_back(rec);
  }
  view.faults = hold_down_.All();
  // Predictions: group the nodes by what the cross-node checks read, judge each pair of groups
  // once, and list unprobed pairs of incompatible groups.
  std::map<std::string, std::vector<const NodeInfo*>> groups;
  for (const auto& [node, info] : known_) groups[CrossNodeSignature(info)].push_back(&info);
  for (auto ga = groups.begin(); ga != groups.end(); ++ga) {
    for (auto gb = ga; gb != groups.end(); ++gb) {
      if (view.predicted.size() >= kMaxPredictedPairs) break;
      const NodeInfo& a0 = *ga->second.front();
      const NodeInfo& b0 = ga == gb ? *ga->second.back() : *gb->second.front();
      if (&a0 == &b0 || !PredictedIncompatible(a0, b0)) continue;
      for (const NodeInfo* a : ga->second) {
        for (const NodeInfo* b : gb->second) {
          if (a == b || view.predicted.size() >= kMaxPredictedPairs) continue;
          NodePair key(a->name, b->name);
          if (ga == gb && a->name > b->name) continue;
          if (pair_records_.count(key)) continue;
          view.predicted.emplace_back(key, PredictPair(*a, *b));
        }
      }
    }
  }
  view.sweeps_done = sweeps_done_;
  view.last_sweep_rounds = last_sweep_rounds_;
  view.pairs_tested = schedule_.pairs_tested();
  view.pairs_total = schedule_.pairs_total();
  view.coverage_cycles = schedule_.cycles_completed();
  view.hold_down = hold_down_.hold_down();
  return view;
}

nlohmann::json ToJson(const CoordinatorView& view) {
  nlohmann::json j;
  j["sweeps_done"] = view.sweeps_done;
  j["last_sweep_rounds"] = view.last_sweep_rounds;
  j["pairs_concluded"] = view.pairs_concluded;
  j["hold_down"] = view.hold_down;
  j["coverage"] = {{"pairs_tested", view.pairs_tested},
                   {"pairs_total", view.pairs_total},
                   {"cycles_completed", view.coverage_cycles}};
  j["agents"] = nlohmann::json::array();
  for (const auto& a : view.agents) {
    j["agents"].push_back({{"node", a.info.name},
                           {"connected", a.connected},
                           {"peer", a.peer},
                           {"topology", a.info.topology},
                           {"arch", a.info.arch},
                           {"nccl_version", a.info.nccl_version},
                           {"gpus_busy", a.info.gpus_busy}});
  }
  j["nodes"] = nlohmann::json::array();
  for (const auto& [node, v] : view.nodes) {
    j["nodes"].push_back({{"node", node},
                          {"class", ToString(v.fault_class)},
                          {"basis", ToString(v.basis)},
                          {"causes", v.causes},
                          {"state", ToString(v.state)},
                          {"reason", v.reason}});
  }
  j["faults"] = nlohmann::json::array();
  for (const auto& t : view.faults) {
    j["faults"].push_back({{"kind", ToString(t.fault.kind)},
                           {"nodes", t.fault.nodes},
                           {"class", ToString(t.fault.fault_class)},
                           {"causes", t.fault.causes},
                           {"confirmed", t.confirmed},
                           {"seen_sweeps", t.seen},
                           {"reason", t.fault.reason}});
  }
  j["predicted"] = nlohmann::json::array();
  for (const auto& [pair, v] : view.predicted) {
    j["predicted"].push_back({{"a", pair.a},
                              {"b", pair.b},
                              {"class", ToString(v.fault_class)},
                              {"basis", ToString(v.basis)},
                              {"causes", v.causes},
                              {"reason", v.reason}});
  }
  j["pairs"] = nlohmann::json::array();
  for (const auto& p : view.pairs) {
    // Healthy pairs are counted, not listed: /status stays small on a large cluster.
    if (p.judgement.status == PairStatus::kPass) continue;
    j["pairs"].push_back({{"a", p.pair.a},
                          {"b", p.pair.b},
                          {"socket", ToString(p.judgement.socket)},
                          {"ib", ToString(p.judgement.ib)},
                          {"class", ToString(p.judgement.verdict.fault_class)},
                          {"causes", p.judgement.verdict.causes},
                          {"localisation", ToString(p.localisation)},
                          {"sweep", p.sweep},
                          {"reason", p.judgement.verdict.reason}});
  }
  return j;
}

// ------------------------------------------------------------------------------------ facade

CoordinatorServer::CoordinatorServer(CoordinatorOptions options, Logger& log)
    : impl_(std::make_unique<Impl>(std::move(options), log)) {}
CoordinatorServer::~CoordinatorServer() { impl_->Stop(); }
Status CoordinatorServer::Start() { return impl_->Start(); }
void CoordinatorServer::Stop() { impl_->Stop(); }
int CoordinatorServer::grpc_port() const { return impl_->grpc_port_; }
int CoordinatorServer::http_port() const { return impl_->http_port_; }
uint64_t CoordinatorServer::RequestSweep() { return impl_->RequestSweep(); }
bool CoordinatorServer::WaitForSweep(uint64_t n, std::chrono::milliseconds t) {
  return impl_->WaitForSweep(n, t);
}
bool CoordinatorServer::WaitForAgents(size_t n, std::chrono::milliseconds t) {
  return impl_->WaitForAgents(n, t);
}
size_t CoordinatorServer::ConnectedAgents() const { return impl_->ConnectedAgents(); }
size_t CoordinatorServer::OutstandingProbes() const { return impl_->OutstandingProbes(); }
CoordinatorView CoordinatorServer::View(bool with_pairs) const { return impl_->View(with_pairs); }
std::string CoordinatorServer::MetricsText() const { return impl_->MetricsText(); }

}  // namespace nccl_triage
