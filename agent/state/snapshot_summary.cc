#include "state/snapshot_summary.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <tuple>

namespace nccl_triage {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\n'))
    s.remove_prefix(1);
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\t' || s.back() == '\n' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

std::optional<double> TmpfsSizeFromOptions(std::string_view options,
                                           std::optional<uint64_t> mem_total) {
  while (!options.empty()) {
    size_t comma = options.find(',');
    std::string_view opt = options.substr(0, comma);
    if (opt.substr(0, 5) == "size=") return ParseTmpfsSize(opt.substr(5), mem_total);
    if (comma == std::string_view::npos) break;
    options.remove_prefix(comma + 1);
  }
  // tmpfs without size= gets half of RAM.
  if (mem_total) return static_cast<double>(*mem_total) / 2;
  return std::nullopt;
}

}  // namespace

bool ParseNumberedState(std::string_view text, int* id, std::string* name) {
  text = Trim(text);
  size_t colon = text.find(':');
  if (colon == std::string_view::npos || colon == 0) return false;
  int value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + colon, value);
  if (ec != std::errc() || ptr != text.data() + colon) return false;
  std::string_view rest = Trim(text.substr(colon + 1));
  if (rest.empty()) return false;
  *id = value;
  *name = std::string(rest);
  return true;
}

std::optional<double> ParseTmpfsSize(std::string_view value, std::optional<uint64_t> mem_total) {
  value = Trim(value);
  if (value.empty()) return std::nullopt;
  double number = 0;
  auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), number);
  if (ec != std::errc() || number < 0 || !std::isfinite(number)) return std::nullopt;
  std::string_view suffix(ptr, static_cast<size_t>(value.data() + value.size() - ptr));
  if (suffix.empty()) return number;
  if (suffix.size() != 1) return std::nullopt;
  switch (suffix[0]) {
    case 'k':
    case 'K':
      return number * 1024;
    case 'm':
    case 'M':
      return number * 1024 * 1024;
    case 'g':
    case 'G':
      return number * 1024 * 1024 * 1024;
    case 't':
    case 'T':
      return number * 1024 * 1024 * 1024 * 1024;
    case '%':
      if (!mem_total) return std::nullopt;
      return static_cast<double>(*mem_total) * number / 100;
    default:
      return std::nullopt;
  }
}

SnapshotSummary Summarize(const NodeSnapshot& snapshot, const ExpectConfig& expect) {
  SnapshotSummary s;
  s.node = snapshot.node;
  s.taken_at_unix_ms = snapshot.taken_at_unix_ms;
  s.rails = RailTable(snapshot);
  double best_rate = 0;
  for (const auto& dev : snapshot.ib_devices) {
    for (const auto& port : dev.ports) {
      PortSummary p;
      p.device = dev.name;
      p.port = port.num;
      if (port.state.ok()) ParseNumberedState(*port.state.value, &p.state_id, &p.state);
      if (port.phys_state.ok()) {
        ParseNumberedState(*port.phys_state.value, &p.phys_state_id, &p.phys_state);
      }
      if (port.rate_gbps.ok() && std::isfinite(*port.rate_gbps.value) &&
          *port.rate_gbps.value >= 0) {
        p.rate_bytes_per_second = *port.rate_gbps.value * 1e9 / 8;
        best_rate = std::max(best_rate, *p.rate_bytes_per_second);
      }
      if (port.link_layer.ok()) p.link_layer = *port.link_layer.value;
      for (std::string_view name : kPortErrorCounters) {
        auto it = port.counters.find(std::string(name));
        if (it != port.counters.end()) p.error_counters.emplace(it->first, it->second);
      }
      s.ports.push_back(std::move(p));
    }
  }
  std::sort(s.ports.begin(), s.ports.end(), [](const PortSummary& a, const PortSummary& b) {
    return std::tie(a.device, a.port) < std::tie(b.device, b.port);
  });
  if (expect.rate_gbps) {
    s.expected_ib_bytes_per_second = *expect.rate_gbps * 1e9 / 8;
  } else if (best_rate > 0) {
    s.expected_ib_bytes_per_second = best_rate;
  }
  if (snapshot.memlock.ok()) {
    const Limit& soft = snapshot.memlock.value->soft;
    s.memlock_limit_bytes =
        soft.unlimited ? std::numeric_limits<double>::infinity() : static_cast<double>(soft.value);
  }
  for (const auto& m : snapshot.mounts) {
    if (m.mount_point != "/dev/shm") continue;
    s.shm_size_bytes = TmpfsSizeFromOptions(m.super_options, snapshot.mem_total_bytes.value);
  }
  return s;
}

nlohmann::json ToJson(const SnapshotSummary& s) {
  auto opt = [](const std::optional<double>& v) {
    if (!v) return nlohmann::json(nullptr);
    if (std::isinf(*v)) return nlohmann::json("unlimited");
    return nlohmann::json(*v);
  };
  nlohmann::json ports = nlohmann::json::array();
  for (const auto& p : s.ports) {
    ports.push_back({{"device", p.device},
                     {"port", p.port},
                     {"state", p.state},
                     {"phys_state", p.phys_state},
                     {"rate_bytes_per_second", opt(p.rate_bytes_per_second)},
                     {"link_layer", p.link_layer},
                     {"error_counters", p.error_counters}});
  }
  return {{"node", s.node},
          {"taken_at_unix_ms", s.taken_at_unix_ms},
          {"ports", ports},
          {"memlock_limit_bytes", opt(s.memlock_limit_bytes)},
          {"shm_size_bytes", opt(s.shm_size_bytes)},
          {"expected_ib_bytes_per_second", opt(s.expected_ib_bytes_per_second)},
          {"pool", s.pool}};
}

}  // namespace nccl_triage
