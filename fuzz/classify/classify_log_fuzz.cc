// libFuzzer target for the NCCL log classifier: any bytes must classify without crashing,
// hanging or producing JSON that cannot be serialised, and the streaming reader must agree with
// the in-memory path.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <string_view>

#include "classify/classifier.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  nccl_triage::Classification a = nccl_triage::ClassifyLogText(text);

  std::istringstream in{std::string(text)};
  nccl_triage::Classification b = nccl_triage::ClassifyLog(in);

  std::string ja = nccl_triage::ToJson(a).dump();  // throws (and aborts) on invalid UTF-8
  std::string jb = nccl_triage::ToJson(b).dump();
  if (ja != jb) std::abort();

  std::set<std::string> ranks;
  for (const auto& r : a.roots) {
    if (!ranks.insert(r.rank).second) std::abort();  // one root per rank
    if (r.line.number == 0 || r.line.number > a.lines) std::abort();
  }
  for (const auto& c : a.causes) {
    if (c.evidence.size() > 5) std::abort();
    for (const auto& l : c.evidence) {
      if (l.text.size() > 3 * 4096) std::abort();  // 4 KiB, each byte at most U+FFFD
    }
  }
  if (a.fault_class == nccl_triage::FaultClass::kUnknown && a.reason.empty()) std::abort();
  return 0;
}
