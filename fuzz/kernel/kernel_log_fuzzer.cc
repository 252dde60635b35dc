// libFuzzer target for the kernel log: any bytes, read as saved dmesg text and as one /dev/kmsg
// record, must parse and judge without crashing, give bounded records, Xid codes in range (or
// kInvalidXid), bounded counters, and a report whose JSON dumps strictly (valid UTF-8).
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "base/utf8.h"
#include "core/report.h"
#include "fuzz_check.h"
#include "kernel/kernel_events.h"
#include "kernel/kernel_judge.h"
#include "kernel/kernel_log.h"
#include "kernel/xid_table.h"

namespace {

using nccl_triage::fuzz::Require;
namespace k = nccl_triage::kernel;

constexpr size_t kMessageBound = k::kMaxKernelMessageBytes + 64;  // the bound and its marker

void CheckRecord(const k::KernelRecord& r) {
  Require(r.message.size() <= kMessageBound);
  Require(r.line.size() <= 3 * 400 + 3);  // 400 bytes, each at most U+FFFD
  Require(nccl_triage::IsValidUtf8(r.message) && nccl_triage::IsValidUtf8(r.line));
  Require(r.dict.size() <= 32);
  for (const auto& [key, value] : r.dict) {
    Require(nccl_triage::IsValidUtf8(key) && nccl_triage::IsValidUtf8(value));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto records = k::ParseDmesgText(text);
  if (auto one = k::ParseKmsgRecord(text)) records.push_back(std::move(*one));
  for (const auto& r : records) CheckRecord(r);

  const auto events = k::EventsFromRecords(records);
  k::KernelCounts counts;
  for (const auto& e : events) {
    if (e.kind == k::EventKind::kXid) {
      Require(e.xid == k::kInvalidXid || (e.xid >= 0 && e.xid <= k::kMaxXidCode));
      Require(e.xid != k::kInvalidXid || e.state.size() <= k::kMaxXidText);
    }
    Require(e.port >= 0 && e.port <= 65535);
    counts.Add(e);
  }
  Require(counts.xids.size() <= k::KernelCounts::kMaxCountedKeys);
  Require(counts.link_downs.size() <= k::KernelCounts::kMaxCountedKeys);
  for (const auto& [code, n] : counts.xids) Require(code >= 0 && code <= k::kMaxXidCode);

  nccl_triage::NodeReport report;
  report.findings = k::JudgeKernelEvents(events, k::KernelDevices{}, k::KernelJudgeOptions{});
  // Strict dump: throws (and so aborts) on a string that is not UTF-8.
  const std::string json = nccl_triage::ToJson(report).dump();
  Require(nccl_triage::IsValidUtf8(json));
  return 0;
}
