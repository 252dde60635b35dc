// One string literal per case: the kernel's own text, and the broken versions of it a parser must
// survive (empty, truncated, garbage, CRLF).
#include "host/parsers.h"

#include <gtest/gtest.h>

namespace nccl_triage {
namespace {

TEST(ParseHexU32, ReadsSysfsLid) {
  EXPECT_EQ(ParseHexU32("0x1a\n"), 26u);
  EXPECT_EQ(ParseHexU32("0xa659e848\n"), 0xa659e848u);
  EXPECT_EQ(ParseHexU32("0x0"), 0u);
  EXPECT_EQ(ParseHexU32("0x1a\r\n"), 26u);
}

TEST(ParseHexU32, RejectsGarbageEmptyAndOverflow) {
  EXPECT_EQ(ParseHexU32(""), std::nullopt);
  EXPECT_EQ(ParseHexU32("0x"), std::nullopt);
  EXPECT_EQ(ParseHexU32("0xzz"), std::nullopt);
  EXPECT_EQ(ParseHexU32("0x1a garbage"), std::nullopt);
  EXPECT_EQ(ParseHexU32("0x100000000"), std::nullopt);
  EXPECT_EQ(ParseHexU32("-0x1"), std::nullopt);
}

TEST(ParsePkey, ReadsFullAndLimitedMembership) {
  EXPECT_EQ(ParsePkey("0xffff\n"), 0xffff);
  EXPECT_EQ(ParsePkey("0x7fff\n"), 0x7fff);
  EXPECT_EQ(ParsePkey("0x8001"), 0x8001);
  EXPECT_EQ(ParsePkey("0x0000\n"), 0);
}

TEST(ParsePkey, RejectsMissingPrefixTooWideAndEmpty) {
  EXPECT_EQ(ParsePkey("ffff"), std::nullopt);
  EXPECT_EQ(ParsePkey("0x10000"), std::nullopt);
  EXPECT_EQ(ParsePkey(""), std::nullopt);
  EXPECT_EQ(ParsePkey("0x"), std::nullopt);
}

TEST(ParsePciPath, ReadsTheChainOfBridgesFromTheRootComplex) {
  EXPECT_EQ(
      *ParsePciPath("../../../devices/pci0000:00/0000:00:01.1/0000:01:00.0/0000:07:00.0\n",
                    "0000:07:00.0"),
      (std::vector<std::string>{"pci0000:00", "0000:00:01.1", "0000:01:00.0", "0000:07:00.0"}));
  // ARM: the root complex under a platform device; Intel VMD: a nested domain.
  EXPECT_EQ(ParsePciPath("../../../devices/platform/4c00000000.pcie/pci0004:00/0004:00:00.0/"
                         "0004:01:00.0",
                         "0004:01:00.0")
                ->size(),
            3u);
  EXPECT_EQ(ParsePciPath("../../../devices/pci0000:00/0000:00:0e.0/pci10000:e0/10000:e0:1d.0/"
                         "10000:e1:00.0",
                         "10000:e1:00.0")
                ->size(),
            5u);
}

TEST(ParsePciPath, RejectsWhatIsNotAPciPath) {
  EXPECT_FALSE(ParsePciPath("", "0000:07:00.0"));
  EXPECT_FALSE(ParsePciPath("../../../devices/virtual/net/lo", "lo"));
  EXPECT_FALSE(ParsePciPath("../../../devices/pci0000:00/0000:07:00.0", "0000:08:00.0"));
  EXPECT_FALSE(ParsePciPath("../../../devices/pci0000:00/usb1/0000:07:00.0", "0000:07:00.0"));
  EXPECT_FALSE(
      ParsePciPath("../../../devices/pci0000:00/0000:zz:00.0/0000:07:00.0", "0000:07:00.0"));
  EXPECT_FALSE(ParsePciPath("../../../devices/pci0000:00", "pci0000:00"));
}

TEST(ParseRate, ReadsEveryGeneration) {
  EXPECT_DOUBLE_EQ(*ParseRate("200 Gb/sec (4X HDR)\n"), 200.0);
  EXPECT_DOUBLE_EQ(*ParseRate("400 Gb/sec (4X NDR)\n"), 400.0);
  EXPECT_DOUBLE_EQ(*ParseRate("100 Gb/sec (2X HDR)"), 100.0);
  EXPECT_DOUBLE_EQ(*ParseRate("2.5 Gb/sec (1X SDR)\n"), 2.5);
  EXPECT_DOUBLE_EQ(*ParseRate("10 Gb/sec (4X SDR)\r\n"), 10.0);
}

TEST(ParseRate, RejectsTruncatedAndGarbage) {
  EXPECT_EQ(ParseRate(""), std::nullopt);
  EXPECT_EQ(ParseRate("200"), std::nullopt);
  EXPECT_EQ(ParseRate("200 Gb"), std::nullopt);
  EXPECT_EQ(ParseRate(" Gb/sec (4X HDR)"), std::nullopt);
  EXPECT_EQ(ParseRate("fast Gb/sec (4X HDR)"), std::nullopt);
  EXPECT_EQ(ParseRate("nan Gb/sec"), std::nullopt);
  EXPECT_EQ(ParseRate("-200 Gb/sec (4X HDR)"), std::nullopt);
}

TEST(ParseNumberedState, ReadsStateAndPhysState) {
  EXPECT_EQ(ParseNumberedState("4: ACTIVE\n"), (NumberedState{4, "ACTIVE"}));
  EXPECT_EQ(ParseNumberedState("5: LinkUp\n"), (NumberedState{5, "LinkUp"}));
  EXPECT_EQ(ParseNumberedState("7: Phy Test\n"), (NumberedState{7, "Phy Test"}));
  EXPECT_EQ(ParseNumberedState("2: Polling\r\n"), (NumberedState{2, "Polling"}));
}

TEST(ParseNumberedState, RejectsTruncatedAndGarbage) {
  EXPECT_EQ(ParseNumberedState(""), std::nullopt);
  EXPECT_EQ(ParseNumberedState("4:"), std::nullopt);
  EXPECT_EQ(ParseNumberedState("4"), std::nullopt);
  EXPECT_EQ(ParseNumberedState("ACTIVE"), std::nullopt);
  EXPECT_EQ(ParseNumberedState("x: ACTIVE"), std::nullopt);
  EXPECT_EQ(ParseNumberedState("-1: DOWN"), std::nullopt);
  EXPECT_EQ(ParseNumberedState(std::string_view("4: AC\x01TIVE", 10)), std::nullopt);
}

TEST(ParseGid, NormalisesAndRejectsWrongShape) {
  EXPECT_EQ(ParseGid("fe80:0000:0000:0000:0C42:A103:0065:8A2E\n"),
            "fe80:0000:0000:0000:0c42:a103:0065:8a2e");
  EXPECT_EQ(ParseGid("fe80:0000:0000:0000:0c42:a103:0065"), std::nullopt);
  EXPECT_EQ(ParseGid("fe80::0c42:a103:0065:8a2e"), std::nullopt);
  EXPECT_EQ(ParseGid(""), std::nullopt);
  EXPECT_TRUE(IsZeroGid("0000:0000:0000:0000:0000:0000:0000:0000"));
  EXPECT_FALSE(IsZeroGid("0000:0000:0000:0000:0000:ffff:0a0a:000b"));
}

constexpr std::string_view kLimits =
    "Limit                     Soft Limit           Hard Limit           Units     \n"
    "Max cpu time              unlimited            unlimited            seconds   \n"
    "Max stack size            8388608              unlimited            bytes     \n"
    "Max open files            1048576              1048576              files     \n"
    "Max locked memory         65536                65536                bytes     \n"
    "Max nice priority         0                    0                    \n"
    "Max realtime timeout      unlimited            unlimited            us        \n";

TEST(ParseLimits, ReadsKernelColumnLayout) {
  auto rows = ParseLimits(kLimits);
  EXPECT_EQ(rows.at("Max locked memory"), (LimitPair{{false, 65536}, {false, 65536}}));
  EXPECT_EQ(rows.at("Max open files"), (LimitPair{{false, 1048576}, {false, 1048576}}));
  EXPECT_EQ(rows.at("Max stack size"), (LimitPair{{false, 8388608}, {true, 0}}));
  EXPECT_EQ(rows.at("Max nice priority"), (LimitPair{{false, 0}, {false, 0}}));
  EXPECT_EQ(rows.count("Limit"), 0u);
}

TEST(ParseLimits, ReadsUnlimitedAndCrlf) {
  auto rows = ParseLimits(
      "Limit                     Soft Limit           Hard Limit           Units     \r\n"
      "Max locked memory         unlimited            unlimited            bytes     \r\n");
  EXPECT_EQ(rows.at("Max locked memory"), (LimitPair{{true, 0}, {true, 0}}));
}

TEST(ParseLimits, TruncatedRowIsSkippedGarbageGivesNothing) {
  EXPECT_TRUE(ParseLimits("").empty());
  EXPECT_TRUE(ParseLimits("\x7f"
                          "ELF\x02\x01\x01")
                  .empty());
  auto rows = ParseLimits(
      "Max open files            1048576              1048576              files     \n"
      "Max locked memory         655");
  EXPECT_EQ(rows.count("Max locked memory"), 0u);
  EXPECT_EQ(rows.count("Max open files"), 1u);
}

constexpr std::string_view kStatus =
    "Name:\tnccl-triage\nUmask:\t0022\nState:\tR (running)\nCapInh:\t0000000000000000\n"
    "CapPrm:\t000001ffffffffff\nCapEff:\t000001ffffffffff\nCapBnd:\t000001ffffffffff\n"
    "NoNewPrivs:\t0\nSeccomp:\t2\nSeccomp_filters:\t1\n";

TEST(ParseStatus, ReadsCapEffAndSeccomp) {
  EXPECT_EQ(ParseStatusCapEff(kStatus), 0x1ffffffffffull);
  EXPECT_EQ(ParseStatusSeccomp(kStatus), 2);
  EXPECT_EQ(ParseStatusCapEff("CapEff:\t00000000a80425fb\r\n"), 0xa80425fbull);
}

TEST(ParseStatus, RejectsMissingAndGarbage) {
  EXPECT_EQ(ParseStatusCapEff(""), std::nullopt);
  EXPECT_EQ(ParseStatusCapEff("CapEffective:\t1\n"), std::nullopt);
  EXPECT_EQ(ParseStatusCapEff("CapEff:\tzzzz\n"), std::nullopt);
  EXPECT_EQ(ParseStatusCapEff("CapEff:\t000001ffffffffff00\n"), std::nullopt);
  EXPECT_EQ(ParseStatusSeccomp("Seccomp:\t7\n"), std::nullopt);
  EXPECT_EQ(ParseStatusSeccomp("Seccomp_filters:\t1\n"), std::nullopt);
}

TEST(ParseMountinfo, ReadsShmWithSizeAndEscapes) {
  auto m = ParseMountinfo(
      "1524 1522 0:311 / /dev/shm rw,nosuid,nodev,noexec,relatime - tmpfs shm "
      "rw,size=65536k,inode64\n"
      "36 35 98:0 /mnt1 /mnt\\040two rw,noatime master:1 shared:2 - ext3 /dev/root "
      "rw,errors=continue\n");
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].mount_point, "/dev/shm");
  EXPECT_EQ(m[0].fs_type, "tmpfs");
  EXPECT_EQ(m[0].source, "shm");
  EXPECT_EQ(m[0].super_options, "rw,size=65536k,inode64");
  EXPECT_EQ(m[1].mount_point, "/mnt two");
  EXPECT_EQ(m[1].fs_type, "ext3");
  EXPECT_EQ(ParseTmpfsSizeOption(m[0].super_options), 64ull << 20);
}

