#include "coordinator/server.h"

#include <grpcpp/resource_quota.h>
#include <openssl/crypto.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <deque>
#include <nlohmann/json.hpp>

#include "base/log.h"
#include "coordinator/server_impl.h"
#include "wire/convert.h"

namespace nccl_triage {
namespace {

constexpr size_t kMaxQueuedWrites = 4096;

bool TokenMatches(const std::string& expected, std::string_view got) {
  if (got.size() != expected.size()) return false;
  return CRYPTO_memcmp(expected.data(), got.data(), expected.size()) == 0;
}

// probe.rails as it parses: the loader already checked the text, and a Config built in code
// with a selection that does not parse has no per-rail probes.
std::optional<RailSelection> RailsOf(const ProbeConfig& probe) {
  if (!probe.rails) return std::nullopt;
  auto rails = ParseRailSelection(*probe.rails);
  if (!rails.ok()) return std::nullopt;
  return *rails;
}

}  // namespace

JudgeOptions PairJudgeOptions(const ProbeConfig& probe) {
  // Judged on what the agents run: an assignment carries the size step at or below
  // probe.size_bytes (64 KiB, 1 MiB, 64 MiB, 1 GiB), so 32 MiB configured runs 1 MiB probes, which
  // measure latency and must not be compared with the ports' rate.
  const uint64_t assigned = ProbeSizeBytes(ProbeSizeFor(probe.size_bytes)).value_or(0);
  return {.busbw_min_fraction = probe.busbw_min_fraction,
          .check_bandwidth = assigned >= kBandwidthBoundBytes};
}

// ------------------------------------------------------------------------------------ streams

// One agent's stream. Reads one message at a time; writes go through a queue (the callback API
// allows one outstanding write). Close() may be called from any thread; OnDone deletes it after
// the Impl has forgotten it.
class CoordinatorServer::Impl::Stream final
    : public grpc::ServerBidiReactor<v1::AgentMessage, v1::CoordinatorMessage>,
      public AgentSession {
 public:
  Stream(Impl* impl, grpc::CallbackServerContext* ctx, std::optional<grpc::Status> reject,
         std::string verified_node = "")
      : impl_(impl), peer_(ctx->peer()), verified_node_(std::move(verified_node)) {
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
  // The node its identity token binds the agent to; empty when identities are not checked.
  const std::string& verified_node() const { return verified_node_; }

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
      // An agent never half-closes its stream: a read fails because it went away (it does not
      // see this status then) or because a message did not parse, e.g. a string field that is
      // not UTF-8, which must not end the stream as if all were well.
      impl_->OnStreamEnd(this, "stream closed");
      Close(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                         "stream ended: a message could not be parsed (not protobuf, or a string "
                         "that is not UTF-8), or the agent closed its side"));
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
  std::string verified_node_;
  v1::AgentMessage in_;
  std::mutex wmu_;
  std::deque<v1::CoordinatorMessage> queue_;
  bool writing_ = false;
  bool closed_ = false;
  bool finished_ = false;
  grpc::Status final_status_;
};

// ------------------------------------------------------------------------------------ sessions

CoordinatorServer::Impl::Impl(CoordinatorOptions options, Logger& log)
    : options_(std::move(options)),
      judge_(PairJudgeOptions(options_.config.probe)),
      rails_(RailsOf(options_.config.probe)),
      log_(log),
      service_(this),
      agents_({.max_nodes = options_.max_nodes,
               .node_expiry = options_.node_expiry,
               .heartbeat_timeout = HeartbeatTimeout(options_.config.coordinator)}),
      schedule_(options_.seed),
      verdicts_(std::max(options_.config.coordinator.hold_down, 1)),
      leadership_(options_.leader, options_.leader_label) {
  // Every write of this replica asks the elector first: none leaves after the Lease is lost.
  options_.kube = leadership_.Fence(options_.kube);
  // The writes go through the fence; the watch, a read, around it (a follower's cache is warm
  // when it leads).
  remediation_ = std::make_unique<RemediationStage>(
      RemediationStageOptionsFromConfig(options_.config), options_.kube.get(),
      leadership_.unfenced(), log_, wall_clock_, metrics_);
  if (remediation_->active() && !options_.state_configmap.empty()) {
    state_ = std::make_unique<StateStore>(*options_.kube, options_.state_namespace,
                                          options_.state_configmap, log_);
  }
}

CoordinatorServer::Impl::~Impl() { Stop(); }

std::optional<grpc::Status> CoordinatorServer::Impl::Unauthenticated(
    grpc::CallbackServerContext* ctx, const std::string& what) const {
  if (options_.config.coordinator.identity_only) {
    // Only agents have an identity; the other calls were a shared token's to authorise.
    log_.Warn("coordinator", "rejected " + what + " from " + ctx->peer() +
                                 ": identity-only mode has no shared token to authorise it");
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                        "this coordinator runs in identity-only mode (coordinator.identity_only): "
                        "it accepts agent sessions only, by their node identity");
  }
  if (options_.token.empty()) return std::nullopt;
  const auto& md = ctx->client_metadata();
  auto it = md.find("authorization");
  std::string_view got;
  if (it != md.end()) got = std::string_view(it->second.data(), it->second.size());
  constexpr std::string_view kBearer = "Bearer ";
  const bool bearer = got.substr(0, kBearer.size()) == kBearer;
  if (bearer && TokenMatches(options_.token, got.substr(kBearer.size()))) return std::nullopt;
  log_.Warn("coordinator", "rejected " + what + " from " + ctx->peer() + ": " +
                               (it == md.end() ? "no token" : "wrong token"));
  return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                      it == md.end() ? "missing token" : "invalid token");
}

