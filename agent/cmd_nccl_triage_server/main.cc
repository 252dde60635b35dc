#include <csignal>

#include "cmd_nccl_triage_server/server_cli.h"

int main(int argc, char** argv) {
  // A write to a connection the peer has closed must be an error, not the end of the process:
  // the Kubernetes client keeps its HTTPS connection alive and the API server closes idle ones,
  // so the next request (the node condition's 5-minute heartbeat, a TokenReview after a quiet
  // spell) would write into a closed socket through OpenSSL, whose write() raises SIGPIPE. The
  // client then reconnects. Probe children get the default disposition back (probe/subprocess).
  std::signal(SIGPIPE, SIG_IGN);
  return nccl_triage::RunServerCli(argc, argv);
}
