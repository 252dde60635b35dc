// ConnectionGate: the coordinator's gRPC port, accepted by us and handed to gRPC, so that the
// number of connections is capped. gRPC 1.51 has no such cap: 18,000 silent connections grew the
// coordinator from 20 to 320 MB, and about 30,000 would have it killed under a 512 MiB limit.
//
// The gate accepts on its own thread; a connection over max_connections is closed at once
// (counted, logged at most once a minute). Every other one is handed to gRPC's external
// connection acceptor, which speaks TLS or plaintext on it as it would on its own port. To learn
// when gRPC is done with a connection, the gate keeps a duplicate of its descriptor, watched for
// the hang-up that gRPC's shutdown (or the client's close) causes, and then closed.
//
// Thread-safe. Start() once; Stop() (and the destructor) joins the thread and closes the
// listening socket and the duplicates.
#pragma once

#include <grpcpp/server_builder.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <thread>
#include <unordered_set>

#include "base/status.h"

namespace nccl_triage {

class Logger;

// How many agent connections a process whose descriptor limit (RLIMIT_NOFILE's soft limit) is
// `fd_limit` may accept, at most `wanted`: each costs two descriptors (gRPC's and the gate's
// duplicate), and a reserve of half the limit (at least 24, at most 512) stays for the
// process's own (gRPC's pollers, the HTTP server and its clients, the Kubernetes client, logs).
// At least 1. Pure.
size_t ConnectionCapForFdLimit(size_t wanted, uint64_t fd_limit);

class ConnectionGate {
 public:
  ConnectionGate(Logger& log, size_t max_connections);
  ~ConnectionGate();
  ConnectionGate(const ConnectionGate&) = delete;
  ConnectionGate& operator=(const ConnectionGate&) = delete;

  // Takes the listening socket (owned from here) and starts accepting into `acceptor`, which must
  // outlive Stop().
  Status Start(int listen_fd, grpc::experimental::ExternalConnectionAcceptor* acceptor);
  void Stop();

  size_t open() const { return open_; }
  uint64_t refused() const { return refused_; }

 private:
  void Loop();
  void Accept();

  Logger& log_;
  const size_t max_;
  grpc::experimental::ExternalConnectionAcceptor* acceptor_ = nullptr;
  int listen_fd_ = -1;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;
  std::atomic<bool> stopping_{false};
  std::atomic<size_t> open_{0};
  std::atomic<uint64_t> refused_{0};
  int64_t last_note_ms_ = 0;
  uint64_t unnoted_ = 0;
  std::unordered_set<int> watched_;  // the duplicates; the gate's thread only
  std::thread thread_;
};

}  // namespace nccl_triage
