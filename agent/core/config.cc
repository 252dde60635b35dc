#include "core/config.h"

#include <algorithm>

namespace nccl_triage {

const PoolConfig* SelectPool(const std::vector<PoolConfig>& pools,
                             const std::map<std::string, std::string>& node_labels) {
  for (const PoolConfig& pool : pools) {
    const bool match = std::all_of(pool.selector.begin(), pool.selector.end(), [&](const auto& kv) {
      auto it = node_labels.find(kv.first);
      return it != node_labels.end() && it->second == kv.second;
    });
    if (match && !pool.selector.empty()) return &pool;
  }
  return nullptr;
}

std::optional<RemediationMode> ParseRemediationMode(std::string_view s) {
  if (s == "off") return RemediationMode::kOff;
  if (s == "dry-run") return RemediationMode::kDryRun;
  if (s == "taint") return RemediationMode::kTaint;
  if (s == "cordon") return RemediationMode::kCordon;
  return std::nullopt;
}

std::string_view ToString(RemediationMode m) {
  switch (m) {
    case RemediationMode::kOff:
      return "off";
    case RemediationMode::kDryRun:
      return "dry-run";
    case RemediationMode::kTaint:
      return "taint";
    case RemediationMode::kCordon:
      return "cordon";
  }
  return "off";
}

}  // namespace nccl_triage
