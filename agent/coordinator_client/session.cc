#include "coordinator_client/session.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <set>
#include <thread>

#include "base/files.h"
#include "base/log.h"
#include "core/gpu_holders.h"
#include "core/gpu_use.h"
#include "core/rail_selection.h"
#include "core/rails.h"
#include "nccl_triage/v1/agent.grpc.pb.h"
#include "wire/convert.h"
#include "wire/grpc_status.h"

namespace nccl_triage {
namespace {

int64_t NowUnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// A text from the coordinator for a log line or a report: bounded (a cancel reason of megabytes
// was logged whole), never split inside a character.
std::string Bounded(const std::string& text, size_t max) {
  return text.size() <= max ? text : CutWireText(text, max) + "...";
}

// The metadata key of the identity token (coordinator/node_identity.h's kIdentityMetadata; the
// client does not depend on the server's component).
constexpr std::string_view kIdentityMetadataKey = "x-nccl-triage-identity";

// A projected service-account token: one JWT line, a few KiB; anything else is not one.
std::optional<std::string> ReadIdentityToken(const std::string& path) {
  auto text = ReadWholeFile(path, "identity token", 16 * 1024);
  if (!text.ok()) return std::nullopt;
  std::string token = std::move(text).value();
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r' || token.back() == ' ')) {
    token.pop_back();
  }
  if (token.empty()) return std::nullopt;
  return token;
}

// Pair verdicts taken from one Verdicts message.
constexpr size_t kMaxPairVerdicts = 256;

}  // namespace

std::chrono::milliseconds ReconnectDelay(int attempt, std::chrono::milliseconds initial,
                                         std::chrono::milliseconds max, double random01) {
  double d = static_cast<double>(initial.count()) * std::pow(2.0, std::min(attempt, 30));
  d = std::min(d, static_cast<double>(max.count()));
  random01 = std::clamp(random01, 0.0, 1.0);
  return std::chrono::milliseconds(static_cast<int64_t>(d / 2 + d / 2 * random01));
}

// One stream to the coordinator, from Hello to its end.
class CoordinatorSession::Connection {
 public:
  Connection(CoordinatorSession& owner, AgentServices& services)
      : owner_(owner),
        services_(services),
        parallel_(std::clamp(services.config().probe.parallel_rails, 1, kMaxParallelRails)),
        heartbeat_(owner.options_.heartbeat) {}

