// The kernel log is written by whoever can make the kernel or a driver print: a process chooses
// its own name (printed in an Xid line), root can write /dev/kmsg. Lines that once crashed the
// reader, broke every JSON writer or grew /metrics without bound.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "base/utf8.h"
#include "core/ids.h"
#include "kernel/kernel_events.h"
#include "kernel/kernel_judge.h"
#include "kernel/kernel_log.h"
#include "kernel/xid_table.h"

namespace nccl_triage::kernel {
namespace {

constexpr size_t kBoundedMessage = kMaxKernelMessageBytes + 64;  // the bound plus its marker

std::vector<Finding> Of(const std::vector<Finding>& all, CauseId id) {
  std::vector<Finding> out;
  std::copy_if(all.begin(), all.end(), std::back_inserter(out),
               [&](const Finding& f) { return id == f.check; });
  return out;
}

// std::regex_search on `(.*)$` recursed once per byte: 30 KB overflowed the stack (SIGSEGV).
TEST(HostileKernelLog, AFortyKilobyteXidLineParsesIntoOneBoundedEvent) {
  const std::string text =
      "[1.0] NVRM: Xid (PCI:0000:44:00): 79, " + std::string(40'000, 'A') + "\n";
  const auto records = ParseDmesgText(text);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_LE(records[0].message.size(), kBoundedMessage);
  EXPECT_NE(records[0].message.find(kKernelMessageCutMarker), std::string::npos);
  const auto events = EventsFromRecords(records);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].xid, 79);
  EXPECT_EQ(events[0].pci, "0000:44:00");
}

TEST(HostileKernelLog, AnXidFollowedByTwentyThousandIndentedLinesStaysOneBoundedRecord) {
  std::string text = "[1.0] NVRM: Xid (PCI:0000:44:00): 79, GPU has fallen off the bus.\n";
  for (int i = 0; i < 20'000; ++i) text += "    NVRM: continued line " + std::to_string(i) + "\n";
  text += "[2.0] next record\n";
  const auto records = ParseDmesgText(text);
  ASSERT_EQ(records.size(), 2u);
  EXPECT_LE(records[0].message.size(), kBoundedMessage);
  EXPECT_NE(records[0].message.find(kKernelMessageCutMarker), std::string::npos);
  EXPECT_EQ(records[1].message, "next record");
  const auto events = EventsFromRecords(records);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].xid, 79);
}

// The message rules themselves, on a record no parser bounded (a caller that builds records).
TEST(HostileKernelLog, EveryRuleMatchesAFortyKilobyteMessageWithoutCrashing) {
  KernelRecord r;
  r.message = "mlx5_core 0000:17:00.0: Port module event[error]: module 0, " +
              std::string(40'000, 'B');
  auto e = EventFromRecord(r);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->kind, EventKind::kModule);
  EXPECT_TRUE(e->error);
  EXPECT_LE(e->state.size(), 256u);  // a capture is bounded; the line is the evidence
  r.message = "NVRM: Xid (PCI:0000:44:00): 13, " + std::string(40'000, ' ') + "x";
  e = EventFromRecord(r);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->xid, 13);
}

// Unescape wrote the raw bytes; nlohmann's dump() then threw type_error 316 in every writer.
TEST(HostileKernelLog, ANonUtf8ProcessNameInAKmsgXidGivesValidUtf8Text) {
  for (const std::string& raw :
       {std::string("3,1,100,-;NVRM: Xid (PCI:0000:44:00): 31, pid=1, name=\\xff\\xfe, Ch 8"),
        std::string("3,1,100,-;NVRM: Xid (PCI:0000:44:00): 31, pid=1, name=\xff\xfe, Ch 8\n"
                    " DEVICE=+pci:\xc3\n")}) {
    auto r = ParseKmsgRecord(raw);
    ASSERT_TRUE(r.has_value());
    EXPECT_TRUE(IsValidUtf8(r->message)) << r->message;
    EXPECT_TRUE(IsValidUtf8(r->line));
    for (const auto& [k, v] : r->dict) EXPECT_TRUE(IsValidUtf8(k) && IsValidUtf8(v));
    EXPECT_NE(r->message.find("name=\xEF\xBF\xBD\xEF\xBF\xBD, Ch 8"), std::string::npos);
    auto e = EventFromRecord(*r);
    ASSERT_TRUE(e.has_value());
    EXPECT_EQ(e->xid, 31);
    EXPECT_TRUE(IsValidUtf8(e->detail));
  }
}

// Found by kernel_log_fuzzer: a capture cut at 256 bytes inside a replacement character made a
// finding message that was not UTF-8.
TEST(HostileKernelLog, ACaptureCutAtItsBoundStaysValidUtf8) {
  const std::string text = "[1.0] mlx5_core 0004:01:00.0: Port module event[error]: module 0, Ca" +
                           std::string(120, '\x8b') + "ble error\n";
  const auto events = EventsFromRecords(ParseDmesgText(text));
  ASSERT_EQ(events.size(), 1u);
  EXPECT_TRUE(IsValidUtf8(events[0].state));
  const auto findings = JudgeKernelEvents(events, KernelDevices{}, KernelJudgeOptions{});
  for (const auto& f : findings) EXPECT_TRUE(IsValidUtf8(f.message)) << f.message;
}

