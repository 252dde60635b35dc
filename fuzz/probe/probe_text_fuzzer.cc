// libFuzzer target: the text a probe child writes and the files the probe reads, on arbitrary
// bytes. ParseChildOutput (the child's stdout: a JSON result line among anything else),
// DecodeUniqueId (the unique-id line that rank 0 prints and the relay hands to rank 1) and
// DefaultRouteInterface (/proc/net/route) must not crash, hang or accept what they cannot carry:
// a decoded id encodes back to the same hex, a route interface is one whitespace-free field.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "core/probe_result.h"
#include "fuzz_check.h"
#include "probe/child.h"
#include "probe/environment.h"
#include "probe/runner.h"

using nccl_triage::fuzz::Require;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace nccl_triage;
  const std::string text(reinterpret_cast<const char*>(data), size);
  if (auto r = ParseChildOutput(text)) (void)ToJson(*r).dump();
  if (auto id = DecodeUniqueId(text)) {
    auto again = DecodeUniqueId(EncodeUniqueId(*id));
    Require(again.has_value() && EncodeUniqueId(*again) == EncodeUniqueId(*id));
  }
  if (auto iface = DefaultRouteInterface(text)) {
    Require(!iface->empty() && iface->find_first_of(" \t\n") == std::string::npos);
  }
  return 0;
}
