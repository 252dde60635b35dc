// NodeSnapshot: everything nccl-triage reads about one node, gathered once, as plain values.
//
// host/ fills it from a root directory (and, when the root is "/", from libibverbs); checks/ judge
// it without touching the OS; it round-trips through JSON (--dump-snapshot / --from-snapshot).
// Each fact read from a file is a Fact<T>: the parsed value when the read and parse succeeded,
// the path it came from (relative to the root) and, when it failed, why. A failed read is evidence
// for a `skip` finding, never an exception.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/reflect.h"

namespace nccl_triage {

template <typename T>
struct Fact {
  std::optional<T> value;
  std::string source;  // path relative to the root, or "ibverbs:<call>", "live:<what>"
  std::string
      error;  // empty when value is set: "missing", "unreadable: EACCES", "unparseable: 'x'"

  bool ok() const { return value.has_value(); }
  friend bool operator==(const Fact&, const Fact&) = default;
};
template <typename T>
constexpr auto FieldsOf(Type<Fact<T>>) {
  return std::tuple{Field("value", &Fact<T>::value), Field("source", &Fact<T>::source),
                    Field("error", &Fact<T>::error)};
}

// A resource limit as /proc/<pid>/limits writes it; unlimited is its own state.
struct Limit {
  bool unlimited = false;
  uint64_t value = 0;  // bytes for memlock, count for nofile; meaningless when unlimited
  friend bool operator==(const Limit&, const Limit&) = default;
};
constexpr auto FieldsOf(Type<Limit>) {
  return std::tuple{Field("unlimited", &Limit::unlimited), Field("value", &Limit::value)};
}

struct LimitPair {
  Limit soft;
  Limit hard;
  friend bool operator==(const LimitPair&, const LimitPair&) = default;
};
constexpr auto FieldsOf(Type<LimitPair>) {
  return std::tuple{Field("soft", &LimitPair::soft), Field("hard", &LimitPair::hard)};
}

struct PciDevice {
  std::string bdf;      // "0000:17:00.0"
  uint16_t vendor = 0;  // 0x15b3 Mellanox
  uint16_t device = 0;
  uint32_t class_code = 0;  // 0x020700 InfiniBand controller, 0x020000 Ethernet, 0x030200 3D ctrl
  // Where it sits in the PCIe tree, from the target of sys/bus/pci/devices/<bdf>: the root
  // complex first, then each bridge down to the function itself ("pci0000:00", "0000:00:01.1",
  // "0000:01:00.0", ..., "0000:07:00.0"). Two functions under one PCIe switch share a prefix
  // longer than the root complex and its root port. Empty when the link could not be read.
  std::vector<std::string> path;
  std::string path_error;  // why `path` is empty: "not a link", "unparseable: '...'", "missing"
  Fact<int> numa_node;     // <device>/numa_node; the kernel writes -1 when the platform has none
  friend bool operator==(const PciDevice&, const PciDevice&) = default;
};
constexpr auto FieldsOf(Type<PciDevice>) {
  return std::tuple{Field("bdf", &PciDevice::bdf), Field("vendor", &PciDevice::vendor),
                    Field("device", &PciDevice::device), Field("class", &PciDevice::class_code),
                    Field("path", &PciDevice::path), Field("path_error", &PciDevice::path_error),
                    Field("numa_node", &PciDevice::numa_node)};
}

struct IbGid {
  int index = 0;
  std::string gid;   // "fe80:0000:0000:0000:0c42:a103:0065:8a2e"
  std::string type;  // gid_attrs/types: "IB/RoCE v1", "RoCE v2", or empty when unreadable
  std::string ndev;  // gid_attrs/ndevs: netdev name, empty for IB
  friend bool operator==(const IbGid&, const IbGid&) = default;
};
constexpr auto FieldsOf(Type<IbGid>) {
  return std::tuple{Field("index", &IbGid::index), Field("gid", &IbGid::gid),
                    Field("type", &IbGid::type), Field("ndev", &IbGid::ndev)};
}

struct IbPort {
  int num = 0;
  Fact<std::string> state;       // "4: ACTIVE" as written by the kernel
  Fact<std::string> phys_state;  // "5: LinkUp"
  Fact<double> rate_gbps;        // parsed from "200 Gb/sec (4X HDR)"
  Fact<std::string> rate_text;   // the raw rate line
  Fact<uint32_t> lid;            // parsed from "0x1a"
  Fact<uint32_t> sm_lid;
  Fact<uint32_t> sm_sl;
  Fact<std::string> link_layer;  // "InfiniBand" or "Ethernet"
  Fact<uint32_t> cap_mask;
  std::vector<uint16_t> pkeys;    // non-zero entries of pkeys/<i> in index order (index = position)
  std::vector<int> pkey_indices;  // the table index of each entry in `pkeys`
  std::string pkeys_error;        // non-empty when the table could not be read
  std::vector<IbGid> gids;        // non-zero GIDs only
  std::map<std::string, uint64_t> counters;     // counters/<name>
  std::map<std::string, uint64_t> hw_counters;  // hw_counters/<name>
  std::string counters_error;  // first counter that could not be read or parsed, empty if none
  friend bool operator==(const IbPort&, const IbPort&) = default;
};
constexpr auto FieldsOf(Type<IbPort>) {
  return std::tuple{Field("num", &IbPort::num), Field("state", &IbPort::state),
                    Field("phys_state", &IbPort::phys_state),
                    Field("rate_gbps", &IbPort::rate_gbps), Field("rate_text", &IbPort::rate_text),
                    Field("lid", &IbPort::lid), Field("sm_lid", &IbPort::sm_lid),
                    Field("sm_sl", &IbPort::sm_sl), Field("link_layer", &IbPort::link_layer),
                    Field("cap_mask", &IbPort::cap_mask), Field("pkeys", &IbPort::pkeys),
                    Field("pkey_indices", &IbPort::pkey_indices),
                    Field("pkeys_error", &IbPort::pkeys_error), Field("gids", &IbPort::gids),
                    Field("counters", &IbPort::counters),
                    Field("hw_counters", &IbPort::hw_counters),
                    Field("counters_error", &IbPort::counters_error)};
}

struct IbDevice {
  std::string name;             // "mlx5_0"
  Fact<std::string> node_type;  // "1: CA"
  Fact<std::string> node_guid;
  Fact<std::string> fw_ver;
  Fact<std::string> hca_type;  // "MT4123"
  Fact<std::string> board_id;
  std::string pci_bdf;  // resolved from the `device` symlink, empty when unknown
  std::vector<IbPort> ports;
  friend bool operator==(const IbDevice&, const IbDevice&) = default;
};
constexpr auto FieldsOf(Type<IbDevice>) {
  return std::tuple{Field("name", &IbDevice::name), Field("node_type", &IbDevice::node_type),
                    Field("node_guid", &IbDevice::node_guid), Field("fw_ver", &IbDevice::fw_ver),
                    Field("hca_type", &IbDevice::hca_type), Field("board_id", &IbDevice::board_id),
                    Field("pci_bdf", &IbDevice::pci_bdf), Field("ports", &IbDevice::ports)};
}

struct UverbsDevice {
  std::string name;   // "uverbs0"
  std::string ibdev;  // "mlx5_0"
  friend bool operator==(const UverbsDevice&, const UverbsDevice&) = default;
};
constexpr auto FieldsOf(Type<UverbsDevice>) {
  return std::tuple{Field("name", &UverbsDevice::name), Field("ibdev", &UverbsDevice::ibdev)};
}

struct NetInterface {
  std::string name;
  Fact<std::string> operstate;  // "up", "down", "unknown"
  Fact<int> type;               // ARPHRD: 1 ether, 32 infiniband, 772 loopback
  Fact<int> mtu;
  std::vector<std::string> addresses;  // live only (getifaddrs), "10.0.0.1/24"
  friend bool operator==(const NetInterface&, const NetInterface&) = default;
};
constexpr auto FieldsOf(Type<NetInterface>) {
  return std::tuple{Field("name", &NetInterface::name),
                    Field("operstate", &NetInterface::operstate),
                    Field("type", &NetInterface::type), Field("mtu", &NetInterface::mtu),
                    Field("addresses", &NetInterface::addresses)};
}

struct KernelModule {
  std::string name;
  bool loaded = false;  // sys/module/<name> exists
  std::string version;  // sys/module/<name>/version, empty when absent
  std::string source;
  friend bool operator==(const KernelModule&, const KernelModule&) = default;
};
constexpr auto FieldsOf(Type<KernelModule>) {
  return std::tuple{Field("name", &KernelModule::name), Field("loaded", &KernelModule::loaded),
                    Field("version", &KernelModule::version),
                    Field("source", &KernelModule::source)};
}

struct MountEntry {
  std::string mount_point;
  std::string fs_type;
  std::string source;
  std::string super_options;  // "rw,size=65536k,inode64"
  friend bool operator==(const MountEntry&, const MountEntry&) = default;
};
constexpr auto FieldsOf(Type<MountEntry>) {
  return std::tuple{Field("mount_point", &MountEntry::mount_point),
                    Field("fs_type", &MountEntry::fs_type), Field("source", &MountEntry::source),
                    Field("super_options", &MountEntry::super_options)};
}

struct GpuInfo {
  std::string bdf;
  std::string model;  // "NVIDIA A100-SXM4-80GB"
  std::string source;
  int minor = -1;    // the N of /dev/nvidiaN (its "Device Minor"), -1 when unknown
  std::string uuid;  // "GPU-6f4d3b8e-..." (its "GPU UUID"), what the device plugin assigns by
  friend bool operator==(const GpuInfo&, const GpuInfo&) = default;
};
constexpr auto FieldsOf(Type<GpuInfo>) {
  return std::tuple{Field("bdf", &GpuInfo::bdf), Field("model", &GpuInfo::model),
                    Field("source", &GpuInfo::source), Field("minor", &GpuInfo::minor),
                    Field("uuid", &GpuInfo::uuid)};
}

// A GPU device the kubelet assigned to a container (its pod-resources List, an nvidia.com/*
// resource): the GPU belongs to that container whether or not a process has opened it yet.
struct GpuAllocation {
  std::string owner;      // "namespace/pod/container"
  std::string resource;   // "nvidia.com/gpu", "nvidia.com/gpu.shared", "nvidia.com/mig-1g.10gb"
  std::string device_id;  // "GPU-<uuid>", "GPU-<uuid>::2" (a time-sliced replica), "MIG-...", "3"
  friend bool operator==(const GpuAllocation&, const GpuAllocation&) = default;
};
constexpr auto FieldsOf(Type<GpuAllocation>) {
  return std::tuple{Field("owner", &GpuAllocation::owner),
                    Field("resource", &GpuAllocation::resource),
                    Field("device_id", &GpuAllocation::device_id)};
}

// A process (other than ours) holding a device node, found through /proc/<pid>/fd.
struct DeviceHolder {
  int pid = 0;
  std::string comm;
  std::string device;  // "/dev/infiniband/uverbs0", "/dev/nvidia0"
  // GPU holders: /proc/<pid>/maps maps libcuda, i.e. the process has a CUDA context (a workload,
  // not a monitor that only opens the device file).
  bool cuda_context = false;
  friend bool operator==(const DeviceHolder&, const DeviceHolder&) = default;
};
constexpr auto FieldsOf(Type<DeviceHolder>) {
  return std::tuple{Field("pid", &DeviceHolder::pid), Field("comm", &DeviceHolder::comm),
                    Field("device", &DeviceHolder::device),
                    Field("cuda_context", &DeviceHolder::cuda_context)};
}

// Live-only: a real ibv_reg_mr of `bytes` on one HCA (root "/" only).
struct MrRegistration {
  std::string device;
  uint64_t bytes = 0;
  bool ok = false;
  std::string error;  // "ibv_reg_mr: Cannot allocate memory (errno 12)"
  friend bool operator==(const MrRegistration&, const MrRegistration&) = default;
};
constexpr auto FieldsOf(Type<MrRegistration>) {
  return std::tuple{Field("device", &MrRegistration::device),
                    Field("bytes", &MrRegistration::bytes), Field("ok", &MrRegistration::ok),
                    Field("error", &MrRegistration::error)};
}

// Live-only: what libibverbs says about a port (cross-checks sysfs).
struct VerbsPort {
  std::string device;
  int port = 0;
  std::string state;  // "ACTIVE", "DOWN", ...
  int active_mtu = 0;
  int gid_table_len = 0;
  int pkey_table_len = 0;
  std::string link_layer;
  friend bool operator==(const VerbsPort&, const VerbsPort&) = default;
};
constexpr auto FieldsOf(Type<VerbsPort>) {
  return std::tuple{Field("device", &VerbsPort::device), Field("port", &VerbsPort::port),
                    Field("state", &VerbsPort::state), Field("active_mtu", &VerbsPort::active_mtu),
                    Field("gid_table_len", &VerbsPort::gid_table_len),
                    Field("pkey_table_len", &VerbsPort::pkey_table_len),
                    Field("link_layer", &VerbsPort::link_layer)};
}

// Live-only: an HCA libibverbs lists but could not open or query.
struct VerbsDeviceError {
  std::string device;
  std::string error;  // "ibv_open_device(mlx5_1): Permission denied (errno 13)"
  friend bool operator==(const VerbsDeviceError&, const VerbsDeviceError&) = default;
};
constexpr auto FieldsOf(Type<VerbsDeviceError>) {
  return std::tuple{Field("device", &VerbsDeviceError::device),
                    Field("error", &VerbsDeviceError::error)};
}

struct LiveFacts {
  bool gathered = false;    // true only when the root was "/" and live gathering ran
  std::string verbs_error;  // "libibverbs: no devices", "ibv_open_device(mlx5_0): EACCES", ...
  std::vector<std::string> verbs_devices;
  std::vector<VerbsPort> verbs_ports;
  std::vector<VerbsDeviceError> verbs_device_errors;  // listed devices whose query failed
  std::vector<MrRegistration> mr_registrations;
  friend bool operator==(const LiveFacts&, const LiveFacts&) = default;
};
constexpr auto FieldsOf(Type<LiveFacts>) {
  return std::tuple{Field("gathered", &LiveFacts::gathered),
                    Field("verbs_error", &LiveFacts::verbs_error),
                    Field("verbs_devices", &LiveFacts::verbs_devices),
                    Field("verbs_ports", &LiveFacts::verbs_ports),
                    Field("verbs_device_errors", &LiveFacts::verbs_device_errors),
                    Field("mr_registrations", &LiveFacts::mr_registrations)};
}

struct NodeSnapshot {
  std::string schema = "nccl-triage/node-snapshot/v1";
  std::string node;  // hostname (proc/sys/kernel/hostname), or the --node override
  std::string root;  // the root it was read from
  int64_t taken_at_unix_ms = 0;
  int self_pid = 0;  // our own pid (excluded from holders); 0 for fixtures

