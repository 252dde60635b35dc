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

#include "base/reflect.h"
#include "core/model.h"
#include "core/rails.h"

namespace nccl_triage {

struct PKeyInfo {
  uint16_t value = 0;  // 15-bit partition number, membership bit removed
  bool full_member = false;
  int index = 0;  // table index
  friend bool operator==(const PKeyInfo&, const PKeyInfo&) = default;
};
constexpr auto FieldsOf(Type<PKeyInfo>) {
  return std::tuple{Field("value", &PKeyInfo::value), Field("full_member", &PKeyInfo::full_member),
                    Field("index", &PKeyInfo::index, Bound{.max = 65535})};
}

struct PortInfo {
  int num = 0;
  std::string link_layer;  // "InfiniBand", "Ethernet", "" when unreadable
  double rate_gbps = 0;
  std::string state;       // "ACTIVE", "DOWN", ... ("" when unreadable)
  std::string phys_state;  // "LinkUp", ...
  std::vector<PKeyInfo> pkeys;
  friend bool operator==(const PortInfo&, const PortInfo&) = default;
};
constexpr auto FieldsOf(Type<PortInfo>) {
  return std::tuple{Field("num", &PortInfo::num, Bound{.max = 255}),
                    Field("link_layer", &PortInfo::link_layer, Bound{.max = 32}),
                    Field("rate_gbps", &PortInfo::rate_gbps),
                    Field("state", &PortInfo::state, Bound{.max = 32}),
                    Field("phys_state", &PortInfo::phys_state, Bound{.max = 32}),
                    Field("pkeys", &PortInfo::pkeys, Bound{.items = 128})};
}

struct HcaInfo {
  std::string name;
  std::string hca_type;
  std::vector<PortInfo> ports;
  friend bool operator==(const HcaInfo&, const HcaInfo&) = default;
};
constexpr auto FieldsOf(Type<HcaInfo>) {
  return std::tuple{Field("name", &HcaInfo::name, Bound{.max = 64}),
                    Field("hca_type", &HcaInfo::hca_type, Bound{.max = 64}),
                    Field("ports", &HcaInfo::ports, Bound{.items = 8})};
}

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
constexpr auto FieldsOf(Type<NodeProbeAvailability>) {
  return std::tuple{Field("available", &NodeProbeAvailability::available),
                    Field("reason", &NodeProbeAvailability::reason, Bound{.max = 32}),
                    Field("evidence", &NodeProbeAvailability::evidence)};
}

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
constexpr auto FieldsOf(Type<NodeInfo>) {
  return std::tuple{Field("name", &NodeInfo::name),
                    Field("topology", &NodeInfo::topology, Bound{.max = 128}),
                    Field("arch", &NodeInfo::arch, Bound{.max = 64}),
                    Field("hcas", &NodeInfo::hcas, Bound{.items = 64}),
                    Field("nccl_version", &NodeInfo::nccl_version, Bound{.max = 64}),
                    Field("cuda_driver_version", &NodeInfo::cuda_driver_version,
                          Bound{.max = 1u << 30}),
                    Field("nvidia_driver_version", &NodeInfo::nvidia_driver_version,
                          Bound{.max = 64}),
                    Field("gpu_model", &NodeInfo::gpu_model, Bound{.max = 128}),
                    Field("gpu_count", &NodeInfo::gpu_count, Bound{.max = 1024}),
                    Field("findings", &NodeInfo::findings, Bound{.items = 128}),
                    Field("checks_passed", &NodeInfo::checks_passed, Bound{.max = 1u << 20}),
                    Field("gpus_busy", &NodeInfo::gpus_busy),
                    Field("rails", &NodeInfo::rails, Bound{.items = kMaxRails}),
                    Field("parallel_probes", &NodeInfo::parallel_probes),
                    Field("probe", &NodeInfo::probe)};
}

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
