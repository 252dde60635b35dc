// Kernel log records and their parsers: text in, records out (no I/O).
//
// Two sources produce records. /dev/kmsg gives one record per read(): a header
// `prio,seq,usec,flags[,...];message` followed by optional continuation lines ` KEY=value` (the
// device dictionary, e.g. ` SUBSYSTEM=pci`, ` DEVICE=+pci:0000:17:00.0`). A saved `dmesg` gives
// text lines in one of the formats dmesg and journald print; a line that starts with blanks and no
// timestamp continues the record before it (the NVIDIA driver prints one message over several
// indented lines). Every parser accepts garbage: a line it cannot read is kept as a record without
// times, never dropped and never an exception.
//
// Any process can write the kernel log (a process name in an Xid line, /dev/kmsg itself for
// root), so records are bounded and clean: a message keeps at most kMaxKernelMessageBytes (cut on
// a character boundary, then the marker and how many bytes were left out), the evidence line 400,
// a kmsg dictionary 32 entries, and every string is valid UTF-8 (base/utf8.h: a byte that is not
// becomes U+FFFD).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace nccl_triage::kernel {

// The longest message a record keeps (the kernel's own records are at most about 1 KiB; the
// NVIDIA driver's multi-line messages joined stay well under this).
inline constexpr size_t kMaxKernelMessageBytes = 4096;
// What follows a cut message: `<first 4096 bytes> [cut: N bytes]`.
inline constexpr std::string_view kKernelMessageCutMarker = " [cut: ";

struct KernelRecord {
  int level = -1;       // syslog level 0 (emerg) .. 7 (debug); -1 unknown
  uint64_t seq = 0;     // /dev/kmsg sequence number (0 for dmesg text)
  bool has_seq = false;
  std::optional<int64_t> mono_usec;  // time since boot as the kernel stamps it
  std::optional<int64_t> wall_ms;    // Unix ms, when the source says it (dmesg -T, iso, kmsg)
  std::string message;               // continuation lines of dmesg text joined with one space
  std::vector<std::pair<std::string, std::string>> dict;  // kmsg ` KEY=value` lines
  std::string line;  // the record as read, for evidence (at most one line, trimmed)
  // Which boot logged it, when the source says: the id of journalctl's `-- Boot <id> --` line
  // above it (32 hex digits), or the boot id the kmsg follower read.
  std::string boot_id;
  // Non-empty when the text itself shows the record is from an earlier boot than its last one,
  // and why: a journalctl `-- Reboot --` line below it, or kernel timestamps that start again
  // from zero later in the text.
  std::string earlier_boot;

  friend bool operator==(const KernelRecord&, const KernelRecord&) = default;
};

// Parses one /dev/kmsg record (the bytes of one read(), trailing newline optional). Returns
// nullopt when the header is not `prio,seq,usec,flags;`. Escapes the kernel writes for
// unprintable bytes (`\x0a`) are decoded: a `\x0a` inside the message becomes a space, so a
// multi-line printk reads as one message, as in dmesg text.
std::optional<KernelRecord> ParseKmsgRecord(std::string_view record);

// Parses saved dmesg text: `[  123.456789] msg` (dmesg), `<6>[  123.456789] msg` (dmesg -r),
// `[Fri Aug 29 20:09:52 2025] msg` (dmesg -T, read as UTC), `2025-08-29T20:09:52,123456+00:00 msg`
// (dmesg --time-format iso), `Feb 14 05:03:41 host kernel: msg` (journalctl -k / syslog; no year,
// so no time), a raw kmsg dump (`6,1234,5678,-;msg`), or plain messages. Blank lines are skipped.
// journalctl's boot lines (`-- Boot 0f3c... --`, `-- Reboot --`) are not records: they set the
// records' boot_id and earlier_boot, as do kernel timestamps that fall back to near zero.
std::vector<KernelRecord> ParseDmesgText(std::string_view text);

// The Unix time of `civil` (UTC) in milliseconds: days from the civil calendar (no time zones).
int64_t UnixMsFromCivil(int year, int month, int day, int hour, int minute, int second);

}  // namespace nccl_triage::kernel
