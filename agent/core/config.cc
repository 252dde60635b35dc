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

}  // namespace nccl_triage
