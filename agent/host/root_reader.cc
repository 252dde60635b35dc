#include "host/root_reader.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstring>
#include <utility>

namespace nccl_triage {
namespace {

std::string ErrorFor(int err) {
  if (err == ENOENT || err == ENOTDIR) return "missing";
  return "unreadable: " + ErrnoName(err);
}

// `rel` split into its directory and its last name: "a/b/c" -> {"a/b", "c"}, "c" -> {"", "c"}.
std::pair<std::string_view, std::string_view> SplitLast(std::string_view rel) {
  const size_t slash = rel.rfind('/');
  if (slash == std::string_view::npos) return {std::string_view(), rel};
  return {rel.substr(0, slash), rel.substr(slash + 1)};
}

}  // namespace

std::string ErrnoName(int err) {
  switch (err) {
    case EACCES: return "EACCES";
    case EPERM: return "EPERM";
    case ENOENT: return "ENOENT";
    case EISDIR: return "EISDIR";
    case ENOTDIR: return "ENOTDIR";
    case EINVAL: return "EINVAL";
    case EIO: return "EIO";
    case ENODEV: return "ENODEV";
    case ENXIO: return "ENXIO";
    case EAGAIN: return "EAGAIN";
    case ELOOP: return "ELOOP";
    case ENAMETOOLONG: return "ENAMETOOLONG";
    case ENOMEM: return "ENOMEM";
    case EMFILE: return "EMFILE";
    case EOPNOTSUPP: return "EOPNOTSUPP";
    case EBUSY: return "EBUSY";
    default: return "errno " + std::to_string(err);
  }
}

bool NaturalLess(std::string_view a, std::string_view b) {
  size_t i = 0, j = 0;
  auto digit = [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; };
  while (i < a.size() && j < b.size()) {
    if (digit(a[i]) && digit(b[j])) {
      size_t ie = i, je = j;
      while (ie < a.size() && digit(a[ie])) ++ie;
      while (je < b.size() && digit(b[je])) ++je;
      // Compare by value without overflow: strip leading zeros, then length, then digits.
      std::string_view na = a.substr(i, ie - i), nb = b.substr(j, je - j);
      while (na.size() > 1 && na.front() == '0') na.remove_prefix(1);
      while (nb.size() > 1 && nb.front() == '0') nb.remove_prefix(1);
      if (na.size() != nb.size()) return na.size() < nb.size();
      if (na != nb) return na < nb;
      i = ie;
      j = je;
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i;
      ++j;
    }
  }
  if ((a.size() - i) != (b.size() - j)) return (a.size() - i) < (b.size() - j);
  return a < b;
}

RootReader::RootReader(std::string root) : root_(std::move(root)) {
  while (root_.size() > 1 && root_.back() == '/') root_.pop_back();
  if (root_.empty()) root_ = "/";
}

std::string RootReader::PathOf(std::string_view rel) const {
  while (!rel.empty() && rel.front() == '/') rel.remove_prefix(1);
  if (root_ == "/") return "/" + std::string(rel);
  return root_ + "/" + std::string(rel);
}

int RootReader::Open(std::string_view rel, int flags) const {
  flags |= O_CLOEXEC;
  if (root_ == "/") return ::open(PathOf(rel).c_str(), flags);
  const int root_fd = ::open(root_.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (root_fd < 0) return -1;
  while (!rel.empty() && rel.front() == '/') rel.remove_prefix(1);
  const std::string path = rel.empty() ? "." : std::string(rel);
  open_how how{};
  how.flags = static_cast<uint64_t>(flags);
  how.resolve = RESOLVE_IN_ROOT;
  // openat2 with RESOLVE_IN_ROOT answers EAGAIN when a rename or mount anywhere on the system
  // raced with a ".." of the path (sysfs links are "../../devices/..."): the kernel asks the
  // caller to retry, and a loaded machine makes it happen. Retry a bounded number of times.
  long fd = -1;
  for (int attempt = 0; attempt < 64; ++attempt) {
    fd = ::syscall(SYS_openat2, root_fd, path.c_str(), &how, sizeof(how));
    if (fd >= 0 || errno != EAGAIN) break;
  }
  const int err = errno;
  ::close(root_fd);
  errno = err;
  return static_cast<int>(fd);
}

ReadResult RootReader::ReadFile(std::string_view rel) {
  ++files_read_[std::string(rel)];
  ReadResult r;
  // O_NONBLOCK: a FIFO planted in a fixture (or a device node) must not hang the gatherer.
  int fd = Open(rel, O_RDONLY | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    r.error = ErrorFor(errno);
    return r;
  }
  struct stat st {};
  if (::fstat(fd, &st) == 0 && !S_ISREG(st.st_mode)) {
    ::close(fd);
    r.error = S_ISDIR(st.st_mode) ? "unreadable: EISDIR" : "unreadable: not a regular file";
    return r;
  }
  std::string text;
  std::array<char, 16384> buf{};
  while (text.size() < kMaxFileBytes) {
    ssize_t n = ::read(fd, buf.data(), std::min(buf.size(), kMaxFileBytes - text.size()));
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      r.error = ErrorFor(err);
      return r;
    }
    if (n == 0) break;
    text.append(buf.data(), static_cast<size_t>(n));
  }
  ::close(fd);
  r.text = std::move(text);
  found_anything_ = true;
  return r;
}

ReadResult RootReader::ReadLink(std::string_view rel, bool count) {
  if (count) ++files_read_[std::string(rel)];
  ReadResult r;
  std::array<char, PATH_MAX> buf{};
  const auto [dir, name] = SplitLast(rel);
  const int dir_fd = Open(dir, O_PATH | O_DIRECTORY);
  ssize_t n = dir_fd < 0 ? -1 : ::readlinkat(dir_fd, std::string(name).c_str(), buf.data(),
                                              buf.size() - 1);
  if (dir_fd >= 0) {
    const int err = errno;
    ::close(dir_fd);
    errno = err;
  }
  if (n < 0) {
    r.error = errno == EINVAL ? "not a link" : ErrorFor(errno);
    return r;
  }
  r.text = std::string(buf.data(), static_cast<size_t>(n));
  found_anything_ = true;
  return r;
}

ListResult RootReader::List(std::string_view rel) const {
  ListResult r;
  const int fd = Open(rel, O_RDONLY | O_DIRECTORY);
  DIR* dir = fd < 0 ? nullptr : ::fdopendir(fd);
  if (dir == nullptr) {
    if (fd >= 0) ::close(fd);
    int err = errno;
    r.exists = err != ENOENT && err != ENOTDIR;
    r.error = err == ENOTDIR ? "not a directory" : ErrorFor(err);
    return r;
  }
  r.exists = true;
  while (struct dirent* e = ::readdir(dir)) {
    std::string_view name = e->d_name;
    if (name == "." || name == "..") continue;
    r.names.emplace_back(name);
  }
  ::closedir(dir);
  found_anything_ = found_anything_ || !r.names.empty();
  std::sort(r.names.begin(), r.names.end(),
            [](const std::string& a, const std::string& b) { return NaturalLess(a, b); });
  return r;
}

bool RootReader::ForEachLink(std::string_view base, const std::vector<std::string>& subdirs,
                             const std::function<void(size_t, std::string_view)>& fn) const {
  int base_fd = Open(base, O_RDONLY | O_DIRECTORY);
  if (base_fd < 0) return false;
  std::array<char, PATH_MAX> target{};
  // getdents64 straight into a buffer: readdir over fdopendir would add an fstat and two fcntl
  // calls per directory, a fifth of the syscalls of an fd scan.
  alignas(8) std::array<char, 16384> entries{};
  for (size_t i = 0; i < subdirs.size(); ++i) {
    int dir_fd = ::openat(base_fd, subdirs[i].c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir_fd < 0) continue;
    for (;;) {
      const long n = ::syscall(SYS_getdents64, dir_fd, entries.data(), entries.size());
      if (n <= 0) break;
      for (long off = 0; off < n;) {
        // struct linux_dirent64: u64 d_ino, s64 d_off, u16 d_reclen, u8 d_type, char d_name[].
        const char* rec = entries.data() + off;
        uint16_t reclen = 0;
        std::memcpy(&reclen, rec + 16, sizeof(reclen));
        const auto type = static_cast<unsigned char>(rec[18]);
        const char* name = rec + 19;
        if (reclen == 0) break;
        off += reclen;
        if (type != DT_LNK && type != DT_UNKNOWN) continue;
        ssize_t len = ::readlinkat(dir_fd, name, target.data(), target.size() - 1);
        if (len > 0) fn(i, std::string_view(target.data(), static_cast<size_t>(len)));
      }
    }
    ::close(dir_fd);
  }
  ::close(base_fd);
  return true;
}

bool RootReader::Exists(std::string_view rel) const {
  const auto [dir, name] = SplitLast(rel);
  const int dir_fd = Open(dir, O_PATH | O_DIRECTORY);
  if (dir_fd < 0) return false;
  struct stat st {};
  const bool found = name.empty() || ::fstatat(dir_fd, std::string(name).c_str(), &st,
                                               AT_SYMLINK_NOFOLLOW) == 0;
  ::close(dir_fd);
  return found;
}

bool RootReader::IsDirectory(std::string_view rel) const {
  const int fd = Open(rel, O_PATH);
  if (fd < 0) return false;
  struct stat st {};
  const bool dir = ::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode);
  ::close(fd);
  return dir;
}

}  // namespace nccl_triage
