// Cross-node checks: pure functions over the summaries of two nodes that predict, before any probe
// runs, that the pair cannot work (DESIGN "Judge": cross-node checks run in the coordinator).
//
//   pair.version_skew   NCCL versions differ (NCCL refuses mismatched ranks: fail); CUDA driver
//                       versions differ (works, but a rollout is half done: warn)
//   pair.arch_mixed     CPU architectures differ (fail)
//   pair.pkey_partition no PKey the two nodes share with at least one side a full member (fail)
//   pair.link_layer     one node's HCAs are only InfiniBand, the other's only Ethernet (fail)
//
// Each check reports pass, warn, fail, or skip with the reason when a side did not tell (an
// unknown value is never a failure). No I/O; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "core/model.h"
#include "planner/node_info.h"

namespace nccl_triage {

std::vector<Finding> CrossNodeChecks(const NodeInfo& a, const NodeInfo& b);

// True when any cross-node check fails: the pair is predicted broken, so the planner does not use
// one of these nodes as a known-good reference for the other.
bool PredictedIncompatible(const NodeInfo& a, const NodeInfo& b);

// What the cross-node checks read of one node, as a string: two nodes with equal signatures are
// judged alike against any third (the coordinator groups nodes by it).
std::string CrossNodeSignature(const NodeInfo& n);

// The failing cross-node findings only (what a pair verdict with basis "checks" is made of).
std::vector<Finding> FailingCrossNodeFindings(const NodeInfo& a, const NodeInfo& b);

}  // namespace nccl_triage
