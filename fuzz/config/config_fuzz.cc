// libFuzzer target: LoadConfigFromString on arbitrary bytes must return a Config or an error
// Status, never crash or hang; an accepted Config must survive DumpConfig and load back equal.
//
//   build-fuzz/config_fuzz -max_total_time=60 -dict=fuzz/config/config.dict fuzz/config/corpus
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "config/config_loader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto config = nccl_triage::LoadConfigFromString(text);
  if (!config.ok()) {
    if (config.status().message().empty()) std::abort();  // an error always says why
    return 0;
  }
  auto again = nccl_triage::LoadConfigFromString(nccl_triage::DumpConfig(*config));
  if (!again.ok() || !(*again == *config)) std::abort();
  return 0;
}
