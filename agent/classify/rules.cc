#include "classify/rules.h"

#include <algorithm>
#include <array>

#include "core/ids.h"

namespace nccl_triage {
namespace {

// The class of a verdict is the path whose call failed (see rules.h): ibverbs calls and NET/IB
// are kIb even when the cause's fix lives in the host setup (limits.memlock,
// container.rdma_devices); sockets, bootstrap, shared memory, CUDA and versions are kArch.
constexpr FaultClass kIb = FaultClass::kIbResource;
constexpr FaultClass kArch = FaultClass::kArchitecture;
constexpr FaultClass kUnk = FaultClass::kUnknown;

constexpr Strength kRoot = Strength::kRoot;
constexpr Strength kGeneric = Strength::kGeneric;
constexpr Strength kContext = Strength::kContext;
constexpr Strength kFollow = Strength::kFollow;
constexpr Strength kPeer = Strength::kPeer;
constexpr Strength kWeak = Strength::kWeak;
constexpr Strength kIgnore = Strength::kIgnore;

constexpr unsigned kW = kWarnLine;
constexpr unsigned kWT = kWarnLine | kTextLine;  // WARN lines, and the same text quoted by
                                                 // c10d (`Last error:`) or a probe's own output
constexpr unsigned kIT = kInfoLine | kTextLine;
constexpr unsigned kAny = kWarnLine | kInfoLine | kTextLine;

constexpr RuleField kMsg = RuleField::kMessage;
constexpr RuleField kFile = RuleField::kFile;

// Order matters: the first matching rule names a line's cause (unless it sets also_next), so
// specific rows come before the generic ones of the same call. Row numbers in the comments are
// those of NCCL_FACTS B5.
// One row per rule reads better than one field per line.
// clang-format off
constexpr std::array kRules = {
    // ------------------------------------------------------------------ ibverbs calls (IB path)
    // B5 1: memory registration ENOMEM. The fix is the memlock limit (an architecture-class
    // catalogue entry), but the call that failed is ibverbs: the verdict is ib_resource.
    Rule{"ibv.reg_mr_enomem", ids::kLimitsMemlock, kIb, kRoot, kWT, kMsg, "Call to ibv_reg_",
         R"(Call to ibv_reg_\w+ failed.*(Cannot allocate memory|errno 12\b))", 0.95,
         "ibv_reg_mr failed with ENOMEM: locked memory is limited. Set memlock unlimited for the "
         "job (docker --ulimit memlock=-1:-1, LimitMEMLOCK=infinity for containerd/kubelet, "
         "`* - memlock unlimited` in limits.conf) and give the container CAP_IPC_LOCK."},
    // B5 2: verbs resource allocation. ENOMEM is mostly memlock (queues are pinned memory).
    Rule{"ibv.alloc_enomem", ids::kLimitsMemlock, kIb, kRoot, kWT, kMsg, "Call to ibv_",
         R"(Call to ibv_(create_qp|create_cq|alloc_pd|create_srq|create_comp_channel)\w* )"
         R"(failed.*Cannot allocate memory)",
         0.75,
         "QP/CQ/PD allocation failed with ENOMEM: usually the locked-memory limit (set memlock "
         "unlimited); if it already is, the HCA's resources are exhausted by other processes "
         "(see ib.contention)."},
    // A denied verbs call is an access problem whichever call it was.
    Rule{"ibv.permission", ids::kContainerRdmaDevices, kIb, kRoot, kWT, kMsg, "Call to ibv_",
         R"(Call to ibv_\w+ failed.*(Permission denied|Operation not permitted))", 0.65,
         "A verbs call was denied: the container lacks access to /dev/infiniband (RDMA device "
         "plugin resource or privileged) or a security policy blocks it (security.lsm)."},
    Rule{"ibv.reg_mr_other", ids::kIbMrRegister, kIb, kRoot, kWT, kMsg, "Call to ibv_reg_",
         R"(Call to ibv_reg_\w+ failed)", 0.8},
    Rule{"ibv.alloc_other", ids::kIbVerbsCall, kIb, kRoot, kWT, kMsg, "Call to ibv_",
         R"(Call to ibv_(create_qp|create_cq|alloc_pd|create_srq|create_comp_channel)\w* failed)",
         0.7},
    // B5 3: EINVAL at a QP transition is a bad GID index or PKey index; both are candidates,
    // the one whose NCCL_IB_* variable was set in the environment is the likelier.
    Rule{"ibv.modify_qp_einval_gid", ids::kIbGid, kIb, kRoot, kWT, kMsg, "Call to ibv_modify_qp",
         R"(Call to ibv_modify_qp failed with (error )?(\d+ )?(Invalid argument|22\b))", 0.6, {},
         true, "NCCL_IB_GID_INDEX"},
    Rule{"ibv.modify_qp_einval_pkey", ids::kIbPkey, kIb, kRoot, kWT, kMsg, "Call to ibv_modify_qp",
         R"(Call to ibv_modify_qp failed with (error )?(\d+ )?(Invalid argument|22\b))", 0.45, {},
         false, "NCCL_IB_PKEY"},
    // B5 4: address resolution at RTR/RTS timed out.
    Rule{"ibv.modify_qp_timeout", ids::kIbFabric, kIb, kRoot, kWT, kMsg, "Call to ibv_modify_qp",
         R"(Call to ibv_modify_qp failed with .*(Connection timed out|\b110\b))", 0.85,
         "QP address resolution timed out: check that the rails are cross-connected or set "
         "NCCL_CROSS_NIC=0, the routes for RoCE v2, and both ports' states."},
    // B5 5: the GID's netdev is not in this namespace, or no route.
    Rule{"ibv.modify_qp_nodev", ids::kIbHcaSelection, kIb, kRoot, kWT, kMsg,
         "Call to ibv_modify_qp",
         R"(Call to ibv_modify_qp failed with )"
         R"((.*(No such device|Network is unreachable)|(error )?(19|101)\b))",
         0.8},
    // B5 6, 7: GID table.
    Rule{"ibv.query_gid", ids::kIbGid, kIb, kRoot, kWT, kMsg, "Call to ibv_query_gid", {}, 0.85,
         "ibv_query_gid failed: NCCL_IB_GID_INDEX is out of range for the port; unset it (NCCL "
         ">= 2.21 picks a RoCE v2 GID) or set it to an index that show_gids lists."},
    Rule{"ib.roce_version_file", ids::kIbGid, kIb, kRoot, kWT, kMsg, "ncclIbRoceGetVersionNum",
         R"((open|read) failed in ncclIbRoceGetVersionNum)", 0.8,
         "The GID type file (gid_attrs/types/<index>) is missing in the container's sysfs: "
         "mount the host's view of /sys/class/infiniband or set NCCL_IB_GID_INDEX to a "
         "populated RoCE v2 entry."},
    // B5 8: /dev/infiniband not accessible.
    // ncclIbInitDevices skips a device it cannot open and goes on with the others (or falls
    // back to sockets): alone this is context, the reason only when IB was wanted and missing.
    Rule{"ibv.open_device", ids::kContainerRdmaDevices, kIb, kContext, kWT, kMsg,
         "Call to ibv_open_device", {}, 0.85},
    Rule{"ib.unable_open_device", ids::kContainerRdmaDevices, kIb, kContext, kWT, kMsg,
         "Unable to open device", R"(NET/IB ?: Unable to open device)", 0.85},
    Rule{"ibv.get_device_list", ids::kIbDriver, kIb, kRoot, kWT, kMsg,
         "Call to ibv_get_device_list", {}, 0.75},
    // B5 11-13: work completions with error status (net_ib.cc, net_ib/p2p.cc, ib_plugin.c).
    Rule{"ib.completion_retry_exceeded", ids::kIbFabric, kIb, kRoot, kWT, kMsg, "Got completion",
         R"(Got completion (from peer \S+ )?with (error |status=)\s*12\b)", 0.9,
         "IBV_WC_RETRY_EXC_ERR (12): the NICs cannot reach each other. Check both ports "
         "(ACTIVE, error counters), the switch path, the RoCE GID/version and PFC, and "
         "cross-rail routing (NCCL_CROSS_NIC)."},
    Rule{"ib.completion_local_protection", ids::kIbGdrAcs, kIb, kRoot, kWT, kMsg, "Got completion",
         R"(Got completion .*(error |status=)\s*4\b.*vendor err 81\b)", 0.85},
    Rule{"ib.completion_flushed", ids::kIbFabric, kIb, kFollow, kWT, kMsg, "Got completion",
         R"(Got completion .*(error |status=)\s*5\b.*vendor err 249\b)", 0.4,
         "A work request was flushed after an earlier error: read the first completion error "
         "of this run (often status 12 on another rank)."},
    Rule{"ib.completion_error", ids::kIbFabric, kIb, kRoot, kWT, kMsg, "Got completion",
         R"(Got completion .*(error |status=)\s*\d+)", 0.6},
    // B5 14: the port or the HCA failed at run time. Other async events are informational.
    Rule{"ib.async_port_error", ids::kIbPortDownRuntime, kIb, kRoot, kWT, kMsg, "async",
         R"((Got async event|async fatal event).*)"
         R"((port error|local catastrophic error|PORT_ERR|LOCAL_CATAS))",
         0.9},
    // A fatal event on one queue pair (work queue or access error) kills that connection: a
    // real RDMA failure, unlike the informational events below.
    Rule{"ib.async_qp_fatal", ids::kIbVerbsCall, kIb, kRoot, kWT, kMsg, "async",
         R"((async fatal event on QP|Got async event : .*(work queue error|access violation)))",
         0.7},
    Rule{"ib.async_benign", ids::kIbPortDownRuntime, kIb, kIgnore, kW, kMsg, "async event", {},
         0},
    // Two ranks disagree on a message size: their configuration or NCCL build differs (or the
    // program called different collectives). NET/IB only reports it; the fabric is fine.
    Rule{"net_ib.collective_mismatch", ids::kVersionsMismatch, kArch, kRoot, kWT, kMsg,
         "collective mismatch error", {}, 0.6,
         "Two ranks expected different message sizes: compare the NCCL version and the NCCL_* "
         "environment of the ranks (a variable set on one rank only), and check that every rank "
         "calls the same collectives with the same sizes."},
    // ---------------------------------------------- external RDMA net plugins (AWS OFI, EFA)
    Rule{"ofi.register_enomem", ids::kLimitsMemlock, kIb, kRoot, kWT, kMsg,
         "NET/OFI Unable to register memory", R"(Cannot allocate memory)", 0.7},
    Rule{"ofi.register", ids::kIbMrRegister, kIb, kRoot, kWT, kMsg,
         "NET/OFI Unable to register memory", {}, 0.7,
         "The RDMA net plugin (aws-ofi-nccl/libfabric) could not register a buffer: check the "
         "EFA installer and libfabric versions against the NCCL version, memlock, and the "
         "plugin's known issues."},
    Rule{"ofi.generic", ids::kIbVerbsCall, kIb, kGeneric, kWT, kMsg, "NET/OFI",
         R"(NET/OFI .*(failed|Couldn't|Unable|[Ee]rror))", 0.55,
         "The RDMA net plugin (aws-ofi-nccl/libfabric) failed: check that the EFA devices are "
         "passed into the container (/dev/infiniband/uverbs*), fi_info -p efa, and the plugin "
         "and installer versions."},
    // --------------------------------------------------------------- NET plugin selection
    // B5 9, 10: NCCL_NET=IB forced and no IB device initialised.
    Rule{"net.ib_not_found", ids::kIbHcaPresent, kIb, kRoot, kWT, kMsg, "Error: network ",
         R"(Error: network (IB|IBext)\w* not found)", 0.85,
         "NCCL_NET=IB was forced but no IB device initialised: check ib.hca_present, ib.driver, "
         "ib.port_state and container.rdma_devices on this node (`NET/IB : No device found`)."},
    Rule{"net.plugin_not_found", ids::kNcclApiUsage, kArch, kRoot, kWT, kMsg, "Error: network ",
         R"(Error: network .+ not found)", 0.6,
         "NCCL_NET names a network that is not available: check its spelling and that the "
         "plugin library (libnccl-net.so) is in the image."},
    Rule{"net.no_plugin", ids::kIbHcaPresent, kIb, kRoot, kWT, kMsg,
         "Failed to initialize any NET plugin", {}, 0.85,
         "NCCL_NET=IB was forced but no IB device initialised: check ib.hca_present, ib.driver, "
         "ib.port_state and container.rdma_devices on this node (`NET/IB : No device found`)."},
    // ------------------------------------------------------------ TCP/IP and bootstrap (arch)
    // B5 15: the IB out-of-band socket uses the same interface list as bootstrap, so this
    // fails with NCCL_IB_DISABLE=1 as well: an interface problem, not an RDMA one.
    Rule{"ib.no_ip_interface", ids::kNetSocketIfname, kArch, kRoot, kWT, kMsg,
         "No IP interface found", {}, 0.8},
    // NCCL <= 2.3 (include/socket.h): no usable IP interface of the family NCCL picked.
    Rule{"socket.create_failed", ids::kNetSocketIfname, kArch, kRoot, kWT, kMsg,
         "Socket creation failed", {}, 0.7,
         "NCCL could not create its bootstrap socket: give the host an IP interface NCCL can "
         "use (even a single node needs one for multi-process jobs) and check IPv4/IPv6 "
         "consistency between nodes; set NCCL_SOCKET_IFNAME to it."},
    // Two processes claimed the same rank: the launcher's rank/world layout is wrong.
    Rule{"bootstrap.rank_twice", ids::kNcclApiUsage, kArch, kRoot, kWT, kMsg,
         "has already checked in", R"(Bootstrap Root : rank \d+ of \d+ ranks has already)", 0.8,
         "Two processes were started with the same rank: check the launcher's node count, tasks "
         "per node and GPUs per node against the job (Slurm ntasks-per-node, torchrun "
         "--nnodes/--node_rank)."},
    // B5 16, 17.
    Rule{"socket.bootstrap_no_interface", ids::kNetSocketIfname, kArch, kRoot, kWT, kMsg,
         "Bootstrap : no socket interface found", {}, 0.9},
    Rule{"socket.no_interface", ids::kNetSocketIfname, kArch, kRoot, kWT, kMsg,
         "NET/Socket : no interface found", {}, 0.85},
    Rule{"socket.no_listening_interface", ids::kNetSocketIfname, kArch, kRoot, kWT, kMsg,
         "No usable listening interface found", {}, 0.8},
    Rule{"socket.bad_address_family", ids::kNetSocketIfname, kArch, kRoot, kWT, kMsg,
         "is neither AF_INET", R"(with family \d+ is neither AF_INET)", 0.8,
         "NCCL tried to connect to an uninitialised address: no interface matched "
         "NCCL_SOCKET_IFNAME on some rank (interface names differ between hosts?). Use a "
         "name present on every node."},
    // B5 18: TCP connect failed.
    Rule{"socket.connect_failed", ids::kNetConnect, kArch, kRoot, kWT, kMsg, "onnect to ",
         R"([Cc]onnect to \S+ (failed ?: |returned ).*)"
         R"((Connection refused|Connection timed out|No route to host|Network is unreachable|)"
         R"(Host is unreachable|Software caused connection abort))",
         0.85},
    // 2.2x+ INFO while it retries; routine for "Connection refused" at start-up, not for a
    // missing route.
    Rule{"socket.connect_retrying", ids::kNetConnect, kArch, kRoot, kIT, kMsg, "connect returned ",
         R"(connect returned (No route to host|Network is unreachable), retrying)", 0.6},
    Rule{"socket.connect_retries", ids::kNetConnect, kArch, kRoot, kWT, kMsg, "exceeded ",
         R"(exceeded (retries|timeouts|error retry count))", 0.8},
    Rule{"socket.connect_syscall", ids::kNetConnect, kArch, kRoot, kWT, kMsg, "Call to connect ",
         R"(Call to connect failed)", 0.8},
    // B5 19: the peer went away; the real cause is in another rank's log.
    Rule{"peer.closed", ids::kPeerExited, kUnk, kPeer, kWT, kMsg,
         "Connection closed by remote peer", {}, 0.5},
    Rule{"peer.reset", ids::kPeerExited, kUnk, kPeer, kWT, kMsg, "Connection reset by peer", {},
         0.5},
    Rule{"peer.broken_pipe", ids::kPeerExited, kUnk, kPeer, kWT, kMsg, "Broken pipe",
         R"(Call to (send|recv|write)\w* .*Broken pipe)", 0.45},
    // B5 20.
    Rule{"socket.wrong_magic", ids::kNetConfig, kArch, kRoot, kWT, kMsg,
         "socketFinalizeAccept: wrong", {}, 0.8},
    // --------------------------------------------------------------- shared memory (arch)
    // B5 21, 22.
    Rule{"shm.extend", ids::kShmSize, kArch, kRoot, kWT, kMsg, "failed to extend",
         R"(Error: failed to extend \S+ to \d+ bytes)", 0.9},
    Rule{"shm.fallocate", ids::kShmSize, kArch, kRoot, kWT, kMsg, "fallocate",
         R"(Call to (posix_)?fallocate failed ?: ?No space left on device)", 0.9},
    Rule{"shm.create", ids::kShmSize, kArch, kRoot, kWT, kMsg,
         "Error while creating shared memory segment", {}, 0.8},
    Rule{"shm.attach_missing", ids::kShmIpc, kArch, kRoot, kWT, kMsg,
         "Error while attaching to shared memory segment", R"(No such file or directory)", 0.85},
    Rule{"shm.attach_other", ids::kShmIpc, kArch, kRoot, kWT, kMsg,
         "Error while attaching to shared memory segment", {}, 0.5},
    // ------------------------------------------------------------- GPUs and versions (arch)
    // B5 23.
    Rule{"gpu.duplicate", ids::kGpuDuplicate, kArch, kRoot, kWT, kMsg, "Duplicate GPU detected",
         R"(Duplicate GPU detected : rank \d+ and rank \d+ both on CUDA device)", 0.95},
    Rule{"gpu.multiple_ranks", ids::kGpuDuplicate, kArch, kRoot, kWT, kMsg, "the same GPU",
         R"(Multiple [Rr]anks (are using|detected using) the same GPU)", 0.95},
    // B5 24.
    Rule{"version.mismatch", ids::kVersionsMismatch, kArch, kRoot, kWT, kMsg,
         "Mismatched NCCL version detected", {}, 0.95},
    Rule{"version.bootstrap_mismatch", ids::kVersionsMismatch, kArch, kRoot, kWT, kMsg,
         "Bootstrap Root : mismatch in info from procs", {}, 0.7},
    Rule{"version.message_truncated", ids::kVersionsMismatch, kArch, kRoot, kWT, kMsg,
         "Message truncated", R"(Message truncated : received \d+ bytes instead of \d+)", 0.6},
    // B5 25 and NCCL_FACTS A7: CUDA errors, by cudaGetErrorString text, CUresult name or value.
    Rule{"cuda.insufficient_driver", ids::kVersionsCudaDriver, kArch, kRoot, kWT, kMsg,
         "CUDA driver version is insufficient for CUDA runtime version", {}, 0.9},
    Rule{"cuda.api_not_supported", ids::kVersionsCudaDriver, kArch, kRoot, kWT, kMsg,
         "API call is not supported in the installed CUDA driver", {}, 0.85,
         "The installed driver is older than the CUDA version NCCL was built for: install a "
         "driver that supports the image's CUDA version, or use an NCCL build for the driver's "
         "CUDA."},
    Rule{"cuda.driver_mismatch", ids::kVersionsCudaDriver, kArch, kRoot, kWT, kMsg,
         "unsupported display driver / cuda driver combination", {}, 0.9,
         "The kernel module and the user-space driver differ (CUDA 803): reboot after a driver "
         "update, or make the container mount the host's driver libraries."},
    Rule{"cuda.driver_mismatch_name", ids::kVersionsCudaDriver, kArch, kRoot, kWT, kMsg,
         "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH", {}, 0.9,
         "The kernel module and the user-space driver differ (CUDA 803): reboot after a driver "
         "update, or make the container mount the host's driver libraries."},
    Rule{"cuda.compat_unsupported", ids::kVersionsCudaDriver, kArch, kRoot, kWT, kMsg,
         "forward compatibility was attempted on non supported HW", {}, 0.85,
         "The CUDA forward-compatibility package does not support this GPU (CUDA 804): install "
         "a driver that supports the image's CUDA version natively."},
    Rule{"cuda.compat_unsupported_name", ids::kVersionsCudaDriver, kArch, kRoot, kWT, kMsg,
         "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE", {}, 0.85,
         "The CUDA forward-compatibility package does not support this GPU (CUDA 804): install "
         "a driver that supports the image's CUDA version natively."},
    Rule{"cuda.no_device", ids::kCudaDriver, kArch, kRoot, kWT, kMsg,
         "no CUDA-capable device is detected", {}, 0.9,
         "No GPU is visible (CUDA 100): run the container with the NVIDIA runtime and a "
         "nvidia.com/gpu request (or --gpus), and check /dev/nvidia* and CUDA_VISIBLE_DEVICES."},
    Rule{"cuda.no_device_name", ids::kCudaDriver, kArch, kRoot, kWT, kMsg,
         "CUDA_ERROR_NO_DEVICE", {}, 0.9,
         "No GPU is visible (CUDA 100): run the container with the NVIDIA runtime and a "
         "nvidia.com/gpu request (or --gpus), and check /dev/nvidia* and CUDA_VISIBLE_DEVICES."},
    Rule{"cuda.stub_library", ids::kCudaDriver, kArch, kRoot, kWT, kMsg,
         "CUDA driver is a stub library", {}, 0.9,
         "The toolkit's stub libcuda.so was loaded instead of the driver (CUDA 34): remove "
         ".../stubs from LD_LIBRARY_PATH and let the NVIDIA container toolkit mount the host "
         "driver."},
    Rule{"cuda.stub_library_name", ids::kCudaDriver, kArch, kRoot, kWT, kMsg,
         "CUDA_ERROR_STUB_LIBRARY", {}, 0.9,
         "The toolkit's stub libcuda.so was loaded instead of the driver (CUDA 34): remove "
         ".../stubs from LD_LIBRARY_PATH and let the NVIDIA container toolkit mount the host "
         "driver."},
    // Needle "failure": NCCL prints `Cuda failure '...'`, nccl-tests `Test CUDA failure ... '...'`,
    // both with cudaGetErrorString's text.
    Rule{"cuda.system_not_ready", ids::kCudaDriver, kArch, kRoot, kWT, kMsg, "failure",
         R"(system not yet initialized)", 0.85,
         "The GPU system is not ready (CUDA 802): on NVSwitch systems start "
         "nvidia-fabricmanager (same version as the driver) and wait for it to finish."},
    Rule{"cuda.system_not_ready_name", ids::kCudaDriver, kArch, kRoot, kWT, kMsg,
         "CUDA_ERROR_SYSTEM_NOT_READY", {}, 0.85,
         "The GPU system is not ready (CUDA 802): on NVSwitch systems start "
         "nvidia-fabricmanager (same version as the driver) and wait for it to finish."},
    Rule{"cuda.device_unavailable", ids::kCudaDriver, kArch, kRoot, kWT, kMsg,
         "busy or unavailable", R"(CUDA-capable device\(s\) is/are busy or unavailable)", 0.8,
         "The GPU is busy or unavailable (CUDA 46): it is in exclusive-process compute mode "
         "with another process on it (nvidia-smi -c DEFAULT), or it fell off the bus."},
    Rule{"cuda.device_unavailable_name", ids::kCudaDriver, kArch, kRoot, kWT, kMsg,
         "CUDA_ERROR_DEVICE_UNAVAILABLE", {}, 0.8,
         "The GPU is busy or unavailable (CUDA 46): it is in exclusive-process compute mode "
         "with another process on it (nvidia-smi -c DEFAULT), or it fell off the bus."},
    Rule{"cuda.no_kernel_image", ids::kVersionsNccl, kArch, kRoot, kWT, kMsg,
         "no kernel image is available for execution on the device", {}, 0.85,
         "The NCCL (or application) build has no kernels for this GPU architecture: use an "
         "NCCL build that includes it (H100/H200 need NCCL >= 2.18 built for sm_90)."},
    Rule{"cuda.no_kernel_image_name", ids::kVersionsNccl, kArch, kRoot, kWT, kMsg,
         "CUDA_ERROR_NO_BINARY_FOR_GPU", {}, 0.85,
         "The NCCL (or application) build has no kernels for this GPU architecture: use an "
         "NCCL build that includes it (H100/H200 need NCCL >= 2.18 built for sm_90)."},
    Rule{"cuda.invalid_device", ids::kGpuVisibility, kArch, kRoot, kWT, kMsg, "failure",
         R"(invalid device ordinal)", 0.8,
         "The rank selected a GPU index that does not exist in this process (CUDA 101): check "
         "CUDA_VISIBLE_DEVICES and the LOCAL_RANK to device mapping."},
    Rule{"cuda.invalid_device_name", ids::kGpuVisibility, kArch, kRoot, kWT, kMsg,
         "CUDA_ERROR_INVALID_DEVICE", {}, 0.8,
         "The rank selected a GPU index that does not exist in this process (CUDA 101): check "
         "CUDA_VISIBLE_DEVICES and the LOCAL_RANK to device mapping."},
    Rule{"cuda.out_of_memory", ids::kCudaDriver, kArch, kRoot, kWT, kMsg, "failure",
         R"('out of memory')", 0.8,
         "The GPU ran out of memory while NCCL allocated its buffers (CUDA 2): free GPU memory "
         "(other processes, the framework's cache) or lower NCCL_BUFFSIZE / channel counts."},
    Rule{"cuda.out_of_memory_name", ids::kCudaDriver, kArch, kRoot, kWT, kMsg,
         "CUDA_ERROR_OUT_OF_MEMORY", {}, 0.8,
         "The GPU ran out of memory while NCCL allocated its buffers (CUDA 2): free GPU memory "
         "(other processes, the framework's cache) or lower NCCL_BUFFSIZE / channel counts."},
    Rule{"cuda.operating_system", ids::kCudaDriver, kArch, kRoot, kWT, kMsg, "failure",
         R"(OS call failed)", 0.7},
    Rule{"cuda.operating_system_name", ids::kCudaDriver, kArch, kRoot, kWT, kMsg,
         "CUDA_ERROR_OPERATING_SYSTEM", {}, 0.7},
    Rule{"cuda.not_supported", ids::kCudaDriver, kArch, kRoot, kWT, kMsg, "failure",
         R"('operation not supported')", 0.75,
         "A CUDA feature NCCL uses is not supported here (CUDA 801), typically cuMem/VMM under "
         "vGPU or in some containers: try NCCL_CUMEM_ENABLE=0, or update the driver."},
    Rule{"cuda.not_supported_name", ids::kCudaDriver, kArch, kRoot, kWT, kMsg,
         "CUDA_ERROR_NOT_SUPPORTED", {}, 0.75,
         "A CUDA feature NCCL uses is not supported here (CUDA 801), typically cuMem/VMM under "
         "vGPU or in some containers: try NCCL_CUMEM_ENABLE=0, or update the driver."},
    Rule{"cuda.not_permitted", ids::kCudaDriver, kArch, kRoot, kWT, kMsg, "failure",
         R"('operation not permitted')", 0.7},
    Rule{"cuda.not_permitted_name", ids::kCudaDriver, kArch, kRoot, kWT, kMsg,
         "CUDA_ERROR_NOT_PERMITTED", {}, 0.7},
    Rule{"cuda.not_initialized", ids::kCudaDriver, kArch, kRoot, kWT, kMsg, "failure",
         R"(initialization error)", 0.75},
    Rule{"cuda.not_initialized_name", ids::kCudaDriver, kArch, kRoot, kWT, kMsg,
         "CUDA_ERROR_NOT_INITIALIZED", {}, 0.75},
    Rule{"cuda.illegal_address", ids::kCudaDriver, kArch, kRoot, kWT, kMsg, "failure",
         R"(illegal memory access)", 0.7,
         "A kernel accessed an illegal address (CUDA 700): usually a bug in the application or "
         "a corrupted buffer; if it repeats on one GPU only, run GPU diagnostics (dcgmi diag)."},
    Rule{"cuda.illegal_address_name", ids::kCudaDriver, kArch, kRoot, kWT, kMsg,
         "CUDA_ERROR_ILLEGAL_ADDRESS", {}, 0.7,
         "A kernel accessed an illegal address (CUDA 700): usually a bug in the application or "
         "a corrupted buffer; if it repeats on one GPU only, run GPU diagnostics (dcgmi diag)."},
    // CUCHECK prints the CUresult value (`Cuda failure 803 '...'`); when the text is one the
    // rows above do not know (another driver's wording, a truncated line), the value decides.
    Rule{"cuda.code_no_device", ids::kCudaDriver, kArch, kRoot, kWT, kMsg, "Cuda failure 100",
         R"(Cuda failure 100\b)", 0.85,
         "No GPU is visible (CUDA 100): run the container with the NVIDIA runtime and a "
         "nvidia.com/gpu request (or --gpus), and check /dev/nvidia* and CUDA_VISIBLE_DEVICES."},
    Rule{"cuda.code_stub_library", ids::kCudaDriver, kArch, kRoot, kWT, kMsg, "Cuda failure 34",
         R"(Cuda failure 34\b)", 0.85,
         "The toolkit's stub libcuda.so was loaded instead of the driver (CUDA 34): remove "
         ".../stubs from LD_LIBRARY_PATH and let the NVIDIA container toolkit mount the host "
         "driver."},
    Rule{"cuda.code_driver_mismatch", ids::kVersionsCudaDriver, kArch, kRoot, kWT, kMsg,
         "Cuda failure 803", R"(Cuda failure 803\b)", 0.85,
         "The kernel module and the user-space driver differ (CUDA 803): reboot after a driver "
         "update, or make the container mount the host's driver libraries."},
    Rule{"cuda.code_compat_unsupported", ids::kVersionsCudaDriver, kArch, kRoot, kWT, kMsg,
         "Cuda failure 804", R"(Cuda failure 804\b)", 0.8,
         "The CUDA forward-compatibility package does not support this GPU (CUDA 804): install "
         "a driver that supports the image's CUDA version natively."},
    Rule{"cuda.code_system_not_ready", ids::kCudaDriver, kArch, kRoot, kWT, kMsg,
         "Cuda failure 802", R"(Cuda failure 802\b)", 0.8,
         "The GPU system is not ready (CUDA 802): on NVSwitch systems start "
         "nvidia-fabricmanager (same version as the driver) and wait for it to finish."},
    Rule{"cuda.code_device_unavailable", ids::kCudaDriver, kArch, kRoot, kWT, kMsg,
         "Cuda failure 46", R"(Cuda failure 46\b)", 0.75,
         "The GPU is busy or unavailable (CUDA 46): it is in exclusive-process compute mode "
         "with another process on it (nvidia-smi -c DEFAULT), or it fell off the bus."},
    Rule{"cuda.code_invalid_device", ids::kGpuVisibility, kArch, kRoot, kWT, kMsg,
         "Cuda failure 101", R"(Cuda failure 101\b)", 0.75,
         "The rank selected a GPU index that does not exist in this process (CUDA 101): check "
         "CUDA_VISIBLE_DEVICES and the LOCAL_RANK to device mapping."},
    Rule{"cuda.code_no_binary", ids::kVersionsNccl, kArch, kRoot, kWT, kMsg, "Cuda failure 209",
         R"(Cuda failure 209\b)", 0.8,
         "The NCCL (or application) build has no kernels for this GPU architecture: use an "
         "NCCL build that includes it (H100/H200 need NCCL >= 2.18 built for sm_90)."},
    // P2P transport (2.7-2.1x): the peer GPU's memory cannot be mapped into this process.
    Rule{"cuda.ipc_handle", ids::kCudaDriver, kArch, kRoot, kWT, kMsg, "CUDA IPC handle",
         R"(failed to open CUDA IPC handle)", 0.7,
         "The peer GPU's memory cannot be mapped (CUDA IPC): peer access between these GPUs is "
         "not supported or blocked (consumer GPUs, ACS/IOMMU, GPUs in different containers). "
         "Set NCCL_P2P_DISABLE=1 to use shared memory, or fix the PCIe/IOMMU setup."},
    Rule{"cuda.failure", ids::kCudaDriver, kArch, kRoot, kWT, kMsg, "failure",
         R"((Cuda|CUDA) failure)", 0.75},
    // Topology detection reads the GPU's and NIC's PCI path under /sys; a host or VM that does
    // not expose it (WSL2, some containers) fails here, before any transport.
    Rule{"topo.sysfs_path", ids::kPlatformArch, kArch, kRoot, kW, kMsg, "Could not find real path",
         {}, 0.6,
         "NCCL cannot read the PCI topology under /sys for a GPU or NIC: run on a host (or VM or "
         "container) that exposes /sys/class/pci_bus and /sys/devices, or give NCCL a topology "
         "file with NCCL_TOPO_FILE."},
    // B5 26: NVML.
    Rule{"nvml.driver_mismatch", ids::kVersionsCudaDriver, kArch, kRoot, kWT, kMsg,
         "Driver/library version mismatch", {}, 0.85,
         "The NVIDIA kernel module and the user-space libraries differ (NVML): reboot after a "
         "driver update, or mount the host's driver libraries into the container."},
    Rule{"nvml.not_found", ids::kGpuVisibility, kArch, kRoot, kWT, kMsg, "nvml",
         R"(nvmlDeviceGetHandleByPciBusId\(\) failed: Not Found)", 0.85},
    Rule{"nvml.failed", ids::kGpuVisibility, kArch, kGeneric, kWT, kMsg, "nvml",
         R"(nvml\w*(\(\))? failed)", 0.5},
    // B5 27: API misuse by the caller.
    Rule{"api.config_not_initialized", ids::kNcclApiUsage, kArch, kRoot, kWT, kMsg,
         "ncclConfig_t argument not initialized via NCCL_CONFIG_INITIALIZER", {}, 0.9},
    Rule{"api.config_blocking", ids::kNcclApiUsage, kArch, kRoot, kWT, kMsg,
         "Invalid config blocking attribute value", {}, 0.9},
    Rule{"api.mismatched_collective", ids::kNcclApiUsage, kArch, kRoot, kWT, kMsg,
         "Mismatched collective detected", {}, 0.8,
         "Ranks called different collectives or passed different sizes: check that every rank "
         "issues the same collectives in the same order with the same counts."},
    // --------------------------------------------- INFO that matters only when IB was wanted
    // B5 9: harmless when the run then succeeds over sockets (NCCL falls back), the reason
    // when NCCL_NET=IB was forced.
    Rule{"ib.no_device_info", ids::kIbHcaPresent, kIb, kContext, kIT, kMsg, "No device found",
         R"(NET/IB ?: No device found)", 0.6},
    // B5 28: rdma-core absent from the image.
    Rule{"ib.libibverbs_missing", ids::kIbRdmaCoreMissing, kIb, kContext, kAny, kMsg, "libibverbs",
         R"((Failed to open|Count not open|Could not open) libibverbs)", 0.8},
    // ------------------------------------------------ generic: the failing call decides
    Rule{"sys.too_many_open_files", ids::kLimitsNofile, kArch, kRoot, kWT, kMsg,
         "Too many open files", {}, 0.85},
    Rule{"ibv.generic", ids::kIbVerbsCall, kIb, kGeneric, kWT, kMsg, "Call to ibv_",
         R"(Call to ibv_\w+ failed)", 0.6},
    Rule{"sys.permission", ids::kSecurityLsm, kArch, kRoot, kWT, kMsg, "Call to ",
         R"(Call to \w+ failed.*(Permission denied|Operation not permitted))", 0.55},
    Rule{"shm.no_space", ids::kShmSize, kArch, kRoot, kWT, kMsg, "No space left on device",
         R"(shm|fallocate)", 0.75},
    Rule{"sys.generic", ids::kHostSyscall, kArch, kGeneric, kWT, kMsg, "Call to ",
         R"(Call to \w+ failed)", 0.55},
    Rule{"net_ib.message", ids::kIbVerbsCall, kIb, kGeneric, kW, kMsg, "NET/IB", {}, 0.45},
    Rule{"net_ib.file", ids::kIbVerbsCall, kIb, kGeneric, kW, kFile, "net_ib", {}, 0.45},
    Rule{"ibvwrap.file", ids::kIbVerbsCall, kIb, kGeneric, kW, kFile, "ibvwrap", {}, 0.45},
    Rule{"ib_plugin.file", ids::kIbVerbsCall, kIb, kGeneric, kW, kFile, "ib_plugin", {}, 0.45},
    Rule{"p2p_plugin.file", ids::kIbVerbsCall, kIb, kGeneric, kW, kFile, "p2p_plugin", {}, 0.4},
    Rule{"bootstrap.file", ids::kNetConnect, kArch, kGeneric, kW, kFile, "bootstrap", {}, 0.4},
    Rule{"socket.file", ids::kNetConnect, kArch, kGeneric, kW, kFile, "socket", {}, 0.4},
    Rule{"shm.file", ids::kShmSize, kArch, kGeneric, kW, kFile, "shm", {}, 0.4},
    Rule{"cudawrap.file", ids::kCudaDriver, kArch, kGeneric, kW, kFile, "cudawrap", {}, 0.5},
    Rule{"nvmlwrap.file", ids::kGpuVisibility, kArch, kGeneric, kW, kFile, "nvmlwrap", {}, 0.45},
    // --------------------------------------------- wrappers and side effects (B5 29, 30)
    Rule{"proxy.failed_operation", ids::kNcclInternal, kUnk, kFollow, kWT, kMsg,
         "Failed to execute operation",
         R"(\[Proxy Service \d+\] Failed to execute operation \w+ from rank \d+, retcode (\d+))",
         0.3, {}, false, {}, -1, 1},
    Rule{"proxy.service_thread", ids::kNcclInternal, kUnk, kFollow, kWT, kMsg,
         "Error encountered progressing",
         R"(\[Service thread\] Error encountered progressing operation=\w+, res=(\d+))", 0.3, {},
         false, {}, -1, 1},
    Rule{"proxy.recv_polling", ids::kNcclInternal, kUnk, kFollow, kWT, kMsg,
         "Socket recv failed while polling for opId", {}, 0.3},
    Rule{"comm.abort_state", ids::kNcclInternal, kUnk, kFollow, kWT, kMsg, "is in abort state",
         R"(Comm \S+ is in abort state)", 0.3},
    // ------------------------------------------------- timeouts and result codes (weak, A2)
    Rule{"c10d.watchdog_timeout", ids::kNcclTimeout, kUnk, kWeak, kWT, kMsg,
         "Watchdog caught collective operation timeout", {}, 0.5},
    Rule{"result.cuda_error", ids::kCudaDriver, kArch, kWeak, kWT, kMsg, "nhandled",
         R"(ncclUnhandledCudaError|unhandled cuda error)", 0.35, {}, false, {}, 1},
    Rule{"result.system_error", ids::kNcclSystem, kUnk, kWeak, kWT, kMsg, "ystem",
         R"(ncclSystemError|unhandled system error)", 0.3, {}, false, {}, 2},
    Rule{"result.internal_error", ids::kNcclInternal, kUnk, kWeak, kWT, kMsg, "nternal",
         R"(ncclInternalError|internal error - please report|NCCL error.*internal error)", 0.3,
         {}, false, {}, 3},
    Rule{"result.invalid_argument", ids::kNcclApiUsage, kUnk, kWeak, kWT, kMsg, "nvalid",
         R"(ncclInvalidArgument|invalid argument \(run with|NCCL error.*invalid argument)", 0.3,
         {}, false, {}, 4},
    Rule{"result.invalid_usage", ids::kNcclApiUsage, kUnk, kWeak, kWT, kMsg, "nvalid",
         R"(ncclInvalidUsage|invalid usage \(run with|NCCL error.*invalid usage)", 0.3, {},
         false, {}, 5},
    Rule{"result.remote_error", ids::kPeerExited, kUnk, kWeak, kWT, kMsg, "emote",
         R"(ncclRemoteError|remote process exited or there was a network error)", 0.3, {},
         false, {}, 6},
    Rule{"result.timeout", ids::kNcclTimeout, kUnk, kWeak, kWT, kMsg, "ncclTimeout", {}, 0.3, {},
         false, {}, 8},
};

// clang-format on

constexpr std::array kRefinements = {
    // `Failed to initialize any NET plugin` / `network IB not found` say that IB is missing;
    // these say why.
    Refinement{ids::kIbHcaPresent, ids::kIbRdmaCoreMissing},
    Refinement{ids::kIbHcaPresent, ids::kContainerRdmaDevices},
    Refinement{ids::kIbHcaPresent, ids::kIbDriver},
};

// NCCL_FACTS A2. ncclSuccess and ncclInProgress are not failures.
constexpr std::array kCodes = {
    ResultCodeCause{1, "ncclUnhandledCudaError", ids::kCudaDriver, kArch},
    ResultCodeCause{2, "ncclSystemError", ids::kNcclSystem, kUnk},
    ResultCodeCause{3, "ncclInternalError", ids::kNcclInternal, kUnk},
    ResultCodeCause{4, "ncclInvalidArgument", ids::kNcclApiUsage, kUnk},
    ResultCodeCause{5, "ncclInvalidUsage", ids::kNcclApiUsage, kUnk},
    ResultCodeCause{6, "ncclRemoteError", ids::kPeerExited, kUnk},
    ResultCodeCause{8, "ncclTimeout", ids::kNcclTimeout, kUnk},
};

}  // namespace

std::span<const Rule> Rules() { return kRules; }
std::span<const Refinement> Refinements() { return kRefinements; }
std::span<const ResultCodeCause> ResultCodeCauses() { return kCodes; }

const ResultCodeCause* FindResultCode(int code) {
  for (const auto& c : kCodes) {
    if (c.code == code) return &c;
  }
  return nullptr;
}

CompiledRules::CompiledRules() : rules_(kRules) {
  regexes_.reserve(rules_.size());
  for (size_t i = 0; i < rules_.size(); ++i) {
    const Rule& r = rules_[i];
    if (r.lines & kWarnLine) warn_rules_.push_back(i);
    if (r.lines & kInfoLine) info_rules_.push_back(i);
    // File rules need the `file:LINE` that only WARN lines carry.
    if ((r.lines & kTextLine) && r.field == RuleField::kMessage) text_rules_.push_back(i);
    if (r.field == RuleField::kFile) file_rules_.push_back(i);
    const bool literal = r.regex.find_first_of(R"(\^$.|?*+()[]{})") == std::string_view::npos;
    std::vector<uint16_t> grams;
    for (size_t k = 0; k + 1 < r.needle.size(); ++k) {
      const uint16_t g = Gram(r.needle[k], r.needle[k + 1]);
      if (std::find(grams.begin(), grams.end(), g) == grams.end()) grams.push_back(g);
    }
    needle_grams_.push_back(std::move(grams));
    if (r.regex.empty() || literal) {
      regexes_.emplace_back();
      literals_.emplace_back(r.regex);
    } else {
      regexes_.emplace_back(std::regex(r.regex.begin(), r.regex.end(), std::regex::ECMAScript));
      literals_.emplace_back();
    }
  }
}

const CompiledRules& CompiledRules::Get() {
  static const CompiledRules kCompiled;  // immutable after construction
  return kCompiled;
}

bool CompiledRules::Matches(size_t i, std::string_view field, int* code) const {
  const Rule& r = rules_[i];
  const size_t at = field.find(r.needle);
  if (at == std::string_view::npos) return false;
  const auto& re = regexes_[i];
  if (!re) return literals_[i].empty() || field.find(literals_[i]) != std::string_view::npos;
  // std::regex backtracks recursively and costs O(n^2) on `.*(a|b)` patterns: it reads a bounded
  // window that starts a little before the literal (a quoted `Last error:` can sit far into a
  // long wrapper line; a pattern may begin up to a few words before its literal).
  constexpr size_t kMaxRegexInput = 512;
  constexpr size_t kBeforeNeedle = 64;
  field = field.substr(at > kBeforeNeedle ? at - kBeforeNeedle : 0, kMaxRegexInput);
  if (code == nullptr || r.code_group == 0) {
    // No capture wanted: the overload without match_results copies no sub-matches.
    return std::regex_search(field.begin(), field.end(), *re);
  }
  std::match_results<std::string_view::const_iterator> m;
  if (!std::regex_search(field.begin(), field.end(), m, *re)) return false;
  if (code != nullptr && r.code_group > 0 && static_cast<size_t>(r.code_group) < m.size() &&
      m[r.code_group].matched) {
    int v = 0;
    for (auto it = m[r.code_group].first; it != m[r.code_group].second && v < 1000; ++it) {
      v = v * 10 + (*it - '0');
    }
    *code = v;
  }
  return true;
}

uint16_t CompiledRules::Gram(char a, char b) {
  const uint32_t v =
      (static_cast<uint32_t>(static_cast<unsigned char>(a)) << 8) | static_cast<unsigned char>(b);
  return static_cast<uint16_t>(((v * 0x9E3779B1u) >> 20) & 4095u);
}

void CompiledRules::Bigrams::Add(std::string_view field) {
  for (size_t k = 0; k + 1 < field.size(); ++k) {
    const uint16_t g = Gram(field[k], field[k + 1]);
    bits[g >> 6] |= uint64_t{1} << (g & 63);
  }
}

std::vector<CompiledRules::LineMatch> CompiledRules::MatchLine(const ParsedLine& line) const {
  const std::vector<size_t>* candidates = &text_rules_;
  if (line.level == NcclLevel::kWarn) candidates = &warn_rules_;
  if (line.level == NcclLevel::kInfo || line.level == NcclLevel::kTrace) candidates = &info_rules_;
  std::vector<LineMatch> out;
  // Only text lines meet enough rules (a hundred) for the bigram set to pay for itself; WARN
  // lines are memoised by the classifier and INFO lines meet a few rules.
  const bool prefilter = candidates == &text_rules_;
  Bigrams grams;
  if (prefilter) {
    grams = Bigrams{};
    grams.Add(line.message);
  }
  for (size_t i : *candidates) {
    const Rule& r = rules_[i];
    std::string_view field = r.field == RuleField::kFile ? line.file : line.message;
    if (prefilter && !std::all_of(needle_grams_[i].begin(), needle_grams_[i].end(),
                                  [&](uint16_t g) { return grams.Has(g); })) {
      continue;  // text rules read the message only
    }
    int code = r.result_code;
    if (!Matches(i, field, &code)) continue;
    out.push_back({i, code});
    if (!r.also_next || r.strength == Strength::kIgnore) break;
  }
  return out;
}

std::optional<size_t> CompiledRules::MatchFile(std::string_view file) const {
  for (size_t i : file_rules_) {
    if (Matches(i, file)) return i;
  }
  return std::nullopt;
}

std::vector<std::string_view> RuleNamesForLine(std::string_view line) {
  const CompiledRules& compiled = CompiledRules::Get();
  std::vector<std::string_view> names;
  for (const auto& m : compiled.MatchLine(ParseLogLine(line))) {
    names.push_back(compiled.rules()[m.rule].name);
  }
  return names;
}

}  // namespace nccl_triage
