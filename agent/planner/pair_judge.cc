#include "planner/pair_judge.h"

#include <algorithm>

#include "core/catalogue.h"
#include "core/ids.h"
#include "core/rails.h"
#include "core/rank_merge.h"
#include "core/rates.h"
#include "planner/cross_node.h"

namespace nccl_triage {
namespace {

// The findings the decision table reads for a pair: both nodes' own (the agents send failing and
// warning ones) and the cross-node checks (all statuses: a pass there is evidence too).
std::vector<Finding> PairFindings(const NodeInfo& a, const NodeInfo& b) {
  std::vector<Finding> findings = a.findings;
  findings.insert(findings.end(), b.findings.begin(), b.findings.end());
  for (auto& f : CrossNodeChecks(a, b)) findings.push_back(std::move(f));
  // The agents send no passes, but their summaries list the HCAs they found: with HCAs on both
  // nodes, ib.hca_present passed on both, and a log that names it (`NET/IB : No device found`
  // when the only port NCCL may use is down) is refuted, as a listed pass would refute it.
  const auto hca_fails = [](const NodeInfo& n) {
    return std::any_of(n.findings.begin(), n.findings.end(),
                       [](const Finding& f) { return ids::kIbHcaPresent == f.check; });
  };
  if (!a.hcas.empty() && !b.hcas.empty() && !hca_fails(a) && !hca_fails(b)) {
    Finding present;
    present.check = std::string(ids::kIbHcaPresent);
    present.fault_class = FaultClass::kIbResource;
    present.status = CheckStatus::kPass;
    present.message = "both nodes list their HCAs";
    findings.push_back(std::move(present));
  }
  return findings;
}

double BestIbRate(const NodeInfo& n) {
  double best = 0;
  for (const auto& h : n.hcas) {
    for (const auto& p : h.ports) {
      if (p.link_layer == "InfiniBand" || p.link_layer == "Ethernet") {
        best = std::max(best, p.rate_gbps);
      }
    }
  }
  return best;
}

// The rate of "mlx5_0:1" on this node; 0 when the node does not list that port.
double PortRate(const NodeInfo& n, std::string_view port) {
  size_t colon = port.rfind(':');
  std::string_view hca = port.substr(0, colon);
  int num = 1;
  if (colon != std::string_view::npos) {
    num = 0;
    for (char c : port.substr(colon + 1)) {
      if (c < '0' || c > '9' || num > 1000) return 0;
      num = num * 10 + (c - '0');
    }
  }
  for (const auto& h : n.hcas) {
    if (h.name != hca) continue;
    for (const auto& p : h.ports) {
      if (p.num == num) return p.rate_gbps;
    }
  }
  return 0;
}

// One node's share: the ports used, or its best port. Returns Gb/s and says how it was found.
double NodeExpectation(const NodeInfo& n, const std::vector<std::string>& ports, std::string& why) {
  double sum = 0;
  std::string used;
  for (const auto& port : ports) {
    double rate = PortRate(n, port);
    if (rate <= 0) continue;
    sum += rate;
    used += (used.empty() ? "" : " + ") + port + " " + FormatGbps(rate);
  }
  if (sum > 0) {
    why = n.name + ": " + used;
    return sum;
  }
  double best = BestIbRate(n);
  if (best > 0) why = n.name + ": best port " + FormatGbps(best) + " (ports used not known)";
  return best;
}

// The ports the rank that ran on `node` used (its peer is the other node).
std::vector<std::string> PortsOn(const ModeProbes& probes, const std::string& node) {
  for (const auto& r : {probes.rank0, probes.rank1}) {
    if (r && !r->peer.empty() && r->peer != node) return r->ib_ports;
  }
  return {};
}

// The expectation is the ports' rate, which assumes GPUDirect RDMA: without it NCCL stages through
// host memory and may fall short of it. Says whether each rank's channels used it.
std::string GdrNote(const ModeProbes& probes, const std::string& a, const std::string& b) {
  std::vector<std::string> without;
  for (const std::string& node : {a, b}) {
    for (const auto& r : {probes.rank0, probes.rank1}) {
      if (r && r->peer != node && !r->peer.empty() && !r->gdrdma) without.push_back(node);
    }
  }
  if (without.empty()) return "; GPUDirect RDMA assumed and used";
  std::string names;
  for (const auto& n : without) names += (names.empty() ? "" : ", ") + n;
  return "; GPUDirect RDMA assumed, not used on " + names + " (no /GDRDMA channel)";
}

}  // namespace

std::optional<ExpectedBandwidth> ExpectedPairBandwidth(const NodeInfo& a, const NodeInfo& b,
                                                       const std::vector<std::string>& ports_a,
                                                       const std::vector<std::string>& ports_b) {
  std::string why_a, why_b;
  double ra = NodeExpectation(a, ports_a, why_a);
  double rb = NodeExpectation(b, ports_b, why_b);
  if (ra <= 0 || rb <= 0) return std::nullopt;
  return ExpectedBandwidth{std::min(ra, rb) * 1e9 / 8, why_a + "; " + why_b};
}

std::optional<ExpectedBandwidth> ExpectedRailBandwidth(const NodeInfo& a, const NodeInfo& b,
                                                       int rail, std::string_view device) {
  const auto [hca, hca_port] = SplitRailPortName(device);
  const std::string port = hca + ":" + std::to_string(hca_port);
  double rates[2] = {0, 0};
  std::string basis = "rail " + std::to_string(rail) + ": ";
  for (int i = 0; i < 2; ++i) {
    const NodeInfo& n = i == 0 ? a : b;
    for (const Rail& r : n.rails) {
      if (r.index == rail && r.device == hca && r.port == hca_port && r.rate_gbps) {
        rates[i] = *r.rate_gbps;
      }
    }
    if (rates[i] <= 0) rates[i] = PortRate(n, port);
    if (rates[i] <= 0) return std::nullopt;
    basis += (i == 0 ? "" : "; ") + n.name + ": " + port + " " + FormatGbps(rates[i]);
  }
  return ExpectedBandwidth{std::min(rates[0], rates[1]) * 1e9 / 8, basis};
}

ProbeResult MergeRanks(const ModeProbes& probes, ProbeMode mode) {
  ProbeResult merged;
  merged.mode = mode;
  if (!probes.attempted) {
    merged.outcome = ProbeOutcome::kNotRun;
    merged.detail = probes.lost.empty() ? "not run" : probes.lost;
    return merged;
  }
  if (!probes.lost.empty() || !probes.rank0 || !probes.rank1) {
    merged.outcome = ProbeOutcome::kNotRun;
    merged.detail = probes.lost.empty() ? "a rank did not report" : probes.lost;
    return merged;
  }
  return MergeRankResults({*probes.rank0, *probes.rank1});
}

std::optional<double> ExpectedPairBytesPerSecond(const NodeInfo& a, const NodeInfo& b) {
  auto e = ExpectedPairBandwidth(a, b, {}, {});
  if (!e) return std::nullopt;
  return e->bytes_per_second;
}

PairJudgement JudgePair(const NodeInfo& a, const NodeInfo& b, const PairProbes& probes,
                        const JudgeOptions& options) {
  std::optional<ExpectedBandwidth> expected;
  if (options.check_bandwidth) {
    expected = ExpectedPairBandwidth(a, b, PortsOn(probes.ib, a.name), PortsOn(probes.ib, b.name));
  }
  return JudgePairExpecting(a, b, probes, options, expected);
}

PairJudgement JudgePairExpecting(const NodeInfo& a, const NodeInfo& b, const PairProbes& probes,
                                 const JudgeOptions& options,
                                 const std::optional<ExpectedBandwidth>& expected) {
  PairJudgement j;
  ProbeResult socket = MergeRanks(probes.socket, ProbeMode::kSocket);
  ProbeResult ib = MergeRanks(probes.ib, ProbeMode::kIb);
  j.socket = socket.outcome;
  j.ib = ib.outcome;
  j.ib_busbw_bytes_per_second = ib.outcome == ProbeOutcome::kPass ? ib.busbw_bytes_per_second : 0;

  DecisionInputs in;
  in.socket = socket.outcome;
  in.ib = ib.outcome;
  in.socket_result = &socket;
  in.ib_result = &ib;
  in.node_findings = PairFindings(a, b);
  if (options.check_bandwidth && expected) {
    in.expected_ib_bytes_per_second = expected->bytes_per_second;
    in.expected_ib_basis = expected->basis + GdrNote(probes.ib, a.name, b.name);
    j.expected_ib_bytes_per_second = expected->bytes_per_second;
  }
  in.busbw_min_fraction = options.busbw_min_fraction;
  j.verdict = Decide(in);

  const bool lost = !probes.socket.lost.empty() || !probes.ib.lost.empty();
  if (lost) {
    // A probe that lost a rank says nothing about the pair, whatever the other mode did.
    j.status = PairStatus::kInconclusive;
    j.verdict.reason = (!probes.socket.lost.empty() ? probes.socket.lost : probes.ib.lost) + "; " +
                       j.verdict.reason;
    if (j.verdict.basis == Basis::kProbes && j.verdict.fault_class == FaultClass::kHealthy) {
      j.verdict.fault_class = FaultClass::kUnknown;
    }
    return j;
  }
  if (j.verdict.basis != Basis::kProbes) {
    j.status = PairStatus::kInconclusive;
  } else if (j.verdict.fault_class == FaultClass::kHealthy) {
    j.status = PairStatus::kPass;
  } else if (j.verdict.fault_class == FaultClass::kArchitecture ||
             j.verdict.fault_class == FaultClass::kIbResource) {
    j.status = PairStatus::kFail;
  } else {
    j.status = PairStatus::kInconclusive;
  }
  return j;
}

PairVerdict PredictPair(const NodeInfo& a, const NodeInfo& b) {
  DecisionInputs in;
  in.node_findings = PairFindings(a, b);
  PairVerdict v = Decide(in);
  // A node whose probes cannot run is never probed: its pair is not known healthy from checks,
  // and its availability cause comes first (a's before b's), as for a probe that was unavailable.
  for (const NodeInfo* n : {&b, &a}) {
    if (!ProbesCannotRun(*n)) continue;
    if (v.fault_class == FaultClass::kHealthy) v.fault_class = FaultClass::kUnknown;
    const std::string cause = "probe." + n->probe->reason;
    if (FindCause(cause) != nullptr) {
      std::erase(v.causes, cause);
      v.causes.insert(v.causes.begin(), cause);
    }
    v.reason = n->name + ": " + ProbesUnavailableText(*n) + "; " + v.reason;
  }
  return v;
}

}  // namespace nccl_triage
