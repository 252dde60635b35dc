// The one catalogue of check ids and cause ids.
//
// Every id that can appear in a finding, a classifier cause, a probe verdict, a metric label, an
// annotation or an alert is listed here once, with its class (where the fix lives), where it is
// produced, the properties other code acts on, a title, why it matters and the remedy. The README's
// tables are checked against this table by tests, so adding an id means adding its documentation.
// The table is append-only in spirit: ids are API.
//
// A host check's entry is written in the check's own file (NT_HOST_CHECK, checks/check.h) and
// collected into this table by the build, so that adding a check is one file.
//
// The table is constexpr and lives in this header so that ids can be checked at compile time:
// code names an id through a CauseId (core/ids.h), and a CauseId of an id that is not here does
// not compile. Properties that used to be lists of ids in the code that reads them (which host
// checks also judge containers, which findings explain low IB bandwidth, ...) are CauseTrait bits
// of the entry, so a new id states them where it is documented.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "core/model.h"

namespace nccl_triage {

// Where an id is produced. An id may be produced in several places (kHostCheck ids are also
// classifier causes when the log names the same fault).
enum class CauseKind {
  kHostCheck,      // a pure check over one NodeSnapshot (`nccl-triage check`)
  kLogCause,       // produced only by the NCCL log classifier / probe explanation
  kCrossNode,      // a pure check over two or more snapshots (coordinator)
  kWorkloadCheck,  // a pure check of a workload container's own settings (its NCCL environment)
  kKernelLog,      // judged from the host's kernel log (kernel/kernel_judge.h)
};
// The names `dump-schema` gives the kinds (tools/gen-docs reads them).
constexpr auto NamesOf(Type<CauseKind>) {
  return std::array{Named(CauseKind::kHostCheck, "host_check"),
                    Named(CauseKind::kLogCause, "log_cause"),
                    Named(CauseKind::kCrossNode, "cross_node"),
                    Named(CauseKind::kWorkloadCheck, "workload_check"),
                    Named(CauseKind::kKernelLog, "kernel_log")};
}

// Properties of an id that code outside the catalogue acts on (a bit set; CauseInfo::traits).
enum CauseTrait : unsigned {
  kNoTrait = 0,
  // A host check that also judges each workload container, on the snapshot its processes would
  // gather about themselves (workload/judge.h). The others judge hardware the container shares
  // with the host, which the node's own findings already report.
  kRunsInContainers = 1u << 0,
  // When the IB probe passes but its bus bandwidth is below expectation, a non-passing finding of
  // this check is a likely reason and is listed after ib.bandwidth (core/decision.h).
  kExplainsSlowIb = 1u << 1,
  // A verdict naming this cause is `degraded`: both paths work, the IB path slower than the ports
  // should carry (PairVerdict::degraded, on both ends of the wire).
  kMarksDegraded = 1u << 2,
  // Names no fault of its own: a consequence of a failure elsewhere (a peer that exited, a
  // deadline) or an error code no line explains. A rank whose log names only such causes says
  // nothing about its own node (the coordinator's pair judgement).
  kConsequenceOnly = 1u << 3,
  // Named from the probe's own result (its transport, its data check, its bandwidth) by the probe
  // runner or the decision table, never by a log line: no classifier rule produces it.
  kFromProbeResult = 1u << 4,
};

struct CauseInfo {
  std::string_view id;
  FaultClass fault_class;
  CauseKind kind;
  unsigned traits;          // CauseTrait bits
  std::string_view title;   // short noun phrase, used in tables and annotations
  std::string_view why;     // one or two sentences: why this breaks or slows NCCL
  std::string_view remedy;  // what an operator does about it
  // Host checks: what the check reads and when it passes, warns, fails or skips (the check
  // table of docs/checks.md, Markdown). Empty for the other kinds.
  std::string_view looks_at = {};
  std::string_view verdict = {};

