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
    const bool both = std::any_of(b.rails.begin(), b.rails.end(), [&](const Rail& rb) {
      return rb.index == ra.index && rb.device == ra.device && rb.port == ra.port;
    });
    if (both) out.push_back({ra.index, ra.device + "/" + std::to_string(ra.port)});
  }
  return out;
}

PairRun::PairRun(PairRunSetup setup) : setup_(std::move(setup)) {
  probes_.pair = setup_.pair;
  slot_[0].node = setup_.rank0;
  slot_[1].node = setup_.rank1;
}

bool PairRun::Connected(const std::string& node) const {
  return !setup_.connected || setup_.connected(node);
}

PairRunActions PairRun::Start(SteadyTime now) {
  PairRunActions out;
  if (started_) return out;
  started_ = true;
  StartPhase(ProbeMode::kSocket, now, out);
  return out;
}

void PairRun::StartPhase(ProbeMode mode, SteadyTime now, PairRunActions& out) {
  mode_ = mode;
  relayed_ = false;
  peer_failed_deadline_.reset();
  slot_[0] = {setup_.rank0, "", std::nullopt};
  slot_[1] = {setup_.rank1, "", std::nullopt};
  if (rail_index_ >= 0) {
    const PairRunSetup::Rail& rail = setup_.rails[rail_index_];
    probes_.rails.push_back({rail.rail, rail.device, {}});
  }
  Current().attempted = true;
  for (const Slot& slot : slot_) {
    if (!Connected(slot.node)) {
      Lose("agent " + slot.node + " is not connected", out);
      return;
    }
  }
  for (int r = 0; r < 2; ++r) {
    Slot& slot = slot_[r];
    slot.probe_id = setup_.id_prefix + "-" + std::string(ToString(mode)) +
                    (rail_index_ >= 0 ? "-rail" + std::to_string(rail()) : "") + "-r" +
                    std::to_string(r);
    PairRunAction a;
    a.kind = PairRunAction::Kind::kAssign;
    a.node = slot.node;
    a.probe_id = slot.probe_id;
    a.peer = slot_[1 - r].node;
    a.mode = mode;
    a.rank = r;
    a.rail = rail();
    out.push_back(std::move(a));
  }
  deadline_ = now + setup_.phase_timeout;
}

void PairRun::CancelSlot(Slot& slot, const std::string& reason, PairRunActions& out) {
  if (slot.probe_id.empty()) return;
  if (!slot.result) {
    PairRunAction a;
    a.kind = PairRunAction::Kind::kCancel;
    a.node = slot.node;
    a.probe_id = slot.probe_id;
    a.mode = mode_;
    a.text = reason;
    out.push_back(std::move(a));
  }
  slot.probe_id.clear();
}

bool PairRun::EndPhase(const std::string& lost, PairRunActions& out) {
  if (done_) return false;
  ModeProbes& probes = Current();
  probes.attempted = true;
  probes.rank0 = slot_[0].result;
  probes.rank1 = slot_[1].result;
  probes.lost = lost;
  for (Slot& slot : slot_) CancelSlot(slot, lost.empty() ? "the probe is over" : lost, out);
  PairRunAction over;
  over.kind = PairRunAction::Kind::kPhaseOver;
  over.mode = mode_;
  over.rail = rail();
  over.text = lost.empty() ? std::string(ToString(MergeRanks(probes, mode_).outcome)) : "lost";
  out.push_back(std::move(over));
  if (lost.empty()) {
    if (mode_ == ProbeMode::kSocket) return true;
    if (rail_index_ + 1 < static_cast<int>(setup_.rails.size())) return true;
  }
  done_ = true;
  return false;
}

void PairRun::FinishPhase(SteadyTime now, PairRunActions& out) {
  if (!EndPhase("", out)) return;
  // After the socket phase the IB phase, after that each rail in turn.
  if (mode_ == ProbeMode::kIb) ++rail_index_;
  StartPhase(ProbeMode::kIb, now, out);
}

ModeProbes& PairRun::Current() {
  if (rail_index_ >= 0) return probes_.rails.back().ib;
  return mode_ == ProbeMode::kSocket ? probes_.socket : probes_.ib;
}