grpc::ServerBidiReactor<v1::AgentMessage, v1::CoordinatorMessage>*
CoordinatorServer::Impl::NewStream(grpc::CallbackServerContext* ctx) {
  // In identity-only mode the identity token below is the whole authentication.
  if (!options_.config.coordinator.identity_only) {
    if (auto refused = Unauthenticated(ctx, "agent session")) {
      return new Stream(this, ctx, refused);
    }
  }
  std::string verified_node;
  if (options_.identity) {
    const auto& md = ctx->client_metadata();
    auto it = md.find(std::string(kIdentityMetadata));
    StatusOr<std::string> node =
        it == md.end()
            ? StatusOr<std::string>(InvalidArgument("no identity token"))
            : options_.identity->NodeOf(std::string(it->second.data(), it->second.size()));
    if (!node.ok()) {
      std::string why = node.status().message();
      if (it == md.end() && options_.config.coordinator.identity_only) {
        why += " (identity-only mode: an agent needs agent.identity_token_file; a shared token is "
               "not accepted)";
      }
      log_.Warn("coordinator", "rejected agent session from " + ctx->peer() + ": identity: " + why);
      const bool retry = node.status().code() == StatusCode::kUnavailable;
      return new Stream(this, ctx,
                        grpc::Status(retry ? grpc::StatusCode::UNAVAILABLE
                                           : grpc::StatusCode::UNAUTHENTICATED,
                                     "identity: " + why));
    }
    verified_node = *node;
  }
  std::lock_guard lock(mu_);
  if (stopping_) {
    return new Stream(this, ctx,
                      grpc::Status(grpc::StatusCode::UNAVAILABLE, "coordinator shutting down"));
  }
  if (!leadership_.Leading()) {
    // The agent retries, and the Service sends it to the pod with the leader label (on a stale
    // label, for the seconds until the leader moves it, it may come here again).
    return new Stream(this, ctx,
                      grpc::Status(grpc::StatusCode::UNAVAILABLE,
                                   "this coordinator replica is not the leader"));
  }
  return new Stream(this, ctx, std::nullopt, std::move(verified_node));
}