  constexpr bool Has(CauseTrait trait) const { return (traits & trait) != 0; }
};

namespace catalogue_table {

constexpr FaultClass kArch = FaultClass::kArchitecture;
constexpr FaultClass kIb = FaultClass::kIbResource;
constexpr FaultClass kUnknownClass = FaultClass::kUnknown;
constexpr CauseKind kHost = CauseKind::kHostCheck;
constexpr CauseKind kLog = CauseKind::kLogCause;
constexpr CauseKind kCross = CauseKind::kCrossNode;
constexpr CauseKind kWorkload = CauseKind::kWorkloadCheck;
constexpr CauseKind kKernel = CauseKind::kKernelLog;
constexpr unsigned kNone = kNoTrait;
constexpr unsigned kInContainers = kRunsInContainers;
constexpr unsigned kSlowsIb = kExplainsSlowIb;
constexpr unsigned kDegraded = kMarksDegraded;
constexpr unsigned kConsequence = kConsequenceOnly;
constexpr unsigned kProbeResult = kFromProbeResult;

// Documentation order: the README tables list the ids in this order.
inline constexpr std::array kEntries = {
    // ---------------------------------------------------------------- host checks
    // Each host check's row is in its own file (agent/checks/<id>.cc, NT_HOST_CHECK), in the
    // position it declares there: architecture first, then ib_resource. The build collects them
    // (cmake/collect_host_checks.cmake).
#include "core/catalogue_host_checks.inc"
    // ---------------------------------------------------------------- workload containers
    CauseInfo{"env.ib_disable", kArch, kWorkload, kNone, "NCCL_IB_DISABLE left on",
              "The container sets NCCL_IB_DISABLE=1 on a node with RDMA devices: NCCL runs over "
              "TCP sockets at a fraction of the fabric's bandwidth (a leftover of the socket "
              "bypass test).",
              "Remove NCCL_IB_DISABLE from the pod spec (or set it to 0) once the IB path works; "
              "use NCCL_NET=Socket only for a deliberate test."},
    CauseInfo{"env.ib_hca", kArch, kWorkload, kNone, "NCCL_IB_HCA names absent HCAs",
              "NCCL_IB_HCA selects the HCAs NCCL may use; when it matches none of the node's "
              "devices NCCL finds no IB device and falls back to sockets (or fails with "
              "NCCL_NET=IB).",
              "Set NCCL_IB_HCA to devices that exist on every node (prefix match `mlx5`, exact "
              "`=mlx5_0,mlx5_1`), or unset it."},
    // ---------------------------------------------------------------- classifier / probe causes
    CauseInfo{"net.connect", kArch, kLog, kNone, "TCP connection to a peer",
              "A TCP connect to a peer or the bootstrap root was refused, timed out or had no "
              "route: a firewall, a wrong interface or address, or a peer not listening.",
              "Check that the nodes reach each other on the NCCL interface (ping, nc), open the "
              "ports between GPU nodes in the firewall/NetworkPolicy, and pin "
              "NCCL_SOCKET_IFNAME to the routed interface."},
    CauseInfo{"net.config", kArch, kLog, kNone, "Mismatched socket configuration",
              "A connection from a different job, NCCL version or interface reached NCCL's "
              "port (wrong magic/type), typically when bootstrap and IB out-of-band interfaces "
              "differ.",
              "Use the same NCCL_SOCKET_IFNAME and NCCL build on every rank."},
    CauseInfo{"ib.fabric", kIb, kLog, kNone, "IB fabric path",
              "Work requests timed out in the fabric (IBV_WC_RETRY_EXC_ERR, status 12) or QP "
              "address resolution timed out: link down, routing, wrong RoCE version, PFC.",
              "Check port states and error counters on both ends and on the switches, routing "
              "between the rails (NCCL_CROSS_NIC), and the RoCE GID/PFC settings."},
    CauseInfo{"ib.gdr_acs", kIb, kLog, kNone, "GPUDirect RDMA blocked (ACS/IOMMU)",
              "Local protection errors (status 4, vendor err 81) when the HCA writes GPU memory "
              "mean PCIe ACS or the IOMMU blocks peer-to-peer traffic.",
              "Disable ACS on the PCIe switches (or set the IOMMU to passthrough); "
              "NCCL_NET_GDR_LEVEL=0 confirms the diagnosis at a bandwidth cost."},
    CauseInfo{"ib.hca_selection", kIb, kLog, kNone, "HCA/netdev not in this namespace",
              "ibv_modify_qp failed with No such device or Network is unreachable: the GID's "
              "netdev is not in this network namespace (SR-IOV VF, macvlan) or there is no "
              "route for RoCE v2.",
              "Select HCAs whose netdev is in the pod's namespace (NCCL_IB_HCA) and give them "
              "routes; use host networking for whole-HCA access."},
    CauseInfo{"ib.port_down_runtime", kIb, kLog, kNone, "Port or HCA failed during the run",
              "NCCL received an async port-error or catastrophic-error event: the link dropped "
              "or the HCA failed while the job ran.",
              "Check the port's cable and counters and dmesg for HCA errors; drain the node if "
              "the HCA reports a catastrophic error."},
    CauseInfo{"ib.verbs_call", kIb, kLog, kNone, "ibverbs call failed",
              "An ibverbs call (or the NET/IB transport around it) failed with an error that "
              "names no more specific cause: the HCA, its driver or its resources.",
              "Read the errno in the line: ENOMEM points to limits.memlock, EACCES/EPERM to "
              "container.rdma_devices or security.lsm; otherwise check ibv_devinfo, the port "
              "state, other processes on the HCA (ib.contention) and dmesg."},
    CauseInfo{"host.syscall", kArch, kLog, kNone, "System call failed",
              "A libc call NCCL wraps (socket, open, mmap, fcntl, ...) failed outside the IB "
              "path: a host or container setting blocks it, and it fails over sockets too.",
              "Read the call and errno in the line; check ulimits (limits.nofile), security "
              "policy (security.lsm) and free resources; confirm with NCCL_IB_DISABLE=1."},
    CauseInfo{"ib.rdma_core_missing", kIb, kLog, kNone, "rdma-core missing from the image",
              "NCCL could not dlopen libibverbs, so it has no IB transport in this container.",
              "Install libibverbs1 and ibverbs-providers (rdma-core) in the image."},
    CauseInfo{"shm.ipc", kArch, kLog, kNone, "Shared memory not shared between ranks",
              "A peer's /dev/shm segment does not exist here: ranks on one host run in "
              "different IPC namespaces.",
              "Run the ranks of one node in one pod, or give them hostIPC; or set "
              "NCCL_SHM_DISABLE=1 at a bandwidth cost."},
    CauseInfo{"gpu.duplicate", kArch, kLog, kNone, "Two ranks on one GPU",
              "Two ranks that NCCL sees on the same host selected the same GPU, usually a wrong "
              "LOCAL_RANK to device mapping or CUDA_VISIBLE_DEVICES.",
              "Set the device from LOCAL_RANK (torch.cuda.set_device) and check "
              "CUDA_VISIBLE_DEVICES per rank."},
    CauseInfo{"gpu.visibility", kArch, kLog, kNone, "GPU not visible to NVML",
              "CUDA sees a GPU that NVML cannot find: cgroup device rules or per-task "
              "CUDA_VISIBLE_DEVICES hide it.",
              "Expose the same GPUs to every process of the job (device plugin allocation, "
              "Slurm --gpus-per-task)."},
    CauseInfo{"gpu.p2p", kArch, kLog, kNone, "GPU peer access fails its check",
              "NCCL's own diagnostics (NCCL_RUN_DIAGNOSTICS=1, 2.31+) wrote to and read back "
              "from every GPU pair of a node and some accesses failed or returned wrong data: "
              "PCIe ACS or the IOMMU redirects peer traffic, a VM or container hides the peer, "
              "or NVLink is down between the pair.",
              "Read the pair in the report, then `nvidia-smi topo -m` and `nvidia-smi topo -p2p "
              "rw`; on bare metal disable PCIe ACS and set iommu=pt; until fixed, "
              "NCCL_P2P_DISABLE=1 keeps jobs running through shared memory."},
    CauseInfo{"gpu.mixed", kArch, kLog, kNone, "Ranks on unlike GPUs or GPU drivers",
              "NCCL's RAS diagnostics found nodes whose GPUs differ in model or in number per "
              "node, or whose CUDA or graphics driver versions differ: a job spread over two "
              "node pools, a node with a GPU missing, a half-finished driver upgrade.",
              "Schedule the job onto one pool (a nodeSelector on the GPU product label) with "
              "one driver version; a node with fewer GPUs than its peers has lost one: drain it "
              "and check nvidia-smi."},
    CauseInfo{"gpu.health", kUnknownClass, kLog, kNone, "GPU errors found by NCCL's diagnostics",
              "NCCL's RAS diagnostics read uncorrected ECC errors, inactive or unequal NVLink "
              "links, or an Xid that asks for action on a rank's GPU: the hardware, not NCCL's "
              "paths, is the suspect.",
              "Drain the node named in the report, read `nvidia-smi -q -d ECC` and the Xid in the "
              "kernel log, reset the GPU (nvidia-smi -r) or replace it after `dcgmi diag -r 3`."},
    CauseInfo{"nccl.env_mismatch", kArch, kLog, kNone, "Ranks run with different NCCL settings",
              "NCCL's RAS diagnostics compared the NCCL_* environment of every rank and found a "
              "variable set differently (or only on some ranks): ranks may choose different "
              "networks, interfaces or protocols and fail to connect.",
              "Give every rank the same NCCL_* environment (one pod template, no per-node "
              "overrides); the report names the variable and the ranks."},
    CauseInfo{"ib.nic_mismatch", kIb, kLog, kNone, "A node's NIC unlike its peers'",
              "NCCL's diagnostics found a network device that differs between nodes (type, "
              "speed, link layer, port state), is missing on some, or measured more than 30 % "
              "off the median bandwidth.",
              "Compare the named node's ports with its peers (ibstat: rate, state, link layer), "
              "read ib.port_rate, ib.port_state and ib.port_errors for that node, and reseat or "
              "replace the cable or HCA that lags."},
    CauseInfo{"versions.mismatch", kArch, kLog, kNone, "NCCL version skew between ranks",
              "Ranks run different NCCL versions or builds; NCCL refuses to connect them.",
              "Deploy one image (one NCCL build) for every rank of the job."},
    CauseInfo{"cuda.driver", kArch, kLog, kNone, "CUDA driver or runtime error",
              "A CUDA call failed: driver too old for the runtime, GPU architecture not in the "
              "build, out of GPU memory, no device visible, or the stub libcuda in a container.",
              "Match the driver to the CUDA version, run with the NVIDIA container runtime so "
              "the real libcuda and /dev/nvidia* are mounted, and check GPU memory use."},
    CauseInfo{"nccl.api_usage", kArch, kLog, kNone, "NCCL API misuse",
              "NCCL rejected its arguments or configuration (invalid argument/usage, config "
              "struct not initialised): a bug in the caller, not in the node.",
              "Fix the calling program; for nccl-triage itself, report the log."},
    CauseInfo{"nccl.library", kArch, kLog, kNone, "NCCL library not loadable",
              "The program could not load libnccl.so.2 at all (not in the image, not on the "
              "library path, or built for a CUDA the driver lacks): no collective can run.",
              "Install the NCCL that matches the framework's CUDA in the image (the framework's "
              "own nvidia-nccl wheel or the distribution's libnccl2), check with `ldd` and "
              "LD_LIBRARY_PATH that the process finds it, and keep one NCCL per image."},
    CauseInfo{"job.launcher", kArch, kLog, kNone, "Job launcher did not start one job",
              "The launcher (mpirun/PRTE, Slurm's PMIx plugin, ssh, MPI's own UCX or TCP "
              "transport) failed to start or connect the job's processes across nodes, or "
              "started each process as a job of its own, so NCCL never formed the job's "
              "communicator.",
              "Make the launcher work across the same nodes first (an MPI hello-world): ssh or "
              "the launcher's ports open between pods, the PMIx plugin Slurm was built with, "
              "MPI restricted to the routed interface (OMPI_MCA_btl_tcp_if_include, "
              "UCX_NET_DEVICES), and nccl-tests built with MPI=1 against the MPI that launches "
              "it."},
    CauseInfo{"ib.sharp", kIb, kLog, kNone, "SHARP in-network aggregation unavailable",
              "The SHARP library or NCCL's SHARP (CollNet) plugin could not use the fabric's "
              "aggregation: the Aggregation Manager refused a tree, group or quota, the port it "
              "chose is not a valid data port, or the switches do not offer SHARP.",
              "Check sharp_am on the subnet manager host and the switches' SHARP support "
              "(ibdiagnet, sharp_hello), pin the HCA port NCCL uses (NCCL_IB_HCA); or run "
              "without CollNet (NCCL_COLLNET_ENABLE=0) on the point-to-point network."},
    CauseInfo{"nccl.topology", kArch, kLog, kNone, "NCCL could not map GPUs and NICs",
              "NCCL's topology detection failed: the PCI tree under /sys is hidden or partial (a "
              "VM, a container without /sys), a topology file does not fit the machine, or the "
              "NCCL release does not know the hardware.",
              "Run NCCL where it sees the host's /sys (or give it the VM's NCCL_TOPO_FILE), and "
              "use an NCCL release that supports the GPUs and NICs (versions.nccl); rerun with "
              "NCCL_DEBUG_SUBSYS=INIT,GRAPH to see the node it stopped at."},
    CauseInfo{"nccl.env_value", kArch, kLog, kNone, "NCCL setting NCCL cannot honour",
              "An NCCL_* variable (environment, /etc/nccl.conf or ~/.nccl.conf) holds a value NCCL "
              "does not accept or cannot honour: an algorithm or protocol that does not exist, "
              "IB forced while IB is disabled, a buffer size outside what NCCL can use. NCCL "
              "fails at init or runs a path nobody chose.",
              "Fix or unset the variable: NCCL_ALGO and NCCL_PROTO take only NCCL's names "
              "(Ring, Tree, NVLS, ...; LL, LL128, Simple), NCCL_NET=IB needs NCCL_IB_DISABLE "
              "unset or 0, and NCCL_BUFFSIZE is best left at its default; check the job's spec, "
              "its image's /etc/nccl.conf and ~/.nccl.conf."},
    CauseInfo{"efa.fabric", kIb, kLog, kNone, "EFA/libfabric RDMA path (AWS OFI plugin)",
              "A request of the aws-ofi-nccl plugin completed with an error: the EFA path "
              "(libfabric, the EFA devices, the security group or the peer) failed. It is not "
              "an InfiniBand verbs fault and the ib.* checks do not judge it.",
              "Check fi_info -p efa in the container, that the EFA devices are passed in "
              "(vpc.amazonaws.com/efa resource), the security group allows all traffic between "
              "the nodes, and that the EFA installer, libfabric and aws-ofi-nccl versions match "
              "the NCCL version."},
    CauseInfo{"host.memory_pressure", kArch, kLog, kNone, "Host memory exhausted",
              "The log shows the host or the container out of memory (OOM kill, memory limit): "
              "buffer registration and the peers' connections fail with it.",
              "Raise the pod's memory limit or lower the job's host memory use (data loader "
              "workers, pinned buffers), and read the node's OOM-killer messages."},
    CauseInfo{"nccl.topo_file", kArch, kLog, kNone, "NCCL topology or graph file",
              "NCCL_TOPO_FILE or NCCL_GRAPH_FILE (environment or /etc/nccl.conf) names an XML "
              "file that does not describe this machine, or cannot be read; NCCL fails while "
              "importing it.",
              "Unset NCCL_GRAPH_FILE (it is for experiments), and give NCCL_TOPO_FILE only the "
              "topology file of this VM type (or none on bare metal); check /etc/nccl.conf and "
              "~/.nccl.conf too."},
    CauseInfo{"net.plugin", kArch, kLog, kNone, "Network plugin not loaded",
              "NCCL could not load the network plugin (libnccl-net*.so, aws-ofi-nccl) and fell "
              "back to TCP sockets: on a fabric that needs the plugin, the job runs slowly or "
              "hangs.",
              "Install the plugin the fabric needs in the image (aws-ofi-nccl for EFA, the HPC-X "
              "plugin for SHARP), put its directory on LD_LIBRARY_PATH or set NCCL_NET_PLUGIN, "
              "and check that its version fits the NCCL version."},
    CauseInfo{"ib.mtu_mismatch", kIb, kLog, kNone, "IB MTU differs between peers",
              "The two ends of a connection print different active MTUs: a port, a switch or a "
              "RoCE interface was set up differently, and large messages fail or stall.",
              "Set one MTU on every port, switch and RoCE netdev of the fabric (ibv_devinfo "
              "active_mtu, ip link mtu), or pin NCCL_IB_MTU."},
    CauseInfo{"nccl.internal", kUnknownClass, kLog, kConsequence, "NCCL internal error",
              "NCCL reported an internal error; the log has no earlier cause.",
              "Rerun with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET and read the first WARN; "
              "report to NCCL if it persists."},
    CauseInfo{"nccl.system", kUnknownClass, kLog, kConsequence, "Unattributed system error",
              "ncclSystemError without a WARN line that names the failing call.",
              "Rerun with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET (and NCCL_IB_DISABLE=1 to "
              "split the families)."},
    CauseInfo{"peer.exited", kUnknownClass, kLog, kConsequence, "Remote process exited",
              "The connection was closed or reset by a peer: another rank crashed, was OOM-"
              "killed or was stopped; the real cause is in that rank's log.",
              "Find the rank that failed first (earliest WARN or exit) and read its log."},
    CauseInfo{"nccl.timeout", kUnknownClass, kLog, kConsequence, "NCCL operation timed out",
              "An NCCL operation or the probe deadline expired without a completion.",
              "Check that every rank reached the collective; then the fabric (ib.fabric) and "
              "the peers' health."},
    CauseInfo{"probe.transport", kIb, kLog, kProbeResult, "IB probe ran over sockets",
              "The IB probe's log shows channels via NET/Socket: NCCL fell back to TCP, so the "
              "IB path was not used.",
              "Read the IB lines of the probe log (NET/IB : No device found, HCA filter) and "
              "the ib.* checks."},
    CauseInfo{"probe.data", kUnknownClass, kLog, kProbeResult, "All-reduce returned wrong data",
              "The probe's all-reduce completed but the result differed from the expected sum: "
              "silent data corruption on a GPU, a link or a buggy NCCL build.",
              "Rerun the probe; if it repeats on one node, drain it and run GPU and link "
              "diagnostics (dcgmi diag, mlxlink BER)."},
    CauseInfo{"ib.bandwidth", kIb, kLog, kProbeResult | kDegraded, "IB bandwidth below expectation",
              "Both probes pass but the IB bus bandwidth is below the configured fraction of "
              "what the ports should carry: degraded link, no GPUDirect, or congestion.",
              "Compare ib.port_rate and ib.peermem, check error counters and switch congestion."},
    CauseInfo{"probe.intra_node", kArch, kLog, kProbeResult, "GPUs of one node among themselves",
              "An all-reduce among the node's own GPUs (one rank per GPU, NCCL's own choice of "
              "P2P, SHM or NET) fails or avoids P2P: NVLink, PCIe peer access (ACS, IOMMU), "
              "/dev/shm or the GPUs break NCCL before any network is involved.",
              "Read which variant passed: with NCCL_P2P_LEVEL=LOC only, fix P2P (disable PCIe ACS "
              "in the BIOS or with setpci, iommu=pt, check nvidia-smi topo -m and NVLink "
              "errors); with NCCL_SHM_DISABLE=1 only, enlarge /dev/shm; neither, check the GPUs "
              "and the driver (dcgmi diag)."},
    CauseInfo{"probe.no_nccl", kUnknownClass, kLog, kProbeResult, "Probe finds no NCCL",
              "The agent found no usable libnccl.so.2 (none on the search path, or one without "
              "the calls the probe needs), so it cannot probe; nothing is known of the node's "
              "NCCL paths.",
              "Give the probes an NCCL: probe.nccl.fromImage (the training image's own), a host "
              "path (probe.nccl_library_paths), or the image built with NCCL; see the runbook "
              "NcclTriageProbesUnavailable (docs/alerts.md)."},
    CauseInfo{"probe.no_cuda", kUnknownClass, kLog, kProbeResult, "Probe finds no CUDA driver",
              "The agent found no libcuda.so.1, or only the toolkit's stub: the NVIDIA container "
              "runtime did not mount the driver into the agent's container.",
              "Run the agent with the NVIDIA runtime (runtimeClassName, NVIDIA_VISIBLE_DEVICES=all "
              "and NVIDIA_DRIVER_CAPABILITIES with compute) or mount the driver's directory and "
              "list it in probe.cuda_library_paths."},
    CauseInfo{"probe.no_gpu", kUnknownClass, kLog, kProbeResult, "Probe sees no GPU",
              "cuInit returned CUDA_ERROR_NO_DEVICE (or no device was counted): the agent's "
              "container sees no GPU, so no probe can run on this node.",
              "Check the agent pod's runtime class (nvidia), that NVIDIA_VISIBLE_DEVICES is all "
              "(not void or empty), and that the device plugin or the runtime exposes "
              "/dev/nvidia*; the agent requests no GPU resource on purpose."},
    // ---------------------------------------------------------------- kernel log
    CauseInfo{"kernel.link_flap", kIb, kKernel, kNone, "HCA port link flaps",
              "The kernel logged an HCA port leaving ACTIVE (mlx5 `Link DOWN`); a port that goes "
              "down and up again within the hour breaks every QP through it, and NCCL reports "
              "completion errors or timeouts on whichever rank used it.",
              "Reseat or replace the cable or optic of the port, check the switch port's log and "
              "mlxlink's error counters; a flapping port is better left down until fixed."},
    CauseInfo{"kernel.cable_module", kIb, kKernel, kNone, "Cable or transceiver events",
              "mlx5 reported a port module event: a cable unplugged, or a module error (bad "
              "EEPROM, over-current, unsupported or overheating transceiver).",
              "Check the named module with mlxlink -m or ethtool -m; replace the cable or optic "
              "that reports errors, and use cables the HCA supports."},
    CauseInfo{"kernel.hca_aer", kIb, kKernel, kNone, "PCIe errors on an HCA",
              "PCIe Advanced Error Reporting saw errors on an HCA's bus id: corrected errors cost "
              "retries and bandwidth, uncorrected ones reset or wedge the card.",
              "Reseat the HCA and its riser, check the slot's link speed and width (lspci -vv), "
              "update the HCA firmware and BIOS; replace the card if errors repeat."},
    CauseInfo{"kernel.gpu_aer", kUnknownClass, kKernel, kNone, "PCIe errors on a GPU",
              "PCIe Advanced Error Reporting saw errors on a GPU's bus id: a GPU or slot fault, "
              "not a network one, though NCCL fails beside it.",
              "Reseat the GPU or baseboard, check the slot's link (lspci -vv) and the GPU's "
              "health (nvidia-smi -q, dcgmi diag); replace the part if errors repeat."},
    CauseInfo{"kernel.xid", kUnknownClass, kKernel, kNone, "NVIDIA Xid error",
              "The NVIDIA driver logged an Xid: a GPU, driver or application event. It is not a "
              "network fault; a job that died beside it died of it.",
              "Read the Xid's meaning: an application Xid asks for a fix in the program; ECC, "
              "NVLink and GSP Xids ask for the GPU to be drained and reset (nvidia-smi -r) or the "
              "node rebooted, and for diagnostics (dcgmi diag -r 3) when they repeat."},
    CauseInfo{"kernel.gpu_off_bus", kUnknownClass, kKernel, kNone, "GPU fallen off the bus",
              "A GPU stopped answering on PCIe (Xid 79 or the driver's `fallen off the bus`): "
              "every process on it fails, and only a reboot brings it back.",
              "Drain and reboot the node; then check power, cooling and seating of the GPU, "
              "update the BIOS and driver, and replace the GPU if it falls off again."},
    // ---------------------------------------------------------------- cross-node (coordinator)
    CauseInfo{"pair.pkey_partition", kIb, kCross, kNone, "No common PKey partition",
              "Two nodes have no partition key in common with full membership: their QPs can "
              "never connect.",
              "Put both nodes' port GUIDs into one partition as full members."},
    CauseInfo{"pair.link_layer", kIb, kCross, kNone, "Link layers differ",
              "One node's HCAs run InfiniBand and the other's Ethernet (RoCE): they cannot "
              "form an RDMA connection.",
              "Pair nodes of one fabric (schedule by a fabric label) or fix the port link-layer "
              "configuration (mlxconfig LINK_TYPE)."},
    CauseInfo{"pair.version_skew", kArch, kCross, kNone, "NCCL or CUDA driver version skew",
              "The two nodes run different NCCL or GPU driver versions.",
              "Roll out one NCCL image and one driver branch across the pool."},
    CauseInfo{"pair.arch_mixed", kArch, kCross, kNone, "Mixed CPU architectures",
              "The two nodes have different CPU architectures.",
              "Keep a job on one architecture (nodeSelector kubernetes.io/arch)."},
};

}  // namespace catalogue_table

// All entries, in documentation order.
constexpr std::span<const CauseInfo> Catalogue() { return catalogue_table::kEntries; }

// The entry for `id`, or nullptr when the id is not in the catalogue (ids read at run time: the
// wire, the configuration, a saved report).
constexpr const CauseInfo* FindCause(std::string_view id) {
  for (const CauseInfo& e : Catalogue()) {
    if (e.id == id) return &e;
  }
  return nullptr;
}

// Whether `id` is in the catalogue and its entry carries `trait` (false for unknown ids).
constexpr bool HasTrait(std::string_view id, CauseTrait trait) {
  const CauseInfo* info = FindCause(id);
  return info != nullptr && info->Has(trait);
}

// Declared and never defined: a constant expression that reaches this call does not compile, and
// the compiler's message names it. See CauseId.
void ThisIdIsNotInTheCatalogue();

// A catalogue id fixed at compile time. Constructing one from an id that is not in the catalogue
// is a build error ("call to non-constexpr function ThisIdIsNotInTheCatalogue"), so code names ids
// through the constants of core/ids.h and a mistyped one never reaches run time. It holds the
// entry's index: info() is a table access, not a search. It converts to the id's text (what
// findings, the wire and the README carry) and compares with ids read at run time; comparing it
// with a string literal does not compile, so an id is never written as a string outside the
// catalogue.
class CauseId {
 public:
  consteval explicit CauseId(std::string_view id) : index_(IndexOf(id)) {}

