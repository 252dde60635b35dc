// The catalogue's ids as compile-time symbols: code names an id as ids::kIbPortState, never as a
// string. Each constant is a CauseId, whose constructor runs at compile time and does not compile
// for an id that is not in the catalogue (core/catalogue.h), so a mistyped id here is a build
// error, and a mistyped constant elsewhere is an unknown name. One constant per catalogue entry,
// in catalogue order; the name is the id in PascalCase.
#pragma once

#include "core/catalogue.h"

namespace nccl_triage::ids {

// architecture: host checks
inline constexpr CauseId kVersionsNccl{"versions.nccl"};
inline constexpr CauseId kVersionsCudaDriver{"versions.cuda_driver"};
inline constexpr CauseId kVersionsOfedKernel{"versions.ofed_kernel"};
inline constexpr CauseId kContainerHostNetwork{"container.host_network"};
inline constexpr CauseId kContainerRdmaDevices{"container.rdma_devices"};
inline constexpr CauseId kContainerIpcLock{"container.ipc_lock"};
inline constexpr CauseId kLimitsMemlock{"limits.memlock"};
inline constexpr CauseId kLimitsNofile{"limits.nofile"};
inline constexpr CauseId kSecurityLsm{"security.lsm"};
inline constexpr CauseId kPlatformArch{"platform.arch"};
inline constexpr CauseId kShmSize{"shm.size"};
inline constexpr CauseId kNetSocketIfname{"net.socket_ifname"};

// ib_resource: host checks
inline constexpr CauseId kIbHcaPresent{"ib.hca_present"};
inline constexpr CauseId kIbDriver{"ib.driver"};
inline constexpr CauseId kIbPortState{"ib.port_state"};
inline constexpr CauseId kIbPortRate{"ib.port_rate"};
inline constexpr CauseId kIbSubnetManager{"ib.subnet_manager"};
inline constexpr CauseId kIbPkey{"ib.pkey"};
inline constexpr CauseId kIbGid{"ib.gid"};
inline constexpr CauseId kIbPortErrors{"ib.port_errors"};
inline constexpr CauseId kIbMrRegister{"ib.mr_register"};
inline constexpr CauseId kIbVerbsView{"ib.verbs_view"};
inline constexpr CauseId kIbContention{"ib.contention"};
inline constexpr CauseId kIbPeermem{"ib.peermem"};
inline constexpr CauseId kIbRailTopology{"ib.rail_topology"};

// workload containers
inline constexpr CauseId kEnvIbDisable{"env.ib_disable"};
inline constexpr CauseId kEnvIbHca{"env.ib_hca"};

// classifier / probe causes
inline constexpr CauseId kNetConnect{"net.connect"};
inline constexpr CauseId kNetConfig{"net.config"};
inline constexpr CauseId kIbFabric{"ib.fabric"};
inline constexpr CauseId kIbGdrAcs{"ib.gdr_acs"};
inline constexpr CauseId kIbHcaSelection{"ib.hca_selection"};
inline constexpr CauseId kIbPortDownRuntime{"ib.port_down_runtime"};
inline constexpr CauseId kIbVerbsCall{"ib.verbs_call"};
inline constexpr CauseId kHostSyscall{"host.syscall"};
inline constexpr CauseId kIbRdmaCoreMissing{"ib.rdma_core_missing"};
inline constexpr CauseId kShmIpc{"shm.ipc"};
inline constexpr CauseId kGpuDuplicate{"gpu.duplicate"};
inline constexpr CauseId kGpuVisibility{"gpu.visibility"};
inline constexpr CauseId kVersionsMismatch{"versions.mismatch"};
inline constexpr CauseId kCudaDriver{"cuda.driver"};
inline constexpr CauseId kNcclApiUsage{"nccl.api_usage"};
inline constexpr CauseId kEfaFabric{"efa.fabric"};
inline constexpr CauseId kHostMemoryPressure{"host.memory_pressure"};
inline constexpr CauseId kNcclTopoFile{"nccl.topo_file"};
inline constexpr CauseId kNetPlugin{"net.plugin"};
inline constexpr CauseId kIbMtuMismatch{"ib.mtu_mismatch"};
inline constexpr CauseId kNcclInternal{"nccl.internal"};
inline constexpr CauseId kNcclSystem{"nccl.system"};
inline constexpr CauseId kPeerExited{"peer.exited"};
inline constexpr CauseId kNcclTimeout{"nccl.timeout"};
inline constexpr CauseId kProbeTransport{"probe.transport"};
inline constexpr CauseId kProbeData{"probe.data"};
inline constexpr CauseId kIbBandwidth{"ib.bandwidth"};
inline constexpr CauseId kProbeIntraNode{"probe.intra_node"};
inline constexpr CauseId kProbeNoNccl{"probe.no_nccl"};
inline constexpr CauseId kProbeNoCuda{"probe.no_cuda"};
inline constexpr CauseId kProbeNoGpu{"probe.no_gpu"};

// kernel log
inline constexpr CauseId kKernelLinkFlap{"kernel.link_flap"};
inline constexpr CauseId kKernelCableModule{"kernel.cable_module"};
inline constexpr CauseId kKernelHcaAer{"kernel.hca_aer"};
inline constexpr CauseId kKernelGpuAer{"kernel.gpu_aer"};
inline constexpr CauseId kKernelXid{"kernel.xid"};
inline constexpr CauseId kKernelGpuOffBus{"kernel.gpu_off_bus"};

// cross-node (coordinator)
inline constexpr CauseId kPairPkeyPartition{"pair.pkey_partition"};
inline constexpr CauseId kPairLinkLayer{"pair.link_layer"};
inline constexpr CauseId kPairVersionSkew{"pair.version_skew"};
inline constexpr CauseId kPairArchMixed{"pair.arch_mixed"};

}  // namespace nccl_triage::ids
