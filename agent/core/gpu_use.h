// Which GPUs of a node a probe may use: the busy-GPU gate, per GPU and about workloads.
//
// A GPU is busy when a workload uses it: a process that holds its device file /dev/nvidia<minor>
// (NodeSnapshot::gpu_holders) and has a CUDA context, which every CUDA process shows by mapping
// libcuda (DeviceHolder::cuda_context, from /proc/<pid>/maps). System holders never count:
// nvidia-persistenced keeps every device file open in persistence mode, DCGM's host engine and
// dcgm-exporter poll them, the device plugin and GPU feature discovery check health, nvidia-smi
// reads, and the agent's own probe children are the probe. A holder without a CUDA context (a
// monitor that only opens the device) does not make a GPU busy either. The system holders are
// core/gpu_holders.h's IsSystemGpuHolder; its WorkloadHolderOfGpu names
// a GPU busy exactly when JudgeGpuUse leaves it out of `idle`.
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
  // PCI bus ids of the GPUs no workload holds, in the snapshot's order. When the snapshot lists
  // no GPU (no driver information), one empty entry stands for "the default device" as long as no
  // workload holds any GPU.
  std::vector<std::string> idle;
  // The workload holders that make GPUs busy, in snapshot order.
  std::vector<DeviceHolder> workload;
};

GpuUse JudgeGpuUse(const NodeSnapshot& snapshot);

// "python3 pid 4242 holds /dev/nvidia0": the first workload holder, for a skip reason.
std::string DescribeHolder(const DeviceHolder& holder);

}  // namespace nccl_triage