TEST(ParseMountinfo, SkipsGarbageAndTruncatedLines) {
  EXPECT_TRUE(ParseMountinfo("").empty());
  EXPECT_TRUE(ParseMountinfo("garbage line without separator\n").empty());
  EXPECT_TRUE(ParseMountinfo("1524 1522 0:311 / /dev/shm rw - \n").empty());
  auto m = ParseMountinfo(
      "27 25 0:26 / /dev/shm rw,nosuid,nodev shared:4 - tmpfs tmpfs rw\r\n"
      "28 24 0:22 / /pr");
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].super_options, "rw");
  EXPECT_EQ(ParseTmpfsSizeOption(m[0].super_options), std::nullopt);
}

TEST(ParseTmpfsSizeOption, ReadsUnitsAndRejectsOverflow) {
  EXPECT_EQ(ParseTmpfsSizeOption("rw,size=1g"), 1ull << 30);
  EXPECT_EQ(ParseTmpfsSizeOption("rw,size=512m,mode=1777"), 512ull << 20);
  EXPECT_EQ(ParseTmpfsSizeOption("size=4096"), 4096u);
  EXPECT_EQ(ParseTmpfsSizeOption("size=99999999999999999999k"), std::nullopt);
  EXPECT_EQ(ParseTmpfsSizeOption("size=18014398509481984k"), std::nullopt);
  EXPECT_EQ(ParseTmpfsSizeOption("size=k"), std::nullopt);
  EXPECT_EQ(ParseTmpfsSizeOption("size=2t"), 2ull << 40);
  EXPECT_EQ(ParseTmpfsSizeOption("size=50%"), std::nullopt);
  EXPECT_EQ(ParseTmpfsSizeOption("size=16e"), std::nullopt);
}

