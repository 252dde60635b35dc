// CoordinatorServer::Impl: the coordinator's state behind its one mutex, and the halves that
// work on it. Internal to coordinator_server: include it only from its own .cc files.
//
//   server.cc      the transport: the gRPC service, one Stream per agent, authentication,
//                  sessions and liveness, and the routing of probe messages (by probe id) to the
//                  PairRun that owns them and of the PairRuns' actions back to the streams;
//   sweep_loop.cc  the sweeps: when one is due, its plan (Sweep over the CoverageSchedule), each
//                  round's PairRuns driven to their end, the judgements, and their publication
//                  through ClusterVerdicts;
//   triage_rpc.cc  Coordinator.Triage (an incident's probes, a Sweep planned by TriagePlan and
//                  run by the sweep thread between sweeps, never published) and RecordIncident.
//
// The parts with state of their own, each with its header:
//   agent_table.h  AgentTable: the connected agents and every node seen, eviction, liveness and
//                  sweep membership (under mu_).
//   remediation_stage.h  RemediationStage: remediation and the validation of new nodes after a
//                  sweep, their node watch and last outcomes (its own lock, taken after mu_).
//   leadership.h   Leadership: the election's and the pod label's threads, the client behind
//                  the fence and whether this replica leads (an atomic, written under mu_).
//
// The decisions are not here: PairRun (a pair's probe phases), Sweep, ClusterVerdicts and the
// view (status_view.h) are plain values the Impl feeds with events under mu_.
#pragma once

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "coordinator/agent_table.h"
#include "coordinator/coordinator_metrics.h"
#include "coordinator/server.h"
#include "coordinator/connection_gate.h"
#include "coordinator/leadership.h"
#include "coordinator/remediation_stage.h"
#include "coordinator/state_store.h"
#include "core/rail_selection.h"
#include "exporter/http_server.h"
#include "exporter/listen_socket.h"
#include "nccl_triage/v1/agent.grpc.pb.h"
#include "planner/cluster_verdicts.h"
#include "planner/pair_run.h"
#include "planner/schedule.h"
#include "planner/sweep.h"

namespace nccl_triage {

// What the coordinator derives from its configuration's keys (the loader checks each key's
// range; a Config built in code is held to the floors the coordinator needs).
inline std::chrono::milliseconds SweepInterval(const CoordinatorConfig& c) {
  return std::chrono::seconds(std::max(c.sweep_interval_seconds, 0));  // 0: only on demand
}
inline std::chrono::milliseconds HeartbeatTimeout(const CoordinatorConfig& c) {
  return std::chrono::seconds(std::max(c.heartbeat_timeout_seconds, 2));
}
// Told to the agents in Welcome: a quarter of the timeout, within 1 to 30 s.
inline int HeartbeatIntervalSeconds(const CoordinatorConfig& c) {
  return std::clamp(c.heartbeat_timeout_seconds / 4, 1, 30);
}
inline int ProbeDeadlineSeconds(const ProbeConfig& p) { return std::max(p.timeout_seconds, 1); }

class CoordinatorServer::Impl {
 public:
  class Stream;
  using SteadyClock = std::chrono::steady_clock;

  Impl(CoordinatorOptions options, Logger& log);
  ~Impl();

  Status Start();
  void Stop();

  // gRPC entry point: a new agent stream (already rejected when the token is wrong).
  grpc::ServerBidiReactor<v1::AgentMessage, v1::CoordinatorMessage>* NewStream(
      grpc::CallbackServerContext* ctx);

  // Stream events (from gRPC threads). OnMessage is false when it closed the stream.
  bool OnMessage(Stream* stream, const v1::AgentMessage& msg);
  void OnStreamEnd(Stream* stream, const std::string& why);

  uint64_t RequestSweep();
  bool WaitForSweep(uint64_t number, std::chrono::milliseconds timeout);
  bool WaitForAgents(size_t n, std::chrono::milliseconds timeout);
  size_t ConnectedAgents() const;
  size_t OutstandingProbes() const;
  // The parts (under mu_), then who leads (the elector's and the label's locks).
  CoordinatorView View(bool with_pairs) const;
  CoordinatorView PartsView(bool with_pairs) const;
  std::string MetricsText() const { return metrics_.Text(); }

  int grpc_port_ = 0;
  int http_port_ = 0;

 private:
  // Where an outstanding probe id belongs: a PairRun of the current round and a rank.
  struct ProbeRef {
    PairRun* run = nullptr;
    int rank = 0;
  };

  class Service final : public v1::Coordinator::CallbackService {
   public:
    explicit Service(Impl* impl) : impl_(impl) {}
    grpc::ServerBidiReactor<v1::AgentMessage, v1::CoordinatorMessage>* Session(
        grpc::CallbackServerContext* ctx) override {
      return impl_->NewStream(ctx);
    }
    grpc::ServerUnaryReactor* Triage(grpc::CallbackServerContext* ctx, const v1::TriageRequest* req,
                                     v1::TriageAnswer* answer) override {
      return impl_->Triage(ctx, req, answer);
    }
    grpc::ServerUnaryReactor* RecordIncident(grpc::CallbackServerContext* ctx,
                                             const v1::IncidentRecord* req,
                                             v1::IncidentRecorded* answer) override {
      return impl_->RecordIncident(ctx, req, answer);
    }

   private:
    Impl* impl_;
  };

  // An incident's probes waiting for the sweep thread; the reactor answers when they are done.
  struct TriageJob {
    std::vector<std::string> nodes;
    v1::TriageAnswer* answer = nullptr;
    grpc::ServerUnaryReactor* reactor = nullptr;
  };

