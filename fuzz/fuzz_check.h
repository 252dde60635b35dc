// Require(): the one assertion of the fuzz targets: a broken property aborts, which libFuzzer reports as a
// crash with the input that caused it (assert() would vanish in a release-style build).
#pragma once

#include <cstdlib>

namespace nccl_triage::fuzz {

inline void Require(bool ok) {
  if (!ok) std::abort();
}

}  // namespace nccl_triage::fuzz
