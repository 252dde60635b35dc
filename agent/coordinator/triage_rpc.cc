// The incident half of CoordinatorServer::Impl (server_impl.h): Coordinator.Triage, the probes
// `nccl-triage triage` asks for, run by the sweep thread between sweeps (an agent takes part in
// one pair at a time), and Coordinator.RecordIncident, the incident counter. A requested node's answer
// carries its rail table with the rail faults that name its rails (this triage's per-rail probes,
// else the last sweep's), so a job that died on a node with one bad HCA gets that rail named.
#include <set>

#include "base/log.h"
#include "coordinator/server_impl.h"
#include "core/catalogue.h"
#include "planner/triage_plan.h"
#include "wire/convert.h"

namespace nccl_triage {
namespace {

constexpr int kMaxTriageNodes = 4096;
constexpr size_t kMaxQueuedTriages = 16;

// The node's rail table for the answer, each rail with the fault that names it (TriageRails).
void AddRails(v1::TriageNode& p, const NodeInfo* info, const std::vector<RailFault>& triage,
              const std::vector<RailFault>& sweep) {
  if (info == nullptr) return;
  for (const TriageRail& tr : TriageRails(*info, triage, sweep)) {
    v1::TriageRail* r = p.add_rails();
    ToProto(tr.rail, *r->mutable_rail());
    if (!tr.fault) continue;
    r->set_fault(std::string(ToString(tr.fault->kind)));
    r->set_rate_degraded(tr.fault->degraded);
    for (const auto& c : tr.fault->causes) r->add_causes(c);
    r->set_reason(tr.fault->reason);
    r->set_seen_by(tr.seen_by);
  }
}

}  // namespace

grpc::ServerUnaryReactor* CoordinatorServer::Impl::Triage(grpc::CallbackServerContext* ctx,
                                                          const v1::TriageRequest* req,
                                                          v1::TriageAnswer* answer) {
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  if (auto refused = Unauthenticated(ctx, "triage request")) {
    reactor->Finish(*refused);
    return reactor;
  }
  if (req->nodes_size() == 0 || req->nodes_size() > kMaxTriageNodes) {
    reactor->Finish(
        grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                     "a triage names 1 to " + std::to_string(kMaxTriageNodes) + " nodes"));
    return reactor;
  }
  TriageJob job;
  for (const std::string& node : req->nodes()) {
    if (!ValidNodeName(node)) {
      reactor->Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                   "'" + node.substr(0, 64) + "' is not a node name"));
      return reactor;
    }
    job.nodes.push_back(node);
  }
  job.answer = answer;
  job.reactor = reactor;
  std::lock_guard lock(mu_);
  if (stopping_) {
    reactor->Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "coordinator shutting down"));
  } else if (triage_jobs_.size() >= kMaxQueuedTriages) {
    reactor->Finish(grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                                 "too many triage requests waiting; try again later"));
  } else {
    log_.Info("coordinator", "triage of " + std::to_string(job.nodes.size()) +
                                 " node(s) requested from " + ctx->peer());
    triage_jobs_.push_back(std::move(job));
    cv_.notify_all();
  }
  return reactor;
}

grpc::ServerUnaryReactor* CoordinatorServer::Impl::RecordIncident(grpc::CallbackServerContext* ctx,
                                                                  const v1::IncidentRecord* req,
                                                                  v1::IncidentRecorded*) {
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  if (auto refused = Unauthenticated(ctx, "incident record")) {
    reactor->Finish(*refused);
    return reactor;
  }
  // Labels from a closed set: a class, and a cause of the catalogue (or none).
  const std::string cause = req->cause();
  if (!cause.empty() && FindCause(cause) == nullptr) {
    reactor->Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                 "'" + cause.substr(0, 64) + "' is not a cause of the catalogue"));
    return reactor;
  }
  metrics_.CountIncident(ToString(FromProto(req->fault_class())), cause);
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

void CoordinatorServer::Impl::FinishTriagesLocked(const std::string& why) {
  for (TriageJob& job : triage_jobs_) {
    job.reactor->Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, why));
  }
  triage_jobs_.clear();
}

void CoordinatorServer::Impl::RunTriageLocked(std::unique_lock<std::mutex>& lock, TriageJob job) {
  std::set<std::string> faulty;  // confirmed node faults are no reference
  for (const TrackedFault& t : verdicts_.hold_down().Confirmed()) {
    if (t.fault.kind == FaultKind::kNode) faulty.insert(t.fault.nodes.begin(), t.fault.nodes.end());
  }
  std::map<std::string, TriageAgent> agents;
  for (const auto& [node, a] : agents_.connected()) {
    agents[node] = TriageAgent{true, a.info.gpus_busy, faulty.count(node) > 0,
                               ProbesCannotRun(a.info) ? ProbesUnavailableText(a.info) : ""};
  }
  const TriagePlan plan = PlanTriage(job.nodes, agents);
  SweepSetup setup;
  setup.nodes = plan.probed;
  setup.nodes.insert(setup.nodes.end(), plan.references.begin(), plan.references.end());
  setup.round1 = plan.round1;
  setup.incompatible = [this](const std::string& a, const std::string& b) {
    return IncompatibleLocked(a, b);
  };
  setup.max_rounds = options_.max_rounds;
  setup.seed = options_.seed + ++triages_run_;
  std::string refs;
  for (const auto& r : plan.references) refs += (refs.empty() ? "" : ", ") + r;
  log_.Info("coordinator", "triage: " + std::to_string(plan.probed.size()) + " of " +
                               std::to_string(job.nodes.size()) + " node(s) probed, " +
                               std::to_string(plan.skipped.size()) +
                               " skipped, references: " + (refs.empty() ? "none" : refs));
  const SweepResult result = DriveSweepLocked(lock, std::move(setup));
  if (stopping_) {
    job.reactor->Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "coordinator shutting down"));
    return;
  }
  const TriageOutcome out = SummariseTriage(job.nodes, plan, result);
  v1::TriageAnswer& a = *job.answer;
  for (const TriageNodeOutcome& n : out.nodes) {
    v1::TriageNode* p = a.add_nodes();
    p->set_node(n.node);
    p->set_state(n.state);
    p->set_fault_class(ToProto(n.fault_class));
    for (const auto& c : n.causes) p->add_causes(c);
    p->set_reason(n.reason);
    auto known = agents_.known().find(n.node);
    AddRails(*p, known == agents_.known().end() ? nullptr : &known->second, result.rails.faults,
             last_rail_faults_);
  }
  for (const LocalisedFault& f : out.faults) {
    v1::TriageFault* p = a.add_faults();
    p->set_kind(std::string(ToString(f.kind)));
    for (const auto& n : f.nodes) p->add_nodes(n);
    p->set_fault_class(ToProto(f.fault_class));
    for (const auto& c : f.causes) p->add_causes(c);
    p->set_reason(f.reason);
  }
  a.set_pairs_probed(static_cast<uint32_t>(out.pairs_probed));
  a.set_rounds(static_cast<uint32_t>(out.rounds));
  for (const auto& r : out.references) a.add_references(r);
  log_.Info("coordinator", "triage done: " + std::to_string(out.pairs_probed) + " pair(s) in " +
                               std::to_string(out.rounds) + " round(s), " +
                               std::to_string(out.faults.size()) + " fault(s)");
  job.reactor->Finish(grpc::Status::OK);
}

}  // namespace nccl_triage
