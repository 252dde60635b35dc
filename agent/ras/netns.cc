#include "ras/netns.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

namespace nccl_triage::ras {

StatusOr<bool> SameNamespace(const std::string& a, const std::string& b) {
  struct stat sa {};
  struct stat sb {};
  if (::stat(a.c_str(), &sa) != 0) return NotFound(a + ": " + std::strerror(errno));
  if (::stat(b.c_str(), &sb) != 0) return NotFound(b + ": " + std::strerror(errno));
  return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

Status RunInNetworkNamespace(const std::string& ns_path, const std::function<void()>& fn) {
  Status result;
  std::thread worker([&] {
    const int fd = ::open(ns_path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      const int e = errno;
      result = e == ENOENT ? NotFound(ns_path + ": no such process or namespace")
                           : Unavailable("cannot open " + ns_path + ": " + std::strerror(e));
      return;
    }
    // CLONE_NEWNET changes only this thread's namespace; it ends with the thread.
    if (::setns(fd, CLONE_NEWNET) != 0) {
      const int e = errno;
      ::close(fd);
      result = Unavailable("cannot enter the network namespace " + ns_path + ": " +
                           std::strerror(e) +
                           (e == EPERM ? " (needs CAP_SYS_ADMIN: run as root or in the agent's pod)"
                                       : ""));
      return;
    }
    ::close(fd);
    fn();
  });
  worker.join();
  return result;
}

}  // namespace nccl_triage::ras
