// The one catalogue of check ids and cause ids.
//
// Every id that can appear in a finding, a classifier cause, a probe verdict, a metric label, an
// annotation or an alert is listed here once, with its class (where the fix lives), where it is
// produced, the properties other code acts on, a title, why it matters and the remedy. The README's
// tables are checked against this table by tests, so adding an id means adding its documentation.
// The table is append-only in spirit: ids are API.
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
    // ---------------------------------------------------------------- architecture: host checks
    CauseInfo{"versions.nccl", kArch, kHost, kInContainers, "NCCL version",
              "NCCL older than the GPU generation needs, or different NCCL versions between the "
              "ranks of one job (NCCL refuses to initialise across versions).",
              "Use one NCCL build on every node, at least the minimum for the GPU generation "
              "(A100: 2.7.8, H100/H200: 2.18, B200: 2.25); rebuild the image rather than mixing.",
              "the probe result (NCCL version, GPU name)",
              "skip without a probe; fail when NCCL is older than the GPU generation needs (A100 "
              "2.7.8, H100/H200 2.18, B200 2.25)"},
    CauseInfo{"versions.cuda_driver", kArch, kHost, kNone, "GPU driver vs GPU and CUDA",
              "A driver too old for the GPU generation or for the CUDA version NCCL was built "
              "against makes every CUDA call fail before NCCL touches the network.",
              "Install a driver branch that supports the GPU and the CUDA toolkit of the image "
              "(CUDA 12.x needs driver >= 525, CUDA 13 needs >= 580), or use the CUDA forward "
              "compatibility package.",
              "`proc/driver/nvidia/version` (or `sys/module/nvidia/version`), GPU models in "
              "`proc/driver/nvidia/gpus/*/information`",
              "fail when the driver is older than the GPU generation needs (A100 450, H100/H200 "
              "525, B200 570) or `expect.gpu_driver_min`, or GPUs are on PCI with no driver "
              "loaded; skip for an unknown generation"},
    CauseInfo{"versions.ofed_kernel", kArch, kHost, kNone, "OFED vs kernel RDMA stack",
              "Mellanox OFED user space and kernel modules must come from one release; an inbox "
              "kernel driver under an OFED user space (or the reverse) breaks verbs calls.",
              "Reinstall MLNX_OFED/DOCA-OFED for the running kernel (or remove it and use the "
              "inbox rdma-core consistently); reboot so the matching modules load.",
              "`sys/module/{mlx_compat,ib_core,mlx5_core,mlx5_ib,ib_uverbs,rdma_ucm}/version`, "
              "`proc/sys/kernel/osrelease`",
              "pass for one OFED release or the inbox stack (evidence says which); fail for "
              "modules of two OFED releases, or OFED and inbox modules mixed"},
    CauseInfo{"container.host_network", kArch, kHost, kInContainers, "Host network namespace",
              "In a private network namespace NCCL cannot see the host's IB netdevs, RoCE GIDs "
              "and IPoIB addresses; bootstrap and the IB out-of-band socket pick the wrong "
              "interface.",
              "Run the pod with hostNetwork: true (and dnsPolicy: ClusterFirstWithHostNet), or "
              "attach the RDMA interfaces with a secondary network (Multus + SR-IOV/macvlan).",
              "`proc/self/ns/net` vs `proc/1/ns/net`, interfaces in `sys/class/net`, RoCE GID "
              "netdevs",
              "fail in a private namespace that lacks the RoCE netdevs; warn in a private "
              "namespace where IB verbs or attached RoCE netdevs still work"},
    CauseInfo{"container.rdma_devices", kArch, kHost, kInContainers,
              "RDMA devices passed into the container",
              "The host has HCAs but /dev/infiniband/uverbs* is missing in the container, so "
              "ibv_open_device fails and NCCL has no IB transport.",
              "Request the RDMA device plugin resource (e.g. rdma/rdma_shared_device_a: 1 or "
              "nvidia.com/hostdev), or mount /dev/infiniband into a privileged container.",
              "`sys/class/infiniband_verbs/uverbs*` vs `dev/infiniband/`",
              "fail when a uverbs device of the host is missing under `/dev/infiniband`"},
    CauseInfo{"container.ipc_lock", kArch, kHost, kInContainers, "CAP_IPC_LOCK",
              "Without CAP_IPC_LOCK a process cannot lock more memory than RLIMIT_MEMLOCK, so "
              "RDMA memory registration of large buffers fails.",
              "Add securityContext.capabilities.add: [IPC_LOCK] to the container (or run it "
              "privileged).",
              "`CapEff` in `proc/self/status` (bit 14), memlock",
              "pass when memlock is sufficient or the node has no RDMA hardware (the capability "
              "is then not needed) or CAP_IPC_LOCK is present; fail when memlock is limited and "
              "the capability is missing"},
    CauseInfo{"limits.memlock", kArch, kHost, kInContainers, "Locked-memory limit (ulimit -l)",
              "RDMA memory registration pins pages; a small RLIMIT_MEMLOCK (64 KiB or 8 MiB "
              "defaults) makes ibv_reg_mr fail with ENOMEM, so only the IB path breaks.",
              "Set memlock to unlimited: `* - memlock unlimited` in /etc/security/limits.conf, "
              "LimitMEMLOCK=infinity for containerd/docker/kubelet systemd units, or docker "
              "--ulimit memlock=-1:-1.",
              "`Max locked memory` in `proc/self/limits` (soft limit)",
              "fail below unlimited or `expect.memlock_min_bytes` (the message notes when this "
              "process has CAP_IPC_LOCK: the limit is still what every other process inherits); "
              "only warn on a node without RDMA hardware"},
    CauseInfo{"limits.nofile", kArch, kHost, kInContainers, "Open-files limit (ulimit -n)",
              "NCCL opens sockets, shared-memory segments and verbs objects per peer and "
              "channel; a low RLIMIT_NOFILE makes socket() or open() fail with EMFILE at scale.",
              "Raise nofile to at least 65536 (limits.conf, LimitNOFILE= in the runtime's unit, "
              "or the container runtime's default ulimits).",
              "`Max open files` in `proc/self/limits` (soft limit)",
              "fail below `expect.nofile_min` (65536)"},
    CauseInfo{"security.lsm", kArch, kHost, kNone, "Security policy (SELinux/AppArmor/seccomp)",
              "An enforcing SELinux or AppArmor profile, or a restrictive seccomp filter, can "
              "deny the opens, mmaps and ioctls that verbs and CUDA IPC need.",
              "Run the workload with a profile that allows RDMA (container_t with "
              "container_use_devices, AppArmor unconfined or an rdma profile, seccomp "
              "Unconfined or a profile permitting the needed syscalls); check the audit log.",
              "`sys/fs/selinux/enforce`, `proc/self/attr/current`, `Seccomp` in "
              "`proc/self/status`",
              "warn for an enforcing AppArmor profile, SELinux enforcing in a confined domain, or "
              "a seccomp filter (a denial is only provable from the audit log); fail for seccomp "
              "strict mode"},
    CauseInfo{"platform.arch", kArch, kHost, kNone, "CPU architecture and virtualisation",
              "Ranks on different CPU architectures (x86_64 with aarch64) cannot share one NCCL "
              "job, and a virtual machine without SR-IOV/passthrough has no usable RDMA.",
              "Schedule one job on one architecture (nodeSelector kubernetes.io/arch); give VMs "
              "the HCA by PCI passthrough or an SR-IOV VF.",
              "`proc/sys/kernel/arch`, the `hypervisor` CPU flag in `proc/cpuinfo`, RDMA and GPU "
              "PCI functions",
              "fail for a GPU virtual machine without RDMA passthrough; warn for a VM without "
              "GPUs or RDMA, or an architecture NCCL is not built for"},
    CauseInfo{"shm.size", kArch, kHost, kInContainers, "/dev/shm size",
              "NCCL's intra-node SHM transport and proxy buffers live in /dev/shm; container "
              "runtimes default to 64 MiB and fallocate fails with ENOSPC.",
              "Mount an emptyDir with medium: Memory at /dev/shm (Kubernetes) or use docker "
              "--shm-size=1g or --ipc=host.",
              "the `/dev/shm` line of `proc/self/mountinfo` (`size=`; a tmpfs without it is half "
              "of `MemTotal`)",
              "fail below `expect.shm_min_bytes` (1 GiB); warn when `/dev/shm` is not a tmpfs"},
    CauseInfo{"net.socket_ifname", kArch, kHost, kInContainers, "NCCL_SOCKET_IFNAME interface",
              "NCCL_SOCKET_IFNAME names the only interfaces NCCL may use for bootstrap and "
              "sockets; if none exists or is up, NCCL fails in both socket and IB mode.",
              "Set NCCL_SOCKET_IFNAME to an interface present and up on every node (prefix "
              "match: `eth`, exact: `=eth0`), or unset it.",
              "`expect.socket_ifname` with NCCL's syntax (prefixes, `^` exclude, `=` exact), "
              "`sys/class/net/*/operstate`, addresses on the live node",
              "skip unless configured; fail when no interface matches, all matches are down, or "
              "(live) none has an address"},
    // ---------------------------------------------------------------- ib_resource: host checks
    CauseInfo{"ib.hca_present", kIb, kHost, kNone, "HCA present",
              "RDMA-capable PCI devices exist but no /sys/class/infiniband device is registered: "
              "the HCA driver is not bound or failed to load, so NCCL finds no IB device.",
              "Load the HCA driver (modprobe mlx5_ib), check dmesg for firmware or PCI errors, "
              "and reseat or replace the card if it does not enumerate.",
              "`sys/bus/pci/devices/*/{vendor,class}`, `sys/class/infiniband/*`",
              "fail when InfiniBand PCI functions exist but no RDMA device is registered, or "
              "fewer HCAs than `expect.hcas`; warn for RoCE-capable functions without an RDMA "
              "device; skip with no RDMA hardware"},
    CauseInfo{"ib.driver", kIb, kHost, kNone, "RDMA kernel modules",
              "ib_uverbs (and the HCA's IB driver such as mlx5_ib) must be loaded for user-space "
              "verbs; without them ibv_get_device_list is empty.",
              "modprobe ib_uverbs mlx5_ib (or install/repair OFED), and make them load at boot.",
              "`sys/class/infiniband_verbs/uverbs*/ibdev`, "
              "`sys/module/{ib_uverbs,mlx5_ib,ib_core}`",
              "fail when an HCA has no uverbs device (ib_uverbs not loaded)"},
    CauseInfo{"ib.port_state", kIb, kHost, kNone, "Port state",
              "NCCL skips ports that are not ACTIVE with physical state LinkUp; a DOWN or "
              "POLLING port means no cable, a bad cable or optic, or a disabled switch port.",
              "Check the cable and transceiver (ibstat, mlxlink), the switch port, and that the "
              "subnet manager brought the port from INIT to ACTIVE.",
              "`ports/*/state`, `ports/*/phys_state`",
              "fail for any port that is not `4: ACTIVE` with `5: LinkUp`; warn for an HCA that "
              "lists no ports (`ports/` missing or empty), which would otherwise pass silently"},
    CauseInfo{"ib.port_rate", kIb, kHost, kSlowsIb, "Port rate",
              "A port that negotiated a lower width or speed (e.g. 4X to 1X, NDR to HDR) carries "
              "a fraction of the bandwidth and slows every ring through it.",
              "Reseat or replace the cable/optic, check the switch port's speed configuration "
              "and mlxlink for lane errors; compare with the other ports of the node.",
              "`ports/*/rate` of ACTIVE ports, `hca_type`, `link_layer`",
              "fail below `expect.rate_gbps`, or below the fastest port of the same HCA type and "
              "link layer"},
    CauseInfo{"ib.subnet_manager", kIb, kHost, kNone, "Subnet manager",
              "On an InfiniBand link layer a port without a LID or SM LID has not been "
              "configured by a subnet manager and stays in INIT; nothing can be routed to it.",
              "Start or fail over the subnet manager (opensm or the switch/UFM SM) and check it "
              "sees this port (sminfo, ibstat SM lid).",
              "`ports/*/{lid,sm_lid}` of InfiniBand ports with a physical link",
              "fail when lid or sm_lid is 0; skip on RoCE"},
    CauseInfo{"ib.pkey", kIb, kHost, kNone, "Partition key",
              "NCCL_IB_PKEY selects a PKey index; ranks must share a partition with full "
              "membership, or QPs cannot connect (ibv_modify_qp fails or times out).",
              "Add the node's port GUIDs to the partition as full members in the SM's partition "
              "config (partitions.conf / UFM), and set NCCL_IB_PKEY to that key's index.",
              "`ports/*/pkeys/*` of InfiniBand ports",
              "fail when `expect.pkey` is absent or only a limited member; warn when it sits at "
              "different indices, or (unconfigured) index 0 is not a full member"},
    CauseInfo{"ib.gid", kIb, kHost, kInContainers, "RoCE GID",
              "On RoCE, NCCL needs a RoCE v2 GID with an IP address; a missing GID or an "
              "NCCL_IB_GID_INDEX that points to a v1 or empty entry breaks QP setup.",
              "Give the RDMA netdev an IP address (the GID table follows), and leave "
              "NCCL_IB_GID_INDEX unset on NCCL >= 2.21 or set it to a RoCE v2 entry (show_gids).",
              "`ports/*/gids/*`, `gid_attrs/types/*`, `gid_attrs/ndevs/*` of RoCE ports",
              "fail without any RoCE v2 GID, or when `expect.ib_gid_index` is empty or not RoCE "
              "v2; warn for link-local RoCE v2 GIDs only"},
    CauseInfo{"ib.port_errors", kIb, kHost, kSlowsIb, "Port error counters",
              "Rising link_downed, symbol_error, port_rcv_errors or buffer-overrun counters mean "
              "a flapping or lossy link that causes retries, timeouts and IB completion errors.",
              "Replace the cable/optic on the port with rising counters; check the switch side "
              "with ibqueryerrors; clear the counters after the fix and watch them.",
              "`ports/*/counters/{symbol_error,link_downed,port_rcv_errors,...}` now and in "
              "`--previous-snapshot`",
              "fail when a counter rises faster than `expect.port_error_rate_per_hour`; warn for "
              "non-zero counts without a previous snapshot"},
    CauseInfo{"ib.mr_register", kIb, kHost, kNone, "RDMA memory registration",
              "If ibv_reg_mr of an NCCL-sized buffer fails, every IB connection fails: locked "
              "memory limits, exhausted HCA translation tables or a wedged driver.",
              "Check memlock (limits.memlock), free HCA resources (other processes), and reload "
              "the HCA driver if registration fails with plenty of memory.",
              "a real `ibv_reg_mr` of `checks.mr_register_bytes` per HCA (live node only)",
              "fail when a registration fails; skip off the live node"},
    CauseInfo{"ib.verbs_view", kIb, kHost, kNone, "HCAs usable through libibverbs",
              "NCCL sees only the HCAs libibverbs lists and opens, and only the ports it reports "
              "ACTIVE; an HCA the kernel registered that verbs cannot list or open (no user-space "
              "provider, no /dev/infiniband node, a permission) is skipped without a word.",
              "Install the rdma-core provider for the HCA (libmlx5) where NCCL runs, pass "
              "/dev/infiniband/uverbs* through, and compare ibv_devinfo with "
              "/sys/class/infiniband.",
              "libibverbs' device list, `ibv_open_device` and `ibv_query_port` per HCA against "
              "`sys/class/infiniband/*/ports/*/state` (live node only)",
              "fail when an HCA sysfs shows is missing from the verbs list, cannot be opened (the "
              "errno is the evidence) or is ACTIVE in sysfs only; warn when another port state "
              "differs; skip off the live node"},
    CauseInfo{"ib.contention", kIb, kHost, kNone, "Other processes on the HCAs",
              "Other processes holding /dev/infiniband/uverbs* compete for QPs, memory "
              "registrations and bandwidth; a stuck job can hold the HCA's resources.",
              "Identify the listed processes; stop stale jobs before probing or running a new "
              "job.",
              "`proc/*/fd` links to `/dev/infiniband/uverbs*`",
              "warn and name the processes (a running job holds them legitimately)"},
    CauseInfo{"ib.peermem", kIb, kHost, kSlowsIb, "GPUDirect RDMA module",
              "Without nvidia_peermem (or nv_peer_mem, or dma-buf support) NCCL copies through "
              "host memory: it works, but slower.",
              "modprobe nvidia_peermem (shipped with the NVIDIA driver) and load it at boot.",
              "`sys/module/{nvidia_peermem,nv_peer_mem}` with GPUs and HCAs present",
              "warn when neither module is loaded (slower, not broken)"},
    CauseInfo{"ib.rail_topology", kIb, kHost, kSlowsIb, "Rails (HCA and GPU pairing)",
              "NCCL drives each GPU's traffic through the HCA closest to it (a rail); an HCA "
              "without a GPU on its PCIe switch, or a GPU whose closest HCA is down, sends that "
              "GPU's traffic across the CPU interconnect to another rail, at a fraction of the "
              "bandwidth.",
              "Check the rail table (`nccl-triage check`): bring the named HCA's port up (see "
              "ib.port_state), or move the card back into the slot next to its GPU.",
              "the target of `sys/bus/pci/devices/<bdf>` (the PCIe path) and `<bdf>/numa_node` of "
              "each HCA and GPU, the port state and rate of each HCA port",
              "warn when most HCAs share a PCIe switch with a GPU but one HCA or GPU has no "
              "partner on its switch, or when every HCA on a GPU's switch is not ACTIVE/LinkUp "
              "(the GPU lost its rail); skip without GPUs, without HCAs, or when no PCIe path "
              "could be read"},
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
