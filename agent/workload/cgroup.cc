#include "workload/cgroup.h"

#include <array>
#include <vector>

namespace nccl_triage::workload {
namespace {

bool IsHex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

char Lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

bool AllHex(std::string_view s) {
  for (char c : s) {
    if (!IsHex(c)) return false;
  }
  return !s.empty();
}

std::string LowerCopy(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = Lower(c);
  return out;
}

std::vector<std::string_view> SplitPath(std::string_view path) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    if (end > start) out.push_back(path.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

bool StripSuffix(std::string_view& s, std::string_view suffix) {
  if (!s.ends_with(suffix)) return false;
  s.remove_suffix(suffix.size());
  return true;
}

// "kubepods-besteffort-pod<uid>.slice" or "pod<uid>" -> the normalised uid.
std::optional<std::string> PodUidFromSegment(std::string_view seg) {
  if (StripSuffix(seg, ".slice")) {
    size_t at = seg.rfind("-pod");
    if (at == std::string_view::npos) return std::nullopt;
    return NormalizePodUid(seg.substr(at + 4));
  }
  if (!seg.starts_with("pod")) return std::nullopt;
  return NormalizePodUid(seg.substr(3));
}

struct ContainerSegment {
  std::string id;
  std::string runtime;
};

// "cri-containerd-<id>.scope", "docker-<id>.scope", "crio-<id>.scope", "crio-<id>", "<id>".
// "crio-conmon-<id>.scope" is CRI-O's monitor process, not the container: rejected.
std::optional<ContainerSegment> ContainerFromSegment(std::string_view seg) {
  StripSuffix(seg, ".scope");
  constexpr std::array<std::pair<std::string_view, std::string_view>, 4> kPrefixes = {{
      {"cri-containerd-", "containerd"},
      {"docker-", "docker"},
      {"crio-", "crio"},
      {"cri-o-", "crio"},
  }};
  std::string runtime;
  for (const auto& [prefix, name] : kPrefixes) {
    if (seg.starts_with(prefix)) {
      seg.remove_prefix(prefix.size());
      runtime = std::string(name);
      break;
    }
  }
  if (seg.size() != 64 || !AllHex(seg)) return std::nullopt;
  return ContainerSegment{LowerCopy(seg), runtime};
}

}  // namespace

std::optional<std::string> NormalizePodUid(std::string_view uid) {
  std::string out;
  out.reserve(uid.size());
  for (char c : uid) out.push_back(c == '_' ? '-' : Lower(c));
  if (out.size() == 32 && AllHex(out)) return out;
  if (out.size() != 36) return std::nullopt;
  for (size_t i = 0; i < out.size(); ++i) {
    bool dash_pos = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash_pos ? out[i] != '-' : !IsHex(out[i])) return std::nullopt;
  }
  return out;
}

std::optional<std::string> ContainerIdFromStatus(std::string_view status_id) {
  size_t sep = status_id.find("://");
  if (sep != std::string_view::npos) status_id.remove_prefix(sep + 3);
  if (status_id.size() != 64 || !AllHex(status_id)) return std::nullopt;
  return LowerCopy(status_id);
}

std::optional<CgroupRef> ParseCgroupPath(std::string_view path) {
  auto segments = SplitPath(path);
  size_t pod_index = segments.size();
  std::string uid;
  for (size_t i = 0; i < segments.size(); ++i) {
    if (auto u = PodUidFromSegment(segments[i])) {
      uid = *u;
      pod_index = i;
    }
  }
  if (pod_index == segments.size()) return std::nullopt;
  // The container is the deepest matching segment below the pod (nested cgroups inside the
  // container, such as init.scope, come after it).
  std::optional<ContainerSegment> container;
  for (size_t i = pod_index + 1; i < segments.size(); ++i) {
    if (auto c = ContainerFromSegment(segments[i])) container = std::move(c);
  }
  if (!container) return std::nullopt;
  return CgroupRef{uid, container->id, container->runtime, std::string(path)};
}

std::optional<CgroupRef> ParseCgroupLine(std::string_view line) {
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
  // "hierarchy-id:controllers:path"; the path itself may contain ':' so split on the first two.
  size_t a = line.find(':');
  if (a == std::string_view::npos) return std::nullopt;
  size_t b = line.find(':', a + 1);
  if (b == std::string_view::npos) return std::nullopt;
  std::string_view path = line.substr(b + 1);
  if (!path.starts_with('/')) return std::nullopt;
  return ParseCgroupPath(path);
}

std::optional<CgroupRef> ParseCgroupFile(std::string_view text) {
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    if (auto ref = ParseCgroupLine(text.substr(start, end - start))) return ref;
    start = end + 1;
  }
  return std::nullopt;
}

}  // namespace nccl_triage::workload
