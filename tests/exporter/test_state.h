// Builders of AgentState contents for the exporter tests and the benchmark.
#pragma once

#include <memory>
#include <string>

#include "state/agent_state.h"

namespace nccl_triage::testing {

inline IbPort TestPort(int num, const std::string& state, const std::string& phys, double gbps) {
  IbPort p;
  p.num = num;
  p.state.value = state;
  p.phys_state.value = phys;
  p.rate_gbps.value = gbps;
  p.link_layer.value = "InfiniBand";
  p.counters = {{"symbol_error", 7}, {"link_downed", 1}, {"port_rcv_data", 1000}};
  return p;
}

// A node with `hcas` HDR HCAs (one port each; mlx5_1 DOWN/Polling), memlock 64 KiB, 64 MiB shm.
inline NodeSnapshot TestSnapshot(int hcas) {
  NodeSnapshot s;
  s.node = "gpu-node-1";
  for (int i = 0; i < hcas; ++i) {
    IbDevice d{.name = "mlx5_" + std::to_string(i)};
    d.ports.push_back(i == 1 ? TestPort(1, "1: DOWN", "2: Polling", 200)
                             : TestPort(1, "4: ACTIVE", "5: LinkUp", 200));
    s.ib_devices.push_back(d);
  }
  s.memlock.value = LimitPair{{false, 65536}, {false, 65536}};
  s.mounts.push_back({"/dev/shm", "tmpfs", "shm", "rw,size=65536k"});
  return s;
}

inline Finding TestFinding(std::string check, FaultClass c, CheckStatus s) {
  return Finding{std::move(check), c, s, "message", {{"k", "v", "src"}}, "remedy"};
}

inline void FillCycle(AgentState& state, const NodeSnapshot& snap, std::vector<Finding> findings,
                      int64_t now_ms) {
  auto report = std::make_shared<NodeReport>(MakeReport(snap.node, std::move(findings), now_ms));
  auto shared = std::make_shared<const NodeSnapshot>(snap);
  state.SetCycle(report, shared,
                 std::make_shared<const SnapshotSummary>(Summarize(snap, ExpectConfig{})), now_ms,
                 now_ms + 250, "");
}

inline void FillPeers(AgentState& state, int peers, int64_t now_ms) {
  for (int i = 0; i < peers; ++i) {
    std::string peer = "gpu-node-" + std::to_string(100 + i);
    for (ProbeMode mode : {ProbeMode::kSocket, ProbeMode::kIb}) {
      ProbeResult r;
      r.peer = peer;
      r.mode = mode;
      r.outcome =
          (i % 7 == 3 && mode == ProbeMode::kIb) ? ProbeOutcome::kFail : ProbeOutcome::kPass;
      r.busbw_bytes_per_second = mode == ProbeMode::kIb ? 23.5e9 : 2.1e9;
      r.duration_seconds = mode == ProbeMode::kIb ? 4.2 : 7.9;
      r.nccl_version = "2.28.9";
      state.RecordProbe(r, now_ms);
    }
    PairVerdict v;
    v.fault_class = i % 7 == 3 ? FaultClass::kIbResource : FaultClass::kHealthy;
    v.basis = Basis::kProbes;
    state.SetPairVerdict(peer, v, now_ms);
  }
}

// One per-rail IB probe with each of `peers` peers (FillPeers' names), on rails 0 and 1 in turn.
inline void FillRailProbes(AgentState& state, int peers, int64_t now_ms) {
  for (int i = 0; i < peers; ++i) {
    ProbeResult r;
    r.peer = "gpu-node-" + std::to_string(100 + i);
    r.mode = ProbeMode::kIb;
    r.outcome = ProbeOutcome::kPass;
    r.busbw_bytes_per_second = 23.5e9;
    r.duration_seconds = 4.2;
    state.RecordProbe(r, now_ms + i, i % 2, "=mlx5_" + std::to_string(i % 2) + ":1");
  }
}

}  // namespace nccl_triage::testing
