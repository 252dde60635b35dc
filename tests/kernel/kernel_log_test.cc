#include "kernel/kernel_log.h"

#include <gtest/gtest.h>

namespace nccl_triage::kernel {
namespace {

TEST(KmsgRecord, ParsesHeaderMessageAndDictionary) {
  auto r = ParseKmsgRecord(
      "3,1234,5678901,-,caller=T1;mlx5_core 0000:17:00.0 mlx5_0: Port: 1 Link DOWN\n"
      " SUBSYSTEM=pci\n DEVICE=+pci:0000:17:00.0\n");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->level, 3);
  EXPECT_EQ(r->seq, 1234u);
  EXPECT_EQ(r->mono_usec, 5678901);
  EXPECT_EQ(r->message, "mlx5_core 0000:17:00.0 mlx5_0: Port: 1 Link DOWN");
  ASSERT_EQ(r->dict.size(), 2u);
  EXPECT_EQ(r->dict[1].first, "DEVICE");
  EXPECT_EQ(r->dict[1].second, "+pci:0000:17:00.0");
}

TEST(KmsgRecord, DecodesEscapedNewlinesIntoOneLine) {
  auto r = ParseKmsgRecord("4,7,100,-;NVRM: The NVIDIA GPU 0000:b3:00.0\\x0aNVRM: fallen off");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->message, "NVRM: The NVIDIA GPU 0000:b3:00.0 NVRM: fallen off");
  EXPECT_EQ(r->level, 4);  // facility bits are masked off
}

TEST(KmsgRecord, RejectsGarbageHeaders) {
  EXPECT_FALSE(ParseKmsgRecord("no header at all"));
  EXPECT_FALSE(ParseKmsgRecord("6,x,100,-;msg"));
  EXPECT_FALSE(ParseKmsgRecord("6,1;msg"));
  EXPECT_FALSE(ParseKmsgRecord(""));
}

TEST(DmesgText, ReadsMonotonicStampsAndJoinsIndentedContinuations) {
  auto r = ParseDmesgText(
      "[ 1843.308145] NVRM: The NVIDIA GPU 0000:b3:00.0\n"
      "               NVRM: (PCI ID: 10de:26b5) installed in this system has\n"
      "               NVRM: fallen off the bus and is not responding to commands.\n"
      "[ 1843.439662] NVRM: The NVIDIA probe routine failed for 1 device(s).\n");
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].mono_usec, 1843308145);
  EXPECT_NE(r[0].message.find("0000:b3:00.0 NVRM: (PCI ID"), std::string::npos);
  EXPECT_NE(r[0].message.find("fallen off the bus"), std::string::npos);
  EXPECT_EQ(r[1].mono_usec, 1843439662);
}

TEST(DmesgText, ReadsCtimeIsoRawAndSyslogFormats) {
  auto r = ParseDmesgText(
      "[Fri Aug 29 20:09:52 2025] pcieport 0000:00:1d.3: AER: Correctable error\n"
      "2025-08-29T20:09:52,500000+02:00 iso line\n"
      "<3>[   12.500000] raw line\n"
      "Feb 14 05:03:41 host kernel: mlx5_core 0000:ab:00.0 mlx5_5: Port: 1 Link INIT\n"
      "6,99,1000,-;kmsg dump line\n"
      "\n"
      "just a message\n");
  ASSERT_EQ(r.size(), 6u);
  EXPECT_EQ(r[0].wall_ms, UnixMsFromCivil(2025, 8, 29, 20, 9, 52));
  EXPECT_EQ(r[0].message, "pcieport 0000:00:1d.3: AER: Correctable error");
  EXPECT_EQ(r[1].wall_ms, UnixMsFromCivil(2025, 8, 29, 18, 9, 52) + 500);
  EXPECT_EQ(r[2].level, 3);
  EXPECT_EQ(r[2].mono_usec, 12'500'000);
  EXPECT_EQ(r[3].message, "mlx5_core 0000:ab:00.0 mlx5_5: Port: 1 Link INIT");
  EXPECT_FALSE(r[3].wall_ms.has_value());
  EXPECT_EQ(r[4].seq, 99u);
  EXPECT_EQ(r[5].message, "just a message");
}

TEST(DmesgText, KeepsGarbageAsRecordsWithoutTimes) {
  auto r = ParseDmesgText("[not a time] x\n\x01\x02\xff\n[ 12");
  ASSERT_EQ(r.size(), 3u);
  for (const auto& rec : r) {
    EXPECT_FALSE(rec.mono_usec.has_value());
    EXPECT_FALSE(rec.wall_ms.has_value());
  }
}

TEST(CivilTime, MatchesKnownUnixTimes) {
  EXPECT_EQ(UnixMsFromCivil(1970, 1, 1, 0, 0, 0), 0);
  EXPECT_EQ(UnixMsFromCivil(2000, 3, 1, 0, 0, 0), 951868800000);
}

}  // namespace
}  // namespace nccl_triage::kernel
