// The classifier's behaviour: line formats, ranks, the first failing rank, success, bad input.
#include "classify/classifier.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>
#include <string>

#include "classify/log_line.h"

namespace nccl_triage {
namespace {

TEST(ParseLogLine, ReadsTheClassicWarnFormat) {
  ParsedLine p =
      ParseLogLine("gpu-a17:4121:4190 [3] misc/ibvwrap.cc:262 NCCL WARN Call to ibv_reg_mr failed");
  EXPECT_EQ(p.level, NcclLevel::kWarn);
  EXPECT_EQ(p.rank, "gpu-a17:4121");
  EXPECT_EQ(p.file, "misc/ibvwrap.cc:262");
  EXPECT_EQ(p.message, "Call to ibv_reg_mr failed");
  EXPECT_TRUE(p.timestamp.empty());
}

TEST(ParseLogLine, ReadsTheHeadFormatWithTimestampAndFunction) {
  ParsedLine p = ParseLogLine(
      "[2026-05-20 17:02:11.482113] dgx-h200-03.cluster.local:88412:88412 [7] "
      "transport/net_ib/p2p.cc:312 (ncclIbTest) NCCL WARN NET/IB: Got completion");
  EXPECT_EQ(p.level, NcclLevel::kWarn);
  EXPECT_EQ(p.timestamp, "2026-05-20 17:02:11.482113");
  EXPECT_EQ(p.rank, "dgx-h200-03.cluster.local:88412");
  EXPECT_EQ(p.file, "transport/net_ib/p2p.cc:312");
  EXPECT_EQ(p.message, "NET/IB: Got completion");
}

TEST(ParseLogLine, ReadsInfoLinesOldCuFilesAndPluginFiles) {
  ParsedLine info = ParseLogLine("vm:508:508 [0] NCCL INFO NET/IB : No device found.");
  EXPECT_EQ(info.level, NcclLevel::kInfo);
  EXPECT_EQ(info.rank, "vm:508");
  EXPECT_EQ(info.message, "NET/IB : No device found.");
  EXPECT_EQ(ParseLogLine("p100:1:1 [0] init.cu:157 NCCL WARN Cuda failure 'x'").file,
            "init.cu:157");
  EXPECT_EQ(ParseLogLine("h:1:2 [0] ib_plugin.c:1006 NCCL WARN NET/IB : x").file,
            "ib_plugin.c:1006");
}

TEST(ParseLogLine, TreatsOtherLinesAsTextAndReadsPytorchRankPrefix) {
  ParsedLine t = ParseLogLine("[rank3]: ncclSystemError: System call failed");
  EXPECT_EQ(t.level, NcclLevel::kNone);
  EXPECT_EQ(t.rank, "rank3");
  EXPECT_EQ(t.message, "ncclSystemError: System call failed");
  EXPECT_EQ(ParseLogLine("NCCL version 2.28.9+cuda13.0").level, NcclLevel::kNone);
  EXPECT_EQ(ParseLogLine("").level, NcclLevel::kNone);
  EXPECT_EQ(ParseLogLine("[").level, NcclLevel::kNone);
}

TEST(BacktraceCode, ReadsTheResultCodeOfOldAndHeadForms) {
  EXPECT_EQ(BacktraceCode("init.cc:126 -> 5"), 5);
  EXPECT_EQ(BacktraceCode("transport/net_ib.cc:852 -> 3"), 3);
  EXPECT_EQ(BacktraceCode("init.cc:126 (ncclCommInitRank) -> 2"), 2);
  EXPECT_EQ(BacktraceCode("Connected to proxy localRank 0 -> connection 0x7f"), -1);
  EXPECT_EQ(BacktraceCode("-> 5"), -1);
  EXPECT_EQ(BacktraceCode("x -> 123456"), -1);
}

constexpr const char* kTwoRanksNoTimestamps =
    "h1:10:10 [0] NCCL INFO NCCL version 2.18.3+cuda12.2\n"
    "h2:20:20 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.2<0>\n"
    "h2:20:20 [0] misc/socket.cc:538 NCCL WARN socketProgress: Connection closed by remote peer "
    "h1<52187>\n"
    "h1:10:10 [0] misc/ibvwrap.cc:262 NCCL WARN Call to ibv_reg_mr failed with error Cannot "
    "allocate memory\n"
    "h1:10:10 [0] NCCL INFO transport/net_ib.cc:692 -> 2\n"
    "h2:20:20 [0] NCCL INFO misc/socket.cc:789 -> 6\n"
    "h1:10:10 [0] misc/ibvwrap.cc:262 NCCL WARN Call to ibv_reg_mr failed with error Cannot "
    "allocate memory\n";

TEST(LogClassifier, FirstWarnPerRankIsTheRootAndPeerExitsRankBelowARealCause) {
  Classification c = ClassifyLogText(kTwoRanksNoTimestamps);
  EXPECT_EQ(c.fault_class, FaultClass::kIbResource);
  ASSERT_EQ(c.roots.size(), 2u);
  EXPECT_EQ(c.roots[0].rank, "h1:10");  // the real cause, though the peer's line came first
  EXPECT_EQ(c.roots[0].line.number, 4u);
  EXPECT_EQ(c.roots[1].rank, "h2:20");
  EXPECT_EQ(c.roots[1].line.number, 3u);
  ASSERT_EQ(c.causes.size(), 2u);
  EXPECT_EQ(c.causes[0].cause, "limits.memlock");
  EXPECT_EQ(c.causes[0].evidence.size(), 2u);  // both WARNs of rank h1
  EXPECT_EQ(c.causes[1].cause, "peer.exited");
  ASSERT_TRUE(c.result_code.has_value());
  EXPECT_EQ(*c.result_code, 2);  // the first `-> N` after the primary rank's WARN
  EXPECT_EQ(c.nccl_version, "2.18.3");
}

TEST(LogClassifier, EarliestTimestampDecidesTheFirstFailingRank) {
  // Ranks concatenated: rank B's file comes second but it failed two seconds earlier.
  Classification c = ClassifyLogText(
      "[2025-01-01 10:00:05] a:1:1 [0] transport/net_ib.cc:1291 NCCL WARN NET/IB : Got "
      "completion from peer 10.0.0.2<1> with error 12, opcode 0, len 0, vendor err 129\n"
      "a:1:1 [0] NCCL INFO transport/net.cc:1108 -> 6\n"
      "[2025-01-01 10:00:03] b:2:2 [1] include/alloc.h:99 NCCL WARN Cuda failure 'out of "
      "memory'\n"
      "b:2:2 [1] NCCL INFO transport/p2p.cc:356 -> 1\n");
  EXPECT_EQ(c.fault_class, FaultClass::kArchitecture);
  ASSERT_EQ(c.roots.size(), 2u);
  EXPECT_EQ(c.roots[0].rank, "b:2");
  EXPECT_EQ(c.causes[0].cause, "cuda.driver");
  EXPECT_EQ(c.causes[1].cause, "ib.fabric");
  EXPECT_EQ(c.result_code, 1);
}

TEST(LogClassifier, WithoutTimestampsTheEarliestLineDecides) {
  Classification c = ClassifyLogText(
      "b:2:2 [1] include/alloc.h:99 NCCL WARN Cuda failure 'out of memory'\n"
      "a:1:1 [0] transport/net_ib.cc:1291 NCCL WARN NET/IB : Got completion from peer "
      "10.0.0.2<1> with error 12, opcode 0, len 0, vendor err 129\n");
  EXPECT_EQ(c.roots[0].rank, "b:2");
  EXPECT_EQ(c.fault_class, FaultClass::kArchitecture);
}

TEST(LogClassifier, InterleavedRanksKeepTheirOwnFirstWarn) {
  std::string log;
  for (int i = 0; i < 64; ++i) {
    log += "node" + std::to_string(i) + ":1" + std::to_string(i) + ":1 [0] NCCL INFO Init START\n";
  }
  for (int i = 63; i >= 0; --i) {
    log += "node" + std::to_string(i) + ":1" + std::to_string(i) +
           ":1 [0] misc/socket.cc:538 NCCL WARN socketProgress: Connection closed by remote "
           "peer\n";
  }
  log +=
      "node7:17:1 [0] misc/shmutils.cc:60 NCCL WARN Call to posix_fallocate failed : No space "
      "left on device\n";
  Classification c = ClassifyLogText(log);
  EXPECT_EQ(c.roots.size(), 64u);
  EXPECT_EQ(c.causes[0].cause, "shm.size");  // a real cause on a later WARN beats 64 peer exits
  EXPECT_EQ(c.fault_class, FaultClass::kArchitecture);
  EXPECT_EQ(c.causes[1].cause, "peer.exited");
  EXPECT_LE(c.causes[1].evidence.size(), 5u);  // evidence per cause is bounded
}

TEST(LogClassifier, SuccessfulRunIsHealthyAndReportsTransports) {
  Classification c = ClassifyLogText(
      "vm:1:1 [0] NCCL INFO NET/IB : No device found.\n"
      "vm:1:1 [0] NCCL INFO transport/net_ib.cc:852 -> 3\n"
      "vm:1:1 [0] NCCL INFO Using network Socket\n"
      "vm:1:1 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/Socket/0\n"
      "vm:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read\n"
      "vm:1:1 [0] NCCL INFO Channel 01/0 : 0[0] -> 2[2] via SHM/direct/direct\n"
      "vm:1:1 [0] NCCL INFO ncclCommInitRank comm 0x1 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId "
      "60 commId 0x9 - Init COMPLETE\n"
      "vm:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 60 - Destroy COMPLETE\n");
  EXPECT_EQ(c.fault_class, FaultClass::kHealthy);
  EXPECT_TRUE(c.causes.empty());
  EXPECT_TRUE(c.init_complete);
  EXPECT_EQ(c.network, "Socket");
  EXPECT_EQ(c.transports, (std::vector<std::string>{"NET/Socket", "P2P", "SHM"}));
  EXPECT_FALSE(c.result_code.has_value());
}

// The intra-node probe reports the kind NCCL chose in full (p2p.cc and shm.cc's channel lines).
TEST(LogClassifier, IntraNodeChannelKindsAreKeptInFull) {
  Classification c = ClassifyLogText(
      "h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read\n"
      "h:1:1 [0] NCCL INFO Channel 01/0 : 0[0] -> 1[1] via P2P/CUMEM/read\n"
      "h:1:1 [1] NCCL INFO Channel 00/0 : 1[1] -> 0[0] via P2P/direct pointer\n"
      "h:1:1 [2] NCCL INFO Channel 00/0 : 2[2] -> 3[3] via SHM/direct/direct\r\n"
      "h:1:1 [3] NCCL INFO Channel 00/0 : 3[3] -> 0[0] [send] via NET/Socket/0\n");
  EXPECT_EQ(c.transports, (std::vector<std::string>{"P2P", "SHM", "NET/Socket"}));
  EXPECT_EQ(c.local_transports, (std::vector<std::string>{"P2P/CUMEM/read", "P2P/direct pointer",
                                                          "SHM/direct/direct"}));
}

TEST(LogClassifier, NoDeviceFoundMattersOnlyWhenIbWasForced) {
  constexpr const char* kTail = "vm:1:1 [0] NCCL INFO NET/IB : No device found.\n";
  Classification forced = ClassifyLogText(
      std::string("vm:1:1 [0] NCCL INFO NCCL_NET set by environment to IB\n") + kTail);
  EXPECT_EQ(forced.fault_class, FaultClass::kIbResource);
  ASSERT_FALSE(forced.causes.empty());
  EXPECT_EQ(forced.causes[0].cause, "ib.hca_present");
  Classification not_forced = ClassifyLogText(kTail);
  EXPECT_EQ(not_forced.fault_class, FaultClass::kUnknown);
  EXPECT_TRUE(not_forced.causes.empty());
}

TEST(LogClassifier, LibibverbsMissingExplainsAFailedForcedIbRun) {
  Classification c = ClassifyLogText(
      "vm:1:1 [0] NCCL INFO Failed to open libibverbs.so[.1]\n"
      "vm:1:1 [0] NCCL INFO NET/IB : No device found.\n"
      "vm:1:1 [0] plugin/net.cc:379 NCCL WARN Failed to initialize any NET plugin\n"
      "vm:1:1 [0] NCCL INFO init.cc:421 -> 5\n");
  EXPECT_EQ(c.fault_class, FaultClass::kIbResource);
  ASSERT_GE(c.causes.size(), 2u);
  EXPECT_EQ(c.causes[0].cause, "ib.rdma_core_missing");
  EXPECT_EQ(c.causes[1].cause, "ib.hca_present");
  EXPECT_EQ(c.result_code, 5);
}

TEST(LogClassifier, ProxyWrappersFollowTheRootAndAreNotListedBesideIt) {
  constexpr const char* kWrapper =
      "h:1:9 [0] proxy.cc:1451 NCCL WARN [Proxy Service 0] Failed to execute operation Connect "
      "from rank 0, retcode 2\n";
  Classification with_root = ClassifyLogText(
      std::string("h:1:1 [0] misc/ibvwrap.cc:262 NCCL WARN Call to ibv_reg_mr failed with error "
                  "Cannot allocate memory\n") +
      kWrapper);
  ASSERT_EQ(with_root.causes.size(), 1u);
  EXPECT_EQ(with_root.causes[0].cause, "limits.memlock");
  Classification alone = ClassifyLogText(kWrapper);
  EXPECT_EQ(alone.fault_class, FaultClass::kUnknown);
  ASSERT_FALSE(alone.causes.empty());
  EXPECT_EQ(alone.causes[0].cause, "nccl.internal");
}

TEST(LogClassifier, UnknownWarnIsUnknownWithTheLineAsReason) {
  // A message and a file that neither the rules nor NCCL's message catalogue know.
  Classification c = ClassifyLogText(
      "x:1:1 [0] site/tuner_ext.cc:1990 NCCL WARN Something no rule knows\n"
      "x:1:1 [0] NCCL INFO site/tuner_ext.cc:2001 -> 3\n");
  EXPECT_EQ(c.fault_class, FaultClass::kUnknown);
  EXPECT_NE(c.reason.find("matches no rule"), std::string::npos);
  ASSERT_EQ(c.roots.size(), 1u);
  EXPECT_EQ(c.roots[0].line.number, 1u);
  // The same message from enqueue.cc, all of whose WARNs NCCL prints for a caller's mistakes:
  // the path names the class even though the message is new.
  Classification api = ClassifyLogText(
      "x:1:1 [0] enqueue.cc:1990 NCCL WARN Something no rule knows\n"
      "x:1:1 [0] NCCL INFO enqueue.cc:2001 -> 3\n");
  EXPECT_EQ(api.fault_class, FaultClass::kArchitecture) << api.reason;
  ASSERT_FALSE(api.causes.empty());
  EXPECT_EQ(api.causes.front().cause, "nccl.api_usage");
}

TEST(LogClassifier, OnlyPeerExitsIsUnknown) {
  Classification c = ClassifyLogText(
      "s:5:5 [1] misc/socket.cc:538 NCCL WARN socketProgress: Connection closed by remote peer "
      "x<1>\n");
  EXPECT_EQ(c.fault_class, FaultClass::kUnknown);
  ASSERT_EQ(c.causes.size(), 1u);
  EXPECT_EQ(c.causes[0].cause, "peer.exited");
  EXPECT_NE(c.reason.find("rank that failed first is not in this input"), std::string::npos);
}

TEST(LogClassifier, C10dTextWithoutNcclLinesUsesLastError) {
  Classification c = ClassifyLogText(
      "torch.distributed.DistBackendError: NCCL error in: ../ProcessGroupNCCL.cpp:1970, "
      "unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.20.5\r\n"
      "ncclSystemError: System call (e.g. socket, malloc) or external library call failed or "
      "device error. \r\n"
      "Last error:\r\n"
      "Call to ibv_reg_mr failed with error Cannot allocate memory\r\n");
  EXPECT_EQ(c.fault_class, FaultClass::kIbResource);
  EXPECT_EQ(c.causes[0].cause, "limits.memlock");
  EXPECT_EQ(c.causes[1].cause, "nccl.system");
  EXPECT_EQ(c.nccl_version, "2.20.5");
  EXPECT_EQ(c.result_code, 2);
  ASSERT_EQ(c.roots.size(), 1u);
  EXPECT_EQ(c.roots[0].line.number, 4u);
  EXPECT_EQ(c.roots[0].line.text.back(), 'y');  // CR removed
}

// ---------------------------------------------------------------------------- bad input

TEST(LogClassifierBadInput, EmptyInputIsUnknownWithAReason) {
  Classification c = ClassifyLogText("");
  EXPECT_EQ(c.fault_class, FaultClass::kUnknown);
  EXPECT_NE(c.reason.find("empty"), std::string::npos);
  std::istringstream in("");
  EXPECT_EQ(ClassifyLog(in).fault_class, FaultClass::kUnknown);
}

TEST(LogClassifierBadInput, BinaryGarbageIsUnknownAndSerialisable) {
  std::mt19937 rng(42);
  std::string garbage(1 << 16, '\0');
  for (auto& ch : garbage) ch = static_cast<char>(rng());
  Classification c = ClassifyLogText(garbage);
  EXPECT_EQ(c.fault_class, FaultClass::kUnknown);
  EXPECT_FALSE(c.reason.empty());
  EXPECT_NO_THROW((void)ToJson(c).dump());
}

TEST(LogClassifierBadInput, TenMegabyteSingleLineIsCutAndClassified) {
  std::string line(10 * 1024 * 1024, 'A');
  line =
      "h:1:1 [0] misc/ibvwrap.cc:262 NCCL WARN Call to ibv_reg_mr failed with error Cannot "
      "allocate memory " +
      line;
  Classification text = ClassifyLogText(line);
  std::istringstream in(line);
  Classification stream = ClassifyLog(in);
  for (const Classification* c : {&text, &stream}) {
    EXPECT_EQ(c->fault_class, FaultClass::kIbResource);
    ASSERT_FALSE(c->causes.empty());
    EXPECT_LE(c->causes[0].evidence[0].text.size(), 4096u);
    EXPECT_EQ(c->lines, 1u);
  }
  Classification no_match = ClassifyLogText(std::string(10 * 1024 * 1024, 'x'));
  EXPECT_EQ(no_match.fault_class, FaultClass::kUnknown);
}

TEST(LogClassifierBadInput, InvalidUtf8IsReplacedInEvidence) {
  Classification c = ClassifyLogText(
      "h\xff\xfe:1:1 [0] init.cc:904 NCCL WARN Duplicate GPU detected : rank 0 and rank 1 both on "
      "CUDA device 60 \xc3\x28 \xe2\x82 end\n");
  EXPECT_EQ(c.fault_class, FaultClass::kArchitecture);
  ASSERT_FALSE(c.causes.empty());
  std::string dumped;
  ASSERT_NO_THROW(dumped = ToJson(c).dump());
  EXPECT_NE(dumped.find("gpu.duplicate"), std::string::npos);
  EXPECT_NE(c.causes[0].evidence[0].text.find("\xEF\xBF\xBD"), std::string::npos);
}

TEST(LogClassifierBadInput, ReasonCutInsideAReplacedByteStaysValidUtf8) {
  // Found by the fuzzer: an unmatched WARN full of invalid bytes, quoted (cut) in the reason.
  std::string line = "[2026-12-02 13:08:56] vm:592:592 [0] init.cc:831 NCCL WARN Duplicate GPU d";
  line += std::string(200, '\xcf') + "vice 60\n";
  Classification c = ClassifyLogText(line);
  EXPECT_EQ(c.fault_class, FaultClass::kUnknown);
  EXPECT_NO_THROW((void)ToJson(c).dump());
}

TEST(LogClassifierBadInput, CrlfLineEndsAreIgnored) {
  Classification c = ClassifyLogText(
      "vm:1:1 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/IB/0\r\n"
      "vm:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 60 - Init COMPLETE\r\n"
      "vm:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 60 - Destroy COMPLETE\r\n");
  EXPECT_EQ(c.fault_class, FaultClass::kHealthy);
  EXPECT_EQ(c.transports, (std::vector<std::string>{"NET/IB"}));
}

// Found by classify_log_fuzz: a channel line cut right after "via NET/IB" threw out_of_range
// (std::terminate) in the port parser.
TEST(LogClassifier, AChannelLineCutAfterNetIbNamesNoPortAndDoesNotThrow) {
  Classification c = ClassifyLogText(
      "h1:7:7 [0] NCCL INFO Channel 00/0 : 1[1] -> 0[0] [receive] via NET/IB -> 2RDMA\n"
      "h1:7:7 [0] NCCL INFO Channel 01/0 : 1[1] -> 0[0] [receive] via NET/IB\n");
  EXPECT_TRUE(c.ib_ports.empty());
  EXPECT_FALSE(c.gdrdma);
}

TEST(LogClassifier, NamesTheHcaPortsTheIbChannelsUsedAndWhetherGdrdma) {
  // The Using list lists active ports only; channels name an index into it (PXN adds `(rank)`).
  Classification c = ClassifyLogText(
      "h1:7:7 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_3:1/IB [2]mlx5_4:1/RoCE [RO]; "
      "OOB ibp12s0:10.0.0.1<0>\n"
      "h1:7:7 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/IB/1/GDRDMA\n"
      "h1:7:7 [0] NCCL INFO Channel 01/0 : 1[0] -> 0[0] [receive] via NET/IB/1/GDRDMA\n"
      "h1:7:7 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/2(1)/GDRDMA\n"
      "h1:7:7 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 60 - Init COMPLETE\n");
  EXPECT_EQ(c.ib_ports, (std::vector<std::string>{"mlx5_3:1", "mlx5_4:1"}));
  EXPECT_TRUE(c.gdrdma);
  ASSERT_EQ(c.ib_lines.size(), 3u);  // the Using line and the first line of each port
  EXPECT_EQ(c.ib_lines[0].number, 1u);
  EXPECT_EQ(c.ib_lines[2].number, 4u);

  Classification host_memory = ClassifyLogText(
      "h1:7:7 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [RO]; OOB ib0:10.0.0.1<0>\n"
      "h1:7:7 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/IB/0\n");
  EXPECT_EQ(host_memory.ib_ports, (std::vector<std::string>{"mlx5_0:1"}));
  EXPECT_FALSE(host_memory.gdrdma);

  // A channel index the Using list does not name (or no list at all) names no port.
  Classification orphan = ClassifyLogText(
      "h1:7:7 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/IB/7/GDRDMA\n");
  EXPECT_TRUE(orphan.ib_ports.empty());
  EXPECT_TRUE(orphan.gdrdma);
}

TEST(LogClassifierBadInput, NoNcclLinesIsUnknown) {
  Classification c = ClassifyLogText("hello\nworld\n");
  EXPECT_EQ(c.fault_class, FaultClass::kUnknown);
  EXPECT_NE(c.reason.find("no NCCL log lines"), std::string::npos);
  EXPECT_EQ(c.lines, 2u);
}

TEST(LogClassifier, StreamAndTextGiveTheSameResult) {
  std::string log = std::string(kTwoRanksNoTimestamps) + "partial line without newline";
  std::istringstream in(log);
  EXPECT_EQ(ToJson(ClassifyLog(in)).dump(), ToJson(ClassifyLogText(log)).dump());
}

TEST(LogClassifier, JsonCarriesTheDesignFields) {
  nlohmann::json j = ToJson(ClassifyLogText(kTwoRanksNoTimestamps));
  EXPECT_EQ(j["class"], "ib_resource");
  ASSERT_TRUE(j["causes"].is_array());
  EXPECT_EQ(j["causes"][0]["cause"], "limits.memlock");
  EXPECT_EQ(j["causes"][0]["class"], "ib_resource");
  EXPECT_EQ(j["causes"][0]["fix_class"], "architecture");
  EXPECT_EQ(j["causes"][0]["evidence"][0]["line"], 4);
  EXPECT_EQ(j["roots"][0]["rank"], "h1:10");
  EXPECT_EQ(j["result_code"], 2);
}

}  // namespace
}  // namespace nccl_triage

