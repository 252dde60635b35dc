#include "coordinator/connection_gate.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <string>

#include "base/log.h"

namespace nccl_triage {

size_t ConnectionCapForFdLimit(size_t wanted, uint64_t fd_limit) {
  const uint64_t reserve = std::clamp<uint64_t>(fd_limit / 2, 24, 512);
  const uint64_t fit = fd_limit > reserve ? (fd_limit - reserve) / 2 : 0;
  return std::max<size_t>(1, std::min<uint64_t>(wanted, fit));
}
namespace {

// Accepts per wake-up, so that a flood cannot keep the gate from noticing closed connections.
constexpr int kAcceptBurst = 256;
// Tags of the two fixed descriptors in the epoll set; a connection's tag is its duplicate + 2.
constexpr uint64_t kListenTag = 0, kWakeTag = 1;

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

ConnectionGate::ConnectionGate(Logger& log, size_t max_connections)
    : log_(log), max_(max_connections) {}

ConnectionGate::~ConnectionGate() { Stop(); }

Status ConnectionGate::Start(int listen_fd,
                             grpc::experimental::ExternalConnectionAcceptor* acceptor) {
  listen_fd_ = listen_fd;
  acceptor_ = acceptor;
  epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (epoll_fd_ < 0 || wake_fd_ < 0) return Unavailable("coordinator: cannot create an epoll set");
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = kListenTag;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listen_fd_, &ev);
  ev.data.u64 = kWakeTag;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &ev);
  thread_ = std::thread([this] { Loop(); });
  return Status::Ok();
}

void ConnectionGate::Stop() {
  if (thread_.joinable()) {
    stopping_ = true;
    uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(wake_fd_, &one, sizeof(one));
    thread_.join();
  }
  for (int* fd : {&listen_fd_, &epoll_fd_, &wake_fd_}) {
    if (*fd >= 0) ::close(*fd);
    *fd = -1;
  }
}

void ConnectionGate::Accept() {
  for (int i = 0; i < kAcceptBurst; ++i) {
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        // Out of descriptors: the listening socket stays readable; wait instead of spinning.
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      return;
    }
    const int watch = open_ < max_ ? ::dup(fd) : -1;
    if (watch < 0) {
      ::close(fd);
      ++refused_;
      ++unnoted_;
      if (NowMs() - last_note_ms_ >= 60'000) {
        log_.Warn("coordinator", "refused " + std::to_string(unnoted_) +
                                     " connection(s) on the gRPC port: " + std::to_string(max_) +
                                     " connections open");
        last_note_ms_ = NowMs();
        unnoted_ = 0;
      }
      continue;
    }
    epoll_event ev{};
    ev.events = EPOLLRDHUP;  // EPOLLHUP and EPOLLERR come without asking; never EPOLLIN
    ev.data.u64 = static_cast<uint64_t>(watch) + 2;
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, watch, &ev);
    watched_.insert(watch);
    ++open_;
    grpc::experimental::ExternalConnectionAcceptor::NewConnectionParameters p;
    p.listener_fd = listen_fd_;
    p.fd = fd;
    acceptor_->HandleNewConnection(&p);
  }
}

void ConnectionGate::Loop() {
  epoll_event events[256];
  while (!stopping_) {
    int n = ::epoll_wait(epoll_fd_, events, 256, 1000);
    if (n < 0 && errno != EINTR) break;
    for (int i = 0; i < n; ++i) {
      const uint64_t tag = events[i].data.u64;
      if (tag == kListenTag) {
        Accept();
      } else if (tag != kWakeTag) {
        // gRPC shut the connection down, or the client closed it: forget our duplicate.
        const int watch = static_cast<int>(tag - 2);
        ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, watch, nullptr);
        ::close(watch);
        watched_.erase(watch);
        --open_;
      }
    }
  }
  // The duplicates left: closing them leaves each connection to gRPC, which is shutting down.
  for (int watch : watched_) ::close(watch);
  watched_.clear();
  open_ = 0;
}

}  // namespace nccl_triage
