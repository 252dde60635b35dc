// Which Kubernetes container a process belongs to, read from the text of /proc/<pid>/cgroup.
//
// The kubelet puts every container in a cgroup whose path names the pod UID and the runtime's
// container id. The shape depends on the cgroup driver and the runtime:
//   systemd (v1 or v2): /kubepods.slice/kubepods-burstable.slice/
//                       kubepods-burstable-pod<uid with '_' for
//                       '-'>.slice/cri-containerd-<id>.scope (docker-<id>.scope, crio-<id>.scope)
//   cgroupfs:           /kubepods/burstable/pod<uid>/<id>   (guaranteed pods: /kubepods/pod<uid>/)
// and, seen from inside a private cgroup namespace, the path may start with "/../..". The parser
// looks for the pod segment and the deepest container segment after it, so a process in a nested
// cgroup of its container (".../cri-containerd-<id>.scope/init.scope") still maps to it.
// Pure functions of text; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace nccl_triage::workload {

struct CgroupRef {
  std::string pod_uid;       // canonical "8-4-4-4-12" lower-case, or 32 hex for static pods
  std::string container_id;  // 64 lower-case hex
  std::string runtime;       // "containerd", "docker", "crio", or "" when the path does not say
  std::string path;          // the cgroup path it was read from (for evidence)
  friend bool operator==(const CgroupRef&, const CgroupRef&) = default;
};

// One cgroup path ("/kubepods/burstable/pod.../...") -> the container it names, or nullopt when
// the path does not name both a pod and a container (a host process, a pod-level cgroup, an
// unknown layout).
std::optional<CgroupRef> ParseCgroupPath(std::string_view path);

// One line of /proc/<pid>/cgroup ("0::/path" for v2, "12:memory:/path" for v1).
std::optional<CgroupRef> ParseCgroupLine(std::string_view line);

// The whole file: the first line that names a pod container (v1 lists one line per hierarchy, a
// hybrid host may have an empty "0::/" line first).
std::optional<CgroupRef> ParseCgroupFile(std::string_view text);

// A pod UID as the API writes it ("0f6d...-...") from the forms found in cgroup paths: dashes or
// underscores, any case, or 32 hex digits (static pods use a config hash). nullopt otherwise.
std::optional<std::string> NormalizePodUid(std::string_view uid);

// A container id as a container status carries it ("containerd://<64hex>") -> "<64hex>".
std::optional<std::string> ContainerIdFromStatus(std::string_view status_id);

}  // namespace nccl_triage::workload
