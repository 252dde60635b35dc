// Peers: which other rank a failing line blames, and which pod and node that is.
//
// NCCL names the other side of a failed connection by address: `Connection closed by remote
// peer 10.0.0.2<52187>`, `Got completion from peer 10.0.0.2<43211> with status=12`, a RoCE GID
// `::ffff:10.0.0.2`, or by host name (`gpu-a17<52187>`, what gethostname() said: the pod name,
// or the node name with hostNetwork); gloo and c10d print `[10.0.0.2]:29500`. The names are
// found in the text and matched against the job's pods: pod IPs, pod and host names, node names
// and host IPs (a host IP is a node, and a pod only when it is the job's one pod there).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "triage/records.h"

namespace nccl_triage::triage {

// The peer names in one line, in order, each once (the interface prefix, IPv6 scope and
// brackets removed; port 0, a local listening address, left out).
std::vector<std::string> PeerNamesIn(std::string_view line);

struct PeerMatch {
  std::string name;  // as the log wrote it
  std::string pod;   // empty: only the node is known
  std::string node;
  std::string how;  // "pod IP", "pod name", "host name", "node name", "host IP"
};

std::optional<PeerMatch> ResolvePeer(std::string_view name, const std::vector<JobPod>& pods);

}  // namespace nccl_triage::triage
