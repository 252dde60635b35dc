// Known kernel messages, turned from records into typed events (pure).
//
// The messages are a table of rules like the NCCL log classifier's (a literal that must occur,
// then an RE2 pattern): mlx5 port state changes (`mlx5_core <bdf> mlx5_N: Port: P Link DOWN`)
// and Ethernet-mode link changes, mlx5 port module (cable/transceiver) events, PCIe AER
// `PCIe Bus Error: severity=...` lines (the device named at the start of the line), NVIDIA Xid
// lines and "fallen off the bus". RE2 matches in time linear in the line and never recurses, so
// no line can exhaust the stack; each capture keeps at most 256 bytes, numbers are read whole or
// not at all (an Xid code outside 0..kMaxXidCode is kInvalidXid, never another code). Compiled
// patterns are built once and shared read-only.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/reflect.h"
#include "kernel/kernel_log.h"

namespace nccl_triage::kernel {

enum class EventKind {
  kPortState,  // an HCA port changed state
  kModule,     // a cable/transceiver (port module) event
  kAer,        // a PCIe Advanced Error Reporting error on a device
  kXid,        // an NVIDIA Xid
  kGpuOffBus,  // "fallen off the bus" without an Xid
};
constexpr auto NamesOf(Type<EventKind>) {
  return std::array{Named(EventKind::kPortState, "port_state"), Named(EventKind::kModule, "module"),
                    Named(EventKind::kAer, "aer"), Named(EventKind::kXid, "xid"),
                    Named(EventKind::kGpuOffBus, "gpu_off_bus")};
}

// An Xid line whose code is not a decimal in 0..kMaxXidCode (xid_table.h) has this code; the text
// as written is kept, up to this many bytes.
inline constexpr int kInvalidXid = -1;
inline constexpr size_t kMaxXidText = 32;

struct KernelEvent {
  EventKind kind = EventKind::kPortState;
  std::string rule;    // the rule's name
  std::string device;  // port state: the RDMA device or netdev ("mlx5_5", "ens1np0")
  std::string pci;     // the PCI bus id the line names ("0000:ab:00.0"; Xid: "0000:44:00")
  int port = 0;        // port state: the port number (1 for a netdev); module: the module number
  std::string state;   // "DOWN", "ACTIVE", "Cable unplugged", "Corrected", ...; an invalid
                       // Xid: its code as the line wrote it (at most kMaxXidText bytes)
  bool down = false;   // port state: the port left ACTIVE/up
  bool error = false;  // module: an [error] event; AER: uncorrected
  int xid = 0;         // Xid code (0..kMaxXidCode); kInvalidXid when the line's is not one
  std::string detail;  // Xid: the driver's text after the code
  std::optional<int64_t> mono_usec;
  std::optional<int64_t> wall_ms;
  std::string line;  // the record, as evidence
  std::string boot_id;       // the record's (kernel_log.h)
  std::string earlier_boot;  // the record's: why it is known to be of an earlier boot

  // "mlx5_5/1": the key link flaps are counted under.
  std::string PortKey() const { return device + "/" + std::to_string(port); }
};

// A message rule: which event a line is, when it contains `needle` and matches `regex` (RE2).
struct KernelRule {
  std::string_view name;
  EventKind kind;
  std::string_view needle;
  std::string_view regex;
};

// The rules, in matching order (the first that matches names the event).
std::span<const KernelRule> KernelRules();

// The event a record is, or nullopt for a message none of the rules knows.
std::optional<KernelEvent> EventFromRecord(const KernelRecord& record);

// Every known event among `records`, in order.
std::vector<KernelEvent> EventsFromRecords(std::span<const KernelRecord> records);

}  // namespace nccl_triage::kernel
