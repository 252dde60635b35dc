#include "core/nccl_device_list.h"

namespace nccl_triage {

std::optional<long long> ParseNcclInt(std::string_view text) {
  size_t i = 0;
  while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) ++i;
  bool negative = false;
  if (i < text.size() && (text[i] == '-' || text[i] == '+')) negative = text[i++] == '-';
  const size_t digits_start = i;
  long long v = 0;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9' && i - digits_start < 18) {
    v = v * 10 + (text[i] - '0');
    ++i;
  }
  if (i == digits_start) return std::nullopt;
  return negative ? -v : v;
}

NcclDeviceList ParseNcclDeviceList(std::string_view text) {
  NcclDeviceList list;
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  if (!text.empty() && text.front() == '^') {
    list.exclude = true;
    text.remove_prefix(1);
  }
  if (!text.empty() && text.front() == '=') {
    list.exact = true;
    text.remove_prefix(1);
  }
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view item = text.substr(start, end - start);
    start = end + 1;
    if (item.empty()) continue;
    NcclDeviceList::Entry e;
    const size_t colon = item.find(':');
    e.name = std::string(item.substr(0, colon));
    if (colon != std::string_view::npos) {
      const std::string_view rest = item.substr(colon + 1);
      if (auto port = ParseNcclInt(rest.substr(0, rest.find(':')))) {
        e.port = static_cast<int>(*port);
      }
    }
    if (!e.name.empty()) list.entries.push_back(std::move(e));
  }
  return list;
}

bool NcclDeviceListSelects(const NcclDeviceList& list, std::string_view name,
                           std::optional<int> port) {
  if (list.entries.empty()) return true;
  bool listed = false;
  for (const auto& e : list.entries) {
    const bool name_ok = list.exact ? name == e.name : name.starts_with(e.name);
    if (name_ok && (!port || !e.port || *e.port == *port)) {
      listed = true;
      break;
    }
  }
  return listed != list.exclude;
}

}  // namespace nccl_triage
