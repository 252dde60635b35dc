#include "kernel/kmsg_follower.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/files.h"

namespace nccl_triage::kernel {
namespace {

constexpr size_t kReadBuffer = 16 * 1024;  // a kmsg record is at most about 8 KiB with its dict

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  return s;
}

// Splits the bytes of one read into records: a record is a header line and the continuation
// lines (starting with a blank) after it.
std::vector<std::string_view> SplitRecords(std::string_view bytes) {
  std::vector<std::string_view> out;
  size_t start = std::string_view::npos;
  size_t pos = 0;
  while (pos < bytes.size()) {
    size_t nl = bytes.find('\n', pos);
    if (nl == std::string_view::npos) nl = bytes.size();
    const bool continuation = bytes[pos] == ' ';
    if (!continuation) {
      if (start != std::string_view::npos) out.push_back(bytes.substr(start, pos - start));
      start = pos;
    }
    pos = nl + 1;
  }
  if (start != std::string_view::npos) out.push_back(bytes.substr(start));
  return out;
}

int64_t ClockMs(clockid_t clock) {
  timespec ts{};
  ::clock_gettime(clock, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1'000'000;
}

}  // namespace

std::optional<KmsgCursor> ParseCursor(std::string_view text) {
  KmsgCursor c;
  bool have_boot = false, have_seq = false;
  std::istringstream in{std::string(text)};
  std::string key, value;
  while (in >> key >> value) {
    if (key == "boot_id") {
      c.boot_id = value;
      have_boot = true;
    } else if (key == "next_seq") {
      auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), c.next_seq);
      have_seq = ec == std::errc() && p == value.data() + value.size();
    } else {
      return std::nullopt;
    }
  }
  if (!have_boot || !have_seq) return std::nullopt;
  return c;
}

std::string FormatCursor(const KmsgCursor& c) {
  return "boot_id " + c.boot_id + "\nnext_seq " + std::to_string(c.next_seq) + "\n";
}

KmsgBatch DrainKmsg(const std::function<KmsgRead()>& read, KmsgCursor* cursor,
                    size_t max_records) {
  KmsgBatch batch;
  while (batch.records.size() < max_records) {
    KmsgRead r = read();
    if (r.error == EPIPE) {
      batch.wrapped = true;  // the next read returns the oldest record still there
      continue;
    }
    if (r.error == EINTR) continue;
    if (r.error != 0 || r.bytes.empty()) break;  // EAGAIN, end of file, or a read error
    for (std::string_view text : SplitRecords(r.bytes)) {
      auto record = ParseKmsgRecord(text);
      if (!record) continue;
      if (record->seq < cursor->next_seq) continue;  // read before this restart
      if (record->seq > cursor->next_seq && batch.wrapped) {
        batch.lost += record->seq - cursor->next_seq;
      }
      cursor->next_seq = record->seq + 1;
      batch.records.push_back(std::move(*record));
    }
  }
  return batch;
}

KmsgFollower::KmsgFollower(std::string root, std::string state_dir)
    : root_(std::move(root)), state_dir_(std::move(state_dir)) {}

KmsgFollower::~KmsgFollower() {
  if (fd_ >= 0) ::close(fd_);
}

Status KmsgFollower::Open() {
  const std::filesystem::path root(root_);
  const std::string kmsg = (root / "dev/kmsg").string();
  fd_ = ::open(kmsg.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd_ < 0) {
    return Unavailable("cannot open " + kmsg + ": " + std::strerror(errno));
  }
  std::string boot_id;
  if (auto read = ReadWholeFile((root / "proc/sys/kernel/random/boot_id").string(), "boot id");
      read.ok()) {
    boot_id = std::string(Trim(*read));
  }
  cursor_ = KmsgCursor{boot_id, 0};
  if (!state_dir_.empty()) {
    auto saved = ReadWholeFile(state_dir_ + "/kmsg.cursor", "kmsg cursor");
    if (saved.ok()) {
      auto parsed = ParseCursor(*saved);
      // Sequence numbers start again at each boot: a cursor of another boot means nothing.
      if (parsed && !boot_id.empty() && parsed->boot_id == boot_id) {
        counted_from_ = parsed->next_seq;
      }
    }
  }
  return Status::Ok();
}

void KmsgFollower::SaveCursor() const {
  if (state_dir_.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(state_dir_, ec);
  const std::string path = state_dir_ + "/kmsg.cursor";
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << FormatCursor(cursor_);
    if (!out) return;  // a read-only state dir costs a re-read after a restart, nothing more
  }
  std::filesystem::rename(tmp, path, ec);
}

StatusOr<KmsgBatch> KmsgFollower::ReadNew() {
  if (fd_ < 0) {
    if (Status s = Open(); !s.ok()) return s;
  }
  std::string buffer(kReadBuffer, '\0');
  auto read = [&]() -> KmsgRead {
    const ssize_t n = ::read(fd_, buffer.data(), buffer.size());
    if (n < 0) return {{}, errno};
    return {buffer.substr(0, static_cast<size_t>(n)), 0};
  };
  KmsgBatch batch = DrainKmsg(read, &cursor_);
  const int64_t boot_ms = ClockMs(CLOCK_REALTIME) - ClockMs(CLOCK_MONOTONIC);
  for (KernelRecord& r : batch.records) {
    if (r.mono_usec) r.wall_ms = boot_ms + *r.mono_usec / 1000;
    r.boot_id = cursor_.boot_id;  // /dev/kmsg holds only the running boot's records
  }
  SaveCursor();
  return batch;
}

}  // namespace nccl_triage::kernel
