#include "core/port_history.h"

#include <charconv>
#include <sstream>

namespace nccl_triage {
namespace {

bool Up(const IbPort& p) {
  return p.state.ok() && p.phys_state.ok() &&
         p.state.value->find("ACTIVE") != std::string::npos &&
         p.phys_state.value->find("LinkUp") != std::string::npos;
}

std::string Name(const IbDevice& d, const IbPort& p) {
  return d.name + "/" + std::to_string(p.num);
}

PortMemo* Slot(PortHistory& h, const std::string& name) {
  auto it = h.ports.find(name);
  if (it != h.ports.end()) return &it->second;
  if (h.ports.size() >= kMaxRememberedPorts) return nullptr;
  return &h.ports[name];
}

// Names and reasons are one token or one line on disk.
bool Token(std::string_view s) {
  return !s.empty() && s.find_first_of(" \t\r\n") == std::string_view::npos;
}

template <typename T>
bool Number(std::string_view s, T& out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

}  // namespace

const PortMemo* PortHistory::Find(const std::string& port) const {
  auto it = ports.find(port);
  return it == ports.end() ? nullptr : &it->second;
}

bool PortHistory::Flapping(const std::string& port) const {
  const PortMemo* m = Find(port);
  return m != nullptr && m->last_flap_unix_ms > 0 &&
         now_unix_ms - m->last_flap_unix_ms < flap_stable_ms;
}

void RecordPortFlaps(PortHistory& h, const NodeSnapshot& now, const NodeSnapshot* previous) {
  if (previous == nullptr) return;
  for (const auto& d : now.ib_devices) {
    for (const auto& p : d.ports) {
      const IbPort* old = FindPort(*previous, d.name, p.num);
      if (old == nullptr) continue;
      std::string reason;
      if (Up(*old) && !Up(p) && p.state.ok()) {
        reason = "left ACTIVE (" + *old->state.value + " -> " + *p.state.value + ")";
      }
      auto was = old->counters.find("link_downed");
      auto is = p.counters.find("link_downed");
      if (was != old->counters.end() && is != p.counters.end() && is->second > was->second) {
        if (!reason.empty()) reason += ", ";
        reason += "link_downed +" + std::to_string(is->second - was->second);
      }
      if (reason.empty()) continue;
      if (PortMemo* m = Slot(h, Name(d, p))) {
        m->last_flap_unix_ms = now.taken_at_unix_ms;
        m->flap_reason = reason;
      }
    }
  }
}

void RecordPortsSeen(PortHistory& h, const NodeSnapshot& now) {
  for (const auto& d : now.ib_devices) {
    for (const auto& p : d.ports) {
      if (!Up(p)) continue;
      if (PortMemo* m = Slot(h, Name(d, p))) m->seen_up = true;
    }
  }
  h.first_poll = false;
}

std::string FormatPortHistory(const PortHistory& h) {
  std::string out = "boot_id " + (h.boot_id.empty() ? std::string("-") : h.boot_id) + "\n";
  for (const auto& [name, m] : h.ports) {
    if (!Token(name)) continue;
    std::string reason = m.flap_reason;
    for (char& c : reason) {
      if (c == '\n' || c == '\r') c = ' ';
    }
    out += "port " + name + " " + (m.seen_up ? "1" : "0") + " " +
           std::to_string(m.last_flap_unix_ms) + (reason.empty() ? "" : " " + reason) + "\n";
  }
  return out;
}

std::optional<PortHistory> ParsePortHistory(std::string_view text) {
  PortHistory h;
  bool have_boot = false;
  std::istringstream in{std::string(text)};
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    std::istringstream fields(line);
    std::string key;
    fields >> key;
    if (key == "boot_id" && !have_boot) {
      fields >> h.boot_id;
      if (h.boot_id == "-") h.boot_id.clear();
      have_boot = true;
      continue;
    }
    if (key != "port" || !have_boot || h.ports.size() >= kMaxRememberedPorts) return std::nullopt;
    std::string name, seen, flap;
    fields >> name >> seen >> flap;
    PortMemo m;
    if (!Token(name) || (seen != "0" && seen != "1") || !Number(flap, m.last_flap_unix_ms)) {
      return std::nullopt;
    }
    m.seen_up = seen == "1";
    std::getline(fields >> std::ws, m.flap_reason);
    h.ports[name] = std::move(m);
  }
  if (!have_boot) return std::nullopt;
  return h;
}

}  // namespace nccl_triage
