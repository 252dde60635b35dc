#include "core/gpu_use.h"

#include <algorithm>
#include <iterator>

namespace nccl_triage {

GpuUse JudgeGpuUse(const NodeSnapshot& s) {
  GpuUse use;
  for (const auto& h : s.gpu_holders) {
    if (IsWorkloadGpuHolder(h)) use.workload.push_back(h);
  }
  auto held = [&use](const std::string& device) {
    return std::any_of(use.workload.begin(), use.workload.end(),
                       [&](const DeviceHolder& h) { return h.device == device; });
  };
  if (s.gpus.empty()) {
    if (use.workload.empty()) use.idle.emplace_back();
    return use;
  }
  for (const auto& g : s.gpus) {
    // Without its minor a GPU cannot be told from the others: it is idle only if no GPU is used.
    const bool busy =
        g.minor < 0 ? !use.workload.empty() : held("/dev/nvidia" + std::to_string(g.minor));
    if (!busy) use.idle.push_back(g.bdf);
  }
  return use;
}

std::string DescribeHolder(const DeviceHolder& h) {
  return h.comm + " pid " + std::to_string(h.pid) + " holds " + h.device;
}

}  // namespace nccl_triage
