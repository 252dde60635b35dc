#include "core/gpu_use.h"

#include <optional>

namespace nccl_triage {

GpuUse JudgeGpuUse(const NodeSnapshot& s) {
  GpuUse use;
  if (s.gpus.empty()) {
    // No GPU listed: any workload holder or kubelet assignment makes "the default device" busy.
    for (const auto& h : s.gpu_holders) {
      if (IsWorkloadGpuHolder(h)) use.busy.push_back(DescribeHolder(h));
    }
    if (s.gpu_allocations) {
      for (const auto& a : *s.gpu_allocations) use.busy.push_back(DescribeAllocation(a));
    }
    if (use.busy.empty()) use.idle.emplace_back();
    return use;
  }
  for (const auto& g : s.gpus) {
    if (std::optional<std::string> why = GpuBusyBy(s, g.bdf)) {
      use.busy.push_back(*why);
    } else {
      use.idle.push_back(g.bdf);
    }
  }
  return use;
}

}  // namespace nccl_triage