std::function<bool(std::string_view)> CoordinatorServer::Impl::SweepTokenCheck() const {
  if (options_.token.empty()) return nullptr;
  return [token = options_.token](std::string_view got) { return TokenMatches(token, got); };
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
  if (options_.config.coordinator.identity_only) {
    if (!options_.identity) {
      return InvalidArgument(
          "coordinator.identity_only needs coordinator.verify_node_identity: without it no agent "
          "would be authenticated");
    }
    log_.Info("coordinator",
              "identity-only mode: agents are accepted by their node identity token alone; "
              "Triage, RecordIncident and POST /sweep are refused (no shared token)");
  } else if (options_.token.empty()) {
    log_.Warn("coordinator", "no token configured: agent sessions are not authenticated");
  }
  // The port is ours: the gate accepts, caps the connections and hands them to gRPC.
  auto addr = ParseListenAddress(options_.config.coordinator.listen);
  if (!addr.ok()) return addr.status();
  auto listening = ListenTcp(addr->first, addr->second);
  if (!listening.ok()) return Unavailable("coordinator: " + listening.status().message());
  grpc_port_ = listening->port;
  acceptor_ = builder.experimental().AddExternalConnectionAcceptor(
      grpc::ServerBuilder::experimental_type::ExternalConnectionType::FROM_FD, creds);
  builder.RegisterService(&service_);
  // Notice dead peers even when no heartbeat is due.
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, 20'000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 10'000);
  // Keepalive enforcement: a client pinging more often than every 5 s is sent GOAWAY at the
  // second offence.
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 5'000);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 2);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  // An agent holds one session stream, `triage` one call at a time.
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, options_.max_streams_per_connection);
  // A connection that never finishes its handshake, or holds no call, is closed.
  builder.AddChannelArgument(GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS,
                             static_cast<int>(options_.handshake_timeout.count()));
  builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_IDLE_MS,
                             static_cast<int>(options_.idle_connection_timeout.count()));
  grpc::ResourceQuota quota("nccl-triage-coordinator");
  quota.Resize(options_.memory_quota_bytes);
  builder.SetResourceQuota(quota);
  builder.SetMaxReceiveMessageSize(4 << 20);
  server_ = builder.BuildAndStart();
  if (!server_) {
    ::close(listening->fd);
    return Unavailable("coordinator: cannot serve on " + options_.config.coordinator.listen);
  }
  size_t cap = options_.max_connections > 0 ? options_.max_connections : options_.max_nodes + 256;
  // Each connection costs two descriptors (gRPC's and the gate's duplicate): the cap must leave
  // the process some of its own, or accept() and gRPC would fail for everyone.
  if (rlimit rl{}; options_.max_connections == 0 && ::getrlimit(RLIMIT_NOFILE, &rl) == 0 &&
                   rl.rlim_cur != RLIM_INFINITY) {
    cap = ConnectionCapForFdLimit(cap, rl.rlim_cur);
  }
  gate_ = std::make_unique<ConnectionGate>(log_, cap);
  if (Status st = gate_->Start(listening->fd, acceptor_.get()); !st.ok()) return st;
  if (const std::string& http = options_.config.coordinator.http_listen; !http.empty()) {
    auto addr = ParseListenAddress(http);
    if (!addr.ok()) return addr.status();
    http_ = std::make_unique<HttpServer>(&log_);
    AddCoordinatorEndpoints(*http_, {.ready =
                                         [this] {
                                           std::lock_guard lock(mu_);
                                           return started_ && !stopping_;
                                         },
                                     .not_ready_reason = [this] { return NotReadyReason(); },
                                     .metrics = [this] { return metrics_.Text(); },
                                     .view = [this] { return View(true); },
                                     .request_sweep = [this] { return RequestSweep(); },
                                     .sweep_token_matches = SweepTokenCheck(),
                                     .authorizer = options_.http_authorizer});
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
  remediation_->Start();
  sweep_thread_ = std::jthread([this](std::stop_token st) { SweepLoop(st); });
  if (leadership_.elects()) metrics_.SetLeader(false);  // until the Lease is ours
  leadership_.Start([this](bool leading) { OnLeadership(leading); });
  log_.Info("coordinator", "listening for agents on port " + std::to_string(grpc_port_) +
                               " (at most " + std::to_string(cap) + " connections)" +
                               (http_port_ ? ", HTTP on port " + std::to_string(http_port_) : ""));
  return Status::Ok();
}

