// Rails: the node's HCA ports, each paired with the GPU closest to its HCA in the PCIe tree.
//
// A DGX-class node has one HCA per GPU (or per GPU pair) on the GPU's PCIe switch; NCCL sends a
// GPU's inter-node traffic through that HCA, and a rail-optimised fabric connects rail k of every
// node to the same leaf switches. RailTable() derives the table from a NodeSnapshot (the PCIe paths
// and NUMA nodes host/ reads from sysfs); ib.rail_topology judges it, `check` and the agent's
// /status show it, and the per-rail probes use it to pick the GPU of each rail. Pure functions of
// plain values; thread-safe.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/reflect.h"
#include "core/snapshot.h"

namespace nccl_triage {

// The highest port rate nccl-triage believes, in Gb/s: above any InfiniBand or Ethernet port made
// (XDR 12x is 2,400). A rate above it, from a configuration or an agent's hello, is a mistake or
// an attack, and an expectation built on it would fail every healthy port.
inline constexpr double kMaxPortRateGbps = 3200;

// A port rate as reported to the coordinator, or 0 (unknown) when it is not a plausible one.
inline double PlausiblePortRate(double gbps) {
  return gbps > 0 && gbps <= kMaxPortRateGbps ? gbps : 0;
}

// How close a rail's GPU is to its HCA.
enum class RailAffinity {
  kPcieSwitch,  // under one PCIe switch: GPUDirect RDMA stays below the CPU
  kNuma,        // no GPU on the HCA's switch, one on the same NUMA node
  kNone,        // neither: the GPU's traffic crosses the CPU interconnect
  kUnknown,     // the PCIe path of the HCA or of every GPU could not be read
};
constexpr auto NamesOf(Type<RailAffinity>) {
  return std::array{Named(RailAffinity::kPcieSwitch, "pcie_switch"),
                    Named(RailAffinity::kNuma, "numa"), Named(RailAffinity::kNone, "none"),
                    Named(RailAffinity::kUnknown, "unknown")};
}

struct Rail {
  int index = 0;       // rail number: the port's position among the node's HCA ports, in name order
  std::string device;  // "mlx5_0"
  int port = 0;        // 1
  std::string hca_bdf;  // "0000:0c:00.0", empty when the device link could not be read
  int numa_node = -1;   // the HCA's NUMA node, -1 unknown
  std::optional<double> rate_gbps;
  std::string state;    // the port's state name ("ACTIVE", "DOWN"), "unknown" when unreadable
  bool active = false;  // ACTIVE with physical state LinkUp: NCCL can use it
  int gpu = -1;         // closest GPU's index in PCI bus order (CUDA_DEVICE_ORDER=PCI_BUS_ID)
  std::string gpu_bdf;  // its bus id, empty when the node has no GPU
  RailAffinity affinity = RailAffinity::kUnknown;
  int shared_depth = 0;  // PCIe path components the HCA and its GPU share (root complex = 1)

  friend bool operator==(const Rail&, const Rail&) = default;
};
// The most rails a node's summary carries (NodeSummary.rails); a rail's number is below it.
inline constexpr int kMaxRails = 64;
// The bounds are a rail's on the wire (v1::Rail: wire/fields.h copies the fields of the same names
// both ways, wire/convert.cc the others).
constexpr auto FieldsOf(Type<Rail>) {
  return std::tuple{Field("index", &Rail::index, Bound{.max = kMaxRails - 1}),
                    Field("device", &Rail::device, Bound{.max = 64}),
                    Field("port", &Rail::port, Bound{.max = 255}),
                    Field("hca_bdf", &Rail::hca_bdf),
                    Field("numa_node", &Rail::numa_node),
                    Field("rate_gbps", &Rail::rate_gbps),
                    Field("state", &Rail::state),
                    Field("active", &Rail::active),
                    Field("gpu", &Rail::gpu),
                    Field("gpu_bdf", &Rail::gpu_bdf, Bound{.max = 64}),
                    Field("affinity", &Rail::affinity),
                    Field("shared_depth", &Rail::shared_depth)};
}

// A rail's HCA port as reports, verdicts and the coordinator name it: "mlx5_3/1".
std::string RailPortName(const Rail& rail);
// Back from RailPortName: "mlx5_3/1" -> {"mlx5_3", 1}; a name without "/N" is the device, port 0.
std::pair<std::string, int> SplitRailPortName(std::string_view name);

// The GPUs in PCI bus order (snapshot.gpus, else NVIDIA display-class PCI functions), as CUDA
// numbers them with CUDA_DEVICE_ORDER=PCI_BUS_ID.
std::vector<std::string> GpuBusIds(const NodeSnapshot& s);

// One rail per port of every HCA, in the snapshot's order (the gatherer lists devices in natural
// name order: mlx5_2 before mlx5_10). The closest GPU is
// the one sharing the longest PCIe path with the HCA when that is more than the root complex and
// its root port (a PCIe switch), else one on the same NUMA node, else the first GPU (affinity
// none). Ties go to a GPU no earlier rail took, then to the lowest bus id, so two HCAs and two
// GPUs on one switch pair up one to one.
std::vector<Rail> RailTable(const NodeSnapshot& s);

// For each GPU of GpuBusIds(s), its closest rails: those whose HCA shares the deepest PCIe switch
// with it (several when one switch holds two HCAs and two GPUs; none on a node without
// switches).
std::vector<std::vector<int>> RailsOnGpuSwitch(const NodeSnapshot& s,
                                               const std::vector<Rail>& rails);

nlohmann::json ToJson(const Rail& r);
nlohmann::json RailsJson(const std::vector<Rail>& rails);

}  // namespace nccl_triage
