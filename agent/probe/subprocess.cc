#include "probe/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>

namespace nccl_triage {
namespace {

using std::chrono::milliseconds;

// After the leader exits, how long its pipes may stay open (a straggler that left the group).
constexpr milliseconds kDrainGrace{300};
// Poll tick when no pidfd is available to report the leader's exit.
constexpr milliseconds kFallbackTick{10};

int PidfdOpen(pid_t pid) {
#ifdef SYS_pidfd_open
  return static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
#else
  (void)pid;
  return -1;
#endif
}

void CloseFd(int& fd) {
  if (fd >= 0) close(fd);
  fd = -1;
}

std::string Errno(const char* what, int err) { return std::string(what) + ": " + strerror(err); }

}  // namespace

Subprocess::Subprocess(SubprocessOptions& options)
    : max_output_bytes_(options.max_output_bytes), on_stdout_(std::move(options.on_stdout)) {}

StatusOr<std::unique_ptr<Subprocess>> Subprocess::Spawn(SubprocessOptions options) {
  if (options.argv.empty()) return InvalidArgument("subprocess: empty argv");
  std::unique_ptr<Subprocess> p(new Subprocess(options));

  int out_pipe[2] = {-1, -1};
  int err_pipe[2] = {-1, -1};
  int in_pair[2] = {-1, -1};
  auto close_all = [&] {
    for (int* fd :
         {&out_pipe[0], &out_pipe[1], &err_pipe[0], &err_pipe[1], &in_pair[0], &in_pair[1]}) {
      CloseFd(*fd);
    }
  };
  if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0) {
    int e = errno;
    close_all();
    return Unavailable(Errno("pipe2", e));
  }
  // stdin is a socket pair rather than a pipe so that writes can use MSG_NOSIGNAL: a child that
  // exits early must never deliver SIGPIPE to the agent.
  if (options.pipe_stdin) {
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, in_pair) != 0) {
      int e = errno;
      close_all();
      return Unavailable(Errno("socketpair", e));
    }
  } else {
    in_pair[0] = open("/dev/null", O_RDONLY | O_CLOEXEC);
  }

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (in_pair[0] >= 0) posix_spawn_file_actions_adddup2(&actions, in_pair[0], 0);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);

  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t empty_mask;
  sigemptyset(&empty_mask);
  sigset_t defaults;
  sigemptyset(&defaults);
  for (int sig : {SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD, SIGUSR1, SIGUSR2, SIGALRM}) {
    sigaddset(&defaults, sig);
  }
  posix_spawnattr_setpgroup(&attr, 0);  // own process group, id = the child's pid
  posix_spawnattr_setsigmask(&attr, &empty_mask);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

  std::vector<char*> argv;
  for (auto& a : options.argv) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (auto& e : options.env) envp.push_back(e.data());
  envp.push_back(nullptr);

  p->started_ = Clock::now();
  p->deadline_ = p->started_ + options.timeout;
  pid_t pid = -1;
  int rc = posix_spawn(&pid, argv[0], &actions, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  CloseFd(out_pipe[1]);
  CloseFd(err_pipe[1]);
  CloseFd(in_pair[0]);
  if (rc != 0) {
    close_all();
    return Unavailable("cannot start " + options.argv[0] + ": " + strerror(rc));
  }
  p->pid_ = pid;
  p->pidfd_ = PidfdOpen(pid);
  if (p->pidfd_ >= 0) fcntl(p->pidfd_, F_SETFD, FD_CLOEXEC);
  p->out_.fd = out_pipe[0];
  p->err_.fd = err_pipe[0];
  p->stdin_fd_ = in_pair[1];
  for (int fd : {p->out_.fd, p->err_.fd}) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  return p;
}

Subprocess::~Subprocess() {
  if (pid_ > 0 && !exited_) {
    kill(-pid_, SIGKILL);
    int status = 0;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
  }
  CloseFd(pidfd_);
  CloseFd(stdin_fd_);
  CloseFd(out_.fd);
  CloseFd(err_.fd);
}

Status Subprocess::WriteStdin(std::string_view data) {
  if (stdin_fd_ < 0) return Unavailable("child stdin is not open");
  while (!data.empty()) {
    ssize_t n = send(stdin_fd_, data.data(), data.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      data.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      auto left = std::chrono::duration_cast<milliseconds>(deadline_ - Clock::now()).count();
      if (left <= 0) return DeadlineExceeded("child did not read its stdin before the deadline");
      pollfd pfd{stdin_fd_, POLLOUT, 0};
      poll(&pfd, 1, static_cast<int>(std::min<long long>(left, 100)));
      continue;
    }
    return Unavailable(Errno("write to child stdin", errno));
  }
  return Status::Ok();
}

void Subprocess::CloseStdin() { CloseFd(stdin_fd_); }