  Fact<std::string> kernel_release;  // proc/sys/kernel/osrelease
  Fact<std::string> arch;            // proc/sys/kernel/arch
  Fact<bool> hypervisor;             // "hypervisor" in proc/cpuinfo flags
  Fact<uint64_t> mem_total_bytes;    // proc/meminfo MemTotal (tmpfs default size is half)
  // Which boot this is: proc/sys/kernel/random/boot_id ("6f1c...-..."), and the boot's wall time
  // (`btime` of proc/stat, Unix seconds). The agent keys what it remembers of ports by the boot,
  // and kernel-log lines from before it are not counted.
  Fact<std::string> boot_id;
  Fact<uint64_t> boot_time_unix_s;

  std::vector<PciDevice> pci_devices;  // only network (0x02xxxx) and display (0x03xxxx) class
  std::string pci_error;

  bool infiniband_class_present = false;  // sys/class/infiniband exists
  std::vector<IbDevice> ib_devices;
  bool uverbs_class_present = false;  // sys/class/infiniband_verbs exists
  std::vector<UverbsDevice> uverbs;
  bool dev_infiniband_present = false;      // dev/infiniband exists
  std::vector<std::string> dev_infiniband;  // entry names: "uverbs0", "rdma_cm", "umad0"

  std::vector<NetInterface> interfaces;
  std::vector<KernelModule> modules;  // the modules of interest, loaded or not