TEST(ParseCpuinfoHypervisor, FindsFlagOnX86AndArm) {
  EXPECT_EQ(ParseCpuinfoHypervisor("processor\t: 0\nflags\t\t: fpu vme hypervisor lahf_lm\n"),
            true);
  EXPECT_EQ(ParseCpuinfoHypervisor("processor\t: 0\nflags\t\t: fpu vme de pse\n\n"), false);
  EXPECT_EQ(ParseCpuinfoHypervisor("processor\t: 0\r\nflags\t\t: fpu hypervisor\r\n"), true);
  EXPECT_EQ(ParseCpuinfoHypervisor("processor\t: 0\nFeatures\t: fp asimd evtstrm aes\n"), false);
}

TEST(ParseCpuinfoHypervisor, UnknownWithoutFlagsLine) {
  EXPECT_EQ(ParseCpuinfoHypervisor(""), std::nullopt);
  EXPECT_EQ(ParseCpuinfoHypervisor("processor\t: 0\nvendor_id\t: Authen"), std::nullopt);
  // "hypervisorx" is not the flag, nor is a model name mentioning it.
  EXPECT_EQ(ParseCpuinfoHypervisor("model name\t: hypervisor\nflags\t\t: hypervisorx\n"), false);
}

TEST(ParseMeminfoTotal, ConvertsKilobytes) {
  EXPECT_EQ(ParseMeminfoTotal("MemTotal:       24683568 kB\nMemFree:        23778036 kB\n"),
            24683568ull * 1024);
  EXPECT_EQ(ParseMeminfoTotal("MemTotal:       24683568 kB\r\n"), 24683568ull * 1024);
  EXPECT_EQ(ParseMeminfoTotal(""), std::nullopt);
  EXPECT_EQ(ParseMeminfoTotal("MemTotal:       2468"), std::nullopt);
  EXPECT_EQ(ParseMeminfoTotal("MemTotal:       lots kB\n"), std::nullopt);
  EXPECT_EQ(ParseMeminfoTotal("MemTotal: 99999999999999999999 kB\n"), std::nullopt);
}

