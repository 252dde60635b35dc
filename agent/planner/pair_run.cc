#include "planner/pair_run.h"

#include <algorithm>
#include <utility>

#include "core/catalogue.h"

namespace nccl_triage {

bool NamesSpecificCause(const ProbeResult& r) {
  if (!r.classification) return false;
  for (const auto& c : r.classification->causes) {
    if (!HasTrait(c.cause, kConsequenceOnly)) return true;
  }
  return false;
}

std::vector<PairRunSetup::Rail> PairRails(const NodeInfo& a, const NodeInfo& b,
                                          const RailSelection& selection, uint64_t turn) {
  std::vector<PairRunSetup::Rail> out;
  if (a.rails.empty() || b.rails.empty()) return out;
  for (int i : SelectRails(a.rails, selection, turn)) {
    const Rail& ra = a.rails[i];
    auto rb = std::find_if(b.rails.begin(), b.rails.end(), [&](const Rail& r) {
      return r.index == ra.index && r.device == ra.device && r.port == ra.port;
    });
    if (rb != b.rails.end()) {
      out.push_back({ra.index, RailPortName(ra), ra.gpu_bdf, rb->gpu_bdf});
    }
  }
  return out;
}

PairRun::PairRun(PairRunSetup setup) : setup_(std::move(setup)) {
  probes_.pair = setup_.pair;
  setup_.parallel_rails = std::max(setup_.parallel_rails, 1);
}

bool PairRun::Connected(const std::string& node) const {
  return !setup_.connected || setup_.connected(node);
}

int PairRun::RailOf(const Phase& phase) const {
  return phase.rail_index < 0 ? -1 : setup_.rails[phase.rail_index].rail;
}

ModeProbes& PairRun::Results(const Phase& phase) {
  if (phase.rail_index >= 0) return probes_.rails[phase.entry].ib;
  return phase.mode == ProbeMode::kSocket ? probes_.socket : probes_.ib;
}

PairRunActions PairRun::Start(SteadyTime now) {
  PairRunActions out;
  if (started_) return out;
  started_ = true;
  StartPhase(ProbeMode::kSocket, -1, now, out);
  Settle(now, out);
  return out;
}

void PairRun::StartPhase(ProbeMode mode, int rail_index, SteadyTime now, PairRunActions& out) {
  Phase& phase = phases_.emplace_back();
  phase.mode = mode;
  phase.rail_index = rail_index;
  phase.slot[0].node = setup_.rank0;
  phase.slot[1].node = setup_.rank1;
  if (rail_index >= 0) {
    const PairRunSetup::Rail& rail = setup_.rails[rail_index];
    phase.entry = probes_.rails.size();
    probes_.rails.push_back({rail.rail, rail.device, {}});
  }
  Results(phase).attempted = true;
  for (const Slot& slot : phase.slot) {
    if (!Connected(slot.node)) {
      EndPhase(phase, "agent " + slot.node + " is not connected", out);
      return;
    }
  }
  const int rail = RailOf(phase);
  for (int r = 0; r < 2; ++r) {
    Slot& slot = phase.slot[r];
    slot.probe_id = setup_.id_prefix + "-" + std::string(ToString(mode)) +
                    (rail >= 0 ? "-rail" + std::to_string(rail) : "") + "-r" + std::to_string(r);
    PairRunAction a;
    a.kind = PairRunAction::Kind::kAssign;
    a.node = slot.node;
    a.probe_id = slot.probe_id;
    a.peer = phase.slot[1 - r].node;
    a.mode = mode;
    a.rank = r;
    a.rail = rail;
    out.push_back(std::move(a));
  }
  phase.deadline = now + setup_.phase_timeout;
}

void PairRun::CancelSlot(Phase& phase, Slot& slot, const std::string& reason, PairRunActions& out) {
  if (slot.probe_id.empty()) return;
  if (!slot.result) {
    PairRunAction a;
    a.kind = PairRunAction::Kind::kCancel;
    a.node = slot.node;
    a.probe_id = slot.probe_id;
    a.mode = phase.mode;
    a.rail = RailOf(phase);
    a.text = reason;
    out.push_back(std::move(a));
  }
  slot.probe_id.clear();
}

void PairRun::EndPhase(Phase& phase, const std::string& lost, PairRunActions& out) {
  if (phase.over) return;
  phase.over = true;
  ModeProbes& probes = Results(phase);
  probes.attempted = true;
  probes.rank0 = phase.slot[0].result;
  probes.rank1 = phase.slot[1].result;
  probes.lost = lost;
  for (Slot& slot : phase.slot) {
    CancelSlot(phase, slot, lost.empty() ? "the probe is over" : lost, out);
  }
  PairRunAction over;
  over.kind = PairRunAction::Kind::kPhaseOver;
  over.mode = phase.mode;
  over.rail = RailOf(phase);
  over.text = lost.empty() ? std::string(ToString(MergeRanks(probes, phase.mode).outcome)) : "lost";
  out.push_back(std::move(over));
  if (!lost.empty()) lost_ = true;
}

bool PairRun::FitsBesideRunning(int index) const {
  const PairRunSetup::Rail& rail = setup_.rails[index];
  for (const Phase& p : phases_) {
    if (p.rail_index < 0) return false;
    const PairRunSetup::Rail& other = setup_.rails[p.rail_index];
    if (rail.gpu_a.empty() || rail.gpu_b.empty() || other.gpu_a.empty() || other.gpu_b.empty() ||
        rail.gpu_a == other.gpu_a || rail.gpu_b == other.gpu_b) {
      return false;
    }
  }
  return true;
}

void PairRun::DropLost() {
  std::erase_if(phases_, [](const Phase& p) { return p.over; });
  if (phases_.empty()) done_ = true;
}

void PairRun::Settle(SteadyTime now, PairRunActions& out) {
  for (bool again = true; again;) {
    again = false;
    std::erase_if(phases_, [](const Phase& p) { return p.over; });
    if (lost_) break;
    // After the socket phase the IB phase, after that the rails.
    if (phases_.empty() && stage_ == Stage::kSocket) {
      stage_ = Stage::kIb;
      StartPhase(ProbeMode::kIb, -1, now, out);
      again = true;
    } else if (phases_.empty() && stage_ == Stage::kIb) {
      stage_ = Stage::kRails;
      for (int i = 0; i < static_cast<int>(setup_.rails.size()); ++i) pending_.push_back(i);
      again = true;
    } else if (stage_ == Stage::kRails) {
      // Each pending rail in order that fits beside those running; one that does not waits for
      // the phase holding its GPU, and a later one may pass it.
      for (auto it = pending_.begin(); it != pending_.end() && !lost_;) {
        if (static_cast<int>(phases_.size()) >= setup_.parallel_rails) break;
        if (!FitsBesideRunning(*it)) {
          ++it;
          continue;
        }
        const int index = *it;
        it = pending_.erase(it);
        StartPhase(ProbeMode::kIb, index, now, out);
        if (phases_.back().over) again = true;  // ended at once: drop it, then go on
      }
    }
  }
  if (phases_.empty() && (lost_ || (stage_ == Stage::kRails && pending_.empty()))) done_ = true;
}

void PairRun::CancelUnreported(Phase& phase, const std::string& reason, PairRunActions& out) {
  for (int r = 0; r < 2; ++r) {
    Slot& slot = phase.slot[r];
    if (slot.result) continue;
    ProbeResult cancelled;
    cancelled.mode = phase.mode;
    cancelled.rank = r;
    cancelled.peer = phase.slot[1 - r].node;
    cancelled.outcome = ProbeOutcome::kNotRun;
    cancelled.detail = "cancelled: " + reason;
    CancelSlot(phase, slot, reason, out);
    slot.result = std::move(cancelled);
  }
  EndPhase(phase, "", out);
}

template <class Phases>
auto PairRun::FindIn(Phases& phases, const std::string& probe_id)
    -> std::pair<decltype(&phases.front()), int> {
  if (!probe_id.empty()) {
    for (auto& p : phases) {
      for (int r = 0; r < 2; ++r) {
        if (p.slot[r].probe_id == probe_id) return {&p, r};
      }
    }
  }
  return {nullptr, -1};
}

std::pair<PairRun::Phase*, int> PairRun::Find(const std::string& probe_id) {
  return FindIn(phases_, probe_id);
}

std::optional<PairRun::Held> PairRun::Holding(const std::string& probe_id) const {
  auto [phase, rank] = FindIn(phases_, probe_id);
  if (!phase) return std::nullopt;
  return Held{rank, phase->mode, RailOf(*phase)};
}

std::vector<std::string> PairRun::probe_ids(int rank) const {
  std::vector<std::string> out;
  if (rank < 0 || rank > 1) return out;
  for (const Phase& p : phases_) {
    if (!p.slot[rank].probe_id.empty()) out.push_back(p.slot[rank].probe_id);
  }
  return out;
}

PairRunActions PairRun::OnUniqueId(const std::string& probe_id, const std::string& id) {
  PairRunActions out;
  auto [phase, rank] = Find(probe_id);
  if (done_ || !phase || rank != 0 || phase->relayed) return out;
  phase->relayed = true;
  const Slot& peer = phase->slot[1];
  if (!Connected(peer.node)) {
    EndPhase(*phase, "agent " + peer.node + " disconnected during the probe", out);
    DropLost();
  } else if (!peer.probe_id.empty()) {  // else rank 1 already reported: nothing to relay to
    PairRunAction a;
    a.kind = PairRunAction::Kind::kRelayUniqueId;
    a.node = peer.node;
    a.probe_id = peer.probe_id;
    a.mode = phase->mode;
    a.rank = 1;
    a.rail = RailOf(*phase);
    a.text = id;
    out.push_back(std::move(a));
  }
  return out;
}

PairRunActions PairRun::OnReport(const std::string& probe_id, ProbeResult result, SteadyTime now) {
  PairRunActions out;
  auto [phase, rank] = Find(probe_id);
  if (done_ || !phase) return out;
  OnPhaseReport(*phase, rank, std::move(result), now, out);
  Settle(now, out);
  return out;
}

void PairRun::OnPhaseReport(Phase& phase, int rank, ProbeResult result, SteadyTime now,
                            PairRunActions& out) {
  Slot& slot = phase.slot[rank];
  slot.result = std::move(result);
  slot.probe_id.clear();
  if (phase.slot[1 - rank].result) {
    EndPhase(phase, "", out);
    return;
  }
  // The other rank cannot finish on its own when this one never got as far as the rendezvous:
  // a refusal (not run / unavailable) or rank 0 ending before it handed out a unique id.
  const ProbeOutcome o = slot.result->outcome;
  const bool refused = o == ProbeOutcome::kNotRun || o == ProbeOutcome::kUnavailable;
  if (refused || (rank == 0 && !phase.relayed)) {
    CancelUnreported(
        phase, "peer " + slot.node + " ended before the rendezvous: " + std::string(ToString(o)),
        out);
    return;
  }
  if (o != ProbeOutcome::kPass) {
    if (NamesSpecificCause(*slot.result)) {
      // This rank's log already says why; the other only waits for a peer that is gone.
      CancelUnreported(phase, "peer " + slot.node + " failed: " + std::string(ToString(o)), out);
      return;
    }
    phase.peer_failed_deadline = now + setup_.peer_failed_grace;
  }
}

PairRunActions PairRun::OnAgentLost(const std::string& node, const std::string& why) {
  if (!setup_.pair.Has(node)) return {};
  return Abort("agent " + node + " disconnected during the probe (" + why + ")");
}

PairRunActions PairRun::Abort(const std::string& reason) {
  PairRunActions out;
  if (!started_ || done_) return out;
  for (Phase& p : phases_) EndPhase(p, reason, out);
  lost_ = true;
  DropLost();
  return out;
}

PairRunActions PairRun::AbortPhase(const std::string& probe_id, const std::string& reason) {
  PairRunActions out;
  auto [phase, rank] = Find(probe_id);
  if (done_ || !phase) return out;
  EndPhase(*phase, reason, out);
  DropLost();
  return out;
}

PairRunActions PairRun::Tick(SteadyTime now) {
  PairRunActions out;
  if (!started_ || done_) return out;
  for (Phase& p : phases_) {
    if (p.peer_failed_deadline && now >= *p.peer_failed_deadline) {
      CancelUnreported(p,
                       "the peer failed and this rank did not report within " +
                           std::to_string(setup_.peer_failed_grace.count()) + " ms",
                       out);
    }
    if (!p.over && now >= p.deadline) {
      std::string missing;
      for (const Slot& s : p.slot) {
        if (!s.result) missing += (missing.empty() ? "" : " and ") + s.node;
      }
      EndPhase(p, "no report from " + missing + " within the deadline", out);
    }
  }
  Settle(now, out);
  return out;
}

std::optional<SteadyTime> PairRun::NextDeadline() const {
  if (!started_ || done_) return std::nullopt;
  std::optional<SteadyTime> next;
  for (const Phase& p : phases_) {
    SteadyTime t = p.deadline;
    if (p.peer_failed_deadline && *p.peer_failed_deadline < t) t = *p.peer_failed_deadline;
    if (!next || t < *next) next = t;
  }
  return next;
}

}  // namespace nccl_triage
