#include "core/rails.h"

#include <algorithm>
#include <charconv>
#include <nlohmann/json.hpp>
#include <tuple>

namespace nccl_triage {
namespace {

constexpr uint16_t kVendorNvidia = 0x10de;
// A shared path longer than this (the root complex and its root port) goes through a PCIe switch.
constexpr int kRootComplexAndPort = 2;

const PciDevice* FindPci(const NodeSnapshot& s, std::string_view bdf) {
  if (bdf.empty()) return nullptr;
  for (const auto& d : s.pci_devices) {
    if (d.bdf == bdf) return &d;
  }
  return nullptr;
}

// Path components two functions share above themselves.
int SharedDepth(const PciDevice& a, const PciDevice& b) {
  if (a.path.empty() || b.path.empty()) return 0;
  const size_t limit = std::min(a.path.size(), b.path.size()) - 1;
  size_t n = 0;
  while (n < limit && a.path[n] == b.path[n]) ++n;
  return static_cast<int>(n);
}

int NumaOf(const PciDevice* d) {
  return d != nullptr && d->numa_node.ok() ? *d->numa_node.value : -1;
}

// "4: ACTIVE" -> "ACTIVE".
std::string StateName(const Fact<std::string>& state) {
  if (!state.ok()) return "unknown";
  std::string_view v = *state.value;
  if (size_t colon = v.find(':'); colon != std::string_view::npos) v.remove_prefix(colon + 1);
  while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
  return v.empty() ? "unknown" : std::string(v);
}

bool Contains(const Fact<std::string>& f, std::string_view what) {
  return f.ok() && f.value->find(what) != std::string::npos;
}

}  // namespace

std::string RailPortName(const Rail& rail) { return rail.device + "/" + std::to_string(rail.port); }

std::pair<std::string, int> SplitRailPortName(std::string_view name) {
  const size_t slash = name.rfind('/');
  if (slash == std::string_view::npos) return {std::string(name), 0};
  const char* end = name.data() + name.size();
  int port = 0;
  auto [at, ec] = std::from_chars(name.data() + slash + 1, end, port);
  if (ec != std::errc() || at != end || port <= 0) return {std::string(name), 0};
  return {std::string(name.substr(0, slash)), port};
}

std::vector<std::string> GpuBusIds(const NodeSnapshot& s) {
  std::vector<std::string> out;
  for (const auto& g : s.gpus) out.push_back(g.bdf);
  if (out.empty()) {
    for (const auto& d : s.pci_devices) {
      if (d.vendor == kVendorNvidia && (d.class_code >> 16) == 0x03) out.push_back(d.bdf);
    }
  }
  std::sort(out.begin(), out.end());  // zero-padded hex sorts as text
  return out;
}

std::vector<Rail> RailTable(const NodeSnapshot& s) {
  const std::vector<std::string> gpus = GpuBusIds(s);
  std::vector<const PciDevice*> gpu_pci;
  bool any_gpu_path = false;
  for (const auto& bdf : gpus) {
    gpu_pci.push_back(FindPci(s, bdf));
    any_gpu_path |= gpu_pci.back() != nullptr && !gpu_pci.back()->path.empty();
  }
  std::vector<int> taken(gpus.size(), 0);
  std::vector<Rail> rails;
  for (const auto& dev : s.ib_devices) {
    const PciDevice* hca = FindPci(s, dev.pci_bdf);
    for (const auto& port : dev.ports) {
      Rail r;
      r.index = static_cast<int>(rails.size());
      r.device = dev.name;
      r.port = port.num;
      r.hca_bdf = dev.pci_bdf;
      r.numa_node = NumaOf(hca);
      if (port.rate_gbps.ok()) r.rate_gbps = *port.rate_gbps.value;
      r.state = StateName(port.state);
      r.active = Contains(port.state, "ACTIVE") && Contains(port.phys_state, "LinkUp");
      if (gpus.empty()) {
        r.affinity = RailAffinity::kNone;
        rails.push_back(std::move(r));
        continue;
      }
      // Best GPU: longest shared path, then same NUMA node, then not taken, then lowest bus id.
      size_t best = 0;
      std::tuple<int, bool, bool> best_key{-1, false, false};
      for (size_t g = 0; g < gpus.size(); ++g) {
        const int depth =
            hca != nullptr && gpu_pci[g] != nullptr ? SharedDepth(*hca, *gpu_pci[g]) : 0;
        const bool numa = r.numa_node >= 0 && NumaOf(gpu_pci[g]) == r.numa_node;
        std::tuple<int, bool, bool> key{depth > kRootComplexAndPort ? depth : 0, numa,
                                        taken[g] == 0};
        if (key > best_key) {
          best_key = key;
          best = g;
        }
      }
      ++taken[best];
      r.gpu = static_cast<int>(best);
      r.gpu_bdf = gpus[best];
      r.shared_depth = std::get<0>(best_key);
      if (hca == nullptr || hca->path.empty() || !any_gpu_path) {
        // Without paths only the NUMA node can say anything.
        r.affinity = std::get<1>(best_key) ? RailAffinity::kNuma : RailAffinity::kUnknown;
      } else if (r.shared_depth > kRootComplexAndPort) {
        r.affinity = RailAffinity::kPcieSwitch;
      } else if (std::get<1>(best_key)) {
        r.affinity = RailAffinity::kNuma;
      } else {
        r.affinity = RailAffinity::kNone;
      }
      rails.push_back(std::move(r));
    }
  }
  return rails;
}

std::vector<std::vector<int>> RailsOnGpuSwitch(const NodeSnapshot& s,
                                               const std::vector<Rail>& rails) {
  const std::vector<std::string> gpus = GpuBusIds(s);
  std::vector<std::vector<int>> out(gpus.size());
  for (size_t g = 0; g < gpus.size(); ++g) {
    const PciDevice* gpu = FindPci(s, gpus[g]);
    if (gpu == nullptr) continue;
    int best = kRootComplexAndPort;
    for (const auto& r : rails) {
      const PciDevice* hca = FindPci(s, r.hca_bdf);
      const int depth = hca != nullptr ? SharedDepth(*hca, *gpu) : 0;
      if (depth < best || depth == kRootComplexAndPort) continue;
      if (depth > best) out[g].clear();
      best = depth;
      out[g].push_back(r.index);
    }
  }
  return out;
}

nlohmann::json ToJson(const Rail& r) {
  return {{"rail", r.index},
          {"device", r.device},
          {"port", r.port},
          {"hca_bdf", r.hca_bdf},
          {"numa_node", r.numa_node},
          {"rate_gbps", r.rate_gbps ? nlohmann::json(*r.rate_gbps) : nlohmann::json(nullptr)},
          {"state", r.state},
          {"active", r.active},
          {"gpu", r.gpu >= 0 ? nlohmann::json(r.gpu) : nlohmann::json(nullptr)},
          {"gpu_bdf", r.gpu_bdf},
          {"affinity", ToString(r.affinity)}};
}

nlohmann::json RailsJson(const std::vector<Rail>& rails) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& r : rails) out.push_back(ToJson(r));
  return out;
}

}  // namespace nccl_triage