  Fact<LimitPair> memlock;             // proc/self/limits "Max locked memory"
  Fact<LimitPair> nofile;              // proc/self/limits "Max open files"
  Fact<uint64_t> cap_eff;              // proc/self/status CapEff
  Fact<int> seccomp_mode;              // proc/self/status Seccomp (0 off, 1 strict, 2 filter)
  std::vector<MountEntry> mounts;      // proc/self/mountinfo (only /dev/shm and /dev/infiniband)
  std::string mounts_error;            // non-empty when proc/self/mountinfo could not be read
  Fact<std::string> self_netns;        // proc/self/ns/net link target "net:[4026531840]"
  Fact<std::string> init_netns;        // proc/1/ns/net
  Fact<int> selinux_enforce;           // sys/fs/selinux/enforce (missing = SELinux off)
  Fact<std::string> apparmor_profile;  // proc/self/attr/current

  Fact<std::string> nvidia_driver_version;  // from proc/driver/nvidia/version
  std::vector<GpuInfo> gpus;                // proc/driver/nvidia/gpus/<bdf>/information

  std::vector<DeviceHolder> uverbs_holders;  // other processes holding /dev/infiniband/uverbs*
  std::vector<DeviceHolder> gpu_holders;     // other processes holding /dev/nvidia[0-9]*
  std::string proc_scan_error;
  // The kubelet's GPU assignments, read by the agent from its pod-resources socket; nullopt when
  // not read (no socket, the CLI, or the read failed: gpu_allocations_error says why).
  std::optional<std::vector<GpuAllocation>> gpu_allocations;
  std::string gpu_allocations_error;