  // Runs the stream to its end; returns why it ended, and whether a Welcome was received.
  std::pair<std::string, bool> Run(std::stop_token stop) {
    const SessionOptions& o = owner_.options_;
    std::shared_ptr<grpc::ChannelCredentials> creds;
    if (o.tls) {
      grpc::SslCredentialsOptions ssl;
      ssl.pem_root_certs = o.ca_pem;
      creds = grpc::SslCredentials(ssl);
    } else {
      creds = grpc::InsecureChannelCredentials();
    }
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 20'000);
    args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 10'000);
    // A channel of its own for every attempt: a fresh connection, no shared subchannel state.
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    auto channel = grpc::CreateCustomChannel(o.target, creds, args);
    auto stub = v1::Coordinator::NewStub(channel);
    if (!o.token.empty()) ctx_.AddMetadata("authorization", "Bearer " + o.token);
    if (!o.identity_token_file.empty()) {
      if (auto identity = ReadIdentityToken(o.identity_token_file)) {
        ctx_.AddMetadata(std::string(kIdentityMetadataKey), *identity);
      } else {
        owner_.log_.Warn("session", "cannot read the identity token '" + o.identity_token_file +
                                        "': a coordinator that checks identities will refuse");
      }
    }
    std::stop_callback cancel_on_stop(stop, [this] { ctx_.TryCancel(); });
    stream_ = stub->Session(&ctx_);

    v1::AgentMessage hello;
    v1::Hello* h = hello.mutable_hello();
    h->set_protocol_version(kProtocolVersion);
    h->set_node(NodeName());
    h->set_agent_version(o.version);
    for (const auto& [k, v] : o.labels) (*h->mutable_labels())[k] = v;
    h->set_parallel_probes(static_cast<uint32_t>(parallel_));
    *h->mutable_summary() = Summary();
    {
      std::lock_guard lock(summary_mu_);
      last_summary_ = h->summary().SerializeAsString();
    }
    {
      std::lock_guard lock(owner_.last_verdicts_mu_);
      if (!owner_.last_verdicts_.empty()) {
        h->mutable_last_verdicts()->ParseFromString(owner_.last_verdicts_);
      }
    }
    Write(hello);

    // One worker per probe that may run at once: only rail probes of one pair overlap, each on
    // its own GPU.
    std::vector<std::jthread> workers;
    for (int i = 0; i < parallel_; ++i) {
      workers.emplace_back([this](std::stop_token st) { ProbeLoop(st); });
    }
    std::jthread beat([this](std::stop_token st) { HeartbeatLoop(st); });

    v1::CoordinatorMessage msg;
    while (stream_->Read(&msg)) Handle(msg);

    // The stream is over: stop the threads (each worker cancels its running probe) and collect
    // the status.
    {
      std::lock_guard lock(mu_);
      ended_ = true;
    }
    cv_.notify_all();
    beat.request_stop();
    for (auto& w : workers) w.request_stop();
    {
      std::lock_guard lock(mu_);
      for (auto& [id, probe_stop] : running_) probe_stop->request_stop();
    }
    cv_.notify_all();
    beat.join();
    for (auto& w : workers) w.join();
    grpc::Status status = stream_->Finish();
    std::string why = stop.stop_requested() ? "stopping" : GrpcStatusText(status);
    if (status.error_code() == grpc::StatusCode::UNAUTHENTICATED ||
        status.error_code() == grpc::StatusCode::PERMISSION_DENIED) {
      // The coordinator says "identity: ..." when it refused the service-account token, and
      // PERMISSION_DENIED when that token names another node than the hello.
      const bool identity = status.error_code() == grpc::StatusCode::PERMISSION_DENIED ||
                            status.error_message().rfind("identity:", 0) == 0;
      owner_.log_.Error("session",
                        "the coordinator at " + o.target +
                            " rejected this agent: " + GrpcStatusText(status) +
                            (identity ? " (check agent.identity_token_file and the node name)"
                                      : " (check the shared token)"));
    }
    return {why, welcomed_};
  }

 private:
  std::string NodeName() {
    if (!services_.NodeName().empty()) return services_.NodeName();
    auto report = services_.LatestReport();
    return report ? report->node : std::string();
  }

  v1::NodeSummary Summary() {
    auto snapshot = services_.LatestSnapshot();
    auto report = services_.LatestReport();
    AgentStateView view = services_.state().View();
    int cuda = 0;
    for (const auto& [key, rec] : view.probes) {
      if (rec && rec->result.cuda_driver_version > 0) cuda = rec->result.cuda_driver_version;
    }
    v1::NodeSummary summary =
        MakeNodeSummary(snapshot.get(), report.get(), view.NcclVersion(), cuda, GpusBusy());
    SetProbeAvailability(view.probe_availability, summary);
    return summary;
  }

  // No idle GPU (core/gpu_use.h) and probe.allow_when_gpus_busy off.
  bool GpusBusy() {
    if (services_.config().probe.allow_when_gpus_busy) return false;
    auto snapshot = services_.LatestSnapshot();
    return snapshot && JudgeGpuUse(*snapshot).idle.empty();
  }

  // The node's summary when it differs from the one sent last (which it then becomes).
  std::optional<v1::NodeSummary> ChangedSummary() {
    v1::NodeSummary summary = Summary();
    std::string bytes = summary.SerializeAsString();
    std::lock_guard lock(summary_mu_);
    if (bytes == last_summary_) return std::nullopt;
    last_summary_ = std::move(bytes);
    return summary;
  }