void Subprocess::ReadAvailable(Stream& s) {
  std::array<char, 65536> buf;
  while (s.fd >= 0) {
    ssize_t n = read(s.fd, buf.data(), buf.size());
    if (n > 0 && &s == &out_ && on_stdout_) {
      if (!killed_ && !on_stdout_(std::string_view(buf.data(), static_cast<size_t>(n)))) Kill();
      if (killed_) s.dropped += static_cast<size_t>(n);
      continue;
    }
    if (n > 0) {
      size_t room = max_output_bytes_ > s.data.size() ? max_output_bytes_ - s.data.size() : 0;
      size_t keep = std::min(room, static_cast<size_t>(n));
      s.data.append(buf.data(), keep);
      s.dropped += static_cast<size_t>(n) - keep;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    CloseFd(s.fd);  // EOF or a read error: nothing more will come
  }
}

void Subprocess::CheckExit(bool block) {
  if (exited_ || pid_ <= 0) return;
  siginfo_t info{};
  // WNOWAIT leaves the leader a zombie, which keeps its process-group id reserved while the rest
  // of the group is killed: the id cannot be reused by an unrelated process in between.
  int flags = WEXITED | WNOWAIT | (block ? 0 : WNOHANG);
  int rc;
  do {
    rc = waitid(P_PID, static_cast<id_t>(pid_), &info, flags);
  } while (rc < 0 && errno == EINTR);
  if (rc < 0 || info.si_pid != pid_) return;
  kill(-pid_, SIGKILL);  // stragglers the child left behind in its group
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  status_ = status;
  exited_ = true;
  ended_ = Clock::now();
  CloseFd(pidfd_);
}

void Subprocess::Kill() {
  if (pid_ > 0 && !exited_) {
    killed_ = true;
    kill(-pid_, SIGKILL);
  }
}

void Subprocess::Finish(bool timed_out) {
  if (timed_out && !exited_) {
    timed_out_ = true;
    kill(-pid_, SIGKILL);
    CheckExit(/*block=*/true);
  }
}

void Subprocess::Pump(std::span<Subprocess* const> children, const std::function<bool()>& stop,
                      Clock::time_point until) {
  while (true) {
    if (stop && stop()) return;
    auto now = Clock::now();
    bool any_live = false;
    bool need_tick = false;
    std::vector<pollfd> fds;
    Clock::time_point wake = until;
    for (Subprocess* c : children) {
      if (c->done_) continue;
      any_live = true;
      if (!c->exited_ && now >= c->deadline_) c->Finish(/*timed_out=*/true);
      if (c->exited_) {
        // Drain what the pipes still hold, then stop waiting for stragglers.
        if ((c->out_.fd < 0 && c->err_.fd < 0) || now >= c->ended_ + kDrainGrace) {
          c->ReadAvailable(c->out_);
          c->ReadAvailable(c->err_);
          CloseFd(c->out_.fd);
          CloseFd(c->err_.fd);
          c->done_ = true;
          continue;
        }
        wake = std::min(wake, c->ended_ + kDrainGrace);
      } else {
        wake = std::min(wake, c->deadline_);
        if (c->pidfd_ >= 0) {
          fds.push_back({c->pidfd_, POLLIN, 0});
        } else {
          need_tick = true;
        }
      }
      if (c->out_.fd >= 0) fds.push_back({c->out_.fd, POLLIN, 0});
      if (c->err_.fd >= 0) fds.push_back({c->err_.fd, POLLIN, 0});
    }
    if (!any_live || now >= until) return;
    if (std::all_of(children.begin(), children.end(), [](Subprocess* c) { return c->done_; })) {
      return;
    }
    auto wait = std::chrono::duration_cast<milliseconds>(wake - now) + milliseconds(1);
    if (need_tick) wait = std::min(wait, kFallbackTick);
    if (stop) wait = std::min(wait, milliseconds(50));  // re-check the caller's condition
    wait = std::max(wait, milliseconds(0));
    int rc = poll(fds.data(), fds.size(), static_cast<int>(wait.count()));
    if (rc < 0 && errno != EINTR) return;
    for (Subprocess* c : children) {
      if (c->done_) continue;
      c->ReadAvailable(c->out_);
      c->ReadAvailable(c->err_);
      c->CheckExit(/*block=*/false);
    }
  }
}

void Subprocess::WaitAll(std::span<Subprocess* const> children) {
  Pump(children, nullptr, Clock::time_point::max());
}

SubprocessResult Subprocess::Wait() {
  Subprocess* self = this;
  WaitAll(std::span<Subprocess* const>(&self, 1));
  SubprocessResult r;
  if (timed_out_) {
    r.kind = ExitKind::kTimedOut;
    r.signal = SIGKILL;
  } else if (WIFSIGNALED(status_)) {
    r.kind = ExitKind::kSignaled;
    r.signal = WTERMSIG(status_);
  } else {
    r.kind = ExitKind::kExited;
    r.exit_code = WEXITSTATUS(status_);
  }
  r.out = out_.data;
  r.err = err_.data;
  r.out_dropped = out_.dropped;
  r.err_dropped = err_.dropped;
  r.seconds = std::chrono::duration<double>(ended_ - started_).count();
  return r;
}

SubprocessResult RunSubprocess(SubprocessOptions options) {
  auto p = Subprocess::Spawn(std::move(options));
  if (!p.ok()) {
    SubprocessResult r;
    r.kind = ExitKind::kSpawnFailed;
    r.error = p.status().message();
    return r;
  }
  return (*p)->Wait();
}

}  // namespace nccl_triage