  LiveFacts live;

  // Every file the gatherer opened, with a count (tests assert each is read at most once).
  std::map<std::string, int> files_read;
  friend bool operator==(const NodeSnapshot&, const NodeSnapshot&) = default;
};
constexpr auto FieldsOf(Type<NodeSnapshot>) {
  return std::tuple{Field("schema", &NodeSnapshot::schema), Field("node", &NodeSnapshot::node),
                    Field("root", &NodeSnapshot::root),
                    Field("taken_at_unix_ms", &NodeSnapshot::taken_at_unix_ms),
                    Field("self_pid", &NodeSnapshot::self_pid),
                    Field("kernel_release", &NodeSnapshot::kernel_release),
                    Field("arch", &NodeSnapshot::arch),
                    Field("hypervisor", &NodeSnapshot::hypervisor),
                    Field("mem_total_bytes", &NodeSnapshot::mem_total_bytes),
                    Field("boot_id", &NodeSnapshot::boot_id),
                    Field("boot_time_unix_s", &NodeSnapshot::boot_time_unix_s),
                    Field("pci_devices", &NodeSnapshot::pci_devices),
                    Field("pci_error", &NodeSnapshot::pci_error),
                    Field("infiniband_class_present", &NodeSnapshot::infiniband_class_present),
                    Field("ib_devices", &NodeSnapshot::ib_devices),
                    Field("uverbs_class_present", &NodeSnapshot::uverbs_class_present),
                    Field("uverbs", &NodeSnapshot::uverbs),
                    Field("dev_infiniband_present", &NodeSnapshot::dev_infiniband_present),
                    Field("dev_infiniband", &NodeSnapshot::dev_infiniband),
                    Field("interfaces", &NodeSnapshot::interfaces),
                    Field("modules", &NodeSnapshot::modules),
                    Field("memlock", &NodeSnapshot::memlock),
                    Field("nofile", &NodeSnapshot::nofile),
                    Field("cap_eff", &NodeSnapshot::cap_eff),
                    Field("seccomp_mode", &NodeSnapshot::seccomp_mode),
                    Field("mounts", &NodeSnapshot::mounts),
                    Field("mounts_error", &NodeSnapshot::mounts_error),
                    Field("self_netns", &NodeSnapshot::self_netns),
                    Field("init_netns", &NodeSnapshot::init_netns),
                    Field("selinux_enforce", &NodeSnapshot::selinux_enforce),
                    Field("apparmor_profile", &NodeSnapshot::apparmor_profile),
                    Field("nvidia_driver_version", &NodeSnapshot::nvidia_driver_version),
                    Field("gpus", &NodeSnapshot::gpus),
                    Field("uverbs_holders", &NodeSnapshot::uverbs_holders),
                    Field("gpu_holders", &NodeSnapshot::gpu_holders),
                    Field("proc_scan_error", &NodeSnapshot::proc_scan_error),
                    Field("gpu_allocations", &NodeSnapshot::gpu_allocations),
                    Field("gpu_allocations_error", &NodeSnapshot::gpu_allocations_error),
                    Field("live", &NodeSnapshot::live),
                    Field("files_read", &NodeSnapshot::files_read)};
}

// Port `num` of the HCA named `dev` in `s`, or null.
inline const IbPort* FindPort(const NodeSnapshot& s, const std::string& dev, int num) {
  for (const auto& d : s.ib_devices) {
    if (d.name != dev) continue;
    for (const auto& p : d.ports) {
      if (p.num == num) return &p;
    }
  }
  return nullptr;
}

}  // namespace nccl_triage