TEST(ParseProcStatBtime, ReadsTheBootTime) {
  EXPECT_EQ(ParseProcStatBtime("cpu  10 0 5 100 0 0 0 0 0 0\nintr 1 2\nctxt 99\n"
                               "btime 1756497600\nprocesses 12\n"),
            1756497600u);
  EXPECT_EQ(ParseProcStatBtime("cpu  10 0 5 100\n"), std::nullopt);
  EXPECT_EQ(ParseProcStatBtime("btime soon\n"), std::nullopt);
}

TEST(ParseNvidiaVersion, ReadsProprietaryAndOpenModuleLines) {
  EXPECT_EQ(ParseNvidiaVersion("NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.129.03  Thu "
                               "Oct 19 18:56:32 UTC 2023\nGCC version:  gcc version 11.4.0 \n"),
            "535.129.03");
  EXPECT_EQ(ParseNvidiaVersion("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  "
                               "550.54.15  Release Build  (dvs-builder@U16-I3-B03-4-3)  Tue Mar  "
                               "5 22:15:33 UTC 2024\r\n"),
            "550.54.15");
  EXPECT_EQ(ParseNvidiaVersion("NVRM version: NVIDIA UNIX aarch64 Kernel Module  550.90.07  Fri "
                               "May 31 09:30:47 UTC 2024\n"),
            "550.90.07");
}

