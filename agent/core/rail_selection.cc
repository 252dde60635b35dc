#include "core/rail_selection.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <optional>

namespace nccl_triage {
namespace {

constexpr int kMaxRailCount = 64;

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::optional<int> Number(std::string_view s) {
  int v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v < 0) return std::nullopt;
  return v;
}

bool Names(const Rail& r, std::string_view item) {
  if (auto n = Number(item)) return *n == r.index;
  if (item == r.device) return true;
  return item == r.device + ":" + std::to_string(r.port);
}

}  // namespace

StatusOr<RailSelection> ParseRailSelection(std::string_view text) {
  text = Trim(text);
  RailSelection sel;
  if (text == "all") {
    sel.all = true;
    return sel;
  }
  const std::string expected = "expected all, a number of rails per sweep (1.." +
                               std::to_string(kMaxRailCount) +
                               "), or a list of rails and HCAs such as 0,3 or mlx5_3,mlx5_5";
  if (text.empty()) return InvalidArgument(expected + ", got ''");
  if (text.find(',') == std::string_view::npos) {
    if (auto n = Number(text)) {
      if (*n < 1 || *n > kMaxRailCount) {
        return InvalidArgument(expected + ", got '" + std::string(text) + "'");
      }
      sel.count = *n;
      return sel;
    }
  }
  while (!text.empty()) {
    const size_t comma = text.find(',');
    std::string_view item = Trim(text.substr(0, comma));
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    const bool name_like = !item.empty() && std::all_of(item.begin(), item.end(), [](char c) {
      return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
             c == '_' || c == '-' || c == ':' || c == '.';
    });
    // A name starts with a letter or digit ("-1" is no rail), and "all" is not part of a list.
    if (name_like && (item == "all" || !std::isalnum(static_cast<unsigned char>(item.front())))) {
      return InvalidArgument(expected + ", got the item '" + std::string(item) + "'");
    }
    if (!name_like) return InvalidArgument(expected + ", got the item '" + std::string(item) + "'");
    sel.items.emplace_back(item);
  }
  return sel;
}

std::vector<int> SelectRails(const std::vector<Rail>& rails, const RailSelection& sel,
                             uint64_t turn) {
  std::vector<int> out;
  const int n = static_cast<int>(rails.size());
  if (n == 0) return out;
  if (sel.all) {
    for (const auto& r : rails) out.push_back(r.index);
  } else if (sel.count > 0) {
    const int k = std::min(sel.count, n);
    const uint64_t groups =
        (static_cast<uint64_t>(n) + static_cast<uint64_t>(k) - 1) / static_cast<uint64_t>(k);
    const int start = static_cast<int>((turn % groups) * static_cast<uint64_t>(k));
    for (int i = 0; i < k; ++i) out.push_back(rails[static_cast<size_t>((start + i) % n)].index);
    std::sort(out.begin(), out.end());
  } else {
    for (const auto& r : rails) {
      if (std::any_of(sel.items.begin(), sel.items.end(),
                      [&](const std::string& item) { return Names(r, item); })) {
        out.push_back(r.index);
      }
    }
  }
  return out;
}

std::vector<std::string> RailSelectionMisses(const std::vector<Rail>& rails,
                                             const RailSelection& sel) {
  std::vector<std::string> out;
  for (const auto& item : sel.items) {
    if (std::none_of(rails.begin(), rails.end(), [&](const Rail& r) { return Names(r, item); })) {
      out.push_back(item);
    }
  }
  return out;
}

StatusOr<std::vector<Rail>> RailsToProbe(const std::vector<Rail>& table,
                                         const RailSelection& selection, uint64_t turn) {
  if (table.empty() && selection.items.empty()) {
    return InvalidArgument(
        "this node has no rails (no HCA port found); name the HCAs to probe, e.g. mlx5_0");
  }
  std::vector<Rail> out;
  for (int index : SelectRails(table, selection, turn)) {
    auto it =
        std::find_if(table.begin(), table.end(), [&](const Rail& r) { return r.index == index; });
    if (it != table.end()) out.push_back(*it);
  }
  for (const auto& miss : RailSelectionMisses(table, selection)) {
    if (Number(miss)) {
      return InvalidArgument("this node has no rail " + miss + " (it has " +
                             std::to_string(table.size()) + ")");
    }
    Rail r;
    r.index = -1;
    r.device = miss;
    r.port = 1;
    if (const size_t colon = miss.find(':'); colon != std::string::npos) {
      auto port = Number(std::string_view(miss).substr(colon + 1));
      if (!port || *port < 1) {
        return InvalidArgument("'" + miss + "' is not an HCA port (expected mlx5_3 or mlx5_3:1)");
      }
      r.device = miss.substr(0, colon);
      r.port = *port;
    }
    r.state = "absent";
    out.push_back(std::move(r));
  }
  return out;
}

std::string RailIbHca(const Rail& rail) {
  return "=" + rail.device + ":" + std::to_string(rail.port);
}

double RailExpectedBytesPerSecond(const Rail& rail) {
  return rail.rate_gbps && *rail.rate_gbps > 0 ? *rail.rate_gbps * 1e9 / 8 : 0;
}

}  // namespace nccl_triage
