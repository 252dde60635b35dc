// libFuzzer target: SnapshotFromJson on arbitrary JSON documents. A bad shape must come back as an
// error Status (never an exception or a crash), and whatever loads must write back and load equal.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "core/snapshot_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto j = nlohmann::json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return 0;
  auto s = nccl_triage::SnapshotFromJson(j);
  if (!s.ok()) return 0;
  auto again = nccl_triage::SnapshotFromJson(nccl_triage::ToJson(*s));
  if (!again.ok() || !(*again == *s)) std::abort();
  return 0;
}