TEST(HostileKernelLog, ANonUtf8ByteInDmesgTextAndACutInsideACharacterGiveValidUtf8) {
  // A three-byte character straddles the bound: the cut must not leave half of it.
  std::string text = "[1.0] NVRM: Xid (PCI:0000:44:00): 43, \xff ";
  text += std::string(kMaxKernelMessageBytes - 40, 'x') + "\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac";
  text += std::string(100, 'y') + "\n";
  const auto records = ParseDmesgText(text);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_TRUE(IsValidUtf8(records[0].message));
  EXPECT_TRUE(IsValidUtf8(records[0].line));
}

// ToInt stopped at 100,000,000: 2147483648 was read as Xid 214748364.
TEST(HostileKernelLog, Xid2147483648IsNotACodeAndIsNeverTruncatedIntoOne) {
  const auto events =
      EventsFromRecords(ParseDmesgText("[1.0] NVRM: Xid (PCI:0000:44:00): 2147483648, x\n"));
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].xid, kInvalidXid);
  EXPECT_EQ(events[0].state, "2147483648");

  const auto findings = JudgeKernelEvents(events, KernelDevices{}, KernelJudgeOptions{});
  const auto xids = Of(findings, ids::kKernelXid);
  ASSERT_EQ(xids.size(), 1u);
  EXPECT_EQ(xids[0].status, CheckStatus::kWarn);
  EXPECT_NE(xids[0].message.find("2147483648"), std::string::npos) << xids[0].message;
  EXPECT_EQ(xids[0].message.find("Xid 214748364 "), std::string::npos);
  bool quoted = false;
  for (const auto& ev : xids[0].evidence) {
    quoted |= ev.value.find("2147483648") != std::string::npos;
  }
  EXPECT_TRUE(quoted);

  KernelCounts counts;
  for (const auto& e : events) counts.Add(e);
  EXPECT_TRUE(counts.xids.empty());
  EXPECT_EQ(counts.dropped[std::string(kDroppedInvalidXid)], 1);
}

TEST(HostileKernelLog, CodesAboveTheTableBoundAndPortNumbersThatOverflowAreNotRead) {
  auto events = EventsFromRecords(ParseDmesgText(
      "[1.0] NVRM: Xid (PCI:0000:44:00): 1000, x\n"
      "[1.1] NVRM: Xid (PCI:0000:44:00): 999, x\n"
      "[1.2] mlx5_core 0000:17:00.0 mlx5_0: Port: 99999999999 Link DOWN\n"));
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].xid, kInvalidXid);
  EXPECT_EQ(events[1].xid, kMaxXidCode);
}

// 50,000 distinct codes made 49,841 series on /metrics and a 9 MB /status.
TEST(HostileKernelLog, FiftyThousandDistinctKeysAreCountedUnderAtMostTheLimit) {
  KernelCounts counts;
  for (int i = 0; i < 50'000; ++i) {
    KernelEvent xid;
    xid.kind = EventKind::kXid;
    xid.xid = i % (kMaxXidCode + 1);
    counts.Add(xid);
    KernelEvent down;
    down.kind = EventKind::kPortState;
    down.down = true;
    down.device = "mlx5_" + std::to_string(i);
    down.port = 1;
    counts.Add(down);
  }
  EXPECT_EQ(counts.xids.size(), KernelCounts::kMaxCountedKeys);
  EXPECT_EQ(counts.link_downs.size(), KernelCounts::kMaxCountedKeys);
  int64_t xid_events = 0;
  for (const auto& [code, n] : counts.xids) xid_events += n;
  EXPECT_EQ(counts.dropped[std::string(kDroppedKeyLimit)],
            (50'000 - xid_events) + (50'000 - static_cast<int64_t>(KernelCounts::kMaxCountedKeys)));
}

TEST(HostileKernelLog, FiftyThousandDistinctGpusAndPortsGiveABoundedReport) {
  std::vector<KernelEvent> events;
  for (int i = 0; i < 50'000; ++i) {
    KernelEvent xid;
    xid.kind = EventKind::kXid;
    xid.pci = "0000:" + std::to_string(i) + ":00";
    xid.xid = i % 200;
    xid.line = "NVRM: Xid (PCI:" + xid.pci + "): " + std::to_string(xid.xid) + ", x";
    events.push_back(xid);
    KernelEvent down;
    down.kind = EventKind::kPortState;
    down.down = true;
    down.device = "mlx5_" + std::to_string(i);
    down.port = 1;
    events.push_back(down);
  }
  const auto findings = JudgeKernelEvents(events, KernelDevices{}, KernelJudgeOptions{});
  for (CauseId id : {ids::kKernelXid, ids::kKernelLinkFlap}) {
    const auto of = Of(findings, id);
    ASSERT_EQ(of.size(), kMaxFindingsPerId);
    bool said = false;
    for (const auto& ev : of.back().evidence) {
      said |= ev.key == "not listed" && ev.value.find("49968 event(s)") != std::string::npos;
    }
    EXPECT_TRUE(said) << "the last finding says what was not listed";
  }
}

}  // namespace
}  // namespace nccl_triage::kernel
