// libFuzzer target: text from the API server. ParseRetryAfter (a 429/503's Retry-After header)
// and NodeLabelsFromJson (the agent's GET of its Node, whose labels it passes to the coordinator)
// on arbitrary bytes: no crash, a Retry-After is never negative, labels are JSON-safe text, and
// UrlEncode leaves only unreserved characters and escapes.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "coordinator_client/session.h"
#include "fuzz_check.h"
#include "kube/kube_api.h"

using nccl_triage::fuzz::Require;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace nccl_triage;
  const std::string text(reinterpret_cast<const char*>(data), size);
  if (auto s = ParseRetryAfter(text)) Require(s->count() >= 0);
  auto labels = NodeLabelsFromJson(text);
  (void)nlohmann::json(labels).dump();
  const std::string encoded = UrlEncode(text);
  for (char c : encoded) {
    Require((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            std::string_view("-._~%").find(c) != std::string_view::npos);
  }
  return 0;
}
