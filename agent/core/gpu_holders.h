// Which processes make a GPU busy: the holders of /dev/nvidia<minor> (NodeSnapshot::gpu_holders)
// other than the node's own GPU services (nvidia-persistenced, DCGM, the device plugin,
// gpu-feature-discovery, nvidia-smi) and this agent's children. A probe never runs on a GPU a
// workload holds. Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "core/snapshot.h"

namespace nccl_triage {

// The node's GPU services and the agent itself, by their 15-character comm.
bool IsSystemGpuHolder(std::string_view comm);

// The first workload process holding any GPU of the node, or null.
const DeviceHolder* FirstWorkloadGpuHolder(const NodeSnapshot& s);

// The first workload process holding the GPU at PCI bus id `gpu_bdf` (/dev/nvidia<its minor>), or
// null. When the GPU's minor is unknown (no information file), any workload holder counts: a GPU
// that cannot be told apart is treated as busy.
const DeviceHolder* WorkloadHolderOfGpu(const NodeSnapshot& s, std::string_view gpu_bdf);

// "pid 31337 python3".
std::string HolderText(const DeviceHolder& h);

}  // namespace nccl_triage
