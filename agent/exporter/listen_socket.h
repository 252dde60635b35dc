// ListenTcp: a listening TCP socket for a host and port, as the HTTP server and the coordinator's
// gRPC gate open it. SO_REUSEADDR only: with SO_REUSEPORT a second process on the same port would
// bind silently and take half of the connections instead of failing at start-up. The socket is
// non-blocking and close-on-exec; the caller owns it.
#pragma once

#include <string>

#include "base/status.h"

namespace nccl_triage {

struct ListeningSocket {
  int fd = -1;
  int port = 0;  // the bound port (the one chosen when 0 was asked)
};

// Unavailable (one line naming host:port) when the host does not resolve or no address binds.
StatusOr<ListeningSocket> ListenTcp(const std::string& host, int port, int backlog = 4096);

}  // namespace nccl_triage
