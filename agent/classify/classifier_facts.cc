#include "classify/classifier_facts.h"

#include <algorithm>

namespace nccl_triage::classify {

bool EnvFacts::Has(std::string_view name) const {
  return std::find(names.begin(), names.end(), name) != names.end();
}

bool EnvFacts::Boosted(std::string_view name) const {
  return std::find(boosted.begin(), boosted.end(), name) != boosted.end();
}

RankState* RankFacts::Rank(std::string_view key) {
  auto it = ranks.find(key);
  if (it != ranks.end()) return &it->second;
  if (ranks.size() >= kMaxRanks) return nullptr;
  return &ranks.emplace(std::string(key), RankState{}).first->second;
}

const RankState* RankFacts::Find(std::string_view key) const {
  auto it = ranks.find(key);
  return it != ranks.end() ? &it->second : nullptr;
}

}  // namespace nccl_triage::classify