  bool Write(const v1::AgentMessage& m) {
    std::lock_guard lock(write_mu_);
    if (write_failed_) return false;
    if (!stream_->Write(m)) write_failed_ = true;
    return !write_failed_;
  }

  void Handle(const v1::CoordinatorMessage& msg) {
    switch (msg.body_case()) {
      case v1::CoordinatorMessage::kWelcome: {
        welcomed_ = true;
        owner_.sessions_++;
        if (msg.welcome().heartbeat_interval_seconds() > 0) {
          std::lock_guard lock(mu_);
          heartbeat_ = std::chrono::seconds(
              std::min<uint32_t>(msg.welcome().heartbeat_interval_seconds(), 300));
        }
        cv_.notify_all();
        services_.SetCoordinatorStatus("connected to " + owner_.options_.target);
        owner_.log_.Info("session", "connected to the coordinator at " + owner_.options_.target);
        break;
      }
      case v1::CoordinatorMessage::kAssignment: {
        std::lock_guard lock(mu_);
        const std::string& id = msg.assignment().probe_id();
        const bool known =
            running_.contains(id) || std::any_of(queue_.begin(), queue_.end(),
                                                 [&](const auto& q) { return q.probe_id() == id; });
        // The coordinator overlaps no more than the hello's parallel_probes, but a probe it
        // cancelled may still be ending when the next ones come: those wait for a worker.
        if (known || queue_.size() >= static_cast<size_t>(parallel_)) {
          const std::string why = known ? "busy: this probe id already runs"
                                        : "busy: " + std::to_string(parallel_) +
                                              " probe(s) already wait (probe.parallel_rails)";
          owner_.log_.Warn("session", "refused probe " + Bounded(id, 64) + ": " + why);
          Refuse(id, why);
          break;
        }
        queue_.push_back(msg.assignment());
        cv_.notify_all();
        break;
      }
      case v1::CoordinatorMessage::kUniqueId: {
        std::lock_guard lock(mu_);
        if (msg.unique_id().id().size() == kUniqueIdBytes) {
          if (relays_.size() < 4 * kMaxParallelRails) {
            relays_[msg.unique_id().probe_id()] = msg.unique_id().id();
          }
        } else {
          owner_.log_.Warn("session", "ignored a malformed unique id from the coordinator");
        }
        cv_.notify_all();
        break;
      }
      case v1::CoordinatorMessage::kCancel: {
        std::lock_guard lock(mu_);
        const std::string& id = msg.cancel().probe_id();
        if (auto running = running_.find(id); running != running_.end()) {
          owner_.log_.Info("session", "probe " + Bounded(id, 64) +
                                          " cancelled: " + Bounded(msg.cancel().reason(), 200));
          running->second->request_stop();
        }
        for (auto it = queue_.begin(); it != queue_.end(); ++it) {
          if (it->probe_id() == id) {
            Refuse(id, "cancelled: " + Bounded(msg.cancel().reason(), 200));
            queue_.erase(it);
            break;
          }
        }
        cancelled_.insert(id);
        if (cancelled_.size() > 64) cancelled_.erase(cancelled_.begin());
        cv_.notify_all();
        break;
      }
      case v1::CoordinatorMessage::kVerdicts:
        ApplyVerdicts(msg.verdicts());
        break;
      default:
        owner_.log_.Warn("session", "ignored an empty message from the coordinator");
        break;
    }
  }

  void Refuse(const std::string& probe_id, const std::string& why) {
    v1::AgentMessage m;
    v1::ProbeReport* r = m.mutable_probe_report();
    r->set_probe_id(probe_id);
    r->set_outcome(v1::PROBE_OUTCOME_NOT_RUN);
    r->set_skipped_reason(why);
    Write(m);
  }