void CoordinatorServer::Impl::Stop() {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    stopping_ = true;
    FinishTriagesLocked("coordinator shutting down");
    cv_.notify_all();
  }
  // Out of the Service first, before the agents are closed and long before the Lease is given
  // up: they then reconnect to the successor's label instead of to a replica that refuses them.
  leadership_.StopLabel();
  if (sweep_thread_.joinable()) {
    sweep_thread_.request_stop();
    sweep_thread_.join();
  }
  {
    std::lock_guard lock(mu_);
    for (const auto& [node, agent] : agents_.connected()) {
      StreamOf(agent.session)
          ->Close(grpc::Status(grpc::StatusCode::UNAVAILABLE, "coordinator shutting down"));
    }
    agents_.DropConnections();
  }
  // After the sweep thread: nothing reads the nodes any more.
  remediation_->Stop();
  // After the sweep thread: no remediation runs any more when the Lease is given up.
  leadership_.StopElection();
  if (gate_) gate_->Stop();
  if (server_) server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  if (http_) http_->Stop();
}

bool CoordinatorServer::Impl::OnMessage(Stream* stream, const v1::AgentMessage& msg) {
  std::lock_guard lock(mu_);
  const std::string* known = agents_.NodeOf(stream);
  auto reject = [&](grpc::StatusCode code, const std::string& why) {
    log_.Warn("coordinator", "closing session from " + stream->peer() +
                                 (known ? " (" + *known + ")" : "") + ": " + why);
    if (known) {
      const std::string node = *known;
      DisconnectLocked(node, why);
    }
    stream->Close(grpc::Status(code, why));
    return false;
  };

  if (msg.has_hello()) {
    if (known) {
      return reject(grpc::StatusCode::INVALID_ARGUMENT, "second hello on one session");
    }
    const v1::Hello& hello = msg.hello();
    if (hello.protocol_version() != kProtocolVersion) {
      return reject(grpc::StatusCode::FAILED_PRECONDITION,
                    "protocol version " + std::to_string(hello.protocol_version()) +
                        " not supported (this coordinator speaks " +
                        std::to_string(kProtocolVersion) + ")");
    }
    auto info = NodeInfoFromHello(hello, options_.config.coordinator.topology_label);
    if (!info.ok()) return reject(grpc::StatusCode::INVALID_ARGUMENT, info.status().message());
    const std::string node = info->name;
    if (options_.identity && node != stream->verified_node()) {
      // A token holder posing as another node: the real agent keeps its session.
      return reject(grpc::StatusCode::PERMISSION_DENIED,
                    "hello as " + node + ", but the identity token is of node " +
                        stream->verified_node());
    }
    const AgentTable::Admission admission = agents_.Admit(node);
    if (!admission.admitted) {
      return reject(
          grpc::StatusCode::RESOURCE_EXHAUSTED,
          "node table full: " + std::to_string(options_.max_nodes) + " nodes, all connected");
    }
    if (!admission.evicted.empty()) {
      log_.Info("coordinator", "node table full (" + std::to_string(options_.max_nodes) +
                                   "): forgetting " + admission.evicted +
                                   ", disconnected longest");
      verdicts_.Forget(admission.evicted);
    }
    if (const AgentTable::Agent* old = agents_.Find(node)) {
      // The newest session wins: a restarted agent must not wait for the old one to time out.
      Stream* old_stream = StreamOf(old->session);
      DisconnectLocked(node, "replaced by a new session from " + stream->peer());
      old_stream->Close(grpc::Status(grpc::StatusCode::ALREADY_EXISTS,
                                     "replaced by a new session of the same node"));
    }
    const std::optional<NodeProbeAvailability> probe_before =
        agents_.Connect(node, stream, *info, stream->peer(), SteadyClock::now());
    v1::CoordinatorMessage welcome;
    welcome.mutable_welcome()->set_protocol_version(kProtocolVersion);
    welcome.mutable_welcome()->set_heartbeat_interval_seconds(
        static_cast<uint32_t>(HeartbeatIntervalSeconds(options_.config.coordinator)));
    stream->Send(std::move(welcome));
    // After a restart of this coordinator, the agents still know which faults it had confirmed.
    std::vector<std::string> resumed;
    if (hello.has_last_verdicts()) {
      resumed = verdicts_.Resume(node, AgentVerdictsFromProto(hello.last_verdicts()), sweeps_done_);
    }
    if (!resumed.empty()) {
      metrics_.SetFaults(verdicts_.hold_down().Confirmed(), wall_clock_.NowUnixMs());
      log_.Info("coordinator", "agent " + node +
                                   ": resumed the fault(s) confirmed before this coordinator "
                                   "started; now held: " +
                                   std::to_string(verdicts_.hold_down().Confirmed().size()));
      for (const auto& n : resumed) {
        if (n != node) SendVerdictsLocked(n);
      }
    }
    OnProbeAvailabilityLocked(node, probe_before, true);
    if (verdicts_.Find(node) != nullptr) SendVerdictsLocked(node);
    metrics_.SetAgentsConnected(agents_.size());
    log_.Info("coordinator", "agent " + node + " connected from " + stream->peer());
    cv_.notify_all();
    return true;
  }
  if (!known) {
    return reject(grpc::StatusCode::INVALID_ARGUMENT, "the first message must be a hello");
  }
  const std::string node = *known;
  if (!agents_.Heard(node, stream, SteadyClock::now())) return false;
  switch (msg.body_case()) {
    case v1::AgentMessage::kHeartbeat:
      if (msg.heartbeat().has_summary()) {
        NodeInfo info = agents_.Find(node)->info;
        const std::optional<NodeProbeAvailability> before = info.probe;
        ApplySummary(msg.heartbeat().summary(), info);
        agents_.Update(node, info);
        if (OnProbeAvailabilityLocked(node, before, false)) SendVerdictsLocked(node);
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
  if (std::optional<std::string> node = agents_.EndSession(stream)) DisconnectLocked(*node, why);
}

void CoordinatorServer::Impl::DisconnectLocked(const std::string& node, const std::string& why) {
  if (!agents_.Disconnect(node, SteadyClock::now())) return;
  log_.Info("coordinator", "agent " + node + " disconnected: " + why);
  // Every probe it was part of is lost; its peer's child is cancelled now, not at the deadline.
  for (auto& run : runs_) ApplyLocked(*run, run->OnAgentLost(node, why));
  if (sweep_) sweep_->RemoveNode(node);
  metrics_.SetAgentsConnected(agents_.size());
  CountProbeUnavailableLocked();
  cv_.notify_all();
}

void CoordinatorServer::Impl::HousekeepingLocked() {
  const AgentTable::Overdue overdue = agents_.Housekeeping(SteadyClock::now());
  for (const auto& node : overdue.forgotten) {
    log_.Info("coordinator", "forgetting node " + node + ": disconnected for " +
                                 std::to_string(options_.node_expiry.count() / 1000) + "s");
    verdicts_.Forget(node);
  }
  for (const auto& [node, session] : overdue.silent) {
    const auto timeout = HeartbeatTimeout(options_.config.coordinator);
    DisconnectLocked(node, "no heartbeat for " + std::to_string(timeout.count() / 1000) + "s");
    StreamOf(session)->Close(grpc::Status(grpc::StatusCode::UNAVAILABLE, "heartbeat timeout"));
  }
}

// ------------------------------------------------------------------------------------ probes

CoordinatorServer::Impl::Stream* CoordinatorServer::Impl::StreamOf(AgentSession* session) {
  return static_cast<Stream*>(session);
}

void CoordinatorServer::Impl::SendLocked(const std::string& node, v1::CoordinatorMessage msg) {
  if (const AgentTable::Agent* agent = agents_.Find(node)) {
    StreamOf(agent->session)->Send(std::move(msg));
  }
}

void CoordinatorServer::Impl::ApplyLocked(PairRun& run, const PairRunActions& actions) {
  for (const PairRunAction& a : actions) {
    v1::CoordinatorMessage m;
    switch (a.kind) {
      case PairRunAction::Kind::kAssign: {
        probes_[a.probe_id] = {&run, a.rank};
        v1::ProbeAssignment* as = m.mutable_assignment();
        as->set_probe_id(a.probe_id);
        as->set_peer(a.peer);
        as->set_mode(ToProto(a.mode));
        as->set_rank(static_cast<uint32_t>(a.rank));
        as->set_size(ProbeSizeFor(options_.config.probe.size_bytes));
        as->set_deadline_seconds(
            static_cast<uint32_t>(ProbeDeadlineSeconds(options_.config.probe)));
        as->set_sweep(sweeps_started_);
        as->set_round(static_cast<uint32_t>(current_round_));
        if (a.rail >= 0) as->set_rail(static_cast<uint32_t>(a.rail));
        break;
      }
      case PairRunAction::Kind::kRelayUniqueId:
        m.mutable_unique_id()->set_probe_id(a.probe_id);
        m.mutable_unique_id()->set_id(a.text);
        break;
      case PairRunAction::Kind::kCancel:
        probes_.erase(a.probe_id);
        m.mutable_cancel()->set_probe_id(a.probe_id);
        m.mutable_cancel()->set_reason(a.text);
        break;
      case PairRunAction::Kind::kPhaseOver:
        // A rail phase is an IB probe of one rail: its own label value, so that mode="ib" still
        // counts one per pair and the rails (up to 8 per pair) do not swamp it.
        metrics_.CountProbe(a.rail >= 0 ? kRailProbeMode : ToString(a.mode), a.text);
        continue;
    }
    SendLocked(a.node, std::move(m));
  }
}

void CoordinatorServer::Impl::OnUniqueIdLocked(const std::string& node, const v1::UniqueId& id) {
  auto it = probes_.find(id.probe_id());
  if (it == probes_.end() || it->second.run->node(it->second.rank) != node ||
      it->second.rank != 0) {
    log_.Warn("coordinator", "ignored a unique id from " + node + " for probe '" +
                                 id.probe_id().substr(0, 64) + "' it does not hold as rank 0");
    return;
  }
  PairRun& run = *it->second.run;
  if (id.id().size() != kUniqueIdBytes) {
    log_.Warn("coordinator", "malformed unique id from " + node + " (" +
                                 std::to_string(id.id().size()) + " bytes, want 128)");
    ApplyLocked(run, run.AbortPhase(id.probe_id(), "malformed unique id from " + node));
  } else {
    ApplyLocked(run, run.OnUniqueId(id.probe_id(), id.id()));
  }
  if (run.done()) cv_.notify_all();
}

void CoordinatorServer::Impl::OnReportLocked(const std::string& node,
                                             const v1::ProbeReport& report) {
  auto it = probes_.find(report.probe_id());
  if (it == probes_.end() || it->second.run->node(it->second.rank) != node) {
    // Late (the phase already ended) or not this node's: nothing to do.
    log_.Debug("coordinator", "ignored a report from " + node + " for probe '" +
                                  report.probe_id().substr(0, 64) + "'");
    return;
  }
  PairRun& run = *it->second.run;
  const std::optional<PairRun::Held> held = run.Holding(report.probe_id());
  probes_.erase(it);
  if (!held) return;
  const std::optional<SteadyTime> before = run.NextDeadline();
  ApplyLocked(
      run, run.OnReport(report.probe_id(),
                        FromProbeReport(report, held->mode, held->rank, run.node(1 - held->rank)),
                        SteadyClock::now()));
  const std::optional<SteadyTime> after = run.NextDeadline();
  // The round waits until its earliest deadline: wake it when the run ended or when a deadline
  // came closer (a rank failed and its peer's grace began).
  if (run.done() || (after && before && *after < *before)) cv_.notify_all();
}

bool CoordinatorServer::Impl::OnProbeAvailabilityLocked(
    const std::string& node, const std::optional<NodeProbeAvailability>& before, bool hello) {
  const NodeInfo& info = agents_.Known(node);
  const bool blind = ProbesCannotRun(info);
  if (blind && (hello || info.probe != before)) {
    log_.Warn("coordinator", "agent " + node + ": " + ProbesUnavailableText(info) +
                                 "; left out of sweeps and triages until it can");
  } else if (!blind && before && before->CannotRun()) {
    log_.Info("coordinator", "agent " + node + ": probes can run again (" +
                                 std::string(ProbeAvailabilityReason(info)) + ")");
  }
  CountProbeUnavailableLocked();
  return verdicts_.UpdateProbeAvailability(node, info);
}

void CoordinatorServer::Impl::CountProbeUnavailableLocked() {
  std::map<std::string, size_t> by_reason;
  for (const auto& [node, a] : agents_.connected()) {
    if (ProbesCannotRun(a.info)) ++by_reason[a.info.probe->reason];
  }
  metrics_.SetProbeUnavailable(by_reason);
}

void CoordinatorServer::Impl::SendVerdictsLocked(const std::string& node) {
  if (!agents_.Connected(node)) return;
  v1::CoordinatorMessage m;
  v1::Verdicts* v = m.mutable_verdicts();
  v->set_sweep(sweeps_done_ > 0 ? sweeps_done_ : sweeps_started_);
  const AgentVerdicts verdicts = verdicts_.ForAgent(node);
  v1::NodeVerdict* out = v->mutable_node();  // present but unspecified until there is a verdict
  if (verdicts.node) {
    const PublishedNodeVerdict& node_verdict = verdicts.node->verdict;
    out->set_fault_class(ToProto(node_verdict.fault_class));
    out->set_basis(ToProto(node_verdict.basis));
    for (const auto& c : node_verdict.causes) out->add_causes(c);
    out->set_reason(node_verdict.reason);
    out->set_confirmed(verdicts.node->confirmed);
    out->set_localisation(ToProto(verdicts.node->localisation));
  }
  for (const auto& p : verdicts.pairs) {
    *v->add_pairs() = ToProto(p.peer, p.verdict, p.socket, p.ib, p.localisation, p.confirmed);
  }
  SendLocked(node, std::move(m));
}

size_t CoordinatorServer::Impl::ConnectedAgents() const {
  std::lock_guard lock(mu_);
  return agents_.size();
}

size_t CoordinatorServer::Impl::OutstandingProbes() const {
  std::lock_guard lock(mu_);
  return probes_.size();
}

bool CoordinatorServer::Impl::WaitForAgents(size_t n, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, timeout, [&] { return agents_.size() >= n || stopping_; }) &&
         agents_.size() >= n;
}

CoordinatorView CoordinatorServer::Impl::View(bool with_pairs) const {
  CoordinatorView view = PartsView(with_pairs);
  view.leadership = leadership_.View();  // not under mu_ (leadership.h)
  return view;
}

CoordinatorView CoordinatorServer::Impl::PartsView(bool with_pairs) const {
  std::lock_guard lock(mu_);
  const std::optional<RemediationStatus> remediation = remediation_->last_remediation();
  const std::optional<ValidationStatus> validation = remediation_->last_validation();
  return BuildCoordinatorView(
      {.known = agents_.known(),
       .peers = agents_.peers(),
       .connected = [this](const std::string& n) { return agents_.Connected(n); },
       .verdicts = verdicts_,
       .schedule = schedule_,
       .sweeps_done = sweeps_done_,
       .last_sweep_rounds = last_sweep_rounds_,
       .remediation = remediation ? &*remediation : nullptr,
       .validation = validation ? &*validation : nullptr},
      with_pairs);
}

// ------------------------------------------------------------------------------ leader election

void CoordinatorServer::Impl::OnLeadership(bool leading) {
  std::lock_guard lock(mu_);
  leadership_.Set(leading);
  cv_.notify_all();
  metrics_.SetLeader(leading);
  if (leading) {
    // The state a former leader kept is read again before this replica's first sweep as leader
    // (SyncStateLocked): what it read as a standby may be old.
    state_restored_ = false;
    log_.Info("coordinator", "leading (lease " + leadership_.LeaseRef() +
                                 "): accepting agents, sweeping");
    return;
  }
  log_.Warn("coordinator", "not leading any more (lease " + leadership_.LeaseRef() +
                               "): closing " + std::to_string(agents_.size()) +
                               " agent session(s), no sweep or remediation from here");
  for (const auto& [node, agent] : agents_.connected()) {
    StreamOf(agent.session)
        ->Close(grpc::Status(grpc::StatusCode::UNAVAILABLE,
                             "this coordinator replica is not the leader any more"));
  }
  // The leader's series are the cluster's: a standby exporting its last ones would keep alerts
  // firing (or resolving) beside the new leader's.
  metrics_.SetFaults({}, wall_clock_.NowUnixMs());
  metrics_.SetRailProbes({});
  metrics_.SetUnprobedSweeps({});
  remediation_->ClearMetrics();
}

std::string CoordinatorServer::Impl::NotReadyReason() const {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return "shutting down";
    if (!started_) return "starting";
  }
  return "";
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
