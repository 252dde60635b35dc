// Follows the host's kernel log, <root>/dev/kmsg, from where it left off.
//
// Each read() of /dev/kmsg returns one record; a reader that falls behind the ring buffer gets
// EPIPE once (the records it missed were overwritten) and then reads on from the oldest record
// still there. The follower keeps the descriptor open between calls (non-blocking: a call returns
// what is there now), and saves its cursor — the boot id and the next sequence number — in
// <state_dir>/kmsg.cursor after every call. A restarted agent reads the whole buffer again (its
// findings cover the last day, and a GPU that fell off the bus before the restart is still
// gone), but counted_from() tells it which records it counted before the restart, so the
// metrics count each line once. After a reboot (another boot id) the saved cursor is ignored.
//
// Not thread-safe: one owner calls ReadNew().
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "kernel/kernel_log.h"

namespace nccl_triage::kernel {

// Where the follower stands: records of boot `boot_id` below `next_seq` have been read.
struct KmsgCursor {
  std::string boot_id;
  uint64_t next_seq = 0;
  friend bool operator==(const KmsgCursor&, const KmsgCursor&) = default;
};

// `boot_id <id>\nnext_seq <n>\n`; nullopt for anything else (a damaged file starts afresh).
std::optional<KmsgCursor> ParseCursor(std::string_view text);
std::string FormatCursor(const KmsgCursor& cursor);

struct KmsgBatch {
  std::vector<KernelRecord> records;  // new records, in order
  uint64_t lost = 0;                  // records overwritten before they were read (EPIPE)
  bool wrapped = false;               // EPIPE was seen
};

// One read(): the bytes read, or an errno (EAGAIN: nothing more now; EPIPE: overwritten).
struct KmsgRead {
  std::string bytes;
  int error = 0;
};

// Drains `read` until EAGAIN (or end of file, or `max_records`), skipping records of the cursor's
// boot below its next_seq and advancing it. A read() may return several records (a saved dump
// read as a file): they are split at lines that do not start with a blank. Pure: the reads are
// injected (tests fake EPIPE and wrap-around).
KmsgBatch DrainKmsg(const std::function<KmsgRead()>& read, KmsgCursor* cursor,
                    size_t max_records = 100'000);

class KmsgFollower {
 public:
  // `root`: the host root ("/" or a fixture tree); `state_dir`: where kmsg.cursor lives (empty:
  // the cursor is kept in memory only).
  KmsgFollower(std::string root, std::string state_dir);
  ~KmsgFollower();
  KmsgFollower(const KmsgFollower&) = delete;
  KmsgFollower& operator=(const KmsgFollower&) = delete;

  // Everything new since the last call (or since the saved cursor). Records get a wall time from
  // the boot time (realtime now minus monotonic now). An unreadable kmsg is an error Status.
  StatusOr<KmsgBatch> ReadNew();

  const KmsgCursor& cursor() const { return cursor_; }
  // Records of this boot below this sequence number were read by an earlier run (the saved
  // cursor; 0 without one). Valid after the first ReadNew().
  uint64_t counted_from() const { return counted_from_; }

 private:
  Status Open();
  void SaveCursor() const;

  std::string root_;
  std::string state_dir_;
  int fd_ = -1;
  KmsgCursor cursor_;
  uint64_t counted_from_ = 0;
};

}  // namespace nccl_triage::kernel
