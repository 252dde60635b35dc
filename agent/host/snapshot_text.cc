#include "host/snapshot_text.h"

#include <map>
#include <type_traits>
#include <vector>

namespace nccl_triage {
namespace {

// The length of the valid UTF-8 sequence starting at s[i] (RFC 3629: no overlong forms, no
// surrogates, nothing above U+10FFFF), or 0.
size_t Utf8Length(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  if (c < 0x80) return 1;
  size_t n = 0;
  unsigned char lo = 0x80, hi = 0xbf;  // bounds of the second byte
  if (c >= 0xc2 && c <= 0xdf) {
    n = 2;
  } else if (c >= 0xe0 && c <= 0xef) {
    n = 3;
    if (c == 0xe0) lo = 0xa0;
    if (c == 0xed) hi = 0x9f;
  } else if (c >= 0xf0 && c <= 0xf4) {
    n = 4;
    if (c == 0xf0) lo = 0x90;
    if (c == 0xf4) hi = 0x8f;
  } else {
    return 0;
  }
  if (i + n > s.size() || b(i + 1) < lo || b(i + 1) > hi) return 0;
  for (size_t k = 2; k < n; ++k) {
    if (b(i + k) < 0x80 || b(i + k) > 0xbf) return 0;
  }
  return n;
}

bool IsControl(unsigned char c) { return (c < 0x20 && c != '\t') || c == 0x7f; }

void Escape(std::string& s) {
  if (!IsCleanText(s)) s = EscapeText(s);
}

template <typename T>
void Escape(Fact<T>& f) {
  if constexpr (std::is_same_v<T, std::string>) {
    if (f.value) Escape(*f.value);
  }
  Escape(f.source);
  Escape(f.error);
}

void Escape(std::vector<std::string>& v) {
  for (auto& s : v) Escape(s);
}

template <typename V>
void EscapeKeys(std::map<std::string, V>& m) {
  bool clean = true;
  for (const auto& [k, v] : m) clean = clean && IsCleanText(k);
  if (clean) return;
  std::map<std::string, V> out;
  for (auto& [k, v] : m) out.emplace(EscapeText(k), std::move(v));
  m = std::move(out);
}

}  // namespace

bool IsCleanText(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    size_t n = Utf8Length(text, i);
    if (n == 0 || (n == 1 && IsControl(static_cast<unsigned char>(text[i])))) return false;
    i += n;
  }
  return true;
}

std::string EscapeText(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    size_t n = Utf8Length(text, i);
    const auto c = static_cast<unsigned char>(text[i]);
    if (n == 0 || (n == 1 && IsControl(c))) {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xf];
      ++i;
      continue;
    }
    out.append(text.substr(i, n));
    i += n;
  }
  return out;
}

void EscapeSnapshotText(NodeSnapshot& s) {
  for (auto* str : {&s.schema, &s.node, &s.root, &s.pci_error, &s.mounts_error, &s.proc_scan_error,
                    &s.live.verbs_error}) {
    Escape(*str);
  }
  Escape(s.kernel_release);
  Escape(s.arch);
  Escape(s.hypervisor);
  Escape(s.mem_total_bytes);
  for (auto& d : s.pci_devices) {
    Escape(d.bdf);
    Escape(d.path);
    Escape(d.path_error);
    Escape(d.numa_node);
  }
  for (auto& d : s.ib_devices) {
    Escape(d.name);
    Escape(d.pci_bdf);
    for (auto* f : {&d.node_type, &d.node_guid, &d.fw_ver, &d.hca_type, &d.board_id}) Escape(*f);
    for (auto& p : d.ports) {
      for (auto* f : {&p.state, &p.phys_state, &p.rate_text, &p.link_layer}) Escape(*f);
      Escape(p.rate_gbps);
      for (auto* f : {&p.lid, &p.sm_lid, &p.sm_sl, &p.cap_mask}) Escape(*f);
      Escape(p.pkeys_error);
      Escape(p.counters_error);
      for (auto& g : p.gids) {
        Escape(g.gid);
        Escape(g.type);
        Escape(g.ndev);
      }
      EscapeKeys(p.counters);
      EscapeKeys(p.hw_counters);
    }
  }
  for (auto& u : s.uverbs) {
    Escape(u.name);
    Escape(u.ibdev);
  }
  Escape(s.dev_infiniband);
  for (auto& n : s.interfaces) {
    Escape(n.name);
    Escape(n.operstate);
    Escape(n.type);
    Escape(n.mtu);
    Escape(n.addresses);
  }
  for (auto& m : s.modules) {
    Escape(m.name);
    Escape(m.version);
    Escape(m.source);
  }
  Escape(s.memlock);
  Escape(s.nofile);
  Escape(s.cap_eff);
  Escape(s.seccomp_mode);
  for (auto& m : s.mounts) {
    for (auto* str : {&m.mount_point, &m.fs_type, &m.source, &m.super_options}) Escape(*str);
  }
  for (auto* f : {&s.self_netns, &s.init_netns, &s.apparmor_profile, &s.nvidia_driver_version}) {
    Escape(*f);
  }
  Escape(s.selinux_enforce);
  for (auto& g : s.gpus) {
    Escape(g.bdf);
    Escape(g.model);
    Escape(g.source);
  }
  for (auto* holders : {&s.uverbs_holders, &s.gpu_holders}) {
    for (auto& h : *holders) {
      Escape(h.comm);
      Escape(h.device);
    }
  }
  Escape(s.live.verbs_devices);
  for (auto& p : s.live.verbs_ports) {
    Escape(p.device);
    Escape(p.state);
    Escape(p.link_layer);
  }
  for (auto& m : s.live.mr_registrations) {
    Escape(m.device);
    Escape(m.error);
  }
  EscapeKeys(s.files_read);
}

}  // namespace nccl_triage
