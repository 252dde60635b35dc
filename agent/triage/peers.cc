#include "triage/peers.h"

#include <algorithm>

namespace nccl_triage::triage {
namespace {

constexpr size_t kMaxNames = 8;

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || IsDigit(c) || c == '.' || c == '-' ||
         c == '_' || c == ':' || c == '%' || c == '[' || c == ']';
}

bool IsIpv4(std::string_view s) {
  int parts = 0;
  size_t i = 0;
  while (i < s.size()) {
    size_t n = 0;
    while (i + n < s.size() && IsDigit(s[i + n])) ++n;
    if (n == 0 || n > 3) return false;
    ++parts;
    i += n;
    if (i == s.size()) break;
    if (s[i] != '.') return false;
    ++i;
    if (i == s.size()) return false;
  }
  return parts == 4;
}

// "eth0:10.0.0.1" -> "10.0.0.1"; "[fe80::1%ib0]" -> "fe80::1"; "::ffff:10.0.0.2" -> "10.0.0.2".
std::string Clean(std::string_view t) {
  if (!t.empty() && t.front() == '[') t.remove_prefix(1);
  if (!t.empty() && t.back() == ']') t.remove_suffix(1);
  if (const size_t pct = t.find('%'); pct != std::string_view::npos) t = t.substr(0, pct);
  if (const size_t colon = t.rfind(':');
      colon != std::string_view::npos && IsIpv4(t.substr(colon + 1))) {
    t = t.substr(colon + 1);  // an interface prefix or an IPv4-mapped IPv6 address
  }
  while (!t.empty() && (t.back() == '.' || t.back() == ':')) t.remove_suffix(1);
  return std::string(t);
}

void Add(std::vector<std::string>& out, std::string name) {
  if (name.empty() || out.size() >= kMaxNames) return;
  if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(std::move(name));
}

// The name that ends just before `end` (exclusive).
std::string_view NameBefore(std::string_view line, size_t end) {
  size_t start = end;
  while (start > 0 && IsNameChar(line[start - 1])) --start;
  return line.substr(start, end - start);
}

}  // namespace

std::vector<std::string> PeerNamesIn(std::string_view line) {
  std::vector<std::string> out;
  for (size_t i = 0; i < line.size(); ++i) {
    // NCCL: name<port>
    if (line[i] == '<') {
      size_t j = i + 1;
      while (j < line.size() && IsDigit(line[j])) ++j;
      if (j == i + 1 || j >= line.size() || line[j] != '>') continue;
      if (line.substr(i + 1, j - i - 1) == "0") continue;  // a local listening socket
      Add(out, Clean(NameBefore(line, i)));
      continue;
    }
    // gloo and c10d: [address]:port
    if (line[i] == ']' && i + 2 < line.size() && line[i + 1] == ':' && IsDigit(line[i + 2])) {
      std::string_view name = NameBefore(line, i + 1);
      if (!name.empty() && name.front() == '[') Add(out, Clean(name));
      continue;
    }
  }
  // RoCE GIDs of the remote side: `remote GID ::ffff:10.0.0.2`, `remoteGids ::ffff:...`.
  for (size_t pos = line.find("::ffff:"); pos != std::string_view::npos;
       pos = line.find("::ffff:", pos + 1)) {
    const std::string_view before = line.substr(0, pos);
    if (before.find("emote") == std::string_view::npos) continue;
    size_t end = pos + 7;
    while (end < line.size() && (IsDigit(line[end]) || line[end] == '.')) ++end;
    std::string_view ip = line.substr(pos + 7, end - pos - 7);
    if (IsIpv4(ip)) Add(out, std::string(ip));
  }
  return out;
}

std::optional<PeerMatch> ResolvePeer(std::string_view name, const std::vector<JobPod>& pods) {
  if (name.empty()) return std::nullopt;
  for (const JobPod& p : pods) {
    if (std::find(p.pod_ips.begin(), p.pod_ips.end(), name) != p.pod_ips.end() ||
        (!p.pod_ip.empty() && p.pod_ip == name)) {
      return PeerMatch{std::string(name), p.name, p.node, p.host_network ? "host IP" : "pod IP"};
    }
  }
  for (const JobPod& p : pods) {
    if (p.name == name) return PeerMatch{std::string(name), p.name, p.node, "pod name"};
    if (!p.hostname.empty() && p.hostname == name) {
      return PeerMatch{std::string(name), p.name, p.node, "host name"};
    }
  }
  // A node: by name (hostNetwork pods print it) or host IP; a pod only when it is the job's one
  // pod on that node.
  for (const JobPod& p : pods) {
    if (p.node != name && p.host_ip != name) continue;
    const auto on_node =
        std::count_if(pods.begin(), pods.end(), [&](const JobPod& q) { return q.node == p.node; });
    return PeerMatch{std::string(name), on_node == 1 ? p.name : std::string(), p.node,
                     p.node == name ? "node name" : "host IP"};
  }
  return std::nullopt;
}

}  // namespace nccl_triage::triage