  void ApplyVerdicts(const v1::Verdicts& v) {
    {
      std::lock_guard lock(owner_.last_verdicts_mu_);
      owner_.last_verdicts_ = v.SerializeAsString();
    }
    if (v.has_node() && v.node().fault_class() != v1::FAULT_CLASS_UNSPECIFIED) {
      NodeVerdict nv;
      nv.fault_class = FromProto(v.node().fault_class());
      nv.basis = FromProto(v.node().basis());
      nv.causes = CatalogueCauses(v.node().causes());
      nv.reason = CutWireText(v.node().reason());
      nv.confirmed = v.node().confirmed() && v.node().localisation() == v1::LOCALISATION_NODE;
      for (const auto& p : v.pairs()) {
        if (nv.confirmed_links.size() >= kMaxPairVerdicts) break;
        if (p.confirmed() && p.localisation() == v1::LOCALISATION_LINK && ValidNodeName(p.peer()))
          nv.confirmed_links.push_back(p.peer());
      }
      services_.SetNodeVerdict(nv);
    }
    std::set<std::string> now;
    for (const auto& p : v.pairs()) {
      // The coordinator sends at most a few hundred (every unhealthy pair, a few healthy ones);
      // more is not a coordinator to believe, and each one is a series and part of /status.
      if (now.size() >= kMaxPairVerdicts) break;
      if (!ValidNodeName(p.peer())) continue;
      services_.SetPairVerdict(p.peer(), FromProto(p));
      now.insert(p.peer());
    }
    for (const auto& peer : peers_) {
      if (!now.count(peer)) services_.RemovePeer(peer);
    }
    peers_ = std::move(now);
  }

  void HeartbeatLoop(std::stop_token stop) {
    std::unique_lock lock(mu_);
    while (!stop.stop_requested() && !ended_) {
      cv_.wait_for(lock, heartbeat_, [&] { return stop.stop_requested() || ended_; });
      if (stop.stop_requested() || ended_) return;
      lock.unlock();
      v1::AgentMessage m;
      m.mutable_heartbeat()->set_sent_at_unix_ms(static_cast<uint64_t>(NowUnixMs()));
      if (auto summary = ChangedSummary()) *m.mutable_heartbeat()->mutable_summary() = *summary;
      Write(m);
      lock.lock();
    }
  }

