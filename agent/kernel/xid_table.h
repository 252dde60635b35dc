// NVIDIA Xid codes as data: what each code means and what it asks of an operator.
//
// The facts (code, meaning, whether the application, the GPU or the node is at fault) follow
// NVIDIA's public Xid catalogue (docs.nvidia.com/deploy/xid-errors); the wording is ours. An Xid
// is a GPU or driver event, never a network fault: its findings are filed under the `unknown`
// class (neither the architecture nor the ib_resource family of NCCL failures). Append rows; a
// code that is not here is still reported, with "not in the table" as its meaning.
#pragma once

#include <span>
#include <string_view>

#include "base/reflect.h"

namespace nccl_triage::kernel {

// The largest code an Xid line may carry: NVIDIA's catalogue ends below 200, so a code above 999
// is not an Xid but a damaged or forged line (reported as such, never counted as a code).
inline constexpr int kMaxXidCode = 999;

// What an Xid asks for, in order of gravity.
enum class XidAction {
  kNone,         // informational: record it, watch for repeats
  kApplication,  // the application faulted on a healthy GPU: fix or restart the program
  kResetGpu,     // drain the GPU and reset it (nvidia-smi -r) or reboot the node
  kRebootNode,   // the GPU is unreachable: reboot, then check power, cooling and seating
  kHardware,     // repeated or unrecoverable hardware error: run diagnostics, replace the part
};
constexpr auto NamesOf(Type<XidAction>) {
  return std::array{Named(XidAction::kNone, "none"), Named(XidAction::kApplication, "application"),
                    Named(XidAction::kResetGpu, "reset_gpu"),
                    Named(XidAction::kRebootNode, "reboot_node"),
                    Named(XidAction::kHardware, "hardware")};
}

struct XidInfo {
  int code;
  std::string_view meaning;
  XidAction action;
};

// All rows, by code.
std::span<const XidInfo> XidTable();

// The row of `code`, or nullptr.
const XidInfo* FindXid(int code);

// Whether the action makes a finding fail (a GPU or node needs an operator) rather than warn.
constexpr bool IsNodeFault(XidAction action) {
  return action == XidAction::kResetGpu || action == XidAction::kRebootNode ||
         action == XidAction::kHardware;
}

}  // namespace nccl_triage::kernel