  // server.cc: sessions and the routing of probe messages.
  // The shared token check of every call: the refusal (UNAUTHENTICATED, logged with the peer and
  // `what`), or nullopt when the call may go on.
  std::optional<grpc::Status> Unauthenticated(grpc::CallbackServerContext* ctx,
                                              const std::string& what) const;
  // The transport's stream behind a session of the table (every session there is a Stream).
  static Stream* StreamOf(AgentSession* session);
  void SendLocked(const std::string& node, v1::CoordinatorMessage msg);
  // Carries out a PairRun's actions (messages, the probe-id index, the probe counters).
  void ApplyLocked(PairRun& run, const PairRunActions& actions);
  void OnUniqueIdLocked(const std::string& node, const v1::UniqueId& id);
  void OnReportLocked(const std::string& node, const v1::ProbeReport& report);
  void DisconnectLocked(const std::string& node, const std::string& why);
  // The table's liveness decisions carried out: forgotten nodes leave the verdicts, silent ones
  // are disconnected and their streams closed.
  void HousekeepingLocked();
  void SendVerdictsLocked(const std::string& node);
  // After a hello or a summary of `node` (the table updated; `before`: what it said until then):
  // logs a change of its probe availability, publishes the verdict of a node whose probes cannot
  // run (ClusterVerdicts::UpdateProbeAvailability) and counts such nodes in the metric. True
  // when the node's published verdict changed (to push it).
  bool OnProbeAvailabilityLocked(const std::string& node,
                                 const std::optional<NodeProbeAvailability>& before, bool hello);
  // nccl_triage_coordinator_probe_unavailable_nodes from the connected agents.
  void CountProbeUnavailableLocked();
  // The check of POST /sweep's bearer token; empty without a token.
  std::function<bool(std::string_view)> SweepTokenCheck() const;

  // sweep_loop.cc: sweeps and rounds.
  void SweepLoop(std::stop_token stop);
  void RunOneSweep(std::stop_token stop);
  void RunRoundLocked(std::unique_lock<std::mutex>& lock, const std::vector<NodePair>& pairs);
  bool IncompatibleLocked(const std::string& a, const std::string& b) const;
  // Runs a sweep of `setup` through its rounds to its result (sweep_ is set meanwhile, so an
  // agent that leaves is taken out of it).
  SweepResult DriveSweepLocked(std::unique_lock<std::mutex>& lock, SweepSetup setup);
  // Tests only: waits while options_.test_hold_dir/hold-sweep exists (server.h).
  void TestHoldLocked(std::unique_lock<std::mutex>& lock);

  // triage_rpc.cc: the incident calls.
  grpc::ServerUnaryReactor* Triage(grpc::CallbackServerContext* ctx, const v1::TriageRequest* req,
                                   v1::TriageAnswer* answer);
  grpc::ServerUnaryReactor* RecordIncident(grpc::CallbackServerContext* ctx,
                                           const v1::IncidentRecord* req,
                                           v1::IncidentRecorded* answer);
  void RunTriageLocked(std::unique_lock<std::mutex>& lock, TriageJob job);

  // sweep_loop.cc: the RemediationStage's step after a sweep, with mu_ released during the API
  // calls; no call starts once `stop` is requested (Stop).
  void RemediateLocked(std::unique_lock<std::mutex>& lock, std::stop_token stop);
  void FinishTriagesLocked(const std::string& why);
  // state_sync.cc: reads the kept state until a read works (then restores the faults and the
  // remediation stage's memory), then writes it when it changed; mu_ released during the API
  // calls.
  void SyncStateLocked(std::unique_lock<std::mutex>& lock);
  // server.cc: the election thread's news (Leadership), carried out on the Impl's state: a loss
  // closes every agent's stream and clears the cluster's series.
  void OnLeadership(bool leading);
  std::string NotReadyReason() const;

  CoordinatorOptions options_;
  const JudgeOptions judge_;                   // from probe.busbw_min_fraction and size_bytes
  const std::optional<RailSelection> rails_;  // probe.rails; nullopt: no per-rail probes
  Logger& log_;
  SystemClock wall_clock_;  // the metrics' timestamps; remediation's durations (monotonic)
  mutable CoordinatorMetrics metrics_;
  Service service_;
  std::unique_ptr<grpc::experimental::ExternalConnectionAcceptor> acceptor_;
  std::unique_ptr<ConnectionGate> gate_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<HttpServer> http_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  bool started_ = false;
  AgentTable agents_;  // the connected nodes and every node seen (agent_table.h)
  std::vector<std::unique_ptr<PairRun>> runs_;              // the current round's pairs
  std::map<std::string, ProbeRef> probes_;                  // outstanding probe ids of runs_
  uint64_t run_counter_ = 0;
  uint64_t sweeps_requested_ = 0;
  uint64_t sweeps_started_ = 0;
  uint64_t sweeps_done_ = 0;
  int last_sweep_rounds_ = 0;
  std::vector<RailFault> last_rail_faults_;  // the last sweep's (probe.rails), for triage answers
  int current_round_ = 0;
  std::unique_ptr<Sweep> sweep_;
  std::deque<TriageJob> triage_jobs_;
  uint64_t triages_run_ = 0;
  CoverageSchedule schedule_;
  ClusterVerdicts verdicts_;
  // Whether this replica may sweep, remediate and accept agents (leadership.h).
  Leadership leadership_;
  // After each sweep (remediation_stage.h); never null.
  std::unique_ptr<RemediationStage> remediation_;
  std::unique_ptr<StateStore> state_;       // null: the state is kept in memory only
  bool state_restored_ = false;             // state_ was read (and restored) once
  std::jthread sweep_thread_;
};

}  // namespace nccl_triage