  void ProbeLoop(std::stop_token stop) {
    for (;;) {
      v1::ProbeAssignment a;
      std::stop_source probe_stop;
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [&] { return stop.stop_requested() || ended_ || !queue_.empty(); });
        if (stop.stop_requested() || ended_) return;
        a = queue_.front();
        queue_.pop_front();
        running_[a.probe_id()] = &probe_stop;
        if (cancelled_.count(a.probe_id())) probe_stop.request_stop();
      }
      std::stop_callback forward(stop, [&probe_stop] { probe_stop.request_stop(); });
      v1::AgentMessage out;
      *out.mutable_probe_report() = RunAssignment(a, probe_stop.get_token());
      {
        std::lock_guard lock(mu_);
        running_.erase(a.probe_id());
        relays_.erase(a.probe_id());
      }
      Write(out);
      // The summary may have changed (the probe told the NCCL version): say so at once.
      if (auto summary = ChangedSummary()) {
        v1::AgentMessage m;
        m.mutable_heartbeat()->set_sent_at_unix_ms(static_cast<uint64_t>(NowUnixMs()));
        *m.mutable_heartbeat()->mutable_summary() = std::move(*summary);
        Write(m);
      }
    }
  }

  v1::ProbeReport RunAssignment(const v1::ProbeAssignment& a, std::stop_token stop) {
    v1::ProbeReport refused;
    refused.set_probe_id(a.probe_id());
    refused.set_outcome(v1::PROBE_OUTCOME_NOT_RUN);
    auto mode = FromProto(a.mode());
    auto size = ProbeSizeBytes(a.size());
    if (!mode || !size || a.rank() > 1 || !ValidNodeName(a.peer()) || a.peer() == NodeName()) {
      refused.set_skipped_reason("rejected: the assignment is outside the closed set");
      owner_.log_.Warn("session", "refused malformed assignment " + a.probe_id().substr(0, 64));
      return refused;
    }
    auto snapshot = services_.LatestSnapshot();
    // The coordinator names a rail; this node's own table says which HCA port and GPU it is.
    std::optional<Rail> rail;
    if (a.has_rail()) {
      const std::vector<Rail> table = snapshot ? RailTable(*snapshot) : std::vector<Rail>{};
      auto it = std::find_if(table.begin(), table.end(),
                             [&](const Rail& r) { return r.index == static_cast<int>(a.rail()); });
      if (*mode != ProbeMode::kIb || it == table.end()) {
        refused.set_outcome(v1::PROBE_OUTCOME_UNAVAILABLE);
        refused.set_detail(*mode != ProbeMode::kIb
                               ? "rejected: a rail is for an IB probe only"
                               : "rail " + std::to_string(a.rail()) + ": this node has " +
                                     std::to_string(table.size()) + " rail(s)");
        return refused;
      }
      rail = *it;
    }
    // The probe runs on an idle GPU: the GPU nearest the rail's HCA when a rail is assigned (and
    // the table knows one), else the first idle GPU. A busy one skips the probe unless
    // probe.allow_when_gpus_busy lets it run beside the workload (on that GPU, or device 0).
    std::string gpu = rail ? rail->gpu_bdf : std::string();
    if (snapshot) {
      GpuUse use = JudgeGpuUse(*snapshot);
      const bool idle = gpu.empty()
                            ? !use.idle.empty()
                            : std::find(use.idle.begin(), use.idle.end(), gpu) != use.idle.end();
      if (!idle && !services_.config().probe.allow_when_gpus_busy) {
        std::optional<std::string> why = gpu.empty() ? std::nullopt : GpuBusyBy(*snapshot, gpu);
        if (!why && !use.busy.empty()) why = use.busy.front();
        std::string who = why ? " (" + *why + ")" : "";
        refused.set_skipped_reason(gpu.empty() ? "skipped: GPUs busy" + who
                                               : "skipped: GPU " + gpu + " busy" + who);
        return refused;
      }
      if (gpu.empty() && !use.idle.empty()) gpu = use.idle.front();
    }
    if (stop.stop_requested()) {
      refused.set_skipped_reason("cancelled");
      return refused;
    }
    const int max_timeout = std::max(services_.config().probe.timeout_seconds, 1);
    ProbeAssignment pa;
    pa.peer = a.peer();
    pa.mode = *mode;
    pa.rank = static_cast<int>(a.rank());
    pa.nranks = 2;
    pa.size_bytes = *size;
    pa.gpu_bus_id = gpu;
    pa.timeout_seconds = std::clamp(
        static_cast<int>(std::min<uint32_t>(a.deadline_seconds(), 86400)), 1, max_timeout);
    if (rail) {
      pa.ib_hca = RailIbHca(*rail);
      pa.tag = "rail" + std::to_string(rail->index);
      pa.rail = rail->index;
    }
    const std::string probe_id = a.probe_id();
    pa.publish_unique_id = [this, probe_id](const std::string& hex) {
      auto bytes = HexToBytes(hex);
      if (!bytes || bytes->size() != kUniqueIdBytes) {
        owner_.log_.Warn("session", "the probe child printed a malformed unique id");
        return;
      }
      v1::AgentMessage m;
      m.mutable_unique_id()->set_probe_id(probe_id);
      m.mutable_unique_id()->set_id(*bytes);
      Write(m);
    };
    pa.await_unique_id = [this, probe_id](std::stop_token st) -> std::optional<std::string> {
      std::unique_lock lock(mu_);
      std::stop_callback wake(st, [this] { cv_.notify_all(); });
      cv_.wait(lock, [&] { return st.stop_requested() || ended_ || relays_.count(probe_id); });
      auto it = relays_.find(probe_id);
      if (it == relays_.end()) return std::nullopt;
      return BytesToHex(it->second);
    };
    ProbeResult r = services_.RunProbe(pa, stop);
    return ToProbeReport(r, probe_id);
  }

  CoordinatorSession& owner_;
  AgentServices& services_;
  grpc::ClientContext ctx_;
  std::unique_ptr<grpc::ClientReaderWriter<v1::AgentMessage, v1::CoordinatorMessage>> stream_;
  std::mutex write_mu_;
  bool write_failed_ = false;

  std::mutex mu_;
  std::condition_variable_any cv_;
  bool ended_ = false;
  bool welcomed_ = false;
  const int parallel_;  // probes that may run at once (probe.parallel_rails)
  std::chrono::milliseconds heartbeat_;
  std::deque<v1::ProbeAssignment> queue_;
  std::map<std::string, std::stop_source*> running_;  // probe id -> its worker's stop source
  std::map<std::string, std::string> relays_;         // probe id -> unique id bytes
  std::set<std::string> cancelled_;
  std::set<std::string> peers_;  // peers with a pair verdict set by this connection
  std::mutex summary_mu_;
  std::string last_summary_;  // guarded by summary_mu_; serialized, to send it again only when
                              // it changed
};

