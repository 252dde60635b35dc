#include "core/decision.h"

#include <algorithm>
#include <charconv>

#include "core/ids.h"
#include "core/probe_availability.h"
#include "core/report.h"

namespace nccl_triage {
namespace {

bool Ran(ProbeOutcome o) { return o != ProbeOutcome::kNotRun && o != ProbeOutcome::kUnavailable; }
bool Failed(ProbeOutcome o) {
  return o == ProbeOutcome::kFail || o == ProbeOutcome::kTimeout || o == ProbeOutcome::kCrashed;
}

void AddCause(std::vector<std::string>& causes, std::string_view id) {
  if (std::find(causes.begin(), causes.end(), id) == causes.end()) causes.emplace_back(id);
}

// The causes the probe's log names, less those the node's own checks refute: a log cause that
// is also a host check which passed on this node (`Failed to initialize any NET plugin` names
// ib.hca_present, but every HCA is present when only the selected port is down).
void AddLogCauses(std::vector<std::string>& causes, const ProbeResult* r,
                  const std::vector<Finding>& node_findings) {
  if (r == nullptr || !r->classification) return;
  for (const auto& c : r->classification->causes) {
    const bool refuted =
        std::any_of(node_findings.begin(), node_findings.end(), [&](const Finding& f) {
          return f.check == c.cause && f.status == CheckStatus::kPass;
        });
    if (!refuted) AddCause(causes, c.cause);
  }
}

// Failing node findings, optionally only those of one class.
void AddFindingCauses(std::vector<std::string>& causes, const std::vector<Finding>& findings,
                      std::optional<FaultClass> only) {
  for (const auto& f : findings) {
    if (f.status != CheckStatus::kFail) continue;
    if (only && f.fault_class != *only) continue;
    AddCause(causes, f.check);
  }
}

// "5.00" (GB/s with two decimals, as the probe table prints bandwidth).
std::string GigaBytes(double bytes_per_second) {
  char buf[32];
  auto r =
      std::to_chars(buf, buf + sizeof(buf), bytes_per_second / 1e9, std::chars_format::fixed, 2);
  return r.ec == std::errc() ? std::string(buf, r.ptr) : "?";
}

std::string Describe(const ProbeResult* r, ProbeOutcome o) {
  std::string s(ToString(o));
  if (r != nullptr && !r->detail.empty()) s += " (" + r->detail + ")";
  return s;
}

PairVerdict FromChecks(const DecisionInputs& in, std::string reason) {
  PairVerdict v;
  v.basis = Basis::kChecks;
  v.fault_class = ClassFromFindings(in.node_findings);
  AddFindingCauses(v.causes, in.node_findings, std::nullopt);
  v.reason = std::move(reason);
  return v;
}

}  // namespace

bool IsDegraded(const std::vector<std::string>& causes) {
  return std::any_of(causes.begin(), causes.end(),
                     [](const std::string& id) { return HasTrait(id, kMarksDegraded); });
}

PairVerdict Decide(const DecisionInputs& in) {
  const bool socket_ran = Ran(in.socket);
  const bool ib_ran = Ran(in.ib);

  if (!socket_ran && !ib_ran) {
    std::string why = in.socket == ProbeOutcome::kUnavailable || in.ib == ProbeOutcome::kUnavailable
                          ? "probes unavailable: " + Describe(in.socket_result, in.socket)
                          : "probes not run";
    PairVerdict v = FromChecks(in, why + "; verdict predicted from node checks");
    // A probe that could not run says why (probe.no_gpu, ...): that cause comes first, and node
    // checks alone cannot call the pair healthy when its probes never ran for it.
    std::vector<std::string> unavailable;
    for (const ProbeResult* r : {in.socket_result, in.ib_result}) {
      if (r == nullptr) continue;
      if (auto cause = UnavailableCause(*r)) AddCause(unavailable, *cause);
    }
    if (!unavailable.empty()) {
      for (auto& c : v.causes) AddCause(unavailable, c);
      v.causes = std::move(unavailable);
      if (v.fault_class == FaultClass::kHealthy) v.fault_class = FaultClass::kUnknown;
    }
    return v;
  }

  PairVerdict v;
  v.basis = Basis::kProbes;

  if (Failed(in.socket)) {
    // The socket path fails too: the fault is not in the RDMA resources.
    v.fault_class = FaultClass::kArchitecture;
    AddLogCauses(v.causes, in.socket_result, in.node_findings);
    AddFindingCauses(v.causes, in.node_findings, FaultClass::kArchitecture);
    if (v.causes.empty() && in.socket == ProbeOutcome::kTimeout)
      AddCause(v.causes, ids::kNcclTimeout);
    if (v.causes.empty()) AddCause(v.causes, ids::kNcclSystem);
    v.reason =
        "socket probe " + Describe(in.socket_result, in.socket) + ": fails without InfiniBand too";
    return v;
  }

  if (Failed(in.ib)) {
    v.fault_class = socket_ran ? FaultClass::kIbResource : FaultClass::kUnknown;
    AddLogCauses(v.causes, in.ib_result, in.node_findings);
    AddFindingCauses(v.causes, in.node_findings, std::nullopt);
    if (v.causes.empty() && in.ib == ProbeOutcome::kTimeout) AddCause(v.causes, ids::kIbFabric);
    if (v.causes.empty()) AddCause(v.causes, ids::kNcclSystem);
    if (!socket_ran && in.ib_result != nullptr && in.ib_result->classification) {
      v.fault_class = in.ib_result->classification->fault_class;
    }
    v.reason = socket_ran ? "socket probe passed, IB probe " + Describe(in.ib_result, in.ib)
                          : "IB probe " + Describe(in.ib_result, in.ib) +
                                " and the socket probe did not run: family not split";
    return v;
  }

  if (!ib_ran) {
    PairVerdict c =
        FromChecks(in, "socket probe passed, IB probe " + Describe(in.ib_result, in.ib) +
                           "; IB side predicted from node checks");
    return c;
  }

  // IB passed (and the socket probe passed or did not run).
  if (in.ib_result != nullptr && !in.ib_result->transport.empty() &&
      in.ib_result->transport != "NET/IB") {
    v.fault_class = FaultClass::kIbResource;
    AddCause(v.causes, ids::kProbeTransport);
    AddFindingCauses(v.causes, in.node_findings, std::nullopt);
    v.reason = "IB probe ran via " + in.ib_result->transport + ", not NET/IB";
    return v;
  }
  v.fault_class = FaultClass::kHealthy;
  v.reason = socket_ran ? "socket and IB probes passed" : "IB probe passed";
  if (in.ib_result != nullptr && in.expected_ib_bytes_per_second &&
      *in.expected_ib_bytes_per_second > 0 &&
      in.ib_result->busbw_bytes_per_second <
          in.busbw_min_fraction * *in.expected_ib_bytes_per_second) {
    v.fault_class = FaultClass::kIbResource;
    AddCause(v.causes, ids::kIbBandwidth);
    v.degraded = IsDegraded(v.causes);
    for (const auto& f : in.node_findings) {
      if (f.status != CheckStatus::kPass && HasTrait(f.check, kExplainsSlowIb)) {
        AddCause(v.causes, f.check);
      }
    }
    const std::string numbers = GigaBytes(in.ib_result->busbw_bytes_per_second) +
                                " GB/s is below " +
                                std::to_string(static_cast<int>(in.busbw_min_fraction * 100)) +
                                "% of " + GigaBytes(*in.expected_ib_bytes_per_second) + " GB/s";
    v.reason = "both probes passed but IB busbw " + numbers + ", what the ports should carry" +
               (in.expected_ib_basis.empty() ? "" : " (" + in.expected_ib_basis + ")");
  }
  // The probes worked, but NCCL's diagnostics report (NCCL 2.31+) failed a check on the way:
  // named, with the verdict's class left to the probes (both paths carried data).
  std::vector<std::string> diagnosed;
  for (const ProbeResult* r : {in.socket_result, in.ib_result}) {
    if (r == nullptr || !r->classification) continue;
    for (const auto& c : r->classification->causes) {
      if (c.diagnostics) AddCause(diagnosed, c.cause);
    }
  }
  if (!diagnosed.empty()) {
    std::string names;
    for (const auto& d : diagnosed) {
      names += (names.empty() ? "" : ", ") + d;
      AddCause(v.causes, d);
    }
    v.reason += "; NCCL's diagnostics report failed a check: " + names;
  }
  return v;
}

}  // namespace nccl_triage