  constexpr const CauseInfo& info() const { return Catalogue()[index_]; }
  constexpr std::string_view str() const { return info().id; }
  constexpr operator std::string_view() const {
    return str();
  }  // NOLINT(google-explicit-constructor)

  friend constexpr bool operator==(CauseId a, CauseId b) { return a.index_ == b.index_; }
  friend constexpr bool operator==(CauseId a, std::string_view b) { return a.str() == b; }
  template <std::size_t N>
  friend bool operator==(CauseId, const char (&)[N]) = delete;  // use the constant in core/ids.h

 private:
  static consteval uint16_t IndexOf(std::string_view id) {
    for (std::size_t i = 0; i < Catalogue().size(); ++i) {
      if (Catalogue()[i].id == id) return static_cast<uint16_t>(i);
    }
    ThisIdIsNotInTheCatalogue();
    return 0;
  }

  uint16_t index_;
};

// Prints the id's text (test failure messages, logs).
std::ostream& operator<<(std::ostream& out, CauseId id);

// A finding of `id` with the catalogue's class, and its remedy unless it passed (evidence is the
// caller's to add).
Finding MakeFinding(CauseId id, CheckStatus status, std::string message);

namespace catalogue_table {

// The indices of the entries CatalogueIds selects, and how many there are.
template <CauseKind kKind, unsigned kTraits>
consteval auto Pick() {
  std::array<std::size_t, Catalogue().size()> index{};
  std::size_t n = 0;
  for (std::size_t i = 0; i < Catalogue().size(); ++i) {
    const CauseInfo& e = Catalogue()[i];
    if (e.kind == kKind && (e.traits & kTraits) == kTraits) index[n++] = i;
  }
  return std::pair{index, n};
}

}  // namespace catalogue_table

// The ids of kind `kKind` whose entries carry every bit of `kTraits`, in catalogue order, as a
// compile-time array (e.g. the host checks that also judge containers).
template <CauseKind kKind, unsigned kTraits = kNoTrait>
consteval auto CatalogueIds() {
  return []<std::size_t... kI>(std::index_sequence<kI...>) {
    [[maybe_unused]] constexpr auto kPicked = catalogue_table::Pick<kKind, kTraits>();
    return std::array<CauseId, sizeof...(kI)>{CauseId(Catalogue()[kPicked.first[kI]].id)...};
  }
  (std::make_index_sequence<catalogue_table::Pick<kKind, kTraits>().second>{});
}

}  // namespace nccl_triage
