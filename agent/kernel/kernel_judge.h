// The judgement of kernel events into findings (pure).
//
// One finding per kernel-log id of the catalogue when nothing was seen (pass: "nothing in the
// kernel log"), else one per port, device or GPU that had events, with the lines as evidence:
//   kernel.link_flap    a port that went DOWN: warn, fail at `link_flaps_per_hour` downs within
//                       one hour (a sliding hour over the events' own times; all events count as
//                       one hour when the log has no times); released (pass) once the port is up
//                       and its last down is `flap_stable_ms` old
//   kernel.cable_module a module [error] event fails, a cable unplugged warns
//   kernel.hca_aer      uncorrected AER on an HCA's bus id fails, corrected warns
//   kernel.gpu_aer      the same on a GPU's bus id (AER on other devices is not reported when the
//                       node's PCI devices are known; when they are not, every AER is an HCA's)
//   kernel.xid          per GPU and code: fails when the Xid asks for a reset, reboot or repair
//                       (xid_table.h), warns for application and informational codes
//   kernel.gpu_off_bus  Xid 79 or "fallen off the bus": fails
// An Xid line whose code is not one (kInvalidXid) warns under kernel.xid with the code as written.
// Events of an earlier boot than the node's current one (NotThisBoot) are not counted: every
// finding then says how many were left out and why.
// Each id lists at most kMaxFindingsPerId ports, modules, devices or (GPU, code) pairs; the events
// of the others are counted in the evidence of the last one listed, so no log makes a huge report.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/model.h"
#include "core/snapshot.h"
#include "kernel/kernel_events.h"

namespace nccl_triage::kernel {

// The node's devices that kernel events are joined with, by PCI bus id.
struct KernelDevices {
  bool known = false;              // false: no snapshot (a saved dmesg judged alone)
  std::vector<std::string> hcas;   // "0000:17:00.0"
  std::vector<std::string> gpus;   // "0000:44:00.0"
  // Ports up now, by the key link flaps are counted under: HCA ports ACTIVE/LinkUp ("mlx5_0/1")
  // and network interfaces whose operstate is up ("ens1np0/1").
  std::set<std::string> ports_up;
};

// The node's current boot, for telling kernel-log lines of earlier boots apart.
struct KernelBoot {
  std::string boot_id;                  // proc/sys/kernel/random/boot_id ("" unknown)
  std::optional<int64_t> boot_wall_ms;  // btime of proc/stat, in Unix ms
  std::optional<int64_t> now_wall_ms;   // when the node was read
};

KernelBoot BootFromSnapshot(const NodeSnapshot& snapshot);

// Why `e` is of an earlier boot than `boot`, or nullopt when it is not known to be: the text
// says so (a journal `-- Reboot --` line, timestamps starting again), its journal boot id is not
// this boot's, its wall time is before this boot began, or its time since boot is past this
// boot's uptime. Lines without any of these count (a plain `dmesg` is of this boot).
std::optional<std::string> NotThisBoot(const KernelEvent& e, const KernelBoot& boot);

// HCAs: InfiniBand-class PCI devices, Mellanox network functions and the devices of
// sys/class/infiniband; GPUs: NVIDIA display-class devices and proc/driver/nvidia/gpus.
KernelDevices DevicesFromSnapshot(const NodeSnapshot& snapshot);

struct KernelJudgeOptions {
  int link_flaps_per_hour = 3;  // kernel.link_flaps_per_hour
  std::string source = "dev/kmsg";  // where the lines came from, for the evidence
  // Only events inside [since, until] (Unix ms) count; events without a wall time are kept.
  std::optional<int64_t> since_wall_ms;
  std::optional<int64_t> until_wall_ms;
  KernelBoot boot;  // events of earlier boots are not counted
  // checks.flap_stable_seconds in ms: a port up now whose last down is this old is released
  // (0: never); needs boot.now_wall_ms and the events' wall times.
  int64_t flap_stable_ms = 0;
};

// Whether `e` lies in the options' window.
bool InWindow(const KernelEvent& e, const KernelJudgeOptions& options);

std::vector<Finding> JudgeKernelEvents(const std::vector<KernelEvent>& events,
                                       const KernelDevices& devices,
                                       const KernelJudgeOptions& options);

// The findings when the kernel log could not be read: each kernel-log id skips with `reason`.
std::vector<Finding> KernelLogSkipped(const std::string& reason);

inline constexpr size_t kMaxFindingsPerId = 32;

// Why an event was not counted under a key of KernelCounts.
inline constexpr std::string_view kDroppedKeyLimit = "key_limit";      // kMaxCountedKeys reached
inline constexpr std::string_view kDroppedInvalidXid = "invalid_code";  // an Xid code not in range

// Counters for metrics: port downs per port key ("mlx5_0/1") and Xids per code. Each map holds
// at most kMaxCountedKeys keys (its series on /metrics): an event of a further key, or an Xid
// whose code is not one, is counted in `dropped` under its reason instead.
struct KernelCounts {
  static constexpr size_t kMaxCountedKeys = 256;
  std::map<std::string, int64_t> link_downs;
  std::map<int, int64_t> xids;
  std::map<std::string, int64_t, std::less<>> dropped;  // reason -> events
  void Add(const KernelEvent& e);
};

}  // namespace nccl_triage::kernel
