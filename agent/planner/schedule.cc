#include "planner/schedule.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

namespace nccl_triage {
namespace {

int Mod(int64_t x, int m) { return static_cast<int>(((x % m) + m) % m); }

}  // namespace

int CircleRounds(int n) {
  if (n < 2) return 0;
  return n % 2 == 0 ? n - 1 : n;
}

std::vector<std::pair<int, int>> CircleRound(int n, int r) {
  std::vector<std::pair<int, int>> out;
  if (n < 2) return out;
  const int seats = n + (n % 2);
  const int m = seats - 1;  // rotating seats 0..m-1, fixed seat m (the bye when n is odd)
  if (m < n) out.emplace_back(r, m);
  for (int k = 1; k <= (m - 1) / 2; ++k) {
    out.emplace_back(Mod(r + k, m), Mod(r - k, m));
  }
  return out;
}

CoverageSchedule::CoverageSchedule(uint64_t seed) : rng_(seed) {}

uint64_t CoverageSchedule::Key(uint32_t ida, uint32_t idb) const {
  if (ida > idb) std::swap(ida, idb);
  return (static_cast<uint64_t>(ida) << 32) | idb;
}

bool CoverageSchedule::TestedPositions(int pa, int pb) const {
  return tested_.count(Key(id_[pa], id_[pb])) > 0;
}

int CoverageSchedule::RoundOf(int pa, int pb) const {
  const int n = static_cast<int>(names_.size());
  const int m = n + (n % 2) - 1;
  if (pa == m) return pb;
  if (pb == m) return pa;
  // (r + k) + (r - k) = 2r (mod m), m odd: r = (pa + pb) * (m + 1) / 2 mod m.
  return static_cast<int>((static_cast<int64_t>(pa + pb) * ((m + 1) / 2)) % m);
}

void CoverageSchedule::SetNodes(const std::vector<std::pair<std::string, std::string>>& nodes) {
  std::vector<std::pair<std::string, std::string>> sorted = nodes;
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end(),
                           [](const auto& x, const auto& y) { return x.first == y.first; }),
               sorted.end());
  // Unchanged set (and topology): keep the seating and the scores.
  if (sorted.size() == names_.size()) {
    bool same = true;
    for (const auto& [name, topo] : sorted) {
      auto it = topo_of_.find(name);
      if (it == topo_of_.end() || it->second != topo) {
        same = false;
        break;
      }
    }
    if (same) return;
  }

  // Seating. Without topology: a seeded shuffle. With topology: deal the groups round-robin
  // (one node of each group in turn), so that seats close to each other hold different groups.
  std::map<std::string, std::vector<std::string>> by_group;
  for (const auto& [name, topo] : sorted) by_group[topo].push_back(name);
  std::vector<std::string> seating;
  std::vector<int> groups;
  if (by_group.size() <= 1) {
    for (const auto& [name, topo] : sorted) seating.push_back(name);
    std::shuffle(seating.begin(), seating.end(), rng_);
    groups.assign(seating.size(), 0);
  } else {
    std::vector<std::vector<std::string>*> lists;
    for (auto& [topo, list] : by_group) {
      std::shuffle(list.begin(), list.end(), rng_);
      lists.push_back(&list);
    }
    std::vector<size_t> next(lists.size(), 0);
    while (seating.size() < sorted.size()) {
      for (size_t g = 0; g < lists.size(); ++g) {
        if (next[g] < lists[g]->size()) {
          seating.push_back((*lists[g])[next[g]++]);
          groups.push_back(static_cast<int>(g));
        }
      }
    }
  }

  names_ = std::move(seating);
  group_ = std::move(groups);
  pos_of_.clear();
  topo_of_.clear();
  for (const auto& [name, topo] : sorted) topo_of_[name] = topo;
  id_.assign(names_.size(), 0);
  for (size_t i = 0; i < names_.size(); ++i) {
    pos_of_[names_[i]] = static_cast<int>(i);
    auto [it, inserted] = stable_id_.emplace(names_[i], static_cast<uint32_t>(stable_id_.size()));
    id_[i] = it->second;
  }
  Recount();
}