namespace nccl_triage {
namespace {

// Lines below are from the real corpus (tests/classify/corpus), as users posted them.

TEST(ParseLogLine, ReadsNccl22LinesWithoutTheNcclWord) {
  ParsedLine w = ParseLogLine(
      "gpu-bql-144-103:18553:18611 [0] include/socket.h:360 WARN Call to connect failed : "
      "Connection timed out");
  EXPECT_EQ(w.level, NcclLevel::kWarn);
  EXPECT_EQ(w.rank, "gpu-bql-144-103:18553");
  EXPECT_EQ(w.file, "include/socket.h:360");
  EXPECT_EQ(w.message, "Call to connect failed : Connection timed out");
  ParsedLine i = ParseLogLine("gpu-bql-144-103:18553:18611 [0] INFO bootstrap.cu:28 -> 2 [Net]");
  EXPECT_EQ(i.level, NcclLevel::kInfo);
  EXPECT_EQ(ParseLogLine("WARN: the disk is 90% full").level, NcclLevel::kNone);
}

TEST(LogClassifier, BacktraceOfARankWithoutWarnNamesTheSocketPath) {
  Classification c = ClassifyLogText(
      "nd20-01:191191:219889 [0] NCCL INFO misc/socket.cc:564 -> 2\n"
      "nd20-01:191191:219889 [0] NCCL INFO bootstrap.cc:270 -> 2\n"
      "nd20-01:191191:219889 [0] NCCL INFO init.cc:1303 -> 2\n");
  EXPECT_EQ(c.fault_class, FaultClass::kArchitecture) << c.reason;
  ASSERT_FALSE(c.causes.empty());
  EXPECT_EQ(c.causes.front().cause, "net.connect");
  EXPECT_EQ(c.result_code, 2);
}

TEST(LogClassifier, AnHcaThatCannotBeOpenedIsBenignWhenNcclUsesOthers) {
  const std::string open_failed =
      "pod:80744:80744 [1] misc/ibvwrap.cc:212 NCCL WARN Call to ibv_open_device failed\n"
      "pod:80744:80744 [1] transport/net_ib.cc:149 NCCL WARN NET/IB : Unable to open device "
      "mlx5_59\n";
  Classification others = ClassifyLogText(
      open_failed +
      "pod:80744:80744 [1] NCCL INFO NET/IB : Using [0]mlx5_1:1/RoCE [1]mlx5_18:1/RoCE ; OOB "
      "eth0:33.117.221.247<0>\npod:80744:80744 [1] NCCL INFO Using network IB\n"
      "pod:80744:80744 [1] NCCL INFO ncclCommInitRank comm 0x55b9 rank 1 nranks 2 cudaDev 1 "
      "busId 2a000 commId 0x90 - Init COMPLETE\n"
      "pod:80744:80744 [1] NCCL INFO comm 0x55b9 rank 1 nranks 2 cudaDev 1 busId 2a000 - Destroy "
      "COMPLETE\n");
  EXPECT_EQ(others.fault_class, FaultClass::kHealthy) << others.reason;
  Classification none = ClassifyLogText(open_failed +
                                        "pod:80744:80744 [1] NCCL INFO NET/IB : No device found.\n"
                                        "pod:80744:80744 [1] NCCL INFO Using network Socket\n");
  EXPECT_EQ(none.fault_class, FaultClass::kIbResource) << none.reason;
  ASSERT_FALSE(none.causes.empty());
  EXPECT_EQ(none.causes.front().cause, "container.rdma_devices");
}

TEST(LogClassifier, AWrapperAloneIsUnknownWithTheNextStepsAndItsVersion) {
  Classification c = ClassifyLogText(
      "RuntimeError: NCCL error in: /pytorch/torch/lib/c10d/ProcessGroupNCCL.cpp:784, unhandled "
      "system error, NCCL version 2.7.8\n");
  EXPECT_EQ(c.fault_class, FaultClass::kUnknown);
  EXPECT_EQ(c.nccl_version, "2.7.8");
  EXPECT_EQ(c.result_code, 2);
  EXPECT_NE(c.reason.find("NCCL_IB_DISABLE=1"), std::string::npos) << c.reason;
  EXPECT_NE(c.reason.find("NCCL_DEBUG_SUBSYS=INIT,NET"), std::string::npos) << c.reason;
}

TEST(LogClassifier, RepeatedWarnsGiveTheSameVerdictAsOne) {
  const std::string line =
      "gpu-a17:4121:4121 [0] misc/ibvwrap.cc:262 NCCL WARN Call to ibv_reg_mr failed with error "
      "Cannot allocate memory\n";
  std::string flood;
  for (int i = 0; i < 2000; ++i) flood += line;
  Classification one = ClassifyLogText(line);
  Classification many = ClassifyLogText(flood);
  EXPECT_EQ(one.fault_class, many.fault_class);
  ASSERT_FALSE(many.causes.empty());
  EXPECT_EQ(one.causes.front().cause, many.causes.front().cause);
  EXPECT_EQ(many.causes.front().evidence.size(), 5u);  // evidence stays bounded
}

// Found by classify_log_fuzz: ranks whose prefixes differ only in control bytes are two ranks to
// the parser but one once sanitized, and the output listed that rank twice.
TEST(LogClassifier, RanksThatSanitizeAlikeAreOneRoot) {
  const std::string log =
      std::string("node\x01:1001:1001 [0] NCCL WARN NET/IB : No IP interface\n") +
      "node\x02:1001:1001 [0] NCCL WARN NET/IB : No IP interface\n";
  Classification c = ClassifyLogText(log);
  ASSERT_FALSE(c.roots.empty());
  std::set<std::string> ranks;
  for (const auto& r : c.roots) EXPECT_TRUE(ranks.insert(r.rank).second) << r.rank;
  EXPECT_EQ(c.roots.size(), 1u);
}

// ---------------------------------------------------------------- never healthy on a failure
const std::string kCleanStart =
    "gpu-a:100:100 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n"
    "gpu-a:100:100 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n"
    "gpu-a:100:120 [0] NCCL INFO Using network IB\n"
    "gpu-a:100:120 [0] NCCL INFO comm 0x55 rank 0 nranks 16 cudaDev 0 busId 1b000 commId 0x4e "
    "- Init START\n"
    "gpu-a:100:120 [0] NCCL INFO Channel 00/0 : 8[0] -> 0[0] [receive] via NET/IB/0/GDRDMA\n";
const std::string kInitComplete =
    "gpu-a:100:120 [0] NCCL INFO ncclCommInitRank comm 0x55 rank 0 nranks 16 cudaDev 0 busId "
    "1b000 commId 0x4e - Init COMPLETE\n";
const std::string kDestroyComplete =
    "gpu-a:100:120 [0] NCCL INFO comm 0x55 rank 0 nranks 16 cudaDev 0 busId 1b000 - Destroy "
    "COMPLETE\n";

TEST(LogClassifier, IsNeverHealthyWithoutACompletedRun) {
  // A clean start with connected channels and no failure line: a hang or a cut log looks like
  // this. Unknown, saying what it saw.
  Classification c = ClassifyLogText(kCleanStart);
  EXPECT_EQ(c.fault_class, FaultClass::kUnknown) << c.reason;
  EXPECT_NE(c.reason.find("no proof that the run worked"), std::string::npos) << c.reason;
  EXPECT_NE(c.reason.find("NCCL 2.21.5"), std::string::npos) << c.reason;
  EXPECT_NE(c.reason.find("channels via NET/IB"), std::string::npos) << c.reason;
  EXPECT_EQ(ClassifyLogText(kCleanStart + kInitComplete + kDestroyComplete).fault_class,
            FaultClass::kHealthy);
}

TEST(LogClassifier, ALogThatEndsAfterInitCompleteIsUnknownNotHealthy) {
  // The surviving rank of a job whose peer was SIGKILLed, or of a job that hung: its log ends
  // after a clean init. That is no proof that a collective ever finished.
  Classification c = ClassifyLogText(kCleanStart + kInitComplete);
  EXPECT_EQ(c.fault_class, FaultClass::kUnknown) << c.reason;
  EXPECT_NE(c.reason.find("ends before the job did"), std::string::npos) << c.reason;
}

// NCCL 2.30+ logs its teardown under NCCL_DEBUG_SUBSYS=DESTROY, which the default subsystems
// leave out: a working 2.32 run ends after its channels. A benchmark's own result with its data
// check is then the proof that a collective finished; a rate without a check, or a failed check,
// is not.
TEST(LogClassifier, ABenchmarksCheckedResultIsProofThatTheRunWorked) {
  const std::string run = kCleanStart + kInitComplete;
  const std::string checked =
      "rank 0 bytes 8388608 time_us 10857.6 algbw_GBps 0.773 busbw_GBps 0.773 check ok\n";
  Classification c = ClassifyLogText(run + checked);
  EXPECT_EQ(c.fault_class, FaultClass::kHealthy) << c.reason;
  EXPECT_NE(c.reason.find("a finished collective's result at line"), std::string::npos)
      << c.reason;
  EXPECT_EQ(ClassifyLogText(run + "allreduce: bus bandwidth 12.5 GB/s, results correct\n")
                .fault_class,
            FaultClass::kHealthy);
  for (const std::string not_proof :
       {"rank 0 bytes 8388608 time_us 10857.6 algbw_GBps 0.773 busbw_GBps 0.773 check bad\n",
        "rank 0 bytes 8388608 time_us 10857.6 algbw_GBps 0.773 busbw_GBps 0.773\n",
        "check ok\n"}) {
    Classification u = ClassifyLogText(run + not_proof);
    EXPECT_EQ(u.fault_class, FaultClass::kUnknown) << not_proof << " -> " << u.reason;
  }
}

TEST(LogClassifier, OneRankThatNeverToreDownKeepsTheJobUnknown) {
  const std::string other_init =
      "gpu-b:200:220 [0] NCCL INFO comm 0x66 rank 1 nranks 16 cudaDev 0 busId 1b000 - Init "
      "COMPLETE\n";
  Classification c = ClassifyLogText(kCleanStart + kInitComplete + other_init + kDestroyComplete);
  EXPECT_EQ(c.fault_class, FaultClass::kUnknown) << c.reason;
  EXPECT_NE(c.reason.find("1 of 2 initialised rank(s) never tore down"), std::string::npos)
      << c.reason;
  // An abort is no teardown.
  Classification aborted = ClassifyLogText(
      kCleanStart + kInitComplete +
      "gpu-a:100:120 [0] NCCL INFO comm 0x55 rank 0 nranks 16 cudaDev 0 busId 1b000 - Abort "
      "COMPLETE\n");
  EXPECT_NE(aborted.fault_class, FaultClass::kHealthy) << aborted.reason;
}

TEST(LogClassifier, AWarnAfterInitCompleteIsNotHealthy) {
  // The same WARN before Init COMPLETE is set-up noise; after it, the run went on to fail.
  const std::string warn =
      "gpu-a:100:130 [0] transport/net.cc:1000 NCCL WARN proxy progress stalled on channel 3\n";
  EXPECT_EQ(ClassifyLogText(kCleanStart + warn + kInitComplete + kDestroyComplete).fault_class,
            FaultClass::kHealthy);
  Classification after = ClassifyLogText(kCleanStart + kInitComplete + warn + kDestroyComplete);
  EXPECT_EQ(after.fault_class, FaultClass::kUnknown) << after.reason;
}

// ----------------------------------------------------------------- evidence from INFO lines
TEST(LogClassifier, ABridgeInterfaceOnARunThatNeverCompletedIsSocketIfname) {
  const std::string log =
      "trainer-1:52:52 [0] NCCL INFO Bootstrap : Using docker0:172.17.0.1<0>\n"
      "trainer-1:52:140 [0] NCCL INFO Using network Socket\n"
      "trainer-1:52:140 [0] NCCL INFO comm 0x55 rank 0 nranks 16 cudaDev 0 busId 1b000 - Init "
      "START\n";
  Classification c = ClassifyLogText(log);
  EXPECT_EQ(c.fault_class, FaultClass::kArchitecture) << c.reason;
  ASSERT_FALSE(c.causes.empty());
  EXPECT_EQ(c.causes[0].cause, "net.socket_ifname");
  EXPECT_EQ(c.causes[0].evidence.front().number, 1u);
  // The same interface on a run that completed is not a fault.
  Classification done = ClassifyLogText(log + "trainer-1:52:140 [0] NCCL INFO comm 0x55 rank 0 "
                                              "nranks 16 cudaDev 0 busId 1b000 - Init COMPLETE\n"
                                              "trainer-1:52:140 [0] NCCL INFO comm 0x55 rank 0 "
                                              "nranks 16 cudaDev 0 busId 1b000 - Destroy "
                                              "COMPLETE\n");
  EXPECT_EQ(done.fault_class, FaultClass::kHealthy) << done.reason;
  EXPECT_TRUE(done.causes.empty());
}

TEST(LogClassifier, AnOfiCompletionErrorIsEfaNotIbVerbsAndNamesHostMemoryPressure) {
  const std::string ofi =
      "ip-10-0-87-143:149:298 [0] ofi_process_cq:196 NCCL WARN NET/OFI Request 0x7f2a1c0d3e80 "
      "completed with error. RC: 5. Error: 16 (NO_SPACE). Completed length: 0\n";
  Classification alone = ClassifyLogText(ofi);
  EXPECT_EQ(alone.fault_class, FaultClass::kIbResource) << alone.reason;
  ASSERT_EQ(alone.causes.size(), 1u);
  EXPECT_EQ(alone.causes[0].cause, "efa.fabric");
  Classification oom = ClassifyLogText(
      ofi + "[  512.88] Memory cgroup out of memory: Killed process 151 (python)\n");
  ASSERT_EQ(oom.causes.size(), 2u);
  EXPECT_EQ(oom.causes[0].cause, "efa.fabric");
  EXPECT_EQ(oom.causes[1].cause, "host.memory_pressure");
}

TEST(LogClassifier, MaxSharedMemExceededNamesTheNcclVersionAndTheGpuArch) {
  Classification c = ClassifyLogText(
      "gb-node-0:4410:4410 [0] enqueue.cc:129 NCCL WARN cudaArch 1000 ncclMaxSharedMem 232448 "
      "exceeds device/fn maxSharedMem 101376\n");
  EXPECT_EQ(c.fault_class, FaultClass::kArchitecture);
  ASSERT_FALSE(c.causes.empty());
  EXPECT_EQ(c.causes[0].cause, "versions.nccl");
  EXPECT_NE(c.causes[0].evidence.front().text.find("cudaArch 1000"), std::string::npos);
  EXPECT_NE(c.causes[0].remedy.find("too old for this GPU"), std::string::npos);
}

TEST(LogClassifier, GdrDisabledOnEveryHcaWhileIbIsUsedIsPeermem) {
  const std::string ib =
      "h1:25668:27396 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_1:1/RoCE ; OOB "
      "ib0:10.10.10.10<0>\n"
      "h1:25668:27396 [0] NCCL INFO NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0'\n";
  Classification off = ClassifyLogText(
      ib + "h1:25668:27396 [0] NCCL INFO NET/IB : GPU Direct RDMA Disabled for HCA 1 'mlx5_1'\n");
  EXPECT_EQ(off.fault_class, FaultClass::kIbResource) << off.reason;
  ASSERT_FALSE(off.causes.empty());
  EXPECT_EQ(off.causes[0].cause, "ib.peermem");
  // One HCA with GDR on: the others are a choice of NCCL's (distance), not a missing module.
  Classification one = ClassifyLogText(
      ib + "h1:25668:27396 [0] NCCL INFO NET/IB : GPU Direct RDMA Enabled for HCA 1 'mlx5_1'\n");
  EXPECT_EQ(one.fault_class, FaultClass::kUnknown) << one.reason;
  EXPECT_TRUE(one.causes.empty());
  // No HCA used at all: GDR says nothing.
  Classification sockets = ClassifyLogText(
      "h1:1:1 [0] NCCL INFO NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0'\n");
  EXPECT_TRUE(sockets.causes.empty());
}

TEST(LogClassifier, AnXmlImportErrorAfterATopologyFileIsTheFile) {
  const std::string xml =
      "nd96-0:2201:2201 [0] graph/xml.cc:772 NCCL WARN XML Import Channel : dev 2 not found.\n";
  Classification set = ClassifyLogText(
      "nd96-0:2201:2201 [0] NCCL INFO NCCL_GRAPH_FILE set by environment to /opt/graph.xml\n" +
      xml);
  EXPECT_EQ(set.fault_class, FaultClass::kArchitecture) << set.reason;
  ASSERT_FALSE(set.causes.empty());
  EXPECT_EQ(set.causes[0].cause, "nccl.topo_file");
  ASSERT_EQ(set.causes[0].evidence.size(), 2u);
  EXPECT_EQ(set.causes[0].evidence[0].number, 1u);  // the setting, then the error
  Classification unset = ClassifyLogText(xml);
  EXPECT_TRUE(unset.causes.empty() || unset.causes[0].cause != "nccl.topo_file");
}

TEST(LogClassifier, AFailedPluginLoadCountsOnlyWhenNcclFellBackToSockets) {
  const std::string plugin =
      "ip-1:881:881 [0] NCCL INFO NET/Plugin : Plugin load (libnccl-net-ofi.so) returned 2 : "
      "libnccl-net-ofi.so: cannot open shared object file: No such file or directory\n";
  Classification sockets =
      ClassifyLogText(plugin + "ip-1:881:990 [0] NCCL INFO Using network Socket\n");
  ASSERT_FALSE(sockets.causes.empty()) << sockets.reason;
  EXPECT_EQ(sockets.causes[0].cause, "net.plugin");
  Classification ib = ClassifyLogText(plugin + "ip-1:881:990 [0] NCCL INFO Using network IB\n");
  EXPECT_TRUE(ib.causes.empty()) << ib.reason;
  // The default plugin name missing is routine.
  Classification routine = ClassifyLogText(
      "n:1:1 [0] NCCL INFO NET/Plugin : Plugin load (libnccl-net.so) returned 2 : "
      "libnccl-net.so: cannot open shared object file: No such file or directory\n"
      "n:1:1 [0] NCCL INFO Using network Socket\n");
  EXPECT_TRUE(routine.causes.empty()) << routine.reason;
}

TEST(LogClassifier, TwoNcclVersionsInOneJobAreASkew) {
  Classification c = ClassifyLogText(
      "node0:1:1 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n"
      "node2:2:2 [0] NCCL INFO NCCL version 2.18.1+cuda12.1\n");
  EXPECT_EQ(c.fault_class, FaultClass::kArchitecture) << c.reason;
  ASSERT_FALSE(c.causes.empty());
  EXPECT_EQ(c.causes[0].cause, "versions.mismatch");
  EXPECT_EQ(c.causes[0].evidence.size(), 2u);
  EXPECT_EQ(c.nccl_version, "2.21.5");
  EXPECT_TRUE(ClassifyLogText("a:1:1 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n"
                              "b:2:2 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n")
                  .causes.empty());
}

TEST(LogClassifier, TwoMtusOnTheConnectionsAreAMismatch) {
  const std::string mtu5 =
      "s0:1:2 [0] NCCL INFO NET/IB: NCCL Dev 0 IbDev 0 Port 1 qpn 576 mtu 5 GID 3 (0/10) "
      "fifoRkey=0x1 fifoLkey=0x1\n";
  const std::string mtu3 =
      "s1:3:4 [0] NCCL INFO NET/IB: NCCL Dev 0 IbDev 0 Port 1 qpn 612 mtu 3 GID 3 (0/11) "
      "fifoRkey=0x2 fifoLkey=0x2\n";
  Classification c = ClassifyLogText(mtu5 + mtu3);
  EXPECT_EQ(c.fault_class, FaultClass::kIbResource) << c.reason;
  ASSERT_FALSE(c.causes.empty());
  EXPECT_EQ(c.causes[0].cause, "ib.mtu_mismatch");
  EXPECT_TRUE(ClassifyLogText(mtu5 + mtu5).causes.empty());
}

}  // namespace
}  // namespace nccl_triage

