#include "kernel/xid_table.h"

#include <algorithm>
#include <array>

namespace nccl_triage::kernel {
namespace {

constexpr XidAction kNone = XidAction::kNone;
constexpr XidAction kApp = XidAction::kApplication;
constexpr XidAction kReset = XidAction::kResetGpu;
constexpr XidAction kReboot = XidAction::kRebootNode;
constexpr XidAction kHw = XidAction::kHardware;

// Sorted by code (checked below).
constexpr std::array kXids = {
    XidInfo{13, "graphics engine exception (often an out-of-range access by the program)", kApp},
    XidInfo{31, "GPU memory page fault (an illegal address in the program or the driver)", kApp},
    XidInfo{32, "invalid or corrupted push buffer stream (driver, PCIe or memory corruption)",
            kReset},
    XidInfo{38, "driver firmware error", kReset},
    XidInfo{43, "GPU stopped processing: a channel was reset after a program fault", kApp},
    XidInfo{45, "preemptive cleanup after earlier errors (the process was ended)", kNone},
    XidInfo{48, "double-bit ECC error in GPU memory", kReset},
    XidInfo{61, "internal micro-controller breakpoint or warning", kReset},
    XidInfo{62, "internal micro-controller halt", kReset},
    XidInfo{63, "ECC page retirement or row remapping recorded", kNone},
    XidInfo{64, "ECC page retirement or row remapping failed", kHw},
    XidInfo{69, "graphics engine class error", kApp},
    XidInfo{74, "NVLink error", kReset},
    XidInfo{79, "GPU has fallen off the bus", kReboot},
    XidInfo{92, "high single-bit ECC error rate", kNone},
    XidInfo{94, "contained ECC error (only the programs using the memory were affected)", kReset},
    XidInfo{95, "uncontained ECC error (every program on the GPU was affected)", kReset},
    XidInfo{109, "context switch timeout", kApp},
    XidInfo{119, "GSP RPC timeout", kReset},
    XidInfo{120, "GSP error", kReset},
};

constexpr bool SortedAndUnique() {
  for (size_t i = 1; i < kXids.size(); ++i) {
    if (kXids[i - 1].code >= kXids[i].code) return false;
  }
  return true;
}
static_assert(SortedAndUnique(), "the Xid table is sorted by code, one row per code");

}  // namespace

std::span<const XidInfo> XidTable() { return kXids; }

const XidInfo* FindXid(int code) {
  auto it = std::lower_bound(kXids.begin(), kXids.end(), code,
                             [](const XidInfo& row, int c) { return row.code < c; });
  return it != kXids.end() && it->code == code ? &*it : nullptr;
}

}  // namespace nccl_triage::kernel
