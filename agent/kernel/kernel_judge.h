// The judgement of kernel events into findings (pure).
//
// One finding per kernel-log id of the catalogue when nothing was seen (pass: "nothing in the
// kernel log"), else one per port, device or GPU that had events, with the lines as evidence:
//   kernel.link_flap    a port that went DOWN: warn, fail at `link_flaps_per_hour` downs within
//                       one hour (a sliding hour over the events' own times; all events count as
//                       one hour when the log has no times)
//   kernel.cable_module a module [error] event fails, a cable unplugged warns
//   kernel.hca_aer      uncorrected AER on an HCA's bus id fails, corrected warns
//   kernel.gpu_aer      the same on a GPU's bus id (AER on other devices is not reported when the
//                       node's PCI devices are known; when they are not, every AER is an HCA's)
//   kernel.xid          per GPU and code: fails when the Xid asks for a reset, reboot or repair
//                       (xid_table.h), warns for application and informational codes
//   kernel.gpu_off_bus  Xid 79 or "fallen off the bus": fails
// An Xid line whose code is not one (kInvalidXid) warns under kernel.xid with the code as written.
// Each id lists at most kMaxFindingsPerId ports, modules, devices or (GPU, code) pairs; the events
// of the others are counted in the evidence of the last one listed, so no log makes a huge report.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
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
};

// HCAs: InfiniBand-class PCI devices, Mellanox network functions and the devices of
// sys/class/infiniband; GPUs: NVIDIA display-class devices and proc/driver/nvidia/gpus.
KernelDevices DevicesFromSnapshot(const NodeSnapshot& snapshot);

struct KernelJudgeOptions {
  int link_flaps_per_hour = 3;  // kernel.link_flaps_per_hour
  std::string source = "dev/kmsg";  // where the lines came from, for the evidence
  // Only events inside [since, until] (Unix ms) count; events without a wall time are kept.
  std::optional<int64_t> since_wall_ms;
  std::optional<int64_t> until_wall_ms;
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