void PairRun::CancelUnreported(const std::string& reason, SteadyTime now, PairRunActions& out) {
  for (int r = 0; r < 2; ++r) {
    Slot& slot = slot_[r];
    if (slot.result) continue;
    ProbeResult cancelled;
    cancelled.mode = mode_;
    cancelled.rank = r;
    cancelled.peer = slot_[1 - r].node;
    cancelled.outcome = ProbeOutcome::kNotRun;
    cancelled.detail = "cancelled: " + reason;
    CancelSlot(slot, reason, out);
    slot.result = std::move(cancelled);
  }
  FinishPhase(now, out);
}

PairRunActions PairRun::OnUniqueId(const std::string& id) {
  PairRunActions out;
  if (done_ || relayed_ || slot_[0].probe_id.empty()) return out;
  relayed_ = true;
  const Slot& peer = slot_[1];
  if (!Connected(peer.node)) {
    Lose("agent " + peer.node + " disconnected during the probe", out);
    return out;
  }
  if (peer.probe_id.empty()) return out;  // rank 1 already reported: nothing to relay to
  PairRunAction a;
  a.kind = PairRunAction::Kind::kRelayUniqueId;
  a.node = peer.node;
  a.probe_id = peer.probe_id;
  a.mode = mode_;
  a.rank = 1;
  a.text = id;
  out.push_back(std::move(a));
  return out;
}

PairRunActions PairRun::OnReport(int rank, ProbeResult result, SteadyTime now) {
  PairRunActions out;
  if (done_ || rank < 0 || rank > 1 || slot_[rank].probe_id.empty()) return out;
  Slot& slot = slot_[rank];
  slot.result = std::move(result);
  slot.probe_id.clear();
  if (slot_[1 - rank].result) {
    FinishPhase(now, out);
    return out;
  }
  // The other rank cannot finish on its own when this one never got as far as the rendezvous:
  // a refusal (not run / unavailable) or rank 0 ending before it handed out a unique id.
  const ProbeOutcome o = slot.result->outcome;
  const bool refused = o == ProbeOutcome::kNotRun || o == ProbeOutcome::kUnavailable;
  if (refused || (rank == 0 && !relayed_)) {
    CancelUnreported(
        "peer " + slot.node + " ended before the rendezvous: " + std::string(ToString(o)), now,
        out);
    return out;
  }
  if (o != ProbeOutcome::kPass) {
    if (NamesSpecificCause(*slot.result)) {
      // This rank's log already says why; the other only waits for a peer that is gone.
      CancelUnreported("peer " + slot.node + " failed: " + std::string(ToString(o)), now, out);
      return out;
    }
    peer_failed_deadline_ = now + setup_.peer_failed_grace;
  }
  return out;
}

PairRunActions PairRun::OnAgentLost(const std::string& node, const std::string& why) {
  PairRunActions out;
  if (!started_ || done_ || !setup_.pair.Has(node)) return out;
  Lose("agent " + node + " disconnected during the probe (" + why + ")", out);
  return out;
}

PairRunActions PairRun::Abort(const std::string& reason) {
  PairRunActions out;
  if (!started_ || done_) return out;
  Lose(reason, out);
  return out;
}

PairRunActions PairRun::Tick(SteadyTime now) {
  PairRunActions out;
  if (!started_ || done_) return out;
  if (peer_failed_deadline_ && now >= *peer_failed_deadline_) {
    CancelUnreported("the peer failed and this rank did not report within " +
                         std::to_string(setup_.peer_failed_grace.count()) + " ms",
                     now, out);
    if (done_) return out;
  }
  if (now >= deadline_) {
    std::string missing;
    for (const Slot& s : slot_) {
      if (!s.result) missing += (missing.empty() ? "" : " and ") + s.node;
    }
    Lose("no report from " + missing + " within the deadline", out);
  }
  return out;
}

std::optional<SteadyTime> PairRun::NextDeadline() const {
  if (!started_ || done_) return std::nullopt;
  if (peer_failed_deadline_ && *peer_failed_deadline_ < deadline_) return peer_failed_deadline_;
  return deadline_;
}

}  // namespace nccl_triage
