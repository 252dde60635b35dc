// ib.rail_topology: each GPU should have an HCA on its PCIe switch (its rail), and that HCA's port
// should be up. A node whose layout pairs HCAs with GPUs (most rails under a switch with a GPU)
// but has an HCA without one, or a GPU whose every closest HCA is down, sends that GPU's traffic
// through a far HCA across the CPU interconnect: it works, slower, and the rail stays dark.
// A node where no HCA shares a switch with a GPU (a server without PCIe switches) is not judged on
// switch pairing, only on rails being up.
#include "checks/builtin.h"
#include "checks/check_util.h"
#include "core/ids.h"
#include "core/rails.h"

namespace nccl_triage::checks {

// The catalogue row of this check, in the catalogue's position 250 (checks/check.h).
NT_HOST_CHECK(IbRailTopology, 250,
    CauseInfo{"ib.rail_topology", kIb, kHost, kSlowsIb, "Rails (HCA and GPU pairing)",
              "NCCL drives each GPU's traffic through the HCA closest to it (a rail); an HCA "
              "without a GPU on its PCIe switch, or a GPU whose closest HCA is down, sends that "
              "GPU's traffic across the CPU interconnect to another rail, at a fraction of the "
              "bandwidth.",
              "Check the rail table (`nccl-triage check`): bring the named HCA's port up (see "
              "ib.port_state), or move the card back into the slot next to its GPU.",
              "the target of `sys/bus/pci/devices/<bdf>` (the PCIe path) and `<bdf>/numa_node` of "
              "each HCA and GPU, the port state and rate of each HCA port",
              "warn when most HCAs share a PCIe switch with a GPU but one HCA or GPU has no "
              "partner on its switch, or when every HCA on a GPU's switch is not ACTIVE/LinkUp "
              "(the GPU lost its rail); skip without GPUs, without HCAs, or when no PCIe path "
              "could be read"});

namespace {

std::string RailText(const Rail& r) {
  std::string out = "rail " + std::to_string(r.index) + " " + r.device + "/" +
                    std::to_string(r.port) + " " + (r.hca_bdf.empty() ? "?" : r.hca_bdf);
  out += " -> GPU " + (r.gpu >= 0 ? std::to_string(r.gpu) + " " + r.gpu_bdf : std::string("-"));
  out += ", " + std::string(ToString(r.affinity));
  out += ", NUMA " + (r.numa_node >= 0 ? std::to_string(r.numa_node) : std::string("?"));
  out += ", " + (r.rate_gbps ? FormatRate(*r.rate_gbps) : std::string("rate ?"));
  return out + ", " + r.state;
}

std::string GpuName(int index, const std::string& bdf) {
  return "GPU " + std::to_string(index) + " (" + bdf + ")";
}

}  // namespace

Finding IbRailTopology(const NodeSnapshot& s, const Config&, const CheckContext&) {
  if (auto skip = SkipWithoutHcas(ids::kIbRailTopology, s)) return *skip;
  FindingBuilder b(ids::kIbRailTopology);
  const std::vector<std::string> gpus = GpuBusIds(s);
  if (gpus.empty()) {
    b.Add("GPUs", "none", "proc/driver/nvidia/gpus");
    return b.Skip("no GPU on this node: there are no rails to pair");
  }
  const std::vector<Rail> rails = RailTable(s);
  if (rails.empty()) return b.Skip("the HCAs list no ports");
  for (const auto& r : rails) {
    // Keyed by port so that a message naming "mlx5_3/1" shows that rail's line.
    b.Add(RailPortName(r) + " rail", RailText(r),
          r.hca_bdf.empty() ? "sys/class/infiniband/" + r.device + "/device"
                            : "sys/bus/pci/devices/" + r.hca_bdf);
  }
  int on_switch = 0, unknown = 0;
  for (const auto& r : rails) {
    on_switch += r.affinity == RailAffinity::kPcieSwitch ? 1 : 0;
    unknown += r.affinity == RailAffinity::kUnknown ? 1 : 0;
  }
  if (unknown == static_cast<int>(rails.size())) {
    for (const auto& d : s.pci_devices) {
      if (!d.path_error.empty())
        b.Add(d.bdf + " PCIe path", d.path_error, "sys/bus/pci/devices/" + d.bdf);
    }
    return b.Skip("the PCIe placement of the HCAs and GPUs could not be read");
  }

  std::vector<std::string> problems;
  const std::vector<std::vector<int>> on_gpu_switch = RailsOnGpuSwitch(s, rails);
  // A node laid out in rails (most HCAs share a switch with a GPU) where one HCA or GPU does not.
  if (on_switch * 2 > static_cast<int>(rails.size())) {
    for (const auto& r : rails) {
      if (r.affinity == RailAffinity::kPcieSwitch || r.affinity == RailAffinity::kUnknown) continue;
      problems.push_back("rail " + std::to_string(r.index) + " (" + r.device + "/" +
                         std::to_string(r.port) + ") has no GPU on its PCIe switch");
    }
    for (size_t g = 0; g < gpus.size(); ++g) {
      if (on_gpu_switch[g].empty()) {
        problems.push_back(GpuName(static_cast<int>(g), gpus[g]) +
                           " has no HCA on its PCIe switch");
      }
    }
  }
  // A GPU whose every closest HCA is down has lost its rail.
  for (size_t g = 0; g < gpus.size(); ++g) {
    if (on_gpu_switch[g].empty()) continue;
    std::vector<std::string> down;
    for (int k : on_gpu_switch[g]) {
      const Rail& r = rails[static_cast<size_t>(k)];
      if (!r.active) down.push_back(RailPortName(r) + " " + r.state);
    }
    if (down.size() == on_gpu_switch[g].size()) {
      problems.push_back(GpuName(static_cast<int>(g), gpus[g]) +
                         " has lost its rail: its closest HCA " + Join(down) + " is not up");
    }
  }
  if (!problems.empty()) return b.Warn(Join(problems, "; "));
  return b.Pass(std::to_string(rails.size()) + " rail(s), " + std::to_string(on_switch) +
                " with a GPU on their PCIe switch, every GPU's closest HCA up");
}

}  // namespace nccl_triage::checks