CoordinatorSession::CoordinatorSession(SessionOptions options, Logger& log)
    : options_(std::move(options)), log_(log) {}

CoordinatorSession::~CoordinatorSession() = default;

uint64_t CoordinatorSession::sessions() const { return sessions_.load(); }

void CoordinatorSession::Run(AgentServices& services, std::stop_token stop) {
  // The Hello carries the node's findings: wait for the first check cycle.
  services.SetCoordinatorStatus("waiting for the first check cycle");
  services.WaitForCycle(0, stop);
  uint64_t seed = options_.seed;
  if (seed == 0) seed = std::hash<std::string>{}(services.NodeName()) | 1;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  int attempt = 0;
  std::mutex sleep_mu;
  std::condition_variable_any sleep_cv;
  while (!stop.stop_requested()) {
    services.SetCoordinatorStatus("connecting to " + options_.target);
    std::string why;
    bool welcomed = false;
    try {
      Connection c(*this, services);
      std::tie(why, welcomed) = c.Run(stop);
    } catch (const std::exception& e) {
      why = std::string("session failed: ") + e.what();
    }
    if (stop.stop_requested()) break;
    if (welcomed) attempt = 0;  // a session that worked resets the back-off
    auto delay =
        ReconnectDelay(attempt++, options_.backoff_initial, options_.backoff_max, uniform(rng));
    const std::string line = "reconnecting in " + std::to_string(delay.count()) + " ms: " + why;
    services.SetCoordinatorStatus(line);
    log_.Info("session", line);
    std::unique_lock lock(sleep_mu);
    sleep_cv.wait_for(lock, stop, delay, [] { return false; });
  }
  services.SetCoordinatorStatus("stopped");
}

StatusOr<std::unique_ptr<CoordinatorLink>> MakeCoordinatorLink(
    const std::string& target, const Config& config, const std::string& env_token,
    std::map<std::string, std::string> labels, const std::string& version, Logger& log) {
  SessionOptions o;
  o.target = target;
  o.version = version;
  o.labels = std::move(labels);
  if (config.agent.token_file) {
    auto token = ReadTokenFile(*config.agent.token_file);
    if (!token.ok()) return token.status();
    o.token = *token;
  } else {
    o.token = TrimToken(env_token);
  }
  if (config.agent.identity_token_file) o.identity_token_file = *config.agent.identity_token_file;
  if (config.agent.ca_file) {
    auto ca = ReadWholeFile(*config.agent.ca_file, "CA");
    if (!ca.ok()) return ca.status();
    o.tls = true;
    o.ca_pem = *ca;
  }
  if (o.token.empty() && !o.identity_token_file.empty()) {
    log.Info("session",
             "no shared token: this agent presents its identity token only (a coordinator in "
             "identity-only mode accepts it; one that requires a shared token rejects it)");
  } else if (o.token.empty()) {
    log.Warn("session",
             "no token (agent.token_file or NCCL_TRIAGE_TOKEN): a coordinator that "
             "requires one will reject this agent");
  }
  return std::unique_ptr<CoordinatorLink>(std::make_unique<CoordinatorSession>(o, log));
}

}  // namespace nccl_triage