TEST(ParseNvidiaVersion, RejectsTruncatedAndGarbage) {
  EXPECT_EQ(ParseNvidiaVersion(""), std::nullopt);
  EXPECT_EQ(ParseNvidiaVersion("NVRM version: NVIDIA UNIX x86_64 Kern"), std::nullopt);
  EXPECT_EQ(ParseNvidiaVersion("NVRM version: NVIDIA UNIX x86_64 Kernel Module  "), std::nullopt);
  EXPECT_EQ(ParseNvidiaVersion("GCC version:  gcc version 11.4.0\n"), std::nullopt);
}

TEST(ParseNvidiaGpuInformation, ReadsModelAndMinor) {
  auto info = ParseNvidiaGpuInformation(
      "Model: \t\t NVIDIA A100-SXM4-80GB\nIRQ:   \t\t 142\nGPU UUID: \t GPU-6f4d3b8e\n"
      "Bus Location: \t 0000:07:00.0\nDevice Minor: \t 3\nGPU Excluded:\t No\n");
  ASSERT_TRUE(info);
  EXPECT_EQ(info->model, "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(info->uuid, "GPU-6f4d3b8e");
  EXPECT_EQ(info->bus_location, "0000:07:00.0");
  EXPECT_EQ(info->minor, 3);
  EXPECT_EQ(ParseNvidiaGpuInformation(""), std::nullopt);
  EXPECT_EQ(ParseNvidiaGpuInformation("IRQ: 142\n"), std::nullopt);
}

TEST(ParseNamespaceLink, AcceptsKernelFormOnly) {
  EXPECT_EQ(ParseNamespaceLink("net:[4026531840]"), "net:[4026531840]");
  EXPECT_EQ(ParseNamespaceLink("net:[]"), std::nullopt);
  EXPECT_EQ(ParseNamespaceLink("net:[40265"), std::nullopt);
  EXPECT_EQ(ParseNamespaceLink("/proc/1/ns/net"), std::nullopt);
  EXPECT_EQ(ParseNamespaceLink(""), std::nullopt);
}

TEST(DevicePaths, TellUverbsAndGpuNodesFromTheirNeighbours) {
  EXPECT_TRUE(IsUverbsDevicePath("/dev/infiniband/uverbs0"));
  EXPECT_TRUE(IsUverbsDevicePath("/dev/infiniband/uverbs17"));
  EXPECT_FALSE(IsUverbsDevicePath("/dev/infiniband/rdma_cm"));
  EXPECT_FALSE(IsUverbsDevicePath("/dev/infiniband/uverbs"));
  EXPECT_TRUE(IsNvidiaGpuDevicePath("/dev/nvidia0"));
  EXPECT_FALSE(IsNvidiaGpuDevicePath("/dev/nvidiactl"));
  EXPECT_FALSE(IsNvidiaGpuDevicePath("/dev/nvidia-uvm"));
  EXPECT_FALSE(IsNvidiaGpuDevicePath("/dev/nvidia"));
}

TEST(UnparseableError, QuotesFirstFortyPrintableCharacters) {
  EXPECT_EQ(UnparseableError("garbage\n"), "unparseable: 'garbage'");
  EXPECT_EQ(UnparseableError(std::string(100, 'x')), "unparseable: '" + std::string(40, 'x') + "'");
  EXPECT_EQ(UnparseableError(std::string_view("a\x01"
                                              "b",
                                              3)),
            "unparseable: 'a?b'");
}

}  // namespace
}  // namespace nccl_triage