namespace nccl_triage {
namespace {

// ----------------------------------------------------------------- reading across lines and ranks
std::string Cause0(const Classification& c) {
  return c.causes.empty() ? std::string("-") : c.causes.front().cause;
}

TEST(LogClassifierInference, ASettingNcclDoesNotAcceptIsNamed) {
  const std::string start =
      "n1:5:5 [0] NCCL INFO NCCL version 2.28.9+cuda13.0\n"
      "n1:5:5 [0] NCCL INFO NCCL_ALGO set by environment to Nonsense\n"
      "n1:5:5 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 60 - Init START\n";
  Classification c = ClassifyLogText(start);
  EXPECT_EQ(c.fault_class, FaultClass::kArchitecture) << c.reason;
  EXPECT_EQ(Cause0(c), "nccl.env_value");
  ASSERT_FALSE(c.causes.front().evidence.empty());
  EXPECT_EQ(c.causes.front().evidence.front().number, 2u);
  // NCCL's own names in any case, negation and the per-collective form are fine.
  for (const char* ok : {"ring", "^NVLS,CollNetDirect", "allreduce:tree,ring;broadcast:ring"}) {
    Classification v = ClassifyLogText("n1:5:5 [0] NCCL INFO NCCL_ALGO set by environment to " +
                                       std::string(ok) + "\n");
    for (const auto& cause : v.causes) EXPECT_NE(cause.cause, "nccl.env_value") << ok;
  }
  Classification proto = ClassifyLogText(
      "n1:5:5 [0] NCCL INFO NCCL_PROTO set by environment to LL,Bogus\n"
      "n1:5:5 [0] NCCL INFO Using network Socket\n");
  EXPECT_EQ(Cause0(proto), "nccl.env_value") << proto.reason;
}

TEST(LogClassifierInference, IbForcedWhileDisabledIsAContradiction) {
  Classification c = ClassifyLogText(
      "n1:5:5 [0] NCCL INFO NCCL_IB_DISABLE set by environment to 1.\n"
      "n1:5:5 [0] NCCL INFO NCCL_NET set by environment to IB\n"
      "n1:5:5 [0] plugin/net.cc:379 NCCL WARN Failed to initialize any NET plugin\n"
      "n1:5:5 [0] NCCL INFO init.cc:421 -> 5\n");
  EXPECT_EQ(c.fault_class, FaultClass::kArchitecture) << c.reason;
  EXPECT_EQ(Cause0(c), "nccl.env_value") << c.reason;
  EXPECT_EQ(c.causes.front().evidence.size(), 2u);
}

// NCCL >= 2.27 initialises only the NET plugins whose name NCCL_NET matches (plugin/net.cc) and
// never prints NCCL_NET: the INFO lines around `Failed to initialize any NET plugin` say why.
TEST(LogClassifierInference, NoNetPluginTriedMeansNcclNetNamesNone) {
  const std::string head =
      "n1:5:5 [0] NCCL INFO NCCL version 2.28.9+cuda13.0\n"
      "n1:5:5 [0] NCCL INFO Bootstrap: Using eth0:10.0.0.1<0>\n"
      "n1:5:5 [0] NCCL INFO cudaDriverVersion 13000\n";
  const std::string none =
      "n1:5:5 [0] plugin/net.cc:379 NCCL WARN Failed to initialize any NET plugin\n"
      "n1:5:5 [0] NCCL INFO init.cc:421 -> 5\n";
  Classification c = ClassifyLogText(head + none);
  EXPECT_EQ(c.fault_class, FaultClass::kArchitecture) << c.reason;
  EXPECT_EQ(Cause0(c), "nccl.env_value") << c.reason;
  // IB tried and found nothing: the HCA, as before.
  Classification ib = ClassifyLogText(head + "n1:5:5 [0] NCCL INFO NET/IB : No device found.\n"
                                             "n1:5:5 [0] NCCL INFO Failed to initialize NET "
                                             "plugin IB\n" + none);
  EXPECT_EQ(ib.fault_class, FaultClass::kIbResource) << ib.reason;
  EXPECT_EQ(Cause0(ib), "ib.hca_present") << ib.reason;
  // Only IB tried while NCCL_IB_DISABLE=1: NCCL_NET forced what the other setting turned off.
  Classification off = ClassifyLogText(
      head + "n1:5:5 [0] NCCL INFO NCCL_IB_DISABLE set by environment to 1.\n"
             "n1:5:5 [0] NCCL INFO Failed to initialize NET plugin IB\n" + none);
  EXPECT_EQ(off.fault_class, FaultClass::kArchitecture) << off.reason;
  EXPECT_EQ(Cause0(off), "nccl.env_value") << off.reason;
  // A WARN-only log cannot tell which plugins were tried: the rule's reading stands.
  Classification bare = ClassifyLogText(none);
  EXPECT_EQ(Cause0(bare), "ib.hca_present") << bare.reason;
}

TEST(LogClassifierInference, RanksOnDifferentNetworksNameTheMissingHca) {
  Classification c = ClassifyLogText(
      "a:1:1 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/IB/0/GDRDMA\n"
      "b:2:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [receive] via NET/Socket/0\n");
  EXPECT_EQ(c.fault_class, FaultClass::kIbResource) << c.reason;
  EXPECT_EQ(Cause0(c), "ib.hca_present");
}

TEST(LogClassifierInference, OneRankWithoutGpuDirectRdmaNamesPeermem) {
  const std::string log =
      "a:1:1 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/IB/0/GDRDMA\n"
      "b:2:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [receive] via NET/IB/1\n"
      "a:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 60 - Init COMPLETE\n"
      "b:2:2 [0] NCCL INFO comm 0x2 rank 1 nranks 2 cudaDev 0 busId 60 - Init COMPLETE\n";
  Classification c = ClassifyLogText(log);
  EXPECT_EQ(c.fault_class, FaultClass::kIbResource) << c.reason;
  EXPECT_EQ(Cause0(c), "ib.peermem");
  EXPECT_EQ(c.causes.front().evidence.front().number, 2u);  // the rank without GDRDMA
  // Both with GDRDMA: nothing to say.
  Classification same = ClassifyLogText(
      "a:1:1 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/IB/0/GDRDMA\n"
      "b:2:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [receive] via NET/IB/1/GDRDMA\n");
  for (const auto& cause : same.causes) EXPECT_NE(cause.cause, "ib.peermem");
}

TEST(LogClassifierInference, AnNcclBuiltForANewerCudaThanTheDriverOffers) {
  Classification c = ClassifyLogText(
      "n1:5:5 [0] NCCL INFO NCCL version 2.28.9+cuda13.0\n"
      "n1:5:5 [0] NCCL INFO cudaDriverVersion 12040\n"
      "n1:5:5 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 60 - Init START\n");
  EXPECT_EQ(c.fault_class, FaultClass::kArchitecture) << c.reason;
  EXPECT_EQ(Cause0(c), "versions.cuda_driver");
  Classification fine = ClassifyLogText(
      "n1:5:5 [0] NCCL INFO NCCL version 2.28.9+cuda12.9\n"
      "n1:5:5 [0] NCCL INFO cudaDriverVersion 13000\n");
  for (const auto& cause : fine.causes) EXPECT_NE(cause.cause, "versions.cuda_driver");
}

TEST(LogClassifierInference, AnNcclOlderThanTheGpuGenerationIsTheRootCause) {
  Classification c = ClassifyLogText(
      "#  Rank  0 Group  0 Pid  10 on node-1 device  0 [0x18] NVIDIA H100 80GB HBM3\n"
      "node-1:10:10 [0] NCCL INFO NCCL version 2.14.3+cuda11.7\n"
      "node-1:10:10 [0] graph/paths.cc:318 NCCL WARN Failed to find reverse path from remNode "
      "0/1a000 nlinks 1 to node 0/18000\n"
      "node-1:10:10 [0] NCCL INFO graph/paths.cc:413 -> 3\n");
  EXPECT_EQ(c.fault_class, FaultClass::kArchitecture) << c.reason;
  EXPECT_EQ(Cause0(c), "versions.nccl") << c.reason;
  Classification recent = ClassifyLogText(
      "#  Rank  0 Group  0 Pid  10 on node-1 device  0 [0x18] NVIDIA H100 80GB HBM3\n"
      "node-1:10:10 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n");
  for (const auto& cause : recent.causes) EXPECT_NE(cause.cause, "versions.nccl");
}

TEST(LogClassifierInference, IbAskedForAndRunOnSocketsSaysWhy) {
  // The pod was given no /dev/infiniband: NCCL finds no HCA and silently runs on sockets.
  Classification c = ClassifyLogText(
      "p:1:1 [0] NCCL INFO NCCL_IB_DISABLE set by environment to 0.\n"
      "p:1:1 [0] NCCL INFO NET/IB : No device found.\n"
      "p:1:1 [0] NCCL INFO Using network Socket\n"
      "p:1:1 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/Socket/0\n"
      "p:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 60 - Init COMPLETE\n"
      "p:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 60 - Destroy COMPLETE\n");
  EXPECT_EQ(c.fault_class, FaultClass::kIbResource) << c.reason;
  EXPECT_EQ(Cause0(c), "ib.hca_present") << c.reason;
  // Not asked for: the fallback is what the job wanted.
  Classification plain = ClassifyLogText(
      "p:1:1 [0] NCCL INFO NET/IB : No device found.\n"
      "p:1:1 [0] NCCL INFO Using network Socket\n"
      "p:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 60 - Init COMPLETE\n"
      "p:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 60 - Destroy COMPLETE\n");
  EXPECT_EQ(plain.fault_class, FaultClass::kHealthy) << plain.reason;
}

TEST(LogClassifierInference, AMissingVerbsProviderExplainsNoDevice) {
  Classification c = ClassifyLogText(
      "libibverbs: Warning: no userspace device-specific driver found for "
      "/sys/class/infiniband_verbs/uverbs0\n"
      "p:1:1 [0] NCCL INFO NCCL_NET set by environment to IB\n"
      "p:1:1 [0] NCCL INFO NET/IB : No device found.\n"
      "p:1:1 [0] plugin/net.cc:379 NCCL WARN Failed to initialize any NET plugin\n");
  EXPECT_EQ(c.fault_class, FaultClass::kIbResource) << c.reason;
  EXPECT_EQ(Cause0(c), "ib.rdma_core_missing") << c.reason;
}

TEST(ParseLogLine, FindsTheRankAfterAQuotingOrLauncherPrefix) {
  EXPECT_EQ(ParseLogLine("> > hgx-11:18226:18274 [5] NCCL INFO NET/Plugin: x").rank, "hgx-11:18226");
  EXPECT_EQ(ParseLogLine("node2: node2:15874:17284 [4] NCCL INFO Channel 00").rank, "node2:15874");
  // A clock time is no rank, and a token after the device or the file is message, not prefix.
  EXPECT_EQ(ParseLogLine("> 07:42:11 [0] NCCL INFO x").rank, "");
  EXPECT_EQ(ParseLogLine("> [0] misc/socket.cc:10 a:1:2 NCCL WARN x").rank, "");
}

TEST(LogClassifierInference, APluginNetworkNotFoundWhileAPluginFailedToLoadIsThePlugin) {
  const std::string warn = "s:565:565 [7] net.cc:579 NCCL WARN Error: network gIB not found.\n";
  Classification c = ClassifyLogText(
      "s:565:565 [7] NCCL INFO NET/Plugin: Plugin load returned 2 : libc.so.6: version "
      "`GLIBC_2.34' not found (required by libnccl-net.so)\n" + warn);
  EXPECT_EQ(c.fault_class, FaultClass::kArchitecture) << c.reason;
  EXPECT_EQ(Cause0(c), "net.plugin") << c.reason;
  // Without a line about the plugin, the name itself is what the log shows.
  EXPECT_EQ(Cause0(ClassifyLogText(warn)), "nccl.api_usage");
  // IB is no plugin's network: NCCL_NET=IB without an HCA stays ib.hca_present.
  EXPECT_EQ(Cause0(ClassifyLogText(
                "s:1:1 [0] NCCL INFO NET/Plugin: Could not find: libnccl-net.so\n"
                "s:1:1 [0] net.cc:579 NCCL WARN Error: network IB not found.\n")),
            "ib.hca_present");
}

TEST(LogClassifierInference, RanksWithAndWithoutAnExternalNetPluginAreASoftwareSkew) {
  const std::string internal =
      "a:1:1 [0] NCCL INFO NET/Plugin: Could not find: libnccl-net.so. Using internal network "
      "plugin.\n";
  const std::string external =
      "b:2:2 [0] NCCL INFO Plugin Path : /opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so\n";
  Classification c = ClassifyLogText(internal + external);
  EXPECT_EQ(c.fault_class, FaultClass::kArchitecture) << c.reason;
  EXPECT_EQ(Cause0(c), "versions.mismatch") << c.reason;
  // Every rank alike is no skew.
  EXPECT_TRUE(ClassifyLogText(internal + "c:3:3 [0] NCCL INFO NET/Plugin: Could not find: "
                                         "libnccl-net.so. Using internal network plugin.\n")
                  .causes.empty());
  // A run that completed keeps no such suspect.
  Classification done = ClassifyLogText(
      internal + external + "a:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 - Init COMPLETE\n"
      "b:2:2 [0] NCCL INFO comm 0x2 rank 1 nranks 2 cudaDev 0 - Init COMPLETE\n"
      "a:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 - Destroy COMPLETE\n"
      "b:2:2 [0] NCCL INFO comm 0x2 rank 1 nranks 2 cudaDev 0 - Destroy COMPLETE\n");
  EXPECT_EQ(done.fault_class, FaultClass::kHealthy) << done.reason;
}

TEST(LogClassifierInference, AnIbBacktraceAfterGidSelectionSettingsNamesTheGid) {
  const std::string trace =
      "p:7:7 [3] NCCL INFO transport/net_ib.cc:282 -> 2\n"
      "p:7:7 [3] NCCL INFO transport/net.cc:687 -> 2\n";
  Classification c = ClassifyLogText(
      "p:7:7 [3] NCCL INFO NCCL_IB_ADDR_RANGE set by environment to 10.20.0.0/16\n" + trace);
  EXPECT_EQ(c.fault_class, FaultClass::kIbResource) << c.reason;
  EXPECT_EQ(Cause0(c), "ib.gid") << c.reason;
  // Without such a setting a NET/IB back-trace alone names no path (its socket fails there too).
  EXPECT_NE(Cause0(ClassifyLogText(trace)), "ib.gid");
}

TEST(LogClassifierInference, NoCudaDeviceBesideAnOpenedGpuIsTheDeviceAssignment) {
  const std::string none = "cudaSetDevice(0): no CUDA-capable device is detected\n";
  Classification c = ClassifyLogText(
      "vm:1:1 [0] NCCL INFO ncclCommInitRank comm 0x1 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId "
      "60 - Init START\n" + none);
  EXPECT_EQ(c.fault_class, FaultClass::kArchitecture) << c.reason;
  EXPECT_EQ(Cause0(c), "gpu.visibility") << c.reason;
  // Alone, it is the driver or the runtime that shows no GPU.
  EXPECT_EQ(Cause0(ClassifyLogText(none)), "cuda.driver");
}

// NCCL's shared-memory setup prints the failing call through its wrapper and then, from the same
// file, the operation it was doing: the summary names the failure.
TEST(LogClassifierInference, AWrapperErrorFollowedByItsFilesSummaryIsTheSummarysCause) {
  const std::string cuda =
      "node-3:51200:51291 [2] misc/shmutils.cc:101 NCCL WARN Cuda failure 'invalid argument'\n";
  const std::string summary =
      "node-3:51200:51291 [2] misc/shmutils.cc:112 NCCL WARN Error while creating shared memory "
      "segment /dev/shm/nccl-Hq3mZ1 (size 9637888)\n";
  Classification c = ClassifyLogText(cuda + summary);
  ASSERT_FALSE(c.causes.empty());
  EXPECT_EQ(c.causes.front().cause, "shm.size") << c.reason;
  EXPECT_EQ(c.fault_class, FaultClass::kArchitecture);
  ASSERT_FALSE(c.roots.empty());
  EXPECT_EQ(c.roots.front().line.number, 1u);  // the rank's first failing line stays the wrapper
  // The wrapper alone (NCCL <= 2.11's include/shm.h prints no summary): the CUDA failure.
  Classification alone = ClassifyLogText(
      "heinz:151780:151928 [2] include/shm.h:42 NCCL WARN Cuda failure 'invalid argument'\n");
  ASSERT_FALSE(alone.causes.empty());
  EXPECT_EQ(alone.causes.front().cause, "cuda.driver");
  // A specific CUDA error is no wrapper: the GPU ran out of memory, whatever the file says next.
  Classification oom = ClassifyLogText(
      "node-3:51200:51291 [2] misc/shmutils.cc:101 NCCL WARN Cuda failure 'out of memory'\n" +
      summary);
  ASSERT_FALSE(oom.causes.empty());
  EXPECT_EQ(oom.causes.front().cause, "cuda.driver");
  // A later WARN from another file is another failure (or its consequence), not a summary.
  Classification other = ClassifyLogText(
      cuda + "node-3:51200:51291 [2] transport/shm.cc:200 NCCL WARN Error while creating shared "
             "memory segment /dev/shm/nccl-Hq3mZ1 (size 9637888)\n");
  ASSERT_FALSE(other.causes.empty());
  EXPECT_EQ(other.causes.front().cause, "cuda.driver");
  // Another rank's summary does not explain this rank's wrapper.
  Classification two_ranks = ClassifyLogText(
      cuda + "node-3:51201:51290 [3] misc/shmutils.cc:112 NCCL WARN Error while creating shared "
             "memory segment /dev/shm/nccl-Q1 (size 9637888)\n");
  ASSERT_FALSE(two_ranks.causes.empty());
  EXPECT_EQ(two_ranks.causes.front().cause, "cuda.driver");
}

// Lines of the layers under NCCL (libfabric, libmlx5, a framework's CUDA error) name the failure
// of a run that did not complete; before NCCL's proof that the collectives finished they did not
// stop it.
TEST(LogClassifierInference, ALowerLayersLineBeforeACompletedRunIsNotTheVerdict) {
  const std::string cqe = "(Worker pid=71) mlx5: gpu-b07: got completion with error:\n";
  const std::string done =
      "gpu-b07:71:71 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 60 - Init COMPLETE\n"
      "     8388608       2097152     float     sum      -1    81.16  103.36  180.88       0    "
      "80.46  104.26  182.45       0\n"
      "# Avg bus bandwidth    : 180.5\n";
  Classification completed = ClassifyLogText(cqe + done);
  EXPECT_EQ(completed.fault_class, FaultClass::kHealthy) << completed.reason;
  Classification failed = ClassifyLogText(
      "gpu-b07:71:71 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 60 - Init COMPLETE\n" +
      cqe);
  EXPECT_EQ(failed.fault_class, FaultClass::kIbResource) << failed.reason;
  ASSERT_FALSE(failed.causes.empty());
  EXPECT_EQ(failed.causes.front().cause, "ib.fabric");
  Classification cuda = ClassifyLogText("warning: cudaErrorPeerAccessAlreadyEnabled ignored\n" +
                                        done);
  EXPECT_EQ(cuda.fault_class, FaultClass::kHealthy) << cuda.reason;
}

// PyTorch quotes NCCL's last WARN on the line after `Last error:`, without NCCL's prefix: the
// text is one of NCCL's WARN formats, so it names its path even though no rule names the text.
TEST(LogClassifierInference, AQuotedLastErrorIsReadAsNcclsWarn) {
  Classification c = ClassifyLogText(
      "[rank1]: torch.distributed.DistBackendError: NCCL error in: NCCLUtils.hpp:317, unhandled "
      "system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5\n"
      "[rank1]: ncclSystemError: System call (e.g. socket, malloc) or external library call "
      "failed or device error.\n"
      "[rank1]: Last error:\n"
      "[rank1]: Failed to open libnvidia-ml.so.1\n");
  EXPECT_EQ(c.fault_class, FaultClass::kArchitecture) << c.reason;
  ASSERT_FALSE(c.causes.empty());
  EXPECT_EQ(c.causes.front().cause, "cuda.driver");
  // Prose that only resembles a message, and rdma-core's own stderr lines, stay text.
  Classification prose = ClassifyLogText(
      "we failed to open libnvidia-ml.so.1 from the notebook yesterday\n"
      "libibverbs: Warning: couldn't open config directory '/etc/libibverbs.d'.\n");
  EXPECT_EQ(prose.fault_class, FaultClass::kUnknown) << prose.reason;
  EXPECT_TRUE(prose.causes.empty());
}

// A paste of NCCL's INFO messages without their prefix is still NCCL's set-up, not prose.
TEST(LogClassifierInference, InfoMessagesPastedWithoutTheirPrefixAreNcclLines) {
  Classification c = ClassifyLogText(
      "Channel 00/0 : 1[1] -> 0[0] via SHM/direct/direct\n"
      "ncclCommInitRank comm 0x55d0 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 1000 commId 0x1 - "
      "Init COMPLETE\n");
  EXPECT_TRUE(c.init_complete) << c.reason;
  EXPECT_EQ(c.fault_class, FaultClass::kUnknown) << c.reason;  // set up, not yet proven
  EXPECT_EQ(c.reason.find("no NCCL log lines"), std::string::npos) << c.reason;
}

// The program's own steps after NCCL set up are collectives that finished; the same steps with
// a failure after them, or before NCCL said anything, prove nothing.
TEST(LogClassifierInference, TrainingStepsAfterSetUpAreProofTheRunWorked) {
  const std::string setup =
      "w1:49:60 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB eth0:10.0.0.2<0>\n"
      "w1:49:60 [0] NCCL INFO Using network IB\n"
      "w1:49:62 [0] NCCL INFO comm 0x7f rank 0 nranks 1 cudaDev 0 busId 1000 - Init COMPLETE\n";
  for (const char* step :
       {"Iteration: 10. Average time per step so far: 0.0013218164443969727",
        "step 200 | loss 2.314 | lr 3.0e-4 | 812 tokens/s",
        "{'loss': 1.9215, 'learning_rate': 2e-05, 'epoch': 0.4}",
        "Iter #9: 412.3 img/sec per GPU", "Total img/sec on 16 GPU(s): 6612.4 +-12.1"}) {
    Classification ok = ClassifyLogText(setup + step + "\n");
    EXPECT_EQ(ok.fault_class, FaultClass::kHealthy) << step << ": " << ok.reason;
  }
  Classification failed = ClassifyLogText(
      setup + "step 200 | loss 2.314 | lr 3.0e-4\n"
              "w1:49:70 [0] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer "
              "10.0.0.3<33891> with status=12 opcode=0 len=0 vendor err 129 (Recv) localGid "
              "::ffff:10.0.0.2 remoteGidsfe80::1 hca mlx5_0\n");
  EXPECT_EQ(failed.fault_class, FaultClass::kIbResource) << failed.reason;
  Classification no_nccl = ClassifyLogText("step 200 | loss 2.314 | lr 3.0e-4\n");
  EXPECT_EQ(no_nccl.fault_class, FaultClass::kUnknown) << no_nccl.reason;
  Classification bar = ClassifyLogText(setup + "Epoch 0:   0%|          | 0/50 [00:00<?, ?it/s]\n");
  EXPECT_EQ(bar.fault_class, FaultClass::kUnknown) << bar.reason;
}

// Every warning of aws-ofi-nccl carries `NET/OFI `: the plugin's path even for a text the
// catalogue does not hold.
TEST(LogClassifierInference, AnOfiWarningTheCatalogueLacksIsStillThePlugins) {
  Classification c = ClassifyLogText(
      "p5-7:954:3133 [6] NCCL INFO comm 0x7f rank 6 nranks 16 cudaDev 6 busId b9000 - Init START\n"
      "p5-7:954:3133 [6] nccl_net_ofi_rdma_init:8123 NCCL WARN NET/OFI Couldn't frobnicate the "
      "endpoint table of rail 3 (a message of a release not read yet)\n");
  EXPECT_EQ(c.fault_class, FaultClass::kIbResource) << c.reason;
  ASSERT_FALSE(c.causes.empty());
  EXPECT_EQ(c.causes.front().cause, "efa.fabric");
}

// The first cause, or "-" when none: a failure message that says which.
std::string Top(const Classification& c) { return c.causes.empty() ? "-" : c.causes.front().cause; }

// nccl-tests before 2.x printed no root column and the largest error as a float instead of a
// count of wrong elements: a rounding-level error is a pass, a large one is wrong data.
TEST(LogClassifierInference, OlderNccltestsRowsAreProofOfCompletion) {
  for (const char* row : {"     1048576        262144     float    162.1    6.47    5.66  0e+00    "
                          "162.0    6.47    5.66  0e+00",
                          "        4096          1024     float     sum    47.60    0.09    0.15  "
                          "2e-07    47.54    0.09    0.15  2e-07"}) {
    Classification c = ClassifyLogText(std::string(row) + "\n");
    EXPECT_EQ(c.fault_class, FaultClass::kHealthy) << row << ": " << c.reason;
  }
  Classification wrong = ClassifyLogText(
      "     1048576        262144     float    162.1    6.47    5.66  3e-02    162.0    6.47    "
      "5.66  3e-02\n");
  EXPECT_NE(wrong.fault_class, FaultClass::kHealthy) << wrong.reason;
}

// A benchmark's average over its trials is printed once every trial returned.
TEST(LogClassifierInference, AnAverageOverTrialsOfACollectiveIsProof) {
  Classification c = ClassifyLogText(
      "[node-0] The average bandwidth of allreduce with a 2.0GB payload (20 trials, 8 ranks):\n"
      "[node-0]  busbw: 171.20 GBps (1369.6 Gbps)\n");
  EXPECT_EQ(c.fault_class, FaultClass::kHealthy) << c.reason;
  Classification figure = ClassifyLogText("[node-0]  busbw: 171.20 GBps (1369.6 Gbps)\n");
  EXPECT_EQ(figure.fault_class, FaultClass::kUnknown) << figure.reason;
}

// A forum or a quoting reply flattens a paste onto one line: each of NCCL's messages in it is
// read as its own line, and a normal line keeps its host:pid:tid.
TEST(LogClassifierInference, AFlattenedPasteIsReadMessageByMessage) {
  Classification c = ClassifyLogText(
      "> [3] NCCL INFO NCCL_IB_DISABLE set by environment to 0. [3] NCCL INFO NET/IB : No "
      "device found. [3] NCCL INFO NET/Socket : Using [0]eth0:10.4.0.9<0> [3] NCCL INFO Using "
      "network Socket\n");
  EXPECT_EQ(c.fault_class, FaultClass::kIbResource) << c.reason;
  EXPECT_EQ(Top(c), "ib.hca_present");
  Classification one = ClassifyLogText(
      "gpu7 :812:901 [2] NCCL INFO misc/socket.cc:373 -> 2\n"
      "gpu7:812:901 [2] transport/net_socket.cc:470 NCCL WARN NET/Socket : peer 10.0.0.5<4242> "
      "message truncated : receiving 1024 bytes instead of 512\n");
  ASSERT_FALSE(one.roots.empty()) << one.reason;
  EXPECT_NE(one.roots.front().rank.find("gpu7"), std::string::npos) << one.roots.front().rank;
}

// A hostile line made of NCCL's markers: read in bounded pieces, never a crash or a hang.
TEST(LogClassifierInference, ALineOfMarkersIsReadInBoundedPieces) {
  std::string markers;
  while (markers.size() < 4000) markers += "[7] NCCL INFO ] NCCL WARN ";
  std::string no_device;
  while (no_device.size() < 4000) no_device += "x] NCCL INFO ";
  Classification c = ClassifyLogText(markers + "\n" + no_device + "\n" + markers + "\n");
  EXPECT_EQ(c.lines, 3u);
  EXPECT_NE(c.fault_class, FaultClass::kHealthy) << c.reason;
}

// An RDMA network plugin in the image (HPC-X's) says the job was built for InfiniBand: NET/IB
// finding no device is then the missing HCA. The plugin's search for its newest interface
// (`Failed to find ncclNetPlugin_v7 symbol.` before v6 loads) is not a plugin that failed.
TEST(LogClassifierInference, AnRdmaPluginThatLoadedMeansIbWasWanted) {
  const std::string head =
      "n1:40:40 [0] NCCL INFO Bootstrap : Using eth0:10.9.0.4<0>\n"
      "n1:40:40 [0] NCCL INFO NET/Plugin: Failed to find ncclNetPlugin_v7 symbol.\n"
      "n1:40:40 [0] NCCL INFO NET/Plugin: Loaded net plugin NCCL RDMA Plugin (v6)\n";
  const std::string tail =
      "n1:40:77 [0] NCCL INFO NET/IB : No device found.\n"
      "n1:40:77 [0] NCCL INFO NET/Socket : Using [0]eth0:10.9.0.4<0>\n"
      "n1:40:77 [0] NCCL INFO Using network Socket\n";
  Classification c = ClassifyLogText(head + "n1:40:77 [0] NCCL INFO P2P plugin IBext\n" + tail);
  EXPECT_EQ(c.fault_class, FaultClass::kIbResource) << c.reason;
  EXPECT_EQ(Top(c), "ib.hca_present");
  Classification plain = ClassifyLogText(tail);
  EXPECT_NE(plain.fault_class, FaultClass::kIbResource) << plain.reason;
  for (const auto& cause : c.causes) EXPECT_NE(cause.cause, "net.plugin");
}

// The launcher's own network failing before any rank reaches NCCL is the architecture around
// it: ORTE/PRTE daemons, Slurm's PMIx fence, ssh, MPI's UCX or TCP transport.
TEST(LogClassifierInference, ALauncherThatCannotReachItsNodesIsArchitecture) {
  for (const char* line :
       {"ORTE has lost communication with a remote daemon.",
        "slurmstepd: error:  mpi/pmix_v4: pmixp_coll_ring_reset_if_to: gpu-12 [1]: "
        "pmixp_coll_ring.c:742: 0x7f: collective timeout seq=0",
        "ssh: connect to host 10.20.0.7 port 22: No route to host"}) {
    Classification c = ClassifyLogText(std::string(line) + "\n");
    EXPECT_EQ(c.fault_class, FaultClass::kArchitecture) << line << ": " << c.reason;
    EXPECT_EQ(Top(c), "job.launcher") << line;
  }
  Classification ucx = ClassifyLogText(
      "[1712.44] [gpu-3:811  :0]  sock.c:325  UCX  ERROR   connect(fd=52, "
      "dest_addr=192.168.122.1:39111) failed: No route to host\n");
  EXPECT_EQ(ucx.fault_class, FaultClass::kArchitecture) << ucx.reason;
  EXPECT_EQ(Top(ucx), "net.connect");
}

// A bus error in a container is shared memory /dev/shm could not back; a refused shm_open is
// /dev/shm's mode, not a security module's verdict on the call.
TEST(LogClassifierInference, BusErrorsAndRefusedShmOpenAreSharedMemory) {
  Classification bus = ClassifyLogText(
      "[2025-03-01 10:00:01] torch.distributed.elastic.multiprocessing.api: [ERROR] failed "
      "(exitcode: -7) local_rank: 3 (pid: 5512) of binary: /usr/bin/python\n"
      "Signal 7 (SIGBUS) received by PID 5512\n");
  EXPECT_EQ(bus.fault_class, FaultClass::kArchitecture) << bus.reason;
  EXPECT_EQ(Top(bus), "shm.size");
  Classification denied = ClassifyLogText(
      "h:9:19 [1] include/shm.h:27 NCCL WARN Call to shm_open failed : Operation not permitted\n");
  EXPECT_EQ(denied.fault_class, FaultClass::kArchitecture) << denied.reason;
  EXPECT_EQ(Top(denied), "shm.size");
}

// Layers other than NCCL name their own faults: NVML losing a GPU, the SHARP library refused by
// the fabric, a framework that cannot load NCCL at all.
TEST(LogClassifierInference, OtherLayersNameTheirOwnFaults) {
  Classification gpu = ClassifyLogText(
      "$ nvidia-smi\nUnable to determine the device handle for GPU0000:41:00.0: GPU is lost.  "
      "Reboot the system to recover this GPU\n");
  EXPECT_EQ(Top(gpu), "gpu.health") << gpu.reason;
  Classification sharp = ClassifyLogText(
      "[gpu-9:3:1200 - comm.c:370] ERROR Failed to lock LLT tree(ID:0x1 ret:0x4)\n");
  EXPECT_EQ(sharp.fault_class, FaultClass::kIbResource) << sharp.reason;
  EXPECT_EQ(Top(sharp), "ib.sharp");
  Classification plugin = ClassifyLogText(
      "gpu-9:77:90 [0] sharp_plugin.c:288 NCCL WARN SHARP coll init failed (-5)\n");
  EXPECT_EQ(plugin.fault_class, FaultClass::kIbResource) << plugin.reason;
  Classification lib = ClassifyLogText(
      "RuntimeError: libnccl.so.2: cannot open shared object file: No such file or directory\n");
  EXPECT_EQ(lib.fault_class, FaultClass::kArchitecture) << lib.reason;
  EXPECT_EQ(Top(lib), "nccl.library");
}

// NCCL before 2.12 retries a refused connect without counting: ten and more retries with no
// set-up after them mean nothing listens at the peer's address; a few at start-up are routine.
TEST(LogClassifierInference, ManyUncountedRefusedRetriesAreTheConnect) {
  std::string many;
  for (int i = 0; i < 12; ++i) {
    many += "trainer-1:31:52 [1] NCCL INFO Call to connect returned Connection refused, retrying\n";
  }
  Classification c = ClassifyLogText(many);
  EXPECT_EQ(c.fault_class, FaultClass::kArchitecture) << c.reason;
  EXPECT_EQ(Top(c), "net.connect");
  Classification routine = ClassifyLogText(
      many +
      "trainer-1:31:52 [1] NCCL INFO comm 0x55 rank 1 nranks 2 cudaDev 1 busId 2000 - Init "
      "COMPLETE\n");
  for (const auto& cause : routine.causes) EXPECT_NE(cause.cause, "net.connect") << routine.reason;
}

// rdma-core's dump of an error CQE after `got completion with error` holds the syndrome and the
// vendor syndrome: local protection with vendor 0x51 says why the completion failed (ACS), and
// that explanation, printed after the failure, takes the general completion error's place.
TEST(LogClassifierInference, AnErrorCqeWithTheAcsSyndromeIsGpuDirectBlocked) {
  const std::string head = "mlx5: gpu-1: got completion with error:\n";
  Classification acs = ClassifyLogText(head + "00000000 02005104 0a00061e 000164d2\n");
  EXPECT_EQ(Top(acs), "ib.gdr_acs") << acs.reason;
  Classification other = ClassifyLogText(head + "00000000 00008813 120101c6 0a3fd4d2\n");
  EXPECT_EQ(Top(other), "ib.fabric") << other.reason;
}

// nccl-tests lists its ranks once per job. The same rank from a second process before any result
// is a process that ran a test of its own; a second run pasted after the first one's results
// lists its ranks again and is fine.
TEST(LogClassifierInference, NcclTestsRanksListedTwiceAreSeparateJobs) {
  const std::string host1 =
      "#  Rank  0 Group  0 Pid   3591 on      gpu-1 device  0 [0x03] NVIDIA A100-PCIE-40GB\n";
  const std::string host2 =
      "#  Rank  0 Group  0 Pid   2451 on      gpu-2 device  0 [0x03] NVIDIA A100-PCIE-40GB\n";
  const std::string row =
      "   268435456      67108864     float     sum      -1   2854.1   94.05   94.05      0   "
      "2851.7   94.13   94.13      0\n# Avg bus bandwidth    : 47.0207\n";
  Classification separate = ClassifyLogText(host1 + host2 + row + row);
  EXPECT_EQ(separate.fault_class, FaultClass::kArchitecture) << separate.reason;
  EXPECT_EQ(Top(separate), "job.launcher");

  Classification two_runs = ClassifyLogText(host1 + row + host2 + row);
  EXPECT_EQ(two_runs.fault_class, FaultClass::kHealthy) << two_runs.reason;
  Classification one_process = ClassifyLogText(host1 + host1 + row);
  EXPECT_EQ(one_process.fault_class, FaultClass::kHealthy) << one_process.reason;
}

// NCCL refuses a communicator that holds one GPU twice; the ranks' init lines show it even when
// the WARN is not in the log. Other communicators of the same processes, other hosts, and runs
// that set NCCL_HOSTID (processes of one machine as different hosts) are not that.
TEST(LogClassifierInference, TwoRanksOfOneCommunicatorOnOneGpuAreADuplicateGpu) {
  auto init = [](const std::string& host_pid, int rank, const std::string& bus,
                 const std::string& comm) {
    return host_pid + " [0] NCCL INFO ncclCommInitRank comm 0x55d0b7f31a20 rank " +
           std::to_string(rank) + " nranks 2 cudaDev 0 nvmlDev 0 busId " + bus + " commId " +
           comm + " - Init START\n";
  };
  Classification dup = ClassifyLogText(init("pod-0:42:982", 0, "100000", "0xaa9b") +
                                       init("pod-0:43:43", 1, "100000", "0xaa9b"));
  EXPECT_EQ(dup.fault_class, FaultClass::kArchitecture) << dup.reason;
  EXPECT_EQ(Top(dup), "gpu.duplicate");

  Classification hosts = ClassifyLogText(init("node-a:42:42", 0, "100000", "0xaa9b") +
                                         init("node-b:43:43", 1, "100000", "0xaa9b"));
  EXPECT_NE(Top(hosts), "gpu.duplicate") << hosts.reason;
  Classification comms = ClassifyLogText(init("pod-0:42:42", 0, "100000", "0xaa9b") +
                                         init("pod-0:42:42", 1, "100000", "0x51c0"));
  EXPECT_NE(Top(comms), "gpu.duplicate") << comms.reason;
  Classification hostid = ClassifyLogText(
      "pod-0:42:42 [0] NCCL INFO NCCL_HOSTID set by environment to a\n" +
      init("pod-0:42:42", 0, "100000", "0xaa9b") + init("pod-0:43:43", 1, "100000", "0xaa9b"));
  EXPECT_NE(Top(hostid), "gpu.duplicate") << hostid.reason;
}

// Only rank 0's process prints nccl-tests' banner and summary. Two banners printed together, or
// two summaries with no result row between them, come from two processes that are each rank 0;
// runs pasted one after the other have their rows and summaries between them.
TEST(LogClassifierInference, NcclTestsBannersOrSummariesPrintedTogetherAreSeparateJobs) {
  const std::string banner =
      "# nThread 1 nGpus 1 minBytes 8 maxBytes 268435456 step: 2(factor) warmup iters: 5 iters: "
      "20 agg iters: 1 validation: 1 graph: 0\n#\n# Using devices\n";
  const std::string row =
      "   268435456      67108864     float     sum      -1   2854.1   94.05   94.05      0   "
      "2851.7   94.13   94.13      0\n";
  const std::string summary = "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 47.0207\n";

  Classification banners = ClassifyLogText(banner + banner + row + row + summary);
  EXPECT_EQ(banners.fault_class, FaultClass::kArchitecture) << banners.reason;
  EXPECT_EQ(Top(banners), "job.launcher");
  Classification summaries = ClassifyLogText(banner + row + row + summary + "#\n" + summary);
  EXPECT_EQ(summaries.fault_class, FaultClass::kArchitecture) << summaries.reason;
  EXPECT_EQ(Top(summaries), "job.launcher");

  Classification two_runs = ClassifyLogText(banner + row + summary + banner + row + summary);
  EXPECT_EQ(two_runs.fault_class, FaultClass::kHealthy) << two_runs.reason;
  // Far apart (another program's output between), two banners are two runs of a script.
  std::string apart = banner;
  for (int i = 0; i < 20; ++i) apart += "preparing shard " + std::to_string(i) + "\n";
  Classification script = ClassifyLogText(apart + banner + row + summary);
  EXPECT_EQ(script.fault_class, FaultClass::kHealthy) << script.reason;
}

}  // namespace
}  // namespace nccl_triage
