// The decision table: socket probe x IB probe -> class, as in DESIGN.md.
//
// | socket | IB   | class        |
// | pass   | pass | healthy (or ib_resource/ib.bandwidth when IB busbw is below expectation,   |
// |        |      | with the node findings whose catalogue entry is kExplainsSlowIb)          |
// | pass   | fail | ib_resource (causes from the IB log and the node checks)                  |
// | fail   | any  | architecture                                                              |
// | not run / unavailable | from node checks only, basis "checks"; an unavailable probe's |
// |        |      | cause (probe.no_nccl/no_cuda/no_gpu) first, and never healthy then        |
// A cause a probe's log names is dropped when it is a host check that passed in node_findings:
// the node's own evidence refutes its premise (the log's `ib.hca_present` when every HCA is
// present and only the selected port is down).
// Pure: no clock, no I/O.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/model.h"
#include "core/probe_result.h"

namespace nccl_triage {

struct PairVerdict {
  FaultClass fault_class = FaultClass::kUnknown;
  Basis basis = Basis::kChecks;
  std::vector<std::string> causes;  // catalogue ids, most likely first, no duplicates
  std::string reason;               // one line for people
  bool degraded = false;            // both pass but IB busbw below expectation (IsDegraded)
};

// Whether a verdict with these causes is degraded: one of them is kMarksDegraded in the catalogue.
// Both ends of the wire derive the flag from the causes with this.
bool IsDegraded(const std::vector<std::string>& causes);

// Below this all-reduce size a probe measures latency more than bandwidth: a 64 KiB probe would
// call every pair degraded. nccl-tests' two-node all-reduce is close to the link rate from a few
// tens of MiB; the default probe (64 MiB) is above this. The coordinator and `probe --pair-local`
// compare busbw with the ports' rate only from this size on.
inline constexpr uint64_t kBandwidthBoundBytes = 32ull << 20;

struct DecisionInputs {
  ProbeOutcome socket = ProbeOutcome::kNotRun;
  ProbeOutcome ib = ProbeOutcome::kNotRun;
  const ProbeResult* socket_result = nullptr;  // optional details (classification, busbw)
  const ProbeResult* ib_result = nullptr;
  // Causes the node checks of the nodes involved predict, in order (used to name the cause of an
  // IB failure the log cannot explain, and as the whole verdict when probes did not run).
  std::vector<Finding> node_findings;
  std::optional<double> expected_ib_bytes_per_second;  // from the ports' rate
  std::string expected_ib_basis;  // where the expectation came from ("mlx5_0:1 at 200 Gb/s")
  double busbw_min_fraction = 0.5;
};

PairVerdict Decide(const DecisionInputs& in);

}  // namespace nccl_triage
