// Running a RAS query inside another process's network namespace.
//
// NCCL's RAS port listens in the network namespace of the NCCL process (localhost:28028 by
// default), which for a pod is the pod's. The query enters that namespace with setns(2) on a
// thread of its own, so the calling process and its other threads never change namespace; the
// thread ends with the query. Entering needs CAP_SYS_ADMIN (the agent's privileged pod, or root).
#pragma once

#include <functional>
#include <string>

#include "base/status.h"

namespace nccl_triage::ras {

// Whether two namespace links (/proc/<pid>/ns/net) name the same namespace (same device and
// inode). Error: either cannot be read (the process exited, no permission).
StatusOr<bool> SameNamespace(const std::string& a, const std::string& b);

// Runs `fn` on a new thread that has entered the network namespace `ns_path` (a
// /proc/<pid>/ns/net link) and waits for it. Error (one line): the link cannot be opened or
// setns fails (EPERM: not privileged); `fn` then does not run.
Status RunInNetworkNamespace(const std::string& ns_path, const std::function<void()>& fn);

}  // namespace nccl_triage::ras
