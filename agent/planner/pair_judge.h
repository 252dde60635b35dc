// JudgePair: from the probe results of one pair (two ranks x two modes) to the pair's verdict.
//
// A probe has two ranks and both report. When one fails, the other usually fails only as a
// consequence ("remote process exited", a timeout waiting for the peer); MergeRanks folds them
// with core MergeRankResults (core/rank_merge.h), the rule `probe --pair-local` uses too.
// The merged socket and IB results go through core Decide() with the failing findings of both
// nodes and of the cross-node checks, so the pair verdict names causes the same way everywhere.
//
// A pair is kPass when Decide says healthy from probes, kFail when it says architecture or
// ib_resource from probes, and kInconclusive otherwise (an agent lost mid-probe, a probe skipped
// because the GPUs were busy, NCCL unavailable, a class the table cannot name). Pure.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/reflect.h"
#include "core/decision.h"
#include "core/probe_result.h"
#include "planner/node_info.h"

namespace nccl_triage {

enum class PairStatus { kPass, kFail, kInconclusive };
constexpr auto NamesOf(Type<PairStatus>) {
  return std::array{Named(PairStatus::kPass, "pass"), Named(PairStatus::kFail, "fail"),
                    Named(PairStatus::kInconclusive, "inconclusive")};
}

// One mode of one pair as the coordinator saw it.
struct ModeProbes {
  std::optional<ProbeResult> rank0;  // absent when that rank never reported
  std::optional<ProbeResult> rank1;
  std::string lost;        // non-empty when the probe could not finish: "agent node-3 disconnected"
  bool attempted = false;  // false: this mode was not run (e.g. the socket probe was lost)
};

// The IB probe of a pair on one rail: both nodes' HCA of rail `rail` and the GPU nearest it.
struct RailProbes {
  int rail = 0;
  std::string device;  // "mlx5_3/1": the rail's HCA and port, as the pair's nodes name it
  ModeProbes ib;
};

struct PairProbes {
  NodePair pair;
  ModeProbes socket;
  ModeProbes ib;
  std::vector<RailProbes> rails;  // one per rail probed after the IB phase, in the order they started
};

struct JudgeOptions {
  double busbw_min_fraction = 0.5;
  // Compare IB busbw with the ports' rate (only for probes of at least kBandwidthBoundBytes; the
  // coordinator sets it from probe.size_bytes).
  bool check_bandwidth = false;
};

// What a pair's IB probe should carry, and from which ports that was derived.
struct ExpectedBandwidth {
  double bytes_per_second = 0;
  std::string basis;  // "a: mlx5_0:1 200 Gb/s; b: mlx5_0:1 200 Gb/s"
};

// Per node, the summed rate of the ports its rank's IB channels used (ProbeResult::ib_ports; two
// ranks on two NICs each move their half in parallel); a node whose ports are unknown or not in
// its summary counts its best IB/RoCE port. The pair is as fast as its slower node.
std::optional<ExpectedBandwidth> ExpectedPairBandwidth(const NodeInfo& a, const NodeInfo& b,
                                                       const std::vector<std::string>& ports_a,
                                                       const std::vector<std::string>& ports_b);

// What the pair's IB probe on one rail should carry: the lower of the two nodes' rates of that
// rail's port (`device` "mlx5_3/1"; each node's rail table, else the port in its HCA list), never
// a node's summed or best rate: a rail is one port on each side. nullopt when either node does not
// know the port's rate.
std::optional<ExpectedBandwidth> ExpectedRailBandwidth(const NodeInfo& a, const NodeInfo& b,
                                                       int rail, std::string_view device);

struct PairJudgement {
  PairVerdict verdict;
  PairStatus status = PairStatus::kInconclusive;
  ProbeOutcome socket = ProbeOutcome::kNotRun;
  ProbeOutcome ib = ProbeOutcome::kNotRun;
  double ib_busbw_bytes_per_second = 0;
  // What the IB busbw was compared with (0: bandwidth not judged, or no port rate known).
  double expected_ib_bytes_per_second = 0;
};

// The two ranks of one mode folded into one result: not_run when the mode was not attempted, was
// lost or a rank never reported, else MergeRankResults of the two.
ProbeResult MergeRanks(const ModeProbes& probes, ProbeMode mode);

// What one port of the pair should carry: the lower of the two nodes' best IB port rates.
std::optional<double> ExpectedPairBytesPerSecond(const NodeInfo& a, const NodeInfo& b);

PairJudgement JudgePair(const NodeInfo& a, const NodeInfo& b, const PairProbes& probes,
                        const JudgeOptions& options);

// JudgePair with the IB busbw compared with `expected` (when options.check_bandwidth) instead of
// the rate of the ports the ranks say they used: how a rail's probe is judged.
PairJudgement JudgePairExpecting(const NodeInfo& a, const NodeInfo& b, const PairProbes& probes,
                                 const JudgeOptions& options,
                                 const std::optional<ExpectedBandwidth>& expected);

// The verdict before any probe ran: the failing node and cross-node findings (basis checks). A
// pair with a node whose probes cannot run (ProbesCannotRun) is never healthy: unknown, with
// that node's probe.no_* cause first.
PairVerdict PredictPair(const NodeInfo& a, const NodeInfo& b);

}  // namespace nccl_triage