void CoverageSchedule::Recount() {
  const int n = static_cast<int>(names_.size());
  const int rounds = CircleRounds(n);
  untested_.assign(rounds, 0);
  cross_untested_.assign(rounds, 0);
  last_picked_.assign(rounds, 0);
  tested_in_set_ = 0;
  for (int r = 0; r < rounds; ++r) {
    for (const auto& [pa, pb] : CircleRound(n, r)) {
      if (!tested_.empty() && TestedPositions(pa, pb)) {
        ++tested_in_set_;
        continue;
      }
      ++untested_[r];
      if (Cross(pa, pb)) ++cross_untested_[r];
    }
  }
  if (n >= 2 && tested_in_set_ == pairs_total() && !restart_cycle_) {
    // Everything in the new set was already tested: the next round starts the next cycle.
    ++cycles_;
    restart_cycle_ = true;
  }
}

std::vector<NodePair> CoverageSchedule::NextRound(
    const std::function<bool(const std::string&)>& available) {
  std::vector<NodePair> out;
  const int n = static_cast<int>(names_.size());
  const int rounds = CircleRounds(n);
  if (rounds == 0) return out;
  if (restart_cycle_) {
    restart_cycle_ = false;
    tested_.clear();
    Recount();
  }

  int best = 0;
  for (int r = 1; r < rounds; ++r) {
    auto key = [&](int x) {
      return std::make_tuple(untested_[x], cross_untested_[x],
                             -static_cast<int64_t>(last_picked_[x]));
    };
    if (key(r) > key(best)) best = r;
  }
  last_picked_[best] = ++picks_;

  std::vector<char> used(n, 0);
  std::vector<char> avail(n, 0);
  for (int i = 0; i < n; ++i) avail[i] = available(names_[i]) ? 1 : 0;
  for (const auto& [pa, pb] : CircleRound(n, best)) {
    if (avail[pa] && avail[pb]) {
      out.emplace_back(names_[pa], names_[pb]);
      used[pa] = used[pb] = 1;
    }
  }
  // Those whose partner is unavailable (or who sat out): pair among themselves.
  std::vector<int> left;
  for (int i = 0; i < n; ++i) {
    if (avail[i] && !used[i]) left.push_back(i);
  }
  std::vector<char> taken(left.size(), 0);
  for (size_t i = 0; i < left.size(); ++i) {
    if (taken[i]) continue;
    int pick = -1;
    std::tuple<bool, bool> best_key{false, false};
    for (size_t j = i + 1; j < left.size(); ++j) {
      if (taken[j]) continue;
      std::tuple<bool, bool> key{!TestedPositions(left[i], left[j]), Cross(left[i], left[j])};
      if (pick < 0 || key > best_key) {
        pick = static_cast<int>(j);
        best_key = key;
      }
    }
    if (pick < 0) break;
    taken[i] = taken[pick] = 1;
    out.emplace_back(names_[left[i]], names_[left[pick]]);
  }
  return out;
}

void CoverageSchedule::MarkTested(const NodePair& pair) {
  auto ia = pos_of_.find(pair.a);
  auto ib = pos_of_.find(pair.b);
  if (ia == pos_of_.end() || ib == pos_of_.end() || ia->second == ib->second) return;
  const int pa = ia->second;
  const int pb = ib->second;
  if (!tested_.insert(Key(id_[pa], id_[pb])).second) return;
  const int r = RoundOf(pa, pb);
  --untested_[r];
  if (Cross(pa, pb)) --cross_untested_[r];
  ++tested_in_set_;
  if (tested_in_set_ == pairs_total()) {
    // Complete: counted now; the tested set is cleared when the next cycle's first round is
    // chosen, so that the coverage gauges show n(n-1)/2 of n(n-1)/2 until then.
    ++cycles_;
    restart_cycle_ = true;
  }
}

bool CoverageSchedule::IsTested(const NodePair& pair) const {
  auto ia = pos_of_.find(pair.a);
  auto ib = pos_of_.find(pair.b);
  if (ia == pos_of_.end() || ib == pos_of_.end()) return false;
  return TestedPositions(ia->second, ib->second);
}

uint64_t CoverageSchedule::pairs_total() const {
  const uint64_t n = names_.size();
  return n < 2 ? 0 : n * (n - 1) / 2;
}

uint64_t CoverageSchedule::pairs_tested() const { return tested_in_set_; }

}  // namespace nccl_triage
