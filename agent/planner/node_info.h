// NodeInfo and NodePair: the coordinator's plain view of one agent's node and of a pair of nodes.
//
// NodeInfo is what an agent's Hello (and later Heartbeats) said about its node: the facts the
// cross-node checks compare (CPU architecture, HCAs with link layers, rates and PKeys, NCCL and
// CUDA driver versions) and the node's own failing findings, which the decision table uses to name
// the cause of a failed probe. Plain values: copied freely, no I/O, safe to share once built.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "core/model.h"
#include "core/rails.h"

namespace nccl_triage {

struct PKeyInfo {
  uint16_t value = 0;  // 15-bit partition number, membership bit removed
  bool full_member = false;
  int index = 0;  // table index
  friend bool operator==(const PKeyInfo&, const PKeyInfo&) = default;
};

struct PortInfo {
  int num = 0;
  std::string link_layer;  // "InfiniBand", "Ethernet", "" when unreadable
  double rate_gbps = 0;
  std::string state;       // "ACTIVE", "DOWN", ... ("" when unreadable)
  std::string phys_state;  // "LinkUp", ...
  std::vector<PKeyInfo> pkeys;
  friend bool operator==(const PortInfo&, const PortInfo&) = default;
};

struct HcaInfo {
  std::string name;
  std::string hca_type;
  std::vector<PortInfo> ports;
  friend bool operator==(const HcaInfo&, const HcaInfo&) = default;
};

// Whether a node's NCCL probes can run, as its agent said (NodeSummary.probe): the agent's
// library check and its probes since. `reason` is the word of nccl_triage_probe_available
// ("ok", "pending", "no_nccl", "no_cuda", "no_gpu", "error", or a newer agent's).
struct NodeProbeAvailability {
  bool available = false;
  std::string reason{};
  std::string evidence{};  // one line: the NCCL found, or the failing call
  // Said it cannot probe: not available, and not merely pending (not checked yet).
  bool CannotRun() const;
  friend bool operator==(const NodeProbeAvailability&, const NodeProbeAvailability&) = default;
};

// The reason word of a node whose agent does not say (an agent before NodeSummary.probe).
inline constexpr std::string_view kProbeAvailabilityUnknown = "unknown";

struct NodeInfo {
  std::string name;
  std::string topology;  // value of the configured topology label ("" when unknown)
  std::string arch;      // "x86_64", "aarch64", "" when unknown
  std::vector<HcaInfo> hcas;
  std::string nccl_version;  // "2.28.9", "" until known
  int cuda_driver_version = 0;
  std::string nvidia_driver_version;
  std::string gpu_model;
  int gpu_count = 0;
  std::vector<Finding> findings;  // the node's failing and warning checks
  // How many checks passed (they are not listed); nullopt from an agent that does not say.
  std::optional<int> checks_passed;
  bool gpus_busy = false;  // the agent refuses probes while another process holds GPUs
  // The node's rails as its agent told them (index, device, port, active, rate, GPU bus id; the
  // PCIe details stay on the node). Empty from an agent that does not send them.
  std::vector<Rail> rails;
  // How many probes the agent runs at once, each on its own GPU (its hello); 1 from an agent
  // that does not say.
  int parallel_probes = 1;
  // Whether its probes can run; nullopt from an agent that does not say (unknown: probed).
  std::optional<NodeProbeAvailability> probe;
  friend bool operator==(const NodeInfo&, const NodeInfo&) = default;
};

// Whether the node's agent said its probes cannot run (not available, and not merely pending):
// the coordinator then leaves it out of sweeps and triages. False when unknown.
bool ProbesCannotRun(const NodeInfo& info);

// "ok", "pending", "no_nccl", ... as the agent said; "unknown" when it did not.
std::string_view ProbeAvailabilityReason(const NodeInfo& info);

// Why a node is left out: "probes cannot run on this node (no_nccl: <evidence>)".
std::string ProbesUnavailableText(const NodeInfo& info);

// An unordered pair of node names, kept with a < b so that it can key maps.
struct NodePair {
  std::string a;
  std::string b;

  NodePair() = default;
  NodePair(std::string x, std::string y) {
    if (y < x) std::swap(x, y);
    a = std::move(x);
    b = std::move(y);
  }
  bool Has(const std::string& n) const { return a == n || b == n; }
  const std::string& Other(const std::string& n) const { return a == n ? b : a; }
  friend bool operator==(const NodePair&, const NodePair&) = default;
  friend bool operator<(const NodePair& x, const NodePair& y) {
    return std::tie(x.a, x.b) < std::tie(y.a, y.b);
  }
};

std::string ToString(const NodePair& p);  // "a<->b"

}  // namespace nccl_triage
