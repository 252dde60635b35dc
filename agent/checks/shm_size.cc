// shm.size: NCCL reserves its shared-memory segments in /dev/shm with fallocate; container runtimes
// mount 64 MiB there. The size is the tmpfs size= option; a tmpfs without one is half of RAM.
// Required: expect.shm_min_bytes (default 1 GiB).
#include <charconv>

#include "checks/builtin.h"
#include "checks/check_util.h"
#include "core/ids.h"

namespace nccl_triage::checks {

// The catalogue row of this check, in the catalogue's position 110 (checks/check.h).
NT_HOST_CHECK(ShmSize, 110,
    CauseInfo{"shm.size", kArch, kHost, kInContainers, "/dev/shm size",
              "NCCL's intra-node SHM transport and proxy buffers live in /dev/shm; container "
              "runtimes default to 64 MiB and fallocate fails with ENOSPC.",
              "Mount an emptyDir with medium: Memory at /dev/shm (Kubernetes) or use docker "
              "--shm-size=1g or --ipc=host.",
              "the `/dev/shm` line of `proc/self/mountinfo` (`size=`; a tmpfs without it is half "
              "of `MemTotal`)",
              "fail below `expect.shm_min_bytes` (1 GiB); warn when `/dev/shm` is not a tmpfs"});
namespace {

// tmpfs size= accepts a number with an optional k/m/g/t/p/e suffix (powers of 1024) or a
// percentage of RAM. Returns nullopt on anything else.
std::optional<uint64_t> ParseTmpfsSize(std::string_view v, std::optional<uint64_t> mem_total) {
  uint64_t n = 0;
  auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc()) return std::nullopt;
  std::string_view suffix(ptr, static_cast<size_t>(v.data() + v.size() - ptr));
  if (suffix.empty()) return n;
  if (suffix == "%") {
    if (!mem_total) return std::nullopt;
    return *mem_total / 100 * n;
  }
  if (suffix.size() != 1) return std::nullopt;
  int shift = 0;
  switch (suffix[0]) {
    case 'k':
    case 'K':
      shift = 10;
      break;
    case 'm':
    case 'M':
      shift = 20;
      break;
    case 'g':
    case 'G':
      shift = 30;
      break;
    case 't':
    case 'T':
      shift = 40;
      break;
    case 'p':
    case 'P':
      shift = 50;
      break;
    case 'e':
    case 'E':
      shift = 60;
      break;
    default:
      return std::nullopt;
  }
  if (n > (UINT64_MAX >> shift)) return UINT64_MAX;
  return n << shift;
}

std::optional<std::string_view> Option(std::string_view options, std::string_view key) {
  while (!options.empty()) {
    const size_t comma = options.find(',');
    std::string_view item = options.substr(0, comma);
    if (item.size() > key.size() && item.substr(0, key.size()) == key && item[key.size()] == '=') {
      return item.substr(key.size() + 1);
    }
    if (comma == std::string_view::npos) break;
    options.remove_prefix(comma + 1);
  }
  return std::nullopt;
}

}  // namespace

Finding ShmSize(const NodeSnapshot& s, const Config& c, const CheckContext&) {
  FindingBuilder b(ids::kShmSize);
  const uint64_t floor = c.expect.shm_min_bytes;
  b.Add("required", "at least " + FormatBytes(floor), "config: expect.shm_min_bytes");
  const MountEntry* shm = nullptr;
  for (const auto& m : s.mounts) {
    if (m.mount_point == "/dev/shm") shm = &m;  // the last mount on top wins
  }
  if (shm == nullptr && !s.mounts_error.empty()) {
    b.Add("mountinfo", "unreadable (" + s.mounts_error + ")", "proc/self/mountinfo");
    return b.Skip("the mount table could not be read");
  }
  if (shm == nullptr) {
    b.Add("/dev/shm", "no mount entry", "proc/self/mountinfo");
    return b.Skip("no /dev/shm mount found in mountinfo");
  }
  b.Add("/dev/shm", shm->fs_type + " " + shm->super_options, "proc/self/mountinfo");
  if (shm->fs_type != "tmpfs") {
    return b.Warn("/dev/shm is " + shm->fs_type + ", not tmpfs: its size cannot be judged");
  }
  const std::optional<uint64_t> mem =
      s.mem_total_bytes.ok() ? std::optional<uint64_t>(*s.mem_total_bytes.value) : std::nullopt;
  std::optional<uint64_t> size;
  const auto opt = Option(shm->super_options, "size");
  if (opt) {
    size = ParseTmpfsSize(*opt, mem);
    if (!size) {
      if (opt->find('%') != std::string_view::npos)
        b.AddFact("MemTotal", s.mem_total_bytes, "proc/meminfo");
      return b.Skip("cannot interpret /dev/shm size=" + std::string(*opt));
    }
  } else {
    b.AddFact("MemTotal", s.mem_total_bytes, "proc/meminfo");
    if (!mem) return b.Skip("/dev/shm has no size= option and MemTotal could not be read");
    size = *mem / 2;  // the tmpfs default
  }
  const std::string have = FormatBytes(*size) + (opt ? "" : " (tmpfs default: half of RAM)");
  if (*size < floor) {
    return b.Fail("/dev/shm is " + have + ", below " + FormatBytes(floor));
  }
  return b.Pass("/dev/shm is " + have);
}

}  // namespace nccl_triage::checks
