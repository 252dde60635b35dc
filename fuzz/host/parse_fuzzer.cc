// libFuzzer target: every host parser on the same arbitrary text. None may crash, hang, read out
// of bounds (ASan) or return a value that breaks its own contract.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "fuzz_check.h"
#include "host/parsers.h"

using nccl_triage::fuzz::Require;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace nccl_triage;
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  (void)ParseHexU32(text);
  (void)ParseHexU64(text);
  (void)ParseDecimalU64(text);
  (void)ParseDecimalInt(text);
  (void)ParsePkey(text);
  if (auto r = ParseRate(text)) Require(*r >= 0);
  if (auto s = ParseNumberedState(text)) Require(s->id >= 0 && !s->name.empty());
  if (auto g = ParseGid(text)) Require(g->size() == 39);
  for (const auto& [name, pair] : ParseLimits(text)) Require(!name.empty());
  (void)ParseLimitValue(text);
  (void)ParseStatusField(text, "CapEff");
  (void)ParseStatusCapEff(text);
  if (auto m = ParseStatusSeccomp(text)) Require(*m >= 0 && *m <= 2);
  for (const auto& m : ParseMountinfo(text)) {
    Require(!m.mount_point.empty() && m.mount_point.front() == '/');
    (void)ParseTmpfsSizeOption(m.super_options);
  }
  (void)ParseTmpfsSizeOption(text);
  (void)ParseCpuinfoHypervisor(text);
  (void)ParseMeminfoTotal(text);
  if (auto v = ParseNvidiaVersion(text)) Require(!v->empty());
  (void)ParseNvidiaGpuInformation(text);
  (void)ParseNamespaceLink(text);
  (void)IsUverbsDevicePath(text);
  (void)IsNvidiaGpuDevicePath(text);
  Require(UnparseableError(text).size() <= 14 + 40 + 1);
  return 0;
}
