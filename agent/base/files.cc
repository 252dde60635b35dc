#include "base/files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <istream>

namespace nccl_triage {
namespace {

std::string Describe(const std::string& what, const std::string& path) {
  return "the " + what + " file '" + path + "'";
}

std::string SizeText(size_t bytes) {
  return bytes % (1u << 20) == 0 ? std::to_string(bytes >> 20) + " MiB"
                                 : std::to_string(bytes) + " bytes";
}

}  // namespace

StatusOr<std::string> ReadWholeFile(const std::string& path, const std::string& what,
                                    size_t max_bytes) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    return NotFound("cannot open " + Describe(what, path) + ": " + std::strerror(errno));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return InvalidArgument(Describe(what, path) + " is not a regular file");
  }
  std::string text;
  char buf[8192];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const std::string why = std::strerror(errno);
      ::close(fd);
      return Unavailable("cannot read " + Describe(what, path) + ": " + why);
    }
    if (n == 0) break;
    if (text.size() + static_cast<size_t>(n) > max_bytes) {
      ::close(fd);
      return InvalidArgument(Describe(what, path) + " is larger than " + SizeText(max_bytes));
    }
    text.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return text;
}

StatusOr<std::string> ReadWholeStream(std::istream& in, const std::string& what, size_t max_bytes) {
  std::string text;
  char buf[8192];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    if (text.size() + static_cast<size_t>(in.gcount()) > max_bytes) {
      return InvalidArgument("the " + what + " is larger than " + SizeText(max_bytes));
    }
    text.append(buf, static_cast<size_t>(in.gcount()));
  }
  if (in.bad()) return Unavailable("cannot read the " + what);
  return text;
}

std::string TrimToken(std::string token) {
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r' || token.back() == ' ')) {
    token.pop_back();
  }
  return token;
}

StatusOr<std::string> ReadTokenFile(const std::string& path) {
  auto read = ReadWholeFile(path, "token", 64 << 10);
  if (!read.ok()) return read.status();
  std::string token = TrimToken(std::move(read).value());
  if (token.empty()) {
    return InvalidArgument(Describe("token", path) +
                           " is empty: refusing to run without authentication (write the token "
                           "into it, or leave token_file unset)");
  }
  return token;
}

}  // namespace nccl_triage
