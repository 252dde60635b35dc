// Small vector helpers shared across components. Header-only; pure.
#pragma once

#include <algorithm>
#include <vector>

namespace nccl_triage {

// Appends each element of `from` that `into` does not hold yet, keeping both orders (cause lists
// merged from several verdicts: the first to name a cause places it).
template <class T>
void AppendAbsent(std::vector<T>& into, const std::vector<T>& from) {
  for (const T& x : from) {
    if (std::find(into.begin(), into.end(), x) == into.end()) into.push_back(x);
  }
}

}  // namespace nccl_triage
