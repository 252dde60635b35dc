// libFuzzer target: ParseListenAddress, the one piece of the HTTP server that parses text of its
// own (requests are parsed by libmicrohttpd). Nothing may crash; an address that parses has a
// host and a port in range.
#include <fuzzer/FuzzedDataProvider.h>

#include <string>

#include "exporter/http_server.h"
#include "fuzz_check.h"

using nccl_triage::fuzz::Require;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace nccl_triage;
  FuzzedDataProvider in(data, size);
  const std::string bytes = in.ConsumeRemainingBytesAsString();
  if (auto addr = ParseListenAddress(bytes); addr.ok()) {
    Require(addr->second >= 0 && addr->second <= 65535 && !addr->first.empty());
  }
  return 0;
}
