#include "core/config.h"

#include <algorithm>

namespace nccl_triage {

bool LabelsHold(const std::map<std::string, std::string>& selector,
                const std::map<std::string, std::string>& labels) {
  return std::all_of(selector.begin(), selector.end(), [&](const auto& kv) {
    auto it = labels.find(kv.first);
    return it != labels.end() && it->second == kv.second;
  });
}

const PoolConfig* SelectPool(const std::vector<PoolConfig>& pools,
                             const std::map<std::string, std::string>& node_labels) {
  for (const PoolConfig& pool : pools) {
    if (!pool.selector.empty() && LabelsHold(pool.selector, node_labels)) return &pool;
  }
  return nullptr;
}

}  // namespace nccl_triage
