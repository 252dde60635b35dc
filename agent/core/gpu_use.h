// Which GPUs of a node a probe may use: the busy-GPU gate, per GPU and about workloads.
//
// A GPU is busy when a workload uses it (core/gpu_holders.h's GpuBusyBy): a process with a CUDA
// context holds its device file, or the kubelet assigned it to a container. System holders never
// count: nvidia-persistenced keeps every device file open in persistence mode, DCGM's host engine
// and dcgm-exporter poll them, the device plugin and GPU feature discovery check health,
// nvidia-smi reads, and the agent's own probe children are the probe.
//
// Pure: a function of the snapshot.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/gpu_holders.h"
#include "core/snapshot.h"

namespace nccl_triage {

struct GpuUse {
  // PCI bus ids of the GPUs no workload uses, in the snapshot's order. When the snapshot lists
  // no GPU (no driver information), one empty entry stands for "the default device" as long as no
  // workload holds any GPU and the kubelet assigned none.
  std::vector<std::string> idle;
  // Why each busy GPU is busy (GpuBusyBy), in snapshot order: "python3 pid 5150 holds
  // /dev/nvidia0", "assigned to ml/train-0/worker (nvidia.com/gpu)".
  std::vector<std::string> busy;
};

GpuUse JudgeGpuUse(const NodeSnapshot& snapshot);

}  // namespace nccl_triage
