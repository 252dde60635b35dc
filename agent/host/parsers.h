// Parsers for the text the Linux kernel writes under /sys and /proc.
//
// Each parser is a pure function from the text of one file to a value; it never opens a file, so a
// test is one string literal. A parser returns std::nullopt (or an empty result) for text it does
// not understand: empty, truncated, garbage, or a format it has not seen. It never throws, never
// reads past the view, and accepts "\r\n" line ends the same as "\n". Callers turn nullopt into a
// Fact error ("unparseable: '...'"). All functions are thread-safe (no state).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/snapshot.h"

namespace nccl_triage {

// Whitespace (spaces, tabs, \r, \n, NUL) removed at both ends; sysfs values end with "\n" and some
// procfs attributes (proc/self/attr/current) with "\0".
std::string_view TrimText(std::string_view s);

// "0x1a" or "0x0000001a" -> 26. Also accepts a bare hex number ("1a"). Values over 32 bits:
// nullopt.
std::optional<uint32_t> ParseHexU32(std::string_view s);

// Hex without 0x, as in proc/<pid>/status CapEff: "000001ffffffffff".
std::optional<uint64_t> ParseHexU64(std::string_view s);

// A decimal unsigned number with optional surrounding whitespace: counters, sm_sl, enforce.
std::optional<uint64_t> ParseDecimalU64(std::string_view s);
std::optional<int> ParseDecimalInt(std::string_view s);  // allows a leading '-'

// One PKey table entry, "0xffff" -> 0xffff (the top bit is the full-membership bit).
std::optional<uint16_t> ParsePkey(std::string_view s);

// The target of sys/bus/pci/devices/<bdf> ("../../../devices/pci0000:00/0000:00:01.1/0000:07:00.0")
// -> its PCIe path from the root complex down to the function: {"pci0000:00", "0000:00:01.1",
// "0000:07:00.0"}. Anything before the first root complex (an ARM "platform/..." parent) is
// dropped; a nested root complex (an Intel VMD domain, "pci10000:e0") stays in the path. nullopt
// when there is no root complex, a part is neither a root complex nor a bus address, or the path
// does not end at `bdf`.
std::optional<std::vector<std::string>> ParsePciPath(std::string_view link_target,
                                                     std::string_view bdf);

// The rate line of an IB port, "200 Gb/sec (4X HDR)" -> 200.0, "2.5 Gb/sec (1X SDR)" -> 2.5.
std::optional<double> ParseRate(std::string_view s);

// A port state line, "4: ACTIVE" -> {4, "ACTIVE"}; phys_state "5: LinkUp" -> {5, "LinkUp"}.
struct NumberedState {
  int id = 0;
  std::string name;
  friend bool operator==(const NumberedState&, const NumberedState&) = default;
};
std::optional<NumberedState> ParseNumberedState(std::string_view s);

// A GID as sysfs writes it: eight groups of four hex digits separated by ':'. Returns the
// normalised lower-case text, or nullopt when the shape is wrong.
std::optional<std::string> ParseGid(std::string_view s);
bool IsZeroGid(std::string_view gid);

// proc/<pid>/limits: every row, keyed by its name ("Max locked memory"). Values are in the row's
// unit (bytes for memlock). Rows that do not parse are skipped; no parsable row -> empty map.
std::map<std::string, LimitPair> ParseLimits(std::string_view text);
// A single soft/hard value: "unlimited" or a decimal number.
std::optional<Limit> ParseLimitValue(std::string_view s);

// proc/<pid>/status: the value of one "Key:\tvalue" line, trimmed, or nullopt when absent.
std::optional<std::string> ParseStatusField(std::string_view text, std::string_view key);
// CapEff as a bit mask (hex without 0x).
std::optional<uint64_t> ParseStatusCapEff(std::string_view text);
// Seccomp mode: 0 disabled, 1 strict, 2 filter.
std::optional<int> ParseStatusSeccomp(std::string_view text);

// proc/<pid>/mountinfo, one entry per well-formed line (octal escapes such as "\040" decoded).
// Malformed lines are skipped; the caller decides whether an empty result is an error.
std::vector<MountEntry> ParseMountinfo(std::string_view text);

// The "size=" option of a tmpfs mount's super options, in bytes: "rw,size=65536k" -> 67108864.
// Accepts k, m, g, t, p, e (binary) and a bare number of bytes; nullopt when no size is given or
// it is relative ("size=50%": the caller needs MemTotal for that).
std::optional<uint64_t> ParseTmpfsSizeOption(std::string_view super_options);

// proc/cpuinfo: true when any CPU lists the "hypervisor" flag (x86 "flags", arm64 "Features");
// nullopt when neither line is present (a truncated or foreign file).
std::optional<bool> ParseCpuinfoHypervisor(std::string_view text);

// proc/stat: the boot's wall time, `btime <Unix seconds>`; nullopt without that line.
std::optional<uint64_t> ParseProcStatBtime(std::string_view text);

// proc/meminfo MemTotal, converted from kB to bytes.
std::optional<uint64_t> ParseMeminfoTotal(std::string_view text);

// proc/driver/nvidia/version: the driver version from the "NVRM version:" line, e.g. "535.129.03".
std::optional<std::string> ParseNvidiaVersion(std::string_view text);

// proc/driver/nvidia/gpus/<bdf>/information.
struct NvidiaGpuInformation {
  std::string model;         // "NVIDIA A100-SXM4-80GB"
  std::string uuid;          // "GPU-..."
  std::string bus_location;  // "0000:07:00.0"
  std::optional<int> minor;  // the N of /dev/nvidiaN
  friend bool operator==(const NvidiaGpuInformation&, const NvidiaGpuInformation&) = default;
};
std::optional<NvidiaGpuInformation> ParseNvidiaGpuInformation(std::string_view text);

// A symlink target of proc/<pid>/ns/net, "net:[4026531840]" -> the same text when well formed.
std::optional<std::string> ParseNamespaceLink(std::string_view s);

// Whether a proc/<pid>/fd/<n> link target is an RDMA uverbs device or a GPU device node.
bool IsUverbsDevicePath(std::string_view target);     // /dev/infiniband/uverbs<k>
bool IsNvidiaGpuDevicePath(std::string_view target);  // /dev/nvidia<k> (not nvidiactl, nvidia-uvm)

// "unparseable: '<first 40 chars>'" with control characters shown as '?'.
std::string UnparseableError(std::string_view text);

}  // namespace nccl_triage
