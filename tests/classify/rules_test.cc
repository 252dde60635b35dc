// Every rule of the rule file (agent/classify/rules.yaml, loaded from the source tree) has a test
// built from a line in NCCL's (or c10d's, or CUDA's) real format, every pattern of a rule has its
// own sample, every cause id is in the catalogue, and each sample line ends in the rule's verdict.
#include "classify/rules.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "classify/classifier.h"
#include "classify/rule_files.h"
#include "core/catalogue.h"
#include "core/ids.h"

namespace nccl_triage {
namespace {

// The rule tests read the rule file itself (not the copy built into the binary).
class SourceRuleFile : public ::testing::Environment {
 public:
  void SetUp() override {
    Status st = LoadAndActivateRules({}, NCCL_TRIAGE_SOURCE_DIR "/agent/classify/rules.yaml");
    ASSERT_TRUE(st.ok()) << st.message();
  }
};
[[maybe_unused]] const auto* const kSourceRules =
    ::testing::AddGlobalTestEnvironment(new SourceRuleFile);

// rule name -> a line it must match. The formats vary on purpose: NCCL 2.4 (.cu files), 2.7-2.28
// (`file.cc:LINE NCCL WARN`), HEAD (`[timestamp] ... file.cc:LINE (func) NCCL WARN`), the HPC-X
// plugin (.c files), PyTorch c10d text, and a probe's own output.
// rule name -> lines; a rule with several patterns (each CUDA error: its text, its CUresult name
// and its value) has a sample for each.
const std::multimap<std::string, std::string>& Samples() {
  static const std::multimap<std::string, std::string> kSamples = {
      {"ibv.reg_mr_enomem",
       "gpu-a17:4121:4121 [0] misc/ibvwrap.cc:262 NCCL WARN Call to ibv_reg_mr failed with error "
       "Cannot allocate memory"},
      {"ibv.alloc_enomem",
       "[2024-01-30 22:41:05] gpu-b02:7781:7781 [0] misc/ibvwrap.cc:219 NCCL WARN Call to "
       "ibv_create_qp failed with error Cannot allocate memory"},
      {"ibv.permission",
       "pod-train-0:61:61 [0] misc/ibvwrap.cc:122 NCCL WARN Call to ibv_alloc_pd failed with error "
       "Permission denied"},
      {"ibv.reg_mr_other",
       "node07:20551:20551 [0] misc/ibvwrap.cc:199 NCCL WARN Call to ibv_reg_mr failed with error "
       "Bad address"},
      {"ibv.alloc_other",
       "hpcx-n2:9102:9102 [0] ibvwrap.c:171 NCCL WARN Call to ibv_alloc_pd failed"},
      {"ibv.modify_qp_einval_gid",
       "roce-n1:5012:5012 [0] misc/ibvwrap.cc:203 NCCL WARN Call to ibv_modify_qp failed with 22 "
       "Invalid argument, on dev mlx5_0:1, curr state INIT, next state RTR, local GID index 3, "
       "local GID ::ffff:10.0.0.1, remote GID ::ffff:10.0.0.2"},
      {"ibv.modify_qp_einval_pkey",
       "ib-n11:9921:9921 [0] misc/ibvwrap.cc:287 NCCL WARN Call to ibv_modify_qp failed with error "
       "Invalid argument"},
      {"ibv.modify_qp_timeout",
       "rail-n4:3102:3102 [0] misc/ibvwrap.cc:203 NCCL WARN Call to ibv_modify_qp failed with 110 "
       "Connection timed out, on dev mlx5_2:1, curr state INIT, next state RTR"},
      {"ibv.modify_qp_nodev",
       "k8s-gpu-3:1:1 [0] misc/ibvwrap.cc:196 NCCL WARN Call to ibv_modify_qp failed with error No "
       "such device"},
      {"ibv.query_gid",
       "roce-7:2231:2231 [0] misc/ibvwrap.cc:146 NCCL WARN Call to ibv_query_gid failed with error "
       "Invalid argument"},
      {"ib.roce_version_file",
       "macvlan-pod:1:1 [0] transport/net_ib.cc:421 NCCL WARN NET/IB: open failed in "
       "ncclIbRoceGetVersionNum"},
      {"ibv.open_device",
       "trainer-0:1:1 [0] misc/ibvwrap.cc:117 NCCL WARN Call to ibv_open_device failed"},
      {"ib.unable_open_device",
       "trainer-0:1:1 [0] transport/net_ib.cc:183 NCCL WARN NET/IB : Unable to open device "
       "mlx5_0"},
      {"ibv.get_device_list",
       "n-03:6612:6612 [0] misc/ibvwrap.cc:88 NCCL WARN Call to ibv_get_device_list failed"},
      {"ib.completion_retry_exceeded",
       "h100-12:30117:30233 [0] transport/net_ib.cc:1291 NCCL WARN NET/IB : Got completion from "
       "peer 10.0.0.2<46761> with error 12, opcode 0, len 0, vendor err 129 (Send) localGid "
       "::ffff:10.0.0.1 remoteGid ::ffff:10.0.0.2"},
      {"ib.completion_retry_exceeded",  // 2.28: the status by name and number
       "gpu-a07:3110:3170 [0] transport/net_ib.cc:2440 NCCL WARN NET/IB: Got completion from peer "
       "10.9.0.4<39113> with status=IBV_WC_RETRY_EXC_ERR(12) opcode=IBV_WC_SEND(0) reqSize=1048576 "
       "vendor_err=129 req_type=Send hca mlx5_1"},
      {"ib.completion_local_protection",  // 2.29+ (net_ib/p2p.cc)
       "gpu-b12:5520:5581 [0] transport/net_ib/p2p.cc:330 NCCL WARN NET/IB: Got completion from "
       "peer 10.12.0.4<51022> with status=IBV_WC_LOC_PROT_ERR(4) opcode=IBV_WC_RECV_RDMA_WITH_IMM"
       "(129) vendor_err=81  hca mlx5_0"},
      {"ib.completion_flushed",  // 2.29+
       "gpu-b12:5520:5581 [0] transport/net_ib/p2p.cc:330 NCCL WARN NET/IB: Got completion from "
       "peer 10.12.0.4<51022> with status=IBV_WC_WR_FLUSH_ERR(5) opcode=IBV_WC_SEND(0) "
       "vendor_err=249  hca mlx5_0"},
      {"ib.completion_error",  // 2.28: another status
       "gpu-a07:3110:3170 [0] transport/net_ib.cc:2440 NCCL WARN NET/IB: Got completion from peer "
       "10.9.0.4<39113> with status=IBV_WC_REM_ACCESS_ERR(10) opcode=IBV_WC_RDMA_WRITE(1) "
       "reqSize=4096 vendor_err=136 req_type=Send hca mlx5_1"},
      {"ib.completion_local_protection",
       "a100-pcie-4:11200:11280 [0] transport/net_ib.cc:1296 NCCL WARN NET/IB : Got completion "
       "from peer 10.0.0.2<33211> with error 4, opcode 128, len 0, vendor err 81 (Recv)"},
      {"ib.completion_flushed",
       "h100-31:29870:29982 [1] transport/net_ib.cc:1291 NCCL WARN NET/IB : Got completion from "
       "peer 10.0.0.1<53312> with error 5, opcode 0, len 0, vendor err 249 (Recv)"},
      {"ib.completion_error",
       "gpu-r2:4040:4101 [0] transport/net_ib.cc:1283 NCCL WARN NET/IB : Got completion from peer "
       "10.0.0.2<50001> with error 10, opcode 1, len 0, vendor err 136 (Send)"},
      {"ib.async_port_error",
       "ib-n5:5151:5190 [0] transport/net_ib.cc:109 NCCL WARN NET/IB : mlx5_0:1 Got async event : "
       "port error"},
      {"ib.async_benign",
       "ib-n6:6161:6200 [0] transport/net_ib.cc:109 NCCL WARN NET/IB : mlx5_1:1 Got async event : "
       "GID table change"},
      {"ib.async_benign",
       "roce-2:4410:4470 [0] transport/net_ib.cc:118 NCCL WARN NET/IB : mlx5_1:1 GID table "
       "changed"},
      {"net.ib_not_found",
       "[2024-02-20 12:00:00] noib-1:812:812 [0] net.cc:657 NCCL WARN Error: network IB not "
       "found."},
      {"net.plugin_not_found",
       "efa-like:300:300 [0] net.cc:640 NCCL WARN Error: network AWS Libfabric not found."},
      {"net.no_plugin",
       "[2026-12-02 13:07:54] vm:533:533 [0] plugin/net.cc:379 NCCL WARN Failed to initialize any "
       "NET plugin"},
      {"ib.no_ip_interface",
       "oob-1:1001:1001 [0] transport/net_ib.cc:180 NCCL WARN NET/IB : No IP interface found."},
      {"socket.bootstrap_no_interface",
       "[2026-12-02 13:07:54] vm:551:551 [0] bootstrap.cc:114 NCCL WARN Bootstrap : no socket "
       "interface found"},
      {"socket.no_interface",
       "oob-1:1001:1001 [0] transport/net_socket.cc:47 NCCL WARN NET/Socket : no interface found"},
      {"socket.no_listening_interface",
       "commid-1:4411:4411 [0] misc/socket.cc:462 NCCL WARN NET/Socket : No usable listening "
       "interface found"},
      {"socket.bad_address_family",
       "mixed-if-2:2290:2290 [1] misc/socket.cc:481 NCCL WARN ncclSocketInit: connecting to "
       "address  with family 0 is neither AF_INET(2) nor AF_INET6(10)"},
      {"socket.connect_failed",
       "fw-2:6802:6802 [1] include/socket.h:409 NCCL WARN Net : Connect to 10.0.0.1<43211> failed "
       ": Connection refused"},
      {"socket.connect_retries",
       "retry-1:2222:2222 [0] misc/socket.cc:613 NCCL WARN socketStartConnect: exceeded retries "
       "(34)"},
      {"socket.connect_syscall",
       "p100-a:12001:12001 [0] include/socket.h:390 NCCL WARN Call to connect failed : Connection "
       "refused"},
      {"peer.closed",
       "gpu-a18:3377:3377 [1] misc/socket.cc:538 NCCL WARN socketProgress: Connection closed by "
       "remote peer gpu-a17<52187>"},
      {"peer.reset",
       "oom-0:1400:1400 [0] misc/socket.cc:503 NCCL WARN Call to recv from 10.0.0.2<56123> failed "
       ": Connection reset by peer"},
      {"peer.broken_pipe",
       "pipe-0:1313:1313 [0] misc/socket.cc:523 NCCL WARN Call to send to 10.0.0.2<40000> failed "
       ": Broken pipe"},
      {"socket.wrong_magic",
       "magic-1:3001:3001 [0] misc/socket.cc:351 NCCL WARN socketFinalizeAccept: wrong type 3 != "
       "4"},
      {"shm.extend",
       "docker-1:200:200 [0] include/shm.h:28 NCCL WARN Error: failed to extend "
       "/dev/shm/nccl-Q2Zk1w to 9637892 bytes"},
      {"shm.fallocate",
       "k8s-shm:1:1 [0] misc/shmutils.cc:60 NCCL WARN Call to posix_fallocate failed : No space "
       "left on device"},
      {"shm.create",
       "k8s-shm:1:1 [0] misc/shmutils.cc:110 NCCL WARN Error while creating shared memory segment "
       "/dev/shm/nccl-ZWZ8eb (size 9637888)"},
      {"shm.attach_missing",
       "ipc-a:300:300 [0] misc/shmutils.cc:156 NCCL WARN Error while attaching to shared memory "
       "segment /dev/shm/nccl-x1Fz (size 9637888), error: No such file or directory (2)"},
      {"shm.attach_other",
       "ipc-b:301:301 [0] misc/shmutils.cc:88 NCCL WARN Error while attaching to shared memory "
       "segment /dev/shm/nccl-Ab3d (size 4194304)"},
      {"gpu.duplicate",
       "[2026-12-02 13:08:56] vm:593:593 [0] init.cc:904 NCCL WARN Duplicate GPU detected : rank 0 "
       "and rank 1 both on CUDA device 60"},
      {"gpu.multiple_ranks",
       "[2026-06-02 09:09:09] one-gpu:901:901 [0] init.cc:1012 (initTransportsRank) NCCL WARN "
       "Multiple Ranks are using the same GPU/Partition. Set NCCL_MULTI_RANK_GPU_ENABLE=1 to "
       "enable this configuration."},
      {"version.mismatch",
       "mix-0:8000:8000 [0] init.cc:588 NCCL WARN Mismatched NCCL version detected : rank 0 "
       "version 21903 rank 1 version 21805"},
      {"version.mismatch",
       "mix-0:8000:8012 [0] ras/ras.cc:412 NCCL WARN NCCL version mismatch with remote peer "
       "10.0.0.2<38211> (local: 2.30.7, remote 2.29.7)"},
      {"rma.socket_no_gdrcopy",
       "[2026-12-06 23:53:42] vm:707:707 [0] transport/rma_socket.cc:32 (ncclRmaSocketProxyInit) "
       "NCCL WARN RMA/Socket : rma_socket requires GDRCopy; and GDR Copy is not available"},
      {"ras.client_socket",
       "[2026-11-30 09:12:44] gpu-a-07:41210:41210 [0] ras/client_support.cc:160 NCCL WARN Call "
       "to bind failed: Address already in use"},
      // NCCL's diagnostics report (2.31.2, 2.32.6): `host:pid NCCL DIAG <line>`.
      {"diag.xid_benign",
       "gpu-7:5120 NCCL DIAG Xid 43 detected at 1764996612 s on host gpu-7. No user action or "
       "further investigation is required for this Xid."},
      {"diag.p2p_failed",
       "gpu-7:5120 NCCL DIAG [FAIL] p2p: only 52/56 GPU-to-GPU peer accesses passed verification"},
      {"diag.p2p_failed",
       "gpu-7:5120 NCCL DIAG [INFO] p2p: read mismatch rank=0 peer=3 expected=0x00000000a5a5a5a5 "
       "got=0x0000000000000000; check the affected pair with 'nvidia-smi topo -p2p p'"},
      {"diag.p2p_failed",
       "gpu-7:5120 NCCL DIAG [INFO] p2p: peer-memory import failed rank=0 peer=3 "
       "reason=cudaErrorPeerAccessUnsupported; check CUDA IPC support"},
      {"diag.p2p_failed",
       "gpu-7:5120 NCCL DIAG P2P read srcRank=0 srcCudaDev=0 srcNvmlDev=0 dstRank=3 dstCudaDev=3 "
       "dstNvmlDev=3 path=PIX handle=cumem expected=0x00000000a5a5a5a5 got=0x0000000000000000; "
       "inspect the affected GPU pair with 'nvidia-smi topo -m'"},
      {"diag.gpu_inventory",
       "gpu-7:5120 NCCL DIAG GPU inventory: model mismatch across 16 ranks in comm 0x7f3a1c, "
       "rank(s) 8-15 differ from rank 0 (NVIDIA H100 80GB HBM3)"},
      {"diag.gpu_inventory",
       "gpu-7:5120 NCCL DIAG CUDA driver version: mismatch across 16 ranks in comm 0x7f3a1c, "
       "rank(s) 8-15 differ from rank 0 (13.0)"},
      {"diag.gpu_health",
       "gpu-7:5120 NCCL DIAG ECC: uncorrected volatile errors on rank(s) 5 (worst=2) across 16 "
       "ranks in comm 0x7f3a1c"},
      {"diag.gpu_health",
       "gpu-7:5120 NCCL DIAG NVLink: inactive link(s) on rank(s) 3 across 8 ranks in comm "
       "0x7f3a1c"},
      {"diag.gpu_health",
       "gpu-7:5120 NCCL DIAG Xid 79 detected at 1764996612 s on host gpu-7. The NVIDIA Xid "
       "catalog recommends resetting the affected GPU. Follow the documented GPU-reset "
       "capabilities and limitations: https://docs.nvidia.com/deploy/gpu-debug-guidelines"},
      {"diag.nccl_env",
       "gpu-7:5120 NCCL DIAG NCCL environment: mismatch across 2 ranks in comm 0x7f3a1c for "
       "NCCL_SOCKET_IFNAME"},
      {"diag.nccl_env_count",
       "gpu-7:5120 NCCL DIAG NCCL environment: 1 NCCL_* env var(s) differ across ranks in comm "
       "0x7f3a1c"},
      {"diag.nccl_env_per_process",
       "vm:635 NCCL DIAG [INFO] NCCL environment: mismatch across 2 ranks in comm "
       "0x7c7a7c4da0885580 for NCCL_RAS_ADDR"},
      {"diag.nccl_env_per_process",
       "vm:635 NCCL DIAG [INFO] NCCL environment: NCCL_HOSTID=ras-rank1 on rank(s) {1}"},
      {"diag.nccl_env",
       "vm:725 NCCL DIAG [INFO] NCCL environment: mismatch across 2 ranks in comm "
       "0x2e288f80053a7f6a for NCCL_DEBUG_SUBSYS"},
      {"diag.nccl_env",
       "gpu-7:5120 NCCL DIAG NCCL environment: NCCL_IB_HCA=mlx5_0 on rank(s) 1"},
      {"diag.ib_device_missing",
       "gpu-7:5120 NCCL DIAG [INFO] net bw: failed: no usable IB device in comm 0x7f3a1c"},
      {"diag.nic_mismatch",
       "gpu-7:5120 NCCL DIAG Net device mlx5_0:1: rank(s) 8 differ from rank 0 (400000 Mbps) "
       "across 2 of 2 nodes in comm 0x7f3a1c"},
      {"diag.nic_mismatch",
       "gpu-7:5120 NCCL DIAG Net device mlx5_3:1: reported on only 1 of 2 nodes in comm 0x7f3a1c "
       "(device may be missing on some nodes)"},
      {"diag.nic_mismatch",
       "gpu-7:5120 NCCL DIAG Net device: NIC configuration (device type, speed, link layer, port "
       "state or Data Direct use) differs within 1 of 2 nodes in comm 0x7f3a1c"},
      {"diag.nic_mismatch",
       "gpu-7:5120 NCCL DIAG [INFO] net bw: cross-nic rank 8 (gpu-9): 180.2 Gbit/s, >30% off "
       "median 391.0 Gbit/s in comm 0x7f3a1c"},
      {"diag.gdr_path",
       "gpu-7:5120 NCCL DIAG IOMMU groups: GPU and NIC groups differ on 4 pair(s) in comm "
       "0x7f3a1c; first rank 0 GPU group 12 NIC mlx5_0 group 40"},
      {"diag.gdr_path",
       "gpu-7:5120 NCCL DIAG ATS state: ATSCtl disabled on 8 rank/NIC pair(s) in comm 0x7f3a1c; "
       "first rank 0 NIC mlx5_0"},
      {"diag.gdr_path",
       "gpu-7:5120 NCCL DIAG rdma_topo check: failed on rank(s) 0-7 across 8/16 ranks in comm "
       "0x7f3a1c; first rank 0 exit 1: No supported topology detected"},
      {"diag.paths",
       "gpu-7:5120 NCCL DIAG Paths: could not locate the rank's own GPU in the topology, so its "
       "paths are unknown -- rank 3 in comm 0x7f3a1c"},
      {"diag.incomplete",
       "gpu-7:5120 NCCL DIAG RAS: diagnostics incomplete, gathered 14/16 ranks in comm "
       "0x7f3a1c/0x1/0x2"},
      {"version.bootstrap_mismatch",
       "mix-1:8100:8100 [0] bootstrap.cc:212 NCCL WARN Bootstrap Root : mismatch in info from "
       "procs, offending rank 1"},
      // The same world size on both sides: another field differs (a layout of another release).
      {"version.bootstrap_mismatch",
       "mix-1:8100:8102 [0] bootstrap.cc:327 NCCL WARN Bootstrap Root : mismatch in info from "
       "procs, nranks 8 vs 8, nroots 1 vs 2, iroot 0 vs 0"},
      {"env.no_transport",
       "node-4:811:902 [2] proxy.cc:1180 NCCL WARN Rank 2 has no transport for send peer 5 on "
       "channel 0/1"},
      {"api.config_attribute",
       "sharp-1:301:301 [0] transport/coll_net.cc:1210 NCCL WARN Child comms (nRanks 8) fails to "
       "share parent comms (nRanks 16) sharp resources"},
      {"api.device_runtime",
       "b200-2:7001:7001 [0] scheduler/symmetric_sched.cc:92 NCCL WARN Error: no symmetric "
       "kernel available for function AllReduce.Sum.f64"},
      {"api.device_runtime",
       "h100-9:4410:4410 [0] gin/gin_host.cc:61 NCCL WARN GIN not supported."},
      {"api.device_runtime",
       "h100-9:4410:4410 [0] gin/gin_host.cc:75 NCCL WARN No GIN-capable devices found."},
      {"api.device_runtime",
       "h100-9:4410:4410 [0] gin/gin_host.cc:83 NCCL WARN GIN-capable device type mismatch."},
      {"api.device_runtime",
       "h100-9:4410:4410 [0] transport/gdaki/gin_host_gdaki.cc:210 NCCL WARN No network devices "
       "that support GDAKI found"},
      {"cuda.thread_context_old_driver",
       "gpu-3:120:188 [0] proxy.cc:1601 NCCL WARN Unable to create thread context due to old "
       "driver, disabling."},
      {"ras.unknown_message",
       "gpu-6:3300:3371 [0] ras/ras.cc:512 NCCL WARN RAS received unknown message type (9) from "
       "10.1.2.7<28028>"},
      {"ib.query_failed",
       "gpu-8:990:1004 [0] transport/net_ib.cc:640 NCCL WARN NET/IB : Unable to query device "
       "mlx5_3"},
      {"ib.query_failed",
       "gpu-8:990:1004 [0] transport/net_ib.cc:652 NCCL WARN NET/IB : Unable to query port_num 1"},
      {"collnet.gdr_flush_arch",
       "gh200-1:5120:5188 [0] transport/coll_net.cc:401 NCCL WARN NET: GDR Flush only supported "
       "on x86_64"},
      {"ib.flid_zero",
       "gpu-2:700:760 [0] transport/net_ib.cc:1312 NCCL WARN NET/IB : Warning: remote FLID "
       "configured as zero even when endpoints are on different subnets, using dlid as fallback"},
      {"collnet.init_failed",
       "gpu-1:100:100 [0] transport.cc:402 NCCL WARN Cannot initialize CollNet, using "
       "point-to-point network instead"},
      {"socket.bind_address",
       "[2026-12-06 23:55:12] vm:2888:2888 [0] misc/socket.cc:158 (ncclSocketListen) NCCL WARN "
       "Call to bind failed: Cannot assign requested address"},
      {"bootstrap.world_size_mismatch",
       "[2026-12-06 23:55:16] job-0:2905:2907 [0] bootstrap.cc:340 (bootstrapRoot) NCCL WARN "
       "Bootstrap Root : mismatch in info from procs, nranks 2 vs 3, nroots 1 vs 1, iroot 0 vs 0, "
       "offset 0 vs 0"},
      {"version.message_truncated",
       "mix-2:8200:8200 [0] misc/socket.cc:541 NCCL WARN Message truncated : received 1312 bytes "
       "instead of 1280"},
      {"version.message_truncated_reorder_bug",
       "mix-2:8200:8200 [0] misc/socket.cc:541 NCCL WARN Message truncated : received 1312 bytes "
       "instead of 1280"},
      {"cuda.insufficient_driver",
       "old-drv:2400:2400 [0] init.cu:157 NCCL WARN Cuda failure 'CUDA driver version is "
       "insufficient for CUDA runtime version'"},
      {"cuda.driver_mismatch",
       "gpu-x:4321:4321 [0] misc/cudawrap.cc:188 NCCL WARN Cuda failure 803 'system has "
       "unsupported display driver / cuda driver combination'"},
      {"cuda.driver_mismatch",
       "probe: cuInit(0) failed: CUDA_ERROR_SYSTEM_DRIVER_MISMATCH (803)"},
      {"cuda.compat_unsupported",
       "gpu-x:4321:4321 [0] misc/cudawrap.cc:188 NCCL WARN Cuda failure 804 'forward "
       "compatibility was attempted on non supported HW'"},
      {"cuda.compat_unsupported",
       "probe: cuInit(0) failed: CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE (804)"},
      {"cuda.no_device", "RuntimeError: CUDA error: no CUDA-capable device is detected"},
      {"cuda.no_device", "probe: cuInit(0) failed: CUDA_ERROR_NO_DEVICE (100)"},
      {"cuda.no_device",
       "[rank0]: RuntimeError: ProcessGroupNCCL is only supported with GPUs, no GPUs found!"},
      {"cuda.no_device", "RuntimeError: No CUDA GPUs are available"},
      {"cuda.no_device",
       "RuntimeError: Found no NVIDIA driver on your system. Please check that you have an "
       "NVIDIA GPU and installed a driver from http://www.nvidia.com/Download/index.aspx"},
      {"cuda.stub_library",
       "gpu-x:4321:4321 [0] misc/cudawrap.cc:188 NCCL WARN Cuda failure 34 'CUDA driver is a stub "
       "library'"},
      {"cuda.stub_library", "probe: cuInit(0) failed: CUDA_ERROR_STUB_LIBRARY (34)"},
      {"cuda.system_not_ready",
       "gpu-x:4321:4321 [0] misc/cudawrap.cc:188 NCCL WARN Cuda failure 802 'system not yet "
       "initialized'"},
      {"cuda.system_not_ready", "probe: cuInit(0) failed: CUDA_ERROR_SYSTEM_NOT_READY (802)"},
      {"cuda.device_unavailable",
       "gpu-x:4321:4321 [0] init.cc:188 NCCL WARN Cuda failure 'CUDA-capable device(s) is/are "
       "busy or unavailable'"},
      {"cuda.device_unavailable",
       "probe: cuCtxCreate failed: CUDA_ERROR_DEVICE_UNAVAILABLE (46)"},
      {"cuda.no_kernel_image",
       "h100-old:77:77 [0] enqueue.cc:215 NCCL WARN Cuda failure 'no kernel image is available "
       "for execution on the device'"},
      {"cuda.no_kernel_image", "probe: kernel launch failed: CUDA_ERROR_NO_BINARY_FOR_GPU"},
      {"cuda.invalid_device",
       "rank5:900:900 [5] init.cc:1459 NCCL WARN Cuda failure 'invalid device ordinal'"},
      {"cuda.invalid_device", "probe: cuDeviceGet(7) failed: CUDA_ERROR_INVALID_DEVICE (101)"},
      {"cuda.out_of_memory",
       "oom-1:1401:1401 [1] include/alloc.h:99 NCCL WARN Cuda failure 'out of memory'"},
      {"cuda.out_of_memory", "probe: cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY (2)"},
      {"cuda.not_supported",
       "[2025-03-03 03:03:03] vgpu:4:4 [0] misc/cudawrap.cc:188 (ncclCuMemAlloc) NCCL WARN Cuda "
       "failure 801 'operation not supported'"},
      {"cuda.not_supported", "probe: cuMemCreate failed: CUDA_ERROR_NOT_SUPPORTED (801)"},
      {"cuda.not_permitted",
       "gpu-x:4321:4321 [0] misc/cudawrap.cc:188 NCCL WARN Cuda failure 800 'operation not "
       "permitted'"},
      {"cuda.not_permitted", "probe: cuInit failed: CUDA_ERROR_NOT_PERMITTED (800)"},
      {"cuda.not_initialized",
       "gpu-x:4321:4321 [0] misc/cudawrap.cc:188 NCCL WARN Cuda failure 3 'initialization "
       "error'"},
      {"cuda.not_initialized", "probe: cuCtxGetDevice failed: CUDA_ERROR_NOT_INITIALIZED (3)"},
      {"cuda.operating_system",
       "gpu-x:4321:4321 [0] misc/cudawrap.cc:188 NCCL WARN Cuda failure 304 'OS call failed or "
       "operation not supported on this OS'"},
      {"cuda.operating_system",
       "probe: cuIpcOpenMemHandle failed: CUDA_ERROR_OPERATING_SYSTEM"},
      {"cuda.illegal_address",
       "gpu-x:4321:4321 [0] enqueue.cc:1548 NCCL WARN Cuda failure 'an illegal memory access was "
       "encountered'"},
      {"cuda.illegal_address",
       "probe: cuStreamSynchronize failed: CUDA_ERROR_ILLEGAL_ADDRESS"},
      {"cuda.no_device",
       "[2026-06-01 10:00:00] g:1:1 [0] misc/cudawrap.cc:188 (ncclCudaLibraryInit) NCCL WARN Cuda "
       "failure 100 'no CUDA devices'"},
      {"cuda.stub_library", "g:1:1 [0] misc/cudawrap.cc:188 NCCL WARN Cuda failure 34 ''"},
      {"cuda.driver_mismatch",
       "g:1:1 [0] misc/cudawrap.cc:188 NCCL WARN Cuda failure 803 'unknown error'"},
      {"cuda.compat_unsupported",
       "g:1:1 [0] misc/cudawrap.cc:188 NCCL WARN Cuda failure 804 'unknown error'"},
      {"cuda.system_not_ready",
       "g:1:1 [0] misc/cudawrap.cc:188 NCCL WARN Cuda failure 802 'unknown error'"},
      {"cuda.device_unavailable",
       "g:1:1 [0] misc/cudawrap.cc:188 NCCL WARN Cuda failure 46 'unknown error'"},
      {"cuda.invalid_device",
       "g:1:1 [0] misc/cudawrap.cc:188 NCCL WARN Cuda failure 101 'unknown error'"},
      {"cuda.no_kernel_image",
       "g:1:1 [0] misc/cudawrap.cc:188 NCCL WARN Cuda failure 209 'unknown error'"},
      {"cuda.failure",
       "gpu-x:4321:4321 [0] misc/cudawrap.cc:188 NCCL WARN Cuda failure 999 'unknown error'"},
      {"nvml.driver_mismatch",
       "upd-1:9912:9912 [0] misc/nvmlwrap.cc:74 NCCL WARN nvmlInit_v2() failed: Driver/library "
       "version mismatch"},
      {"nvml.not_found",
       "slurm-1:9911:9911 [0] misc/nvmlwrap.cc:156 NCCL WARN nvmlDeviceGetHandleByPciBusId() "
       "failed: Not Found"},
      {"nvml.failed",
       "nvl-1:9913:9913 [0] misc/nvmlwrap.cc:201 NCCL WARN nvmlDeviceGetNvLinkRemotePciInfo() "
       "failed: Unknown Error"},
      {"api.config_not_initialized",
       "abi-1:1414:1414 [0] init.cc:1623 NCCL WARN ncclConfig_t argument not initialized via "
       "NCCL_CONFIG_INITIALIZER"},
      {"api.config_blocking",
       "abi-1:1414:1414 [0] init.cc:1650 NCCL WARN Invalid config blocking attribute value "
       "-2147483648"},
      {"ib.no_device_info", "vm:533:533 [0] NCCL INFO NET/IB : No device found."},
      {"ib.libibverbs_missing",
       "socket-only:4242:4242 [0] NCCL INFO Failed to open libibverbs.so[.1]"},
      {"sys.too_many_open_files",
       "big-1:1300:1300 [0] misc/socket.cc:430 NCCL WARN Call to accept failed : Too many open "
       "files"},
      {"ibv.generic",
       "ibgen-1:1901:1901 [0] misc/ibvwrap.cc:166 NCCL WARN Call to ibv_query_port failed with "
       "error Input/output error"},
      {"sys.permission",
       "selinux-1:1700:1700 [0] misc/shmutils.cc:55 NCCL WARN Call to open failed : Permission "
       "denied"},
      {"shm.no_space",
       "[2026-06-05 05:05:05] k8s-shm-h:1:1 [0] os/linux.cc:288 (ncclOsShmOpen) NCCL WARN Error: "
       "failed to allocate /dev/shm/nccl-8cQ2Lx (33554432 bytes): No space left on device"},
      {"sys.generic",
       "fd-1:1900:1900 [0] misc/socket.cc:301 NCCL WARN Call to fcntl failed : Bad file "
       "descriptor"},
      {"net_ib.message",
       "gen-1:2020:2020 [0] transport/net_ib.cc:1926 NCCL WARN NET/IB : unable to allocate "
       "requests"},
      {"net_ib.file",
       "gen-1:2020:2020 [0] transport/net_ib.cc:377 NCCL WARN ncclIbGetPciPath failed for mlx5_5"},
      {"ibvwrap.file",
       "gen-1:2020:2020 [0] misc/ibvwrap.cc:377 NCCL WARN wrap_ibv_symbols: dlsym "
       "ibv_reg_dmabuf_mr failed"},
      {"ib_plugin.file",
       "gen-1:2020:2020 [0] ib_plugin.c:377 NCCL WARN Could not get the device properties of "
       "mlx5_0"},
      {"p2p_plugin.file",
       "gen-1:2020:2020 [0] p2p_plugin.c:377 NCCL WARN Could not find any device matching "
       "NCCL_IB_HCA=mlx5_9"},
      {"bootstrap.file",
       "gen-1:2020:2020 [0] bootstrap.cc:377 NCCL WARN Unexpected message from rank 5 during the "
       "root exchange"},
      {"socket.file",
       "gen-1:2020:2020 [0] misc/socket.cc:377 NCCL WARN socketPoll: unexpected state 4"},
      {"shm.file",
       "gen-1:2020:2020 [0] misc/shmutils.cc:377 NCCL WARN Unable to map the shared segment"},
      {"cudawrap.file",
       "gen-1:2020:2020 [0] misc/cudawrap.cc:377 NCCL WARN cuMemGetHandleForAddressRange is not "
       "available"},
      {"nvmlwrap.file",
       "gen-1:2020:2020 [0] misc/nvmlwrap.cc:377 NCCL WARN Unable to load the NVML library"},
      {"proxy.failed_operation",
       "wrap-1:2100:2190 [0] proxy.cc:1520 NCCL WARN [Proxy Service 3] Failed to execute "
       "operation Connect from rank 1, retcode 2"},
      {"proxy.service_thread",
       "wrap-1:2100:2190 [0] proxy.cc:1623 NCCL WARN [Service thread] Error encountered "
       "progressing operation=Connect, res=3, closing connection"},
      {"proxy.recv_polling",
       "wrap-1:2100:2100 [0] proxy.cc:1034 NCCL WARN Socket recv failed while polling for "
       "opId=0x7f39e4000d20"},
      {"comm.abort_state",
       "wrap-1:2100:2100 [0] init.cc:2013 NCCL WARN Comm 0x55d1c0a3f680 is in abort state"},
      {"c10d.watchdog_timeout",
       "[rank3]:[E1120 10:31:44.123456 1234 ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught "
       "collective operation timeout: WorkNCCL(SeqNum=1882, OpType=ALLREDUCE, NumelIn=262144, "
       "NumelOut=262144, Timeout(ms)=600000) ran for 600072 milliseconds before timing out."},
      {"result.cuda_error", "[rank1]: ncclUnhandledCudaError: Call to CUDA function failed."},
      // Lines from the real corpus (tests/classify/corpus), as users posted them.
      {"ib.async_qp_fatal",
       "node-0:139577:139678 [0] transport/net_ib.cc:154 NCCL WARN NET/IB : mlx5_1:1 async fatal "
       "event on QP (0x7309dc3bb338): invalid request local work queue error"},
      {"net_ib.collective_mismatch",
       "10.10.23.10: so-ucloud-10-10-23-10:1307367:1307586 [0] transport/net_ib.cc:1038 NCCL WARN "
       "NET/IB : req 0/1 tag 0 peer 10.10.23.6<58683> collective mismatch error, local size "
       "496640 remote size 65536"},
      {"ofi.register_enomem",
       "10.0.87.143: 10.0.87.143: ip-10-0-87-143:149:298 [5] register_mr_buffers:465 NCCL WARN "
       "NET/OFI Unable to register memory (type = 1) for device 0. RC: 12, Error: Cannot "
       "allocate memory"},
      {"ofi.register",
       "register_rail_mr_buffer:617 NCCL WARN NET/OFI Unable to register memory (type = 2) for "
       "device 4. RC: -22, Error: Invalid argument"},
      {"ofi.generic",
       "[1,23]<stdout>:ip-172-32-45-165:72593:73427 [7] create_nccl_ofi_component:459 NCCL WARN "
       "NET/OFI Couldn't open AV. RC: -22, ERROR: Invalid argument"},
      {"socket.connect_retrying",
       "zgiot:1183664:1184669 [0] NCCL INFO socketPollConnect: connect returned No route to host, "
       "retrying (26/34) after sleep for 2600 msec"},
      {"socket.create_failed",
       "include/socket.h:344 WARN Socket creation failed : Address family not supported by "
       "protocol"},
      {"bootstrap.rank_twice",
       "hpc-25-14:18569:18835 [0] bootstrap.cc:131 NCCL WARN Bootstrap Root : rank 1 of 8 ranks "
       "has already checked in"},
      {"api.mismatched_collective",
       "init.cc:1247 NCCL WARN Mismatched collective detected, please check your collective calls "
       "at and around rank 39. You can use NCCL_DEBUG=INFO and NCCL_DEBUG_SUBSYS=COLL to see the "
       "collective logs"},
      {"cuda.ipc_handle",
       "(pid=909608) z-pc:909608:910337 [0] transport/p2p.cc:238 NCCL WARN failed to open CUDA IPC "
       "handle : 217 peer access is not supported between these two devices"},
      {"topo.sysfs_path",
       "SHJS-PF4ZKYLL:92777:92889 [0] graph/xml.cc:332 NCCL WARN Could not find real path of "
       "/sys/class/pci_bus/0000:01/../../0000:01:00.0"},
      {"cuda.api_not_supported",
       "Cuda failure 'API call is not supported in the installed CUDA driver'"},
      {"result.system_error",
       "ncclSystemError: System call (e.g. socket, malloc) or external library call failed or "
       "device error. "},
      {"result.internal_error", "ncclInternalError: Internal check failed."},
      {"result.invalid_argument", "ncclInvalidArgument: Invalid value for an argument."},
      {"result.invalid_usage",
       "ncclInvalidUsage: This usually reflects invalid usage of NCCL library."},
      {"result.remote_error",
       "ncclRemoteError: A call failed possibly due to a network error or a remote process "
       "exiting prematurely."},
      {"result.timeout", "probe: ncclCommInitRankConfig returned 8 (ncclTimeout): timeout"},
      // INFO-line evidence and the EFA family (formats of NCCL 2.18-2.23 and aws-ofi-nccl).
      {"ofi.completion_error",
       "ip-10-0-87-143:149:298 [0] ofi_process_cq:196 NCCL WARN NET/OFI Request 0x7f2a1c0d3e80 "
       "completed with error. RC: 103. Error: 4126 (Unresponsive receiver (reachable by EFA "
       "device but handshake failed)). Completed length: 0, Request: { dev: 0, size: 0 }"},
      {"host.oom",
       "[  512.883141] Memory cgroup out of memory: Killed process 151 (python) "
       "total-vm:98765432kB"},
      {"host.oom",
       "slurmstepd: error: Detected 1 oom-kill event(s) in StepId=1234.0. Some of your processes "
       "may have been killed by the cgroup out-of-memory handler."},
      {"socket.container_bridge",
       "trainer-1:52:140 [0] NCCL INFO NET/Socket : Using [0]docker0:172.17.0.1<0> "
       "[1]eth0:10.42.3.17<0>"},
      {"socket.container_bridge", "pod-3:40:40 [0] NCCL INFO Bootstrap : Using eth1:169.254.3.7<0>"},
      {"ib.gdr_disabled",
       "hostname1:25668:27396 [0] NCCL INFO NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0'"},
      {"version.max_shared_mem",
       "[2025-06-10 16:53:09] gb-node-0:4410:4410 [0] enqueue.cc:129 NCCL WARN cudaArch 1000 "
       "ncclMaxSharedMem 232448 exceeds device/fn maxSharedMem 101376"},
      {"topo.xml_import",
       "nd96-0:2201:2201 [0] graph/xml.cc:772 NCCL WARN XML Import Channel : dev 2 not found."},
      {"topo.xml_import",
       "nd96-0:2201:2201 [0] graph/xml.cc:680 NCCL WARN Could not open XML topology file "
       "/opt/microsoft/ncv4/topo.xml : No such file or directory"},
      {"topo.xml_import",
       "nd96-0:2201:2201 [0] graph/xml.cc:90 NCCL WARN Attribute busid of node nic not found"},
      {"topo.xml_import",
       "nd96-0:2201:2201 [0] graph/xml.cc:131 NCCL WARN XML Parse : Unexpected trailing ' in "
       "attribute busid"},
      {"net.plugin_load_failed",
       "ip-172-31-9-77:881:881 [0] NCCL INFO NET/Plugin : Plugin load (libnccl-net-ofi.so) "
       "returned 2 : libnccl-net-ofi.so: cannot open shared object file: No such file or "
       "directory"},
      {"net.plugin_load_failed",
       "n1:77:77 [0] NCCL INFO NET/Plugin : Plugin load (libnccl-net.so) returned 2 : "
       "/opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so: undefined symbol: ncclGetVersion"},
      {"net.plugin_load_failed", "n1:77:77 [0] NCCL INFO NET/Plugin: Failed to find "
                                "ncclNetPlugin symbol (v4 or v5)."},
      {"ibv.reg_dmabuf_unsupported",
       "gpu-3:4410:4470 [2] misc/ibvwrap.cc:142 NCCL WARN Call to ibv_reg_dmabuf_mr failed "
       "with error Operation not supported"},
      {"ibv.reg_dmabuf_unsupported",
       "gpu-3:4410:4470 [2] NCCL WARN Call to ibv_reg_dmabuf_mr_iova2 failed errno 95 "
       "Operation not supported"},
      {"ibverbs.no_provider",
       "libibverbs: Warning: no userspace device-specific driver found for "
       "/sys/class/infiniband_verbs/uverbs0"},
      {"ibverbs.no_provider",
       "libibverbs: Warning: couldn't load driver 'libmlx5-rdmav34.so': libmlx5-rdmav34.so: "
       "cannot open shared object file: No such file or directory"},
      {"net.plugin_wanted",
       "node-a:311:311 [0] NCCL INFO NET/Plugin: Plugin load returned 2 : "
       "/opt/plugins/libnccl-net-site.so: cannot open shared object file: No such file or "
       "directory : when loading /opt/plugins/libnccl-net-site.so"},
      // NCCL 2.28 WARN formats of the message catalogue, filled as NCCL fills them.
      {"ibv.modify_qp_other",
       "roce-n3:4410:4502 [1] misc/ibvwrap.cc:385 NCCL WARN Call to ibv_modify_qp failed with 95 "
       "Operation not supported, on dev mlx5_1:1, curr state INIT, next state RTR, local GID "
       "index 3, local GID ::ffff:10.1.0.3, remote GID ::ffff:10.1.0.4"},
      {"ibv.symbol_missing",
       "gpu-7:2201:2201 [0] misc/ibvsymbols.cc:62 NCCL WARN dlvsym failed on ibv_reg_dmabuf_mr - "
       "/lib/x86_64-linux-gnu/libibverbs.so.1: undefined symbol: ibv_reg_dmabuf_mr, version "
       "IBVERBS_1.12 version IBVERBS_1.12"},
      {"ibv.wrapper_uninitialized",
       "gpu-7:2201:2201 [0] misc/ibvwrap.cc:216 NCCL WARN lib wrapper not initialized."},
      {"ibv.wrapper_uninitialized",
       "gpu-7:2201:2201 [0] misc/mlx5dvwrap.cc:30 NCCL WARN NET/MLX5: lib wrapper not "
       "initialized."},
      {"ib.async_device_fatal",
       "gpu-2:5120:5188 [0] transport/net_ib.cc:112 NCCL WARN NET/IB : mlx5_3:1 async fatal "
       "event: device fatal error"},
      {"ib.incompatible_nics",
       "mix-1:3301:3350 [0] transport/net_ib.cc:1004 NCCL WARN NET/IB : Attempted to connect "
       "incompatible devices: [0]mlx5_0:1/IB and [0]mlx5_2:1/RoCE. Try selecting NICs of only one "
       "link type using NCCL_IB_HCA"},
      {"ib.incompatible_nics",
       "mix-1:3301:3350 [0] transport/net_ib.cc:1180 NCCL WARN NET/IB : Remote IB device is "
       "incompatible with the local [0]mlx5_2:1/RoCE. Try selecting NICs of only one link type "
       "using NCCL_IB_HCA"},
      {"proxy.uds_fd",
       "pod-a:77:140 [1] proxy.cc:1167 NCCL WARN ncclProxyClientGetFd call to tpRank 0 handle "
       "0x7f3a2c000b20 failed : 6"},
      {"proxy.uds_fd",
       "pod-a:77:140 [1] misc/ipcsocket.cc:190 NCCL WARN UDS: Sending data over socket "
       "/tmp/nccl-socket-0-5c1f0e7a9b2d4c31 failed : Connection refused (111)"},
      {"alloc.cuda_malloc",
       "gpu-5:912:912 [3] include/alloc.h:196 NCCL WARN Failed to CUDA malloc 33554432 bytes"},
      {"alloc.cumem_old_cuda",
       "gpu-5:912:912 [0] include/alloc.h:120 NCCL WARN CUMEM Host is not supported prior to "
       "CUDA 12.2"},
      {"proxy.cuda_device",
       "gpu-5:912:1030 [2] proxy.cc:1610 NCCL WARN [Proxy Service] Failed to set CUDA device 2"},
      {"api.config_attribute",
       "trainer-0:61:61 [0] init.cc:2077 NCCL WARN Invalid config min/max channels attribute "
       "value 64/32"},
      {"api.config_attribute",
       "trainer-0:61:61 [0] init.cc:1540 NCCL WARN Split shares resources, but parent comm "
       "netName IB is different from child comm netName Socket"},
      {"api.rank_device",
       "trainer-0:61:61 [0] init.cc:1960 NCCL WARN Invalid rank requested : 8/8"},
      {"api.rank_device",
       "trainer-0:61:61 [0] init.cc:2180 NCCL WARN Invalid device 4 (totalnDev=4)"},
      {"api.rank_device",
       "trainer-0:61:61 [0] init.cc:2170 NCCL WARN invalid device count (0) requested"},
      {"api.rank_device",
       "trainer-0:61:61 [0] init.cc:1952 NCCL WARN improper usage of ncclCommInitRank: nId = 0, "
       "nranks=8"},
      {"api.rank_device", "trainer-0:61:61 [0] init.cc:2185 NCCL WARN rank 8 exceeds ndev=8"},
      {"api.comm_error_state",
       "trainer-0:61:61 [0] init.cc:290 NCCL WARN Attempt to use communicator before the "
       "previous operation returned ncclSuccess"},
      {"api.comm_in_progress",
       "trainer-0:61:61 [0] init.cc:2290 NCCL WARN Attempt to use communicator before the "
       "previous operation returned ncclSuccess"},
      {"api.comm_state",
       "trainer-0:61:61 [0] init.cc:2402 NCCL WARN comm 0x55d1d1c1f680 has already been "
       "destroyed"},
      {"api.device_runtime",
       "trainer-0:61:61 [0] dev_runtime.cc:410 NCCL WARN Communicator does not support "
       "symmetric memory!"},
      {"api.device_runtime",
       "trainer-0:61:61 [0] dev_runtime.cc:180 NCCL WARN Multicast support requested for team "
       "but none available on system."},
      {"api.device_runtime",
       "trainer-0:61:61 [0] dev_runtime.cc:455 NCCL WARN Window address must be suitably "
       "aligned."},
      {"env.invalid_value",
       "trainer-0:61:61 [0] gin/gin_host.cc:80 NCCL WARN NCCL_GIN_SIGNAL_POOL_SIZE has invalid "
       "value."},
      {"env.ignored_value",
       "trainer-0:61:61 [0] init.cc:1475 NCCL WARN NCCL_WORK_FIFO_BYTES=1000000 is being ignored "
       "because it is not a power of 2."},
      {"env.invalid_value", "trainer-0:61:61 [0] gin/gin_host.cc:40 NCCL WARN GIN is disabled."},
      {"env.no_transport",
       "gpu-1:501:560 [1] transport.cc:197 NCCL WARN No transport found for rank 1[20] -> rank "
       "0[10]"},
      {"collnet.plugin_value",
       "sharp-3:88:140 [0] transport/coll_net.cc:190 NCCL WARN sendProxySetup: collnet plugin "
       "returned invalid value for maxCollBytes 0"},
      {"host.malloc_failed",
       "gpu-5:912:912 [0] include/alloc.h:32 NCCL WARN Failed to CUDA host alloc 4194304 bytes"},
      {"host.malloc_failed",
       "gpu-5:912:912 [0] misc/utils.cc:290 NCCL WARN misc/utils.cc:288 Unrecoverable error "
       "detected: malloc(size=1073741824) returned null."},
      {"ofi.init_failed",
       "algo-1:249:249 [0] ofi_init:1288 NCCL WARN NET/OFI Only EFA provider is supported"},
      {"ofi.init_failed",
       "algo-1:249:249 [0] nccl_net_ofi_create_plugin:259 NCCL WARN NET/OFI aws-ofi-nccl "
       "initialization failed"},
      {"socket.connect_retrying",
       "k8s-w12:5971:6015 [4] NCCL INFO socketPollConnect: connect to 10.29.224.148<52333> "
       "returned No route to host, retrying (3/34) after sleep for 300 msec"},
      {"socket.connect_refused_retrying",
       "k8s-w12:5971:6015 [4] NCCL INFO socketPollConnect: connect to 10.29.224.148<52333> "
       "returned Connection refused, retrying (12/34) after sleep for 1200 msec"},
      {"socket.io_refused",
       "node2:20110:20190 [4] misc/socket.cc:503 NCCL WARN Net : Call to recv from "
       "10.0.0.2<56843> failed : Connection refused"},
      {"ib.merged_nic_mismatch",
       "gpu-m2:4100:4160 [0] transport/net_ib.cc:1071 NCCL WARN NET/IB : Can't merge net devices "
       "with different link_layer. i=1 remMeta.ndevs=2 link_layer=1 rem_link_layer=2"},
      {"ib.merged_nic_mismatch",
       "gpu-m1:3001:3050 [0] transport/net_ib.cc:1180 NCCL WARN NET/IB : Local "
       "mergedDev=mlx5_0+mlx5_1 has a different number of devices=2 as remoteDev=mlx5_0 "
       "nRemDevs=1"},
      {"nvls.bind_failed",
       "h100-c3:2301:2301 [0] transport/nvls.cc:157 NCCL WARN Failed to bind NVLink SHARP (NVLS) "
       "Multicast memory of size 2097152 : CUDA error 401 'the operation cannot be performed in "
       "the present state'."},
      {"nvls.bind_failed",
       "This is usually caused by a system or configuration error in the Fabric Manager or "
       "NVSwitches."},
      {"cuda.invalid_device_function",
       "[3] enqueue.cc:215 NCCL WARN Cuda failure 'invalid device function'"},
      {"cuda.invalid_device_function",
       "gpu-2:88:88 [0] enqueue.cc:1034 NCCL WARN Cuda failure 98 'invalid device function'"},
      {"cuda.invalid_device_function",
       "RuntimeError: CUDA error: cudaErrorInvalidDeviceFunction"},
      {"topo.xml_cpu_attribute",
       "p5-a:2196:2275 [1] graph/xml.h:101 NCCL WARN Attribute arch of node cpu not found"},
      {"algo.env_rejected",
       "trn-0:4100:4100 [0] enqueue.cc:1971 NCCL WARN Error : no algorithm/protocol available for "
       "function Broadcast with datatype ncclInt8. NCCL_ALGO was set to NVLS."},
      {"algo.none_after_env",
       "trn-1:5200:5200 [0] enqueue.cc:1167 NCCL WARN Error : no algorithm/protocol available"},
      {"algo.none_available",
       "trn-2:6300:6300 [1] enqueue.cc:2040 NCCL WARN Error : no algorithm/protocol available for "
       "function ReduceScatter with datatype ncclFloat8e4m3."},
      {"env.mnnvl_forced",
       "gb-n1:5500:5500 [0] init.cc:953 NCCL WARN MNNVL is not supported on this system"},
      {"env.capped_value",
       "trn-7:900:900 [0] init.cc:1520 NCCL WARN NCCL_CGA_CLUSTER_SIZE value 16 is too big. "
       "Limiting value to 8."},
      {"env.capped_value",
       "trn-7:900:900 [0] init.cc:1031 NCCL WARN CollNet currently only supports up to 8 GPUs per "
       "node, disabling CollNet"},
      {"env.capped_value",
       "trn-7:900:900 [0] init.cc:1402 NCCL WARN NCCL_WORK_FIFO_DEPTH=1000 is being ignored "
       "because it is not a power of 2."},
      {"env.capped_value",
       "trn-7:900:900 [0] init.cc:1744 NCCL WARN minCTAs 64 is larger than #channels upper limit "
       "32, cap it to 32"},
      {"env.capped_value",
       "trn-7:900:900 [0] init.cc:1768 NCCL WARN splitShare 2 is not a valid value 0/1, set it to 0"},
      {"env.capped_value",
       "trn-7:900:900 [0] transport/net_ib.cc:612 NCCL WARN NET/IB: Ip address '10.20.0.0/33' is "
       "invalid for family AF_INET, ignoring address"},
      {"ib.data_direct",
       "gb200-2:1410:1410 [0] transport/net_ib.cc:760 NCCL WARN NET/IB: Error in "
       "mlx5dv_get_data_direct_sysfs_path with device mlx5_0"},
      {"ib.query_failed",
       "ib-3:77:77 [0] transport/net_ib.cc:230 NCCL WARN NET/IB : Unable to query port 1"},
      {"socket.connect_retrying",
       "worker:101542:101934 [0] NCCL INFO Call to connect returned Connection timed out, "
       "retrying"},
      {"topo.search_fallback",
       "Meowth:8756:8772 [1] graph/search.cc:890 NCCL WARN Could not find a path for pattern 4, "
       "falling back to simple order"},
      {"env.graph_file_set",
       "vm-a:73025:73112 [0] NCCL INFO NCCL_GRAPH_FILE set by environment to /opt/vm/graph.xml"},
      {"mlx5dv.call",
       "gb200-4:77:77 [0] misc/mlx5dvwrap.cc:88 NCCL WARN NET/MLX5: Call to mlx5dv_reg_dmabuf_mr "
       "failed with error Operation not supported"},
      {"mlx5dv.call",
       "gb200-4:77:77 [0] misc/mlx5dvwrap.cc:88 NCCL WARN Call to mlx5dv_get_data_direct_sysfs_path "
       "failed with error Input/output error"},
      {"c10d.watchdog_timeout",
       "[rank3]:[E1207 10:12:44.123456789 ProcessGroupNCCL.cpp:1420] [PG ID 0 PG GUID "
       "0(default_pg) Rank 3] Heartbeat monitor timed out! Process will be terminated after "
       "dumping debug info. workMetaList_.size()=2"},
      {"c10d.watchdog_timeout",
       "[rank0]:[E ProcessGroupNCCL.cpp:1316] [PG 0 Rank 0] ProcessGroupNCCL's watchdog got stuck "
       "for 480 seconds without making progress in monitoring enqueued collectives."},
      {"socket.loopback_first",
       "master-0:1:1 [0] NCCL INFO NET/Socket : Using [0]lo:127.0.0.1<0> [1]eth0:192.168.4.230<0>"},
      {"socket.loopback_first",
       "gpu-b12:4152:4206 [0] NCCL INFO NET : Using interface lo:127.0.0.1<0>"},
      {"libfabric.mr_enomem",
       "libfabric:20331:1733550101::efa:mr:efa_mr_reg_impl():842<warn> Unable to register MR: "
       "Cannot allocate memory"},
      {"libfabric.mr_enomem",
       "libfabric:4410:1699000000::verbs;ofi_rxm:mr:vrb_mr_reg_common():97<warn> ibv_reg_mr: "
       "Cannot allocate memory(12)"},
      {"libfabric.mr_other",
       "libfabric:5510:1733551200::efa:mr:efa_mr_regattr():905<warn> Unable to register MR: Bad "
       "address"},
      {"libfabric.efa_completion_error",
       "libfabric:71022:1733552000::efa:cq:efa_rdm_rxe_handle_error():512<warn> err: 113, "
       "message: Unreachable remote (12) My EFA addr: fi_addr_efa://[fe80::4a1:2bff:fe9e:1c2d]:1:"
       "1193046 My host id: i-0a1b2c3d4e5f60718"},
      {"libfabric.efa_completion_error",
       "[1,5]<stderr>:libfabric:912:1668017255::efa:cq:rxr_cq_handle_tx_error():198<warn> "
       "rxr_cq_handle_tx_error: err: 20, prov_err: Unknown error -20 (20)"},
      {"mlx5.error_cqe", "mlx5: gpu-b07: got completion with error:"},
      {"mlx5.error_cqe",
       "(InferenceActor pid=66130, ip=10.40.3.9) mlx5: gpu-b07.cluster.local: got completion with "
       "error:"},
      {"ib.resiliency_device_failed",
       "[2026-03-02 10:11:12] b300-n4:88120:88311 [3] transport/net_ib/p2p_resiliency.cc:376 NCCL "
       "WARN NET/IB: ncclIbResiliencyHandleDeviceFailure: Device 1 marked as failed. Initiating "
       "recovery? No (recv comm=0x7f1c2c0a1000, outstandingRecovery=0)"},
      {"ib.resiliency_device_failed",
       "b300-n4:88120:88311 [3] transport/net_ib/p2p_resiliency.cc:47 NCCL WARN NET/IB: Fatal "
       "error. Detected 2 failed devices out of 2 devices on the send communicator "
       "(comm=0x7f1c2c0a1000). No support for more than a single failed device."},
      {"ib.resiliency_device_failed",
       "b300-n4:88120:88311 [3] transport/net_ib/p2p_resiliency.cc:488 NCCL WARN NET/IB: Could not "
       "find a functional device to post the probe for request 0x7f1c2c0b4400 (id=42)"},
      {"cuda.too_many_peers",
       "[2026-01-12 04:22:19] pcie-srv:40211:40211 [0] allocator.cc:79 NCCL WARN Cuda failure 711 "
       "'peer mapping resources exhausted'"},
      {"cuda.too_many_peers",
       "2019-08-01 10:00:02.000001: W tensorflow/core/common_runtime/gpu/gpu_device.cc:1597] "
       "Unable to enable peer access between device ordinals 4 and 9, status: Internal: failed "
       "to enable peer access from 0x5600 to 0x5700: CUDA_ERROR_TOO_MANY_PEERS"},
      {"cuda.too_many_peers", "cudaDeviceEnablePeerAccess(9) failed: cudaErrorTooManyPeers"},
      {"cuda.error_name",
       "2025-10-02 11:20:33.910554: E external/xla/xla/stream_executor/cuda/cuda_driver.cc:1203] "
       "could not synchronize on CUDA context: CUDA_ERROR_LAUNCH_FAILED: unspecified launch "
       "failure"},
      {"cuda.error_name", "RuntimeError: CUDA error: cudaErrorLaunchTimeout"},
      {"ibv.reg_mr_enomem",
       "[1733550101.552710] [gpu-n3:40911:0]          ib_md.c:309  UCX  ERROR "
       "ibv_reg_mr(address=0x7f2b40000000, length=268435456, access=0xf) failed: Cannot allocate "
       "memory"},
      {"cuda.invalid_device", "RuntimeError: CUDA error: invalid device ordinal"},
      {"cuda.out_of_memory",
       "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a total "
       "capacity of 79.19 GiB of which 1.02 GiB is free."},
      {"cuda.illegal_address",
       "[rank5]: RuntimeError: CUDA error: an illegal memory access was encountered"},
      {"cuda.error_name", "torch.AcceleratorError: CUDA error: device-side assert triggered"},
      {"launcher.unreachable", "PRTE has lost communication with a remote daemon."},
      {"launcher.unreachable", "ORTE was unable to reliably start one or more daemons."},
      {"launcher.unreachable",
       "An ORTE daemon has unexpectedly failed after launch and before communicating back to "
       "mpirun."},
      {"launcher.unreachable",
       "slurmstepd: error:  mpi/pmix_v3: pmixp_coll_ring_reset_if_to: gpu-3 [0]: "
       "pmixp_coll_ring.c:742: 0x7f2a0c02cb20: collective timeout seq=0"},
      {"launcher.unreachable", "ssh: connect to host gpu-node-2 port 22: Connection refused"},
      {"launcher.unreachable",
       "ssh: Could not resolve hostname worker-7: Name or service not known"},
      {"launcher.transport_connect",
       "[1700554343.440877] [gpu-1:7356 :0]            sock.c:323  UCX  ERROR   connect(fd=48, "
       "dest_addr=172.17.0.1:42887) failed: Connection refused"},
      {"launcher.transport_connect",
       "[gpu-1][[41212,1],3][btl_tcp_endpoint.c:796:mca_btl_tcp_endpoint_complete_connect] "
       "connect() to 172.17.0.1 failed: Connection refused (111)"},
      {"launcher.transport_connect",
       "[gpu-1:07356] pml_ucx.c:424  Error: ucp_ep_create(proc=3) failed: Destination is "
       "unreachable"},
      {"nccl.library_missing",
       "INTERNAL: external/xla/xla/service/gpu/nccl_utils.cc:134: NCCL operation "
       "ncclGetUniqueId(&id) failed: Unable to load NCCL library. Multi-GPU collectives will "
       "not work."},
      {"nccl.library_missing",
       "OSError: libnccl.so.2: cannot open shared object file: No such file or directory"},
      {"shm.open_denied",
       "node3:2710:2790 [0] include/shm.h:27 NCCL WARN Call to shm_open failed : Permission "
       "denied"},
      {"shm.bus_error",
       "[gpu-2:2498 :0:2599] Caught signal 7 (Bus error: nonexistent physical address)"},
      {"shm.bus_error", "Fatal Python error: Bus error"},
      {"shm.bus_error", "Signal 7 (SIGBUS) received by PID 5512"},
      {"shm.bus_error",
       "ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient "
       "shared memory (shm)."},
      {"host.gpu_lost", "Unable to determine the device handle for GPU0000:03:00.0: Unknown Error"},
      {"host.gpu_lost",
       "Unable to determine the device handle for gpu 0000:41:00.0: GPU is lost.  Reboot the "
       "system to recover this GPU"},
      {"sharp.plugin_warn",
       "gpu-9:77:90 [0] sharp_plugin.c:302 NCCL WARN SHARP group create: Streaming Tree lock "
       "failed (-18)"},
      {"sharp.library_error",
       "[gpu-4:1:28576 unique id 1201360626793454896] ERROR collect_ports_data: device mlx5_0 "
       "port 1 is not valid (port is used by SM)"},
      {"sharp.library_error",
       "[gpu-4:0:24972 - comm.c:374] ERROR Failed to lock SAT tree(ID:0x40 ret:0x4)"},
      {"sharp.library_error", "SHARP group create: Streaming Tree lock failed (-18)"},
      {"host.xid_hardware",
       "[Mon Dec  1 10:00:00 2025] NVRM: Xid (PCI:0000:b3:00): 79, pid=1234, name=python, GPU "
       "has fallen off the bus."},
      {"host.xid_hardware",
       "kernel: NVRM: Xid (PCI:0000:18:00): 48, pid='<unknown>', name=<unknown>, An uncorrectable "
       "double bit error (DBE) has been detected on GPU in the framebuffer at partition 6."},
      {"c10d.store_connect",
       "torch.distributed.DistNetworkError: The client socket has timed out after 600000ms while "
       "trying to connect to (10.40.0.3, 29500)."},
      {"c10d.store_connect",
       "[W1207 10:00:01.000000000 socket.cpp:755] [c10d] The client socket has failed to connect "
       "to [gpu-n1.cluster]:29500 (errno: 113 - No route to host)."},
      {"c10d.store_connect",
       "[W1207 10:00:01.000000000 TCPStore.cpp:340] [c10d] TCP client failed to connect/validate "
       "to host 10.40.0.3:29500 - retrying (try=0, timeout=600000ms, delay=33924ms)"},
      // Other RDMA libraries on the same fabric (NVSHMEM under DeepEP, UCCL, MSCCL++, UCX).
      {"nvshmem.peermem_missing",
       "/home/nvshmem_src/src/modules/transport/ibrc/ibrc.cpp:nvshmemt_init:1851: neither "
       "nv_peer_mem, or nvidia_peermem detected. Skipping transport."},
      {"rdma.modify_qp_timeout",
       "/sgl-workspace/nvshmem/src/modules/transport/ibrc/ibrc.cpp:418: non-zero status: 110 "
       "ibv_modify_qp failed "},
      {"rdma.modify_qp_timeout",
       "/opt/nvshmem/src/modules/transport/ibdevx/ibdevx.cpp:757: non-zero status: 110 Unable "
       "to set qp to state R2R with errno 110."},
      {"rdma.modify_qp_timeout", "Failed to modify QP to RTR: Connection timed out"},
      {"rdma.modify_qp_timeout", "[E] ibv_modify_qp failed (errno 110)"},
      {"nvshmem.gpu_buffer",
       "WARN: device mlx5_0 cannot allocate buffer on the specified memory type. Skipping..."},
      {"nvshmem.nic_unsupported",
       "WARN: device erdma_0 is not enumerated as an mlx5 device. Skipping..."},
      {"nvshmem.nic_unsupported",
       "WARN: device bnxt_re0 is not supported (expected HCA interface: mlx5 or ibp). "
       "Skipping..."},
      {"nvshmem.qp_transition",
       "/root/nvshmem_src/src/modules/transport/ibgda/ibgda.cpp:1345: non-zero status: 121 Error "
       "in mlx5dv_devx_obj_modify for INIT2RTR_QP with syndrome 29e0df"},
      {"nvshmem.qp_transition",
       "/opt/nvshmem/src/modules/transport/ibdevx/ibdevx.cpp:790: non-zero status: 22 Unable to "
       "set qp to state R2S with errno 22."},
      {"rdma.reg_mr_enomem", "  what():  ibv_reg_mr failed (errno 12) (Ib failure: Cannot "
                             "allocate memory)"},
      {"rdma.reg_mr", "  what():  ibv_reg_mr failed (errno 14) (Ib failure: Bad address)"},
      {"rdma.reg_mr",
       "/opt/nvshmem/src/modules/transport/common/transport_ib_common.cpp:128: NULL value mem "
       "registration failed. Reason: Bad address"},
      {"nvshmem.ib_transport",
       "/dvs/p4/build/sw/rel/gpgpu/toolkit/r12.9/main_nvshmem/src/modules/transport/ibgda/"
       "ibgda.cpp:2234: NULL value Unable to create ah."},
      {"nvshmem.ib_transport",
       "/opt/nvshmem/src/modules/transport/common/transport_mlx5_common.cpp:94: non-zero status: "
       "22 mlx5dv_devx_general_cmd for hca cap failed."},
      {"rdma.verbs_call", "ibv_modify_qp failed"},
      {"rdma.verbs_call", "ERROR: failed to modify QP state to RTR"},
      {"rdma.verbs_call", "[qelr_create_qp:679]create qp: failed on ibv_cmd_create_qp with 22"},
      {"ucx.shm_fifo",
       "[1733401021.551240] [trainer-0:71:0]          mm_iface.c:720  UCX  ERROR mm_iface failed "
       "to allocate receive FIFO"},
      {"rdma.create_ah_timeout",
       "[1733401502.008114] [gpu-b-04:20411:0]       ib_device.c:1171 UCX  ERROR   ibv_create_ah("
       "dlid=49152 sl=0 port=1 src_path_bits=0 dgid=::ffff:10.20.1.14 flow_label=0xffffffff "
       "sgid_index=3 traffic_class=106) for RC DEVX QP connect on mlx5_2 failed: Connection timed "
       "out"},
      {"rdma.create_ah_nodev",
       "[1733401633.552091] [infer-2:310:0]       ib_device.c:1332 UCX  ERROR   ibv_create_ah("
       "dlid=49152 sl=0 port=1 src_path_bits=0 dgid=fe80::1e34:daff:fe51:7a20 "
       "flow_label=0xffffffff sgid_index=0 traffic_class=0) for UD mlx5 connect on mlx5_3 failed: "
       "No such device"},
      {"launcher.pmix_init",
       "It looks like pmix_init failed for some reason; your parallel process is"},
      {"launcher.pmix_init", "  pmix_psec_base_open failed"},
      {"gloo.connect_mesh",
       "[E1206 10:13:40.552811 5512 ProcessGroupGloo.cpp:143] Gloo connectFullMesh failed with "
       "[../third_party/gloo/gloo/transport/tcp/pair.cc:144] no error"},
      {"ibv.devinfo_open_failed", "Failed to open device"},
      {"nccl.library_missing",
       "ERROR 04-22 15:53:32 pynccl.py:44] Failed to load NCCL library from libnccl.so.2 .It is "
       "expected if you are not running on NVIDIA/AMD GPUs."},
      {"host.gpu_lost",
       "               NVRM: fallen off the bus and is not responding to commands."},
      {"host.gpu_lost", "[ 1843.439662] NVRM: The NVIDIA probe routine failed for 1 device(s)."},
      {"cuda.system_not_ready",
       "ggml_cuda_init: failed to initialize CUDA: system not yet initialized"},
      {"rdma.verbs_call", "[2025-11-11 08:02:15] [coro_connection.hpp:209] ibverbs init qp failed: "
                          "End of file conn_id  1"},
      {"rdma.verbs_call", "[ERROR] (setup_ib.c:184:setup_ib: errno: Invalid argument) Failed to "
                          "create qp"},
      {"rdma.verbs_call",
       "thread 'main' panicked at 'called Result::unwrap() on an Err value: Os { code: 22, kind: "
       "InvalidInput, message: \"Invalid argument\" }', ibverbs/examples/loopback.rs:16:10"},
      {"rdma.alloc_enomem",
       "[ERROR] (setup_ib.c:184:setup_ib: errno: Cannot allocate memory) Failed to create qp"},
      {"rdma.alloc_enomem",
       "[1731542301.118204] [trainer-3:5121:0]          mpool.c:269  UCX  ERROR Failed to "
       "allocate memory pool (name=ud_recv_skb) chunk: Cannot allocate memory"},
      {"ucx.mpool_register",
       "[1731542301.118204] [trainer-3:5121:0]          mpool.c:269  UCX  ERROR Failed to "
       "allocate memory pool (name=rc_recv_desc) chunk: Input/output error"},
      {"mlx5.error_cqe_local_protection", "00000000 93005204 0a0011c3 38a21cd2"},
      {"ibv.open_device_missing",
       "libfabric:88:1731542112::efa:ep_data:efa_device_construct_gid():47<warn> ibv_open_device "
       "failed! errno: 2"},
      {"peermem.module_load",
       "[Mon Nov 16 04:12:55 2026] nvidia_peermem: disagrees about version of symbol "
       "ib_register_peer_memory_client"},
      {"peermem.module_load",
       "modprobe: ERROR: could not insert 'nvidia_peermem': Invalid argument"},
      {"peermem.module_load", "failed to load nvidia-peermem module"},
      {"host.gpu_lost",
       "[   24.302465] NVRM: GPU6 _kgspIsHeartbeatTimedOut: Heartbeat timed out, currentTimeMs "
       "812751949 heartbeat 1899482 heartbeatWithOffsetMs 812745879 diff 6070 timeout 5200"},
      {"host.gpu_lost",
       "[   84.300488] NVRM: GPU6 _kgspLogRpcTimeout: ********************************* GSP "
       "Timeout **********************************"},
      {"host.gpu_lost",
       "[   84.300480] NVRM: GPU6 kgmmuCheckMemSubsysError_IMPL: Memory Subsystem Error detected. "
       "kbusSendSysmembarSingle failed."},
      {"launcher.slurm_step", "srun: error: Task launch for 36.0 failed on node cn131: Job "
                              "credential expired"},
      {"launcher.slurm_step",
       "slurmstepd: error: execve(): /var/spool/slurmd/job00412/slurm_script: No such file or "
       "directory"},
      {"c10d.store_connect",
       "[E socket.cpp:860] [c10d] The client socket has timed out after 60s while trying to "
       "connect to 10.0.0.4:29500"},
      {"c10d.store_connect",
       "torch.distributed.elastic.rendezvous.api.RendezvousConnectionError: The connection to the "
       "C10d store has failed. See inner exception for details."},
      {"c10d.watchdog_timeout",
       "[rank11]:[E ProcessGroupNCCL.cpp:1537] [PG 1 Rank 11] Timeout at NCCL work: 15734, last "
       "enqueued NCCL work: 15735, last completed NCCL work: 15733."},
      {"ibverbs.no_provider",
       "libibverbs: Warning: couldn't open config directory '/etc/libibverbs.d'."},
      {"cuda.illegal_address",
       "[1,3]<stderr>:  what():  cudaEventQuery failed: an illegal memory access was encountered"},
      {"ucx.verbs_object",
       "[1588956223.719348] [node7:55453:0]       ib_iface.c:623  UCX  ERROR iface=0x2535490: "
       "failed to create UD QP TX wr:256 sge:2 inl:64 RX wr:4096 sge:1 inl 0: Invalid argument"},
      {"ucx.api_version", "UCP API version is incompatible: required >= 1.19, actual 1.17.0"},
      {"ucx.ud_timeout",
       "[cn-217:40213:0:40213]    ud_iface.c:780  Fatal: transport error: Endpoint timeout"},
      {"kernel.mlx5_cmd",
       "[3391842.120044] mlx5_core 0000:3b:00.0: mlx5_cmd_out_err:838:(pid 27710): "
       "RTR2RTS_QP(0x504) op_mod(0x0) failed, status bad parameter(0x3), syndrome (0x6a5b8a), "
       "err(-22)"},
      {"perftest.cqe_acs", " Failed status 4: wr_id 0 syndrom 0x51"},
      {"perftest.cqe_retry", "Failed status 12: wr_id 0 syndrom 0x81"},
      {"perftest.cqe", " Failed status 10: wr_id 0 syndrom 0x88"},
      {"perftest.cqe_heading", "Completion with error at client"},
      {"topo.gdr_distance",
       "node-a:3011:3190 [2] NCCL INFO NET/IB : GPU Direct RDMA Disabled for GPU 2[2] / HCA 0 "
       "(distance 3 >= 2)"},
      {"launcher.slurm_step",
       "srun: error: Task launch for StepId=4411.0 failed on node gpu-c-04: Communication "
       "connection failure"},
      {"launcher.slurm_step",
       "srun: error: Application launch failed: Socket timed out on send/recv operation"},
      {"launcher.container_start", "slurmstepd: error: pyxis: couldn't start container"},
      {"launcher.container_start",
       "slurmstepd: error: pyxis: container start failed with error code: 1"},
      {"container.gpu_hook",
       "slurmstepd: error: pyxis:     [ERROR] Command not found: nvidia-container-cli, see "
       "https://github.com/NVIDIA/libnvidia-container"},
      {"container.gpu_hook",
       "nvidia-container-cli: initialization error: load library failed: libnvidia-ml.so.1: "
       "cannot open shared object file: no such file or directory: unknown."},
      {"container.gpu_hook",
       "docker: Error response from daemon: could not select device driver \"\" with "
       "capabilities: [[gpu]]."},
      {"container.cuda_requirement",
       "nvidia-container-cli: requirement error: unsatisfied condition: cuda>=12.8, please "
       "update your driver to a newer version, or use an earlier cuda container: unknown."},
      {"c10d.watchdog_timeout",
       "frame #1: c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout(std::optional<std::chrono::"
       "duration<long, std::ratio<1l, 1000l> > >) + 0x1e1 (0x7fe705ea04e1 in "
       "/usr/local/lib/python3.10/dist-packages/torch/lib/libtorch_cuda.so)"},
      {"c10d.watchdog_timeout",
       "Exception raised from checkTimeout at ../torch/csrc/distributed/c10d/"
       "ProcessGroupNCCL.cpp:525 (most recent call first):"},
      {"result.cuda_error", "gpu-1: Test NCCL failure common.cu:1005 'unhandled CUDA error'"},
      {"rdma.verbs_call", "[conn] Unable to transition QP to RTS"},
      {"rdma.verbs_call",
       "rdma.c:1016:nvmf_rdma_qpair_initialize: *ERROR*: rdma_create_qp failed: errno 22: "
       "Invalid argument"},
      {"rdma.verbs_call",
       "RuntimeError: In operator() at tensorpipe/common/ibv.h:172 \"\": Invalid argument"},
      {"ucx.cqe_local_protection_acs",
       "[1745700389.902821] [labinit01:6274 :0]     ib_mlx5_log.c:179  UCX  ERROR Local "
       "protection error on mlx5_0:1/RoCE (synd 0x4 vend 0x51 hw_synd 0/2)"},
      {"ucx.cqe_flushed",
       "[gpu-3:811  :0:811] ib_mlx5_log.c:179  UCX  ERROR WR flushed because QP in error state on "
       "mlx5_0:1/IB (synd 0x5 vend 0xf9 hw_synd 0/0)"},
      {"ucx.cqe_error",
       "[1,4000]<stderr>:[mel0537:6788 :0:6788] ib_mlx5_log.c:171  Remote access on mlx5_0:1/IB "
       "(synd 0x13 vend 0x88 hw_synd 0/0)"},
      {"rdma.wc_retry_exceeded",
       "E1213 02:57:10.528410 5811 worker_pool.cpp:274] Worker: Process failed for slice (opcode: "
       "0, source_addr: 0x7efdf3ffd010, length: 404, dest_addr: 140532604981264, local_nic: "
       "mlx5_1, peer_nic: 10.0.0.2:8149@mlx5_0, dest_rkey: 2105088, retry_cnt: 0): transport "
       "retry counter exceeded"},
      {"rdma.wc_flushed",
       "[1784621081.896667] [prefill-0:532  :0]       srd_iface.c:221  UCX  ERROR send "
       "completion[0] with error on rdmap96s0/0x55f989790220: Work Request Flushed Error, "
       "vendor_err 0x1 wr_id 0x7"},
      {"rdma.wc_error",
       "[Wed Jul 29 14:40:27 2026] mlx5_bond_0/1: QP 51291 error: local length error (0x8e 0x0 "
       "0x0)"},
      {"rdma.async_qp_error",
       "W0419 23:51:51.067479 114309 worker_pool.cpp:373] Worker: Received context async event "
       "local access violation work queue error for context mlx5_0"},
      {"c10d.store_listen",
       "torch.distributed.DistNetworkError: The server socket has failed to listen on any local "
       "network address. The server socket has failed to bind to [::]:98 (errno: 13 - Permission "
       "denied)."},
      {"c10d.store_listen",
       "[W1207 10:00:01.000000000 socket.cpp:464] [c10d] The server socket has failed to bind to "
       "0.0.0.0:29500 (errno: 98 - Address already in use)."},
      {"launcher.unreachable",
       "subprocess.CalledProcessError: Command 'ssh -o PasswordAuthentication=no 192.168.3.100 "
       "hostname' returned non-zero exit status 255."},
      {"nccl.library_missing",
       "No OpKernel was registered to support Op 'NcclAllReduce' used by {{node NcclAllReduce}} "
       "with these attrs: [reduction=\"sum\", shared_name=\"c1\", T=DT_FLOAT, num_devices=2]"},
      {"mooncake.reg_mr_enomem",
       "E0605 17:54:16.878770 178707 rdma_context.cpp:198] Failed to register memory "
       "0x7f56e6600000: Cannot allocate memory [12]"},
      {"mooncake.reg_mr",
       "E0605 10:48:27.885119 10136 rdma_context.cpp:203] Failed to register memory "
       "0x7b375b400000: Invalid argument [22]"},
      {"kernel.mlx5_reg_mr",
       " infiniband mlx5_0: create_mkey_callback:131:(pid 0): async reg mr failed. status -12"},
      {"mlx5.error_cqe_acs", "00000000 02005104 0a00061e 000164d2"},
      {"rdma.alloc_enomem", "ERROR mlx5_0: ibv_create_cq() failed: Cannot allocate memory."},
      {"rdma.alloc_enomem",
       "rdma.c:1016:nvmf_rdma_qpair_initialize: *ERROR*: rdma_create_qp failed: errno 12: "
       "Cannot allocate memory"},
      {"rdma.alloc_enomem",
       "RuntimeError: In create at tensorpipe/common/ibv.h:237 \"\": Cannot allocate memory"},
      {"rdma.alloc_enomem",
       "[1588956223.719348] [node7:55453:0]       ib_iface.c:623  UCX  ERROR iface=0x2535490: "
       "failed to create RC QP TX wr:256 sge:2 inl:64 RX wr:0 sge:0 inl 0: Cannot allocate "
       "memory"},
      {"mscclpp.wc_status",
       "  what():  a work item failed: status 12 (Ib failure: Cannot allocate memory)"},
      {"ucx.verbs_object",
       "[1737742661.094513] [cn0244:260472:0]      ib_mlx5_dv.c:430  UCX  ERROR   "
       "mlx5dv_devx_obj_create(QP) failed on mlx5_0, syndrome 0x2c4154: Remote I/O error"},
      {"ucx.verbs_object",
       "[1530549338.253029] [node-007:20497:0]       rc_iface.c:966  UCX  ERROR failed to create "
       "qp: Invalid argument"},
      {"libfabric.verbs_warn",
       "libfabric:294324:verbs:ep_ctrl:vrb_create_ep():239<warn> rdma_resolve_addr failed: Cannot "
       "assign requested address (99)"},
      {"nvml.capability_unsupported",
       "[2026-02-24 10:44:30] jetson:27998:27998 [0] misc/nvmlwrap.cc:164 NCCL WARN "
       "nvmlDeviceGetP2PStatus(0,0,NVML_P2P_CAPS_INDEX_READ) failed: Not Supported"},
      {"nvml.capability_unsupported",
       "[2026-02-24 10:44:30] jetson:27998:27998 [0] init.cc:471 NCCL WARN Failed to find nvml "
       "device for busId 0000:00:00.0. This may affect performance."},
      {"launcher.mpi_abi",
       "[gpu-1:12576] [ 1] /usr/lib/x86_64-linux-gnu/libmpi.so.20(MPI_Comm_size+0x42)"
       "[0x7f33a4d353b2]"},
      {"perftest.mr_enomem", "Couldn't allocate MR with error=12"},
      {"perftest.mr", "Couldn't allocate MR"},
      {"perftest.mr", "failed to create mr"},
      {"perftest.no_device", " Unable to find the Infiniband/RoCE device"},
      {"perftest.no_device", "No IB devices found"},
      {"perftest.open_device", " Couldn't get context for the device"},
      {"perftest.modify_qp", "Failed to modify QP 4731 to RTR"},
      {"perftest.modify_qp", " Unable to Connect the HCA's through the link"},
      {"perftest.resources", " Couldn't create IB resources"},
      {"perftest.socket", " Unable to init the socket connection"},
      {"perftest.socket", "Couldn't connect to 10.0.0.12:18515"},
      {"launcher.unreachable", "worker@10.0.0.2: Permission denied (publickey,password)."},
      {"launcher.unreachable", "Host key verification failed."},
      {"launcher.unreachable", "pdsh@gpu-1: gpu-2: ssh exited with exit code 255"},
      {"launcher.unreachable",
       "Error: failed to run torchrun --nproc_per_node=2 --nnodes=2 --node_rank=1 "
       "--master_addr=192.168.1.11 --master_port=29508 pretrain.py on 192.168.1.12, is "
       "localhost: False, exception: not a valid RSA private key file"},
      {"nccl.library_missing", "RuntimeError: Distributed package doesn't have NCCL built in"},
      {"cuda.invalid_device",
       "THCudaCheck FAIL file=/pytorch/torch/csrc/cuda/Module.cpp line=59 error=101 : invalid "
       "device ordinal"},
      {"nccl.symbol_missing",
       "ImportError: /usr/local/lib/python3.12/dist-packages/torch/lib/libtorch_cuda.so: "
       "undefined symbol: ncclCommInitRankScalable"},
      {"rccl.iommu_not_passthrough",
       "supllm:402:402 [0] /src/out/ubuntu-22.04/22.04/build/rccl/hipify/src/init.cc:179 NCCL "
       "WARN Missing \"iommu=pt\" from kernel command line which can lead to system instablity "
       "or hang!"},
      {"api.mismatched_collective",
       "[0] init.cc:1256 NCCL WARN Your program may be hanging, this may be caused by a "
       "collective mismatch around rank 1. Please check your collective calls at and around this "
       "rank. You can use NCCL_DEBUG=INFO and NCCL_DEBUG_SUBSYS=COLL to see the collective logs"},
      {"c10d.timeout_too_short",
       "[rank1]:[E1207 09:00:01.123456 77 ProcessGroupNCCL.cpp:632] [Rank 1] Watchdog caught "
       "collective operation timeout: WorkNCCL(SeqNum=1, OpType=BROADCAST, NumelIn=1024, "
       "NumelOut=1024, Timeout(ms)=5000) ran for 5012 milliseconds before timing out."},
  };
  return kSamples;
}

// rule name -> a line of the same family that the rule must not name: a benign or different
// line the rule's patterns come close to (the wording another layer prints in a healthy run,
// another provider, another status, a realistic setting).
const std::multimap<std::string, std::string>& NearMisses() {
  static const std::multimap<std::string, std::string> kNearMisses = {
      // One step of NCCL's search for the plugin's newest interface, not its failure.
      {"net.plugin_load_failed",
       "n1:77:77 [0] NCCL INFO NET/Plugin: Failed to find ncclNetPlugin_v6 symbol."},
      // NVSHMEM's own summary of a failed connection set-up names no call: the line before it does.
      {"nvshmem.ib_transport",
       "/root/nvshmem_src/src/host/transport/transport.cpp:400: non-zero status: 7 connect EPS "
       "failed"},
      // Another status of the same QP transition is not a timeout.
      {"rdma.modify_qp_timeout",
       "/sgl-workspace/nvshmem/src/modules/transport/ibrc/ibrc.cpp:418: non-zero status: 22 "
       "ibv_modify_qp failed "},
      // A symbol of another library missing is not NCCL's version.
      {"nccl.symbol_missing",
       "ImportError: libcudnn_ops.so.9: undefined symbol: cudnnGetVersion, version libcudnn.so.9"},
      {"rdma.reg_mr_enomem", "  what():  ibv_reg_mr failed (errno 14) (Ib failure: Bad address)"},
      // The bootstrap's own listening socket failing to bind is a real fault, not RAS's port.
      {"ras.client_socket",
       "n1:5:5 [0] misc/socket.cc:456 NCCL WARN Call to bind failed: Address already in use"},
      // Another errno of the same queue creation is not pinned memory.
      {"rdma.alloc_enomem",
       "rdma.c:1016:nvmf_rdma_qpair_initialize: *ERROR*: rdma_create_qp failed: errno 22: "
       "Invalid argument"},
      // NCCL's GDR switched off because the module is missing is a suspect, not its policy.
      {"topo.gdr_distance",
       "n1:5:5 [0] NCCL INFO NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0' (no module)"},
      // Another completion status is not the ACS case, nor a retry count.
      {"perftest.cqe_acs", " Failed status 4: wr_id 0 syndrom 0x32"},
      {"perftest.cqe_retry", " Failed status 10: wr_id 0 syndrom 0x88"},
      // A command the firmware completed is logged without "failed".
      {"kernel.mlx5_cmd",
       "[12.5] mlx5_core 0000:3b:00.0: mlx5_cmd_check:795:(pid 9993): RTR2RTS_QP(0x504) "
       "op_mod(0x0) completed"},
      // The ACS case is another rule's; an error CQE with another syndrome is not this one.
      {"mlx5.error_cqe_local_protection", "00000000 02005104 0a00061e 000164d2"},
      {"mlx5.error_cqe_local_protection", "00000000 00008813 120101c6 0a3fd4d2"},
      // Another errno of opening the device is not a missing device node.
      {"ibv.open_device_missing",
       "libfabric:88:1731542112::efa:ep_data:efa_device_construct_gid():47<warn> ibv_open_device "
       "failed! errno: 12"},
      // The module loading fine prints its own line, no symbol.
      {"peermem.module_load", "[  12.1] nvidia_peermem: module verification failed"},
      // PMIx's single error lines are printed by jobs that run too.
      {"launcher.pmix_init",
       "[node-1:08575] PMIX ERROR: ERROR in file gds_ds12_lock_pthread.c at line 168"},
      // The OFI plugin's topology file is not a verbs device.
      {"ibv.devinfo_open_failed",
       "NET/OFI Failed to open device property file /sys/x/y. ERROR: No such file or directory"},
      // The container toolkit's own version line is not an error.
      {"container.gpu_hook", "NVIDIA Container Runtime Hook version 1.17.4"},
      // A QP moved on its way, logged by a program that says it succeeded.
      {"rdma.verbs_call", "[conn] modified QP to RTR, then RTS"},
      // The same completion error with another vendor syndrome is not the ACS case.
      {"ucx.cqe_local_protection_acs",
       "[1745700389.902821] [labinit01:6274 :0]     ib_mlx5_log.c:179  UCX  ERROR Local "
       "protection error on mlx5_0:1/RoCE (synd 0x4 vend 0x32 hw_synd 0/2)"},
      // An NVML call that failed for another reason than a missing capability is not benign.
      {"nvml.capability_unsupported",
       "gpu-3:88:88 [0] misc/nvmlwrap.cc:164 NCCL WARN nvmlDeviceGetHandleByPciBusId() failed: "
       "Not Found"},
      // A crash in the program's own frames, not in MPI's start-up.
      {"launcher.mpi_abi",
       "[gpu-1:12576] [ 2] ./build/all_reduce_perf[0x402101]"},
      // Another syndrome in the error CQE's dump (0x13, remote access; vendor 0x88).
      {"mlx5.error_cqe_acs", "00000000 00008813 120101c6 0a3fd4d2"},
      {"mooncake.reg_mr_enomem",
       "E0605 10:48:27.885119 10136 rdma_context.cpp:203] Failed to register memory "
       "0x7b375b400000: Invalid argument [22]"},
      // A counter's name is not a completion status.
      {"rdma.wc_error", "rx_remote_access_errors: 0"},
      // A script the shell may not run is not ssh refusing the launcher.
      {"launcher.unreachable", "bash: ./launch.sh: Permission denied"},
      // A counter named after bus errors is not a bus error.
      {"shm.bus_error", "bus error counters: 0 (PCIe link healthy)"},
      {"libfabric.mr_enomem",
       "libfabric:30211:1733550101::efa:cq:efa_rdm_ep_grow_rx_pools():1170<warn> cannot allocate "
       "memory for EFA's RX packet pool. error: Cannot allocate memory"},
      {"libfabric.mr_enomem",
       "libfabric:5510:1733551200::efa:mr:efa_mr_regattr():905<warn> Unable to register MR: Bad "
       "address"},
      {"libfabric.mr_other",
       "libfabric:7:1700000000::efa:mr:efa_mr_dereg_impl():1010<warn> Unable to deregister memory "
       "registration"},
      {"libfabric.efa_completion_error",
       "libfabric:88123:1712000000::verbs;ofi_rxm:cq:vrb_poll_cq():140<warn> fi_cq_readerr: err: "
       "5, prov_err: Input/output error (5)"},
      {"libfabric.efa_completion_error",
       "libfabric:30214:1733550101::efa:eq:efa_eq_write_error():662<warn> Writing error Cannot "
       "allocate memory to EQ."},
      {"mlx5.error_cqe", "libibverbs: Warning: couldn't stat '/sys/class/infiniband/mlx5_4'."},
      {"mlx5.error_cqe", "00000000 00008813 120101c6 0a3fd4d2"},
      {"ib.resiliency_device_failed",
       "b300-n4:88120:88311 [3] NCCL INFO NET/IB: ncclIbResiliencyHandleDeviceFailure: Device 0 was "
       "already marked as failed."},
      {"cuda.too_many_peers",
       "gpu-2:88:88 [0] transport/p2p.cc:380 NCCL WARN Cuda failure 704 'peer access is already "
       "enabled'"},
      {"cuda.error_name", "CUDA_VISIBLE_DEVICES=0,1,2,3 python train.py"},
      {"cuda.error_name", "cuInit returned CUDA_SUCCESS"},
      {"ibv.reg_mr_enomem",
       "[1733550101.552710] [gpu-n3:40911:0]          ib_md.c:309  UCX  ERROR "
       "ibv_reg_mr(address=0x7f2b40000000, length=4096, access=0xf) failed: Bad address"},
      {"cuda.out_of_memory",
       "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True avoids memory fragmentation"},
      {"host.xid_hardware",
       "[ 8812.441201] NVRM: Xid (PCI:0000:1b:00): 13, pid=40211, name=python, Graphics "
       "Exception: ESR 0x404600=0x80000001"},
      {"host.xid_hardware",
       "[ 8812.441201] NVRM: Xid (PCI:0000:1b:00): 31, pid=40211, name=python, Ch 00000008, "
       "intr 10000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_0 faulted @ 0x7f3b_2c000000"},
      {"c10d.store_connect",
       "[W1207 10:00:01.000000000 socket.cpp:464] [c10d] The server socket on "
       "[::ffff:10.10.12.11]:25000 has timed out, will retry."},
      {"c10d.timeout_too_short",
       "[rank1]:[E1207 09:30:01.123456 77 ProcessGroupNCCL.cpp:632] [Rank 1] Watchdog caught "
       "collective operation timeout: WorkNCCL(SeqNum=88, OpType=ALLREDUCE, NumelIn=1024, "
       "NumelOut=1024, Timeout(ms)=600000) ran for 600012 milliseconds before timing out."},
      {"api.comm_in_progress",
       "trainer-0:61:61 [0] init.cc:2402 NCCL WARN comm 0x55d1d1c1f680 has already been destroyed"},
      {"api.comm_error_state",
       "trainer-0:61:61 [0] init.cc:2402 NCCL WARN comm 0x55d1d1c1f680 has already been destroyed"},
  };
  return kNearMisses;
}

bool Contains(const std::vector<std::string_view>& v, std::string_view x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

TEST(RuleTable, NamesAreUniqueAndCausesAreInTheCatalogue) {
  std::set<std::string_view> names;
  for (const auto& r : Rules()) {
    EXPECT_TRUE(names.insert(r.name).second) << "duplicate rule " << r.name;
    EXPECT_NE(FindCause(r.cause), nullptr) << r.name << " names unknown cause " << r.cause;
    EXPECT_FALSE(r.patterns.empty()) << r.name;
    EXPECT_GE(r.confidence, 0.0) << r.name;
    EXPECT_LE(r.confidence, 1.0) << r.name;
  }
  for (const auto& rc : ResultCodeCauses()) EXPECT_NE(FindCause(rc.cause), nullptr) << rc.name;
  for (const auto& ref : Refinements()) {
    EXPECT_NE(FindCause(ref.general), nullptr) << ref.general;
    EXPECT_NE(FindCause(ref.specific), nullptr) << ref.specific;
  }
}

TEST(RuleTable, EveryRuleHasARealFormatSample) {
  for (const auto& r : Rules()) {
    EXPECT_TRUE(Samples().count(std::string(r.name))) << "no sample line for rule " << r.name;
  }
  for (const auto& [name, line] : Samples()) {
    bool known =
        std::any_of(Rules().begin(), Rules().end(), [&](const Rule& r) { return r.name == name; });
    EXPECT_TRUE(known) << "sample for a rule that does not exist: " << name;
  }
}

const std::string& Sample(const std::string& name) { return Samples().find(name)->second; }

// A rule with several patterns (each CUDA error) is tested on each: every pattern alone matches
// one of the rule's samples.
TEST(RuleTable, EveryPatternOfARuleMatchesOneOfItsSamples) {
  for (const Rule& r : Rules()) {
    for (const std::string& pattern : r.patterns) {
      Rule alone = r;
      alone.patterns = {pattern};
      auto compiled = CompiledRules::Compile({alone});
      ASSERT_TRUE(compiled.ok()) << compiled.status().message();
      auto [from, to] = Samples().equal_range(r.name);
      bool matched = false;
      for (auto it = from; it != to; ++it) {
        matched = matched || !RuleNamesForLine(it->second, **compiled).empty();
      }
      EXPECT_TRUE(matched) << r.name << ": no sample for pattern " << pattern;
    }
  }
}

TEST(RuleTable, EverySampleLineMatchesItsRule) {
  for (const auto& [name, line] : Samples()) {
    auto matched = RuleNamesForLine(line);
    EXPECT_TRUE(Contains(matched, name)) << name << " does not match its sample: " << line;
  }
}

// The other side of each sample: a line close to the rule's family that it must leave alone.
TEST(RuleTable, NearMissLinesAreNotNamedByTheirRule) {
  for (const auto& [name, line] : NearMisses()) {
    EXPECT_TRUE(Samples().count(name)) << "near miss for a rule without a sample: " << name;
    EXPECT_FALSE(Contains(RuleNamesForLine(line), name)) << name << " names " << line;
  }
}

// The same WARN means another thing in another release: before 2.26 the communicator holds an
// earlier error (a follow-up of the first WARN), from 2.26 a non-blocking call came too early.
TEST(RuleTable, CommunicatorNotReadyIsAFollowUpBefore226AndMisuseFrom226) {
  const std::string warn = Sample("api.comm_error_state");
  const std::string first =
      "gpu-c12:7702:7780 [1] transport/net_ib.cc:1696 NCCL WARN NET/IB : Got completion from peer "
      "10.30.4.9<52113> with status=12 opcode=0 len=0 vendor err 129 (Send)";
  auto version = [](const char* v) {
    return std::string("trainer-0:61:61 [0] NCCL INFO NCCL version ") + v + "+cuda12.4\n";
  };
  Classification old_alone = ClassifyLogText(version("2.21.5") + warn);
  EXPECT_EQ(old_alone.fault_class, FaultClass::kUnknown) << old_alone.reason;
  Classification unknown_version = ClassifyLogText(warn);
  EXPECT_EQ(unknown_version.fault_class, FaultClass::kUnknown) << unknown_version.reason;
  Classification old_after = ClassifyLogText(version("2.21.5") + first + "\n" + warn);
  ASSERT_FALSE(old_after.causes.empty());
  EXPECT_EQ(old_after.causes.front().cause, "ib.fabric");
  Classification new_alone = ClassifyLogText(version("2.28.9") + warn);
  ASSERT_FALSE(new_alone.causes.empty());
  EXPECT_EQ(new_alone.causes.front().cause, "nccl.api_usage");
  EXPECT_EQ(new_alone.fault_class, FaultClass::kArchitecture);
}

// The end-to-end meaning of each rule: its sample alone (plus what the rule needs around it)
// gives the rule's cause and verdict.
TEST(RuleTable, EverySampleClassifiesAsItsRuleSays) {
  for (auto it = Samples().begin(); it != Samples().end(); ++it) {
    auto rule = std::find_if(Rules().begin(), Rules().end(),
                             [&](const Rule& x) { return x.name == it->first; });
    if (rule == Rules().end()) continue;  // reported by EveryRuleHasARealFormatSample
    const Rule& r = *rule;
    std::string log = it->second + "\n";
    if (r.strength == Strength::kContext) {
      // INFO context counts only when IB was wanted and the run did not complete.
      log = "n1:1:1 [0] NCCL INFO NCCL_NET set by environment to IB\n" + log;
    }
    // What a rule's conditions need around its line: the variable set before it, the network,
    // an HCA in use (GDR off matters only then).
    for (const std::string& env : r.after_env) {
      log = "n1:1:1 [0] NCCL INFO " + env + " set by environment to /etc/x.xml\n" + log;
    }
    if (!r.network.empty()) log += "n1:1:1 [0] NCCL INFO Using network " + r.network + "\n";
    if (r.nccl_known) {  // a known bug of some releases: the log must name one of them
      std::string v = "2.0.0";
      if (!r.nccl_from.empty()) {
        v.clear();
        for (int part : r.nccl_from) v += (v.empty() ? "" : ".") + std::to_string(part);
      }
      log = "n1:1:1 [0] NCCL INFO NCCL version " + v + "+cuda12.2\n" + log;
    }
    if (r.cause == ids::kIbPeermem) {
      log = "n1:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB eth0:10.0.0.1<0>\n" + log;
    }
    Classification c = ClassifyLogText(log);
    SCOPED_TRACE(std::string(r.name) + ": " + it->second);
    if (r.strength == Strength::kIgnore) {
      EXPECT_TRUE(c.causes.empty());
      EXPECT_TRUE(c.roots.empty());
      continue;
    }
    ASSERT_FALSE(c.causes.empty());
    bool listed = std::any_of(c.causes.begin(), c.causes.end(),
                              [&](const ClassifiedCause& k) { return k.cause == r.cause; });
    EXPECT_TRUE(listed);
    auto matched = RuleNamesForLine(it->second);
    if (!matched.empty() && matched.front() == r.name) {
      EXPECT_EQ(c.causes.front().cause, r.cause);
      EXPECT_EQ(c.causes.front().fault_class, r.verdict);
      // Side effects and peer exits alone do not say which path failed.
      bool elsewhere = r.strength == Strength::kFollow || r.strength == Strength::kPeer;
      EXPECT_EQ(c.fault_class, elsewhere ? FaultClass::kUnknown : r.verdict);
      EXPECT_FALSE(c.causes.front().remedy.empty());
      ASSERT_FALSE(c.causes.front().evidence.empty());
      EXPECT_TRUE(std::any_of(c.causes.front().evidence.begin(),
                              c.causes.front().evidence.end(),
                              [&](const LogLine& l) { return l.text == it->second; }));
    }
  }
}

TEST(RuleTable, IbverbsFailuresAreIbResourceEvenWhenTheFixIsArchitecture) {
  // DESIGN "two meanings of class": the memlock fix lives in the host setup, but the call that
  // failed is on the IB path.
  Classification c = ClassifyLogText(Sample("ibv.reg_mr_enomem"));
  ASSERT_FALSE(c.causes.empty());
  EXPECT_EQ(c.fault_class, FaultClass::kIbResource);
  EXPECT_EQ(c.causes[0].cause, "limits.memlock");
  EXPECT_EQ(c.causes[0].fault_class, FaultClass::kIbResource);
  EXPECT_EQ(c.causes[0].fix_class, FaultClass::kArchitecture);
}

TEST(RuleTable, ModifyQpEinvalListsGidThenPkeyUnlessPkeyWasSet) {
  const std::string line = Sample("ibv.modify_qp_einval_pkey");
  Classification plain = ClassifyLogText(line);
  ASSERT_EQ(plain.causes.size(), 2u);
  EXPECT_EQ(plain.causes[0].cause, "ib.gid");
  EXPECT_EQ(plain.causes[1].cause, "ib.pkey");
  Classification pkey = ClassifyLogText(
      "ib-n11:9921:9921 [0] NCCL INFO NCCL_IB_PKEY set by environment to 2.\n" + line);
  ASSERT_EQ(pkey.causes.size(), 2u);
  EXPECT_EQ(pkey.causes[0].cause, "ib.pkey");
  EXPECT_GT(pkey.causes[0].confidence, pkey.causes[1].confidence);
}

TEST(RuleTable, ResultCodesCoverTheFailureCodesOfNcclResult) {
  for (int code : {1, 2, 3, 4, 5, 6, 8}) EXPECT_NE(FindResultCode(code), nullptr) << code;
  EXPECT_EQ(FindResultCode(0), nullptr);  // ncclSuccess
  EXPECT_EQ(FindResultCode(7), nullptr);  // ncclInProgress
  EXPECT_EQ(FindResultCode(2)->name, "ncclSystemError");
}

}  // namespace
}  // namespace nccl_triage
