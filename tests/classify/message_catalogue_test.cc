// NCCL's message catalogue: printf formats matched against log text, the catalogue's TSV read
// strictly, and a WARN no rule names classified by the path that printed it.
#include "classify/message_catalogue.h"

#include <gtest/gtest.h>

#include <string>

#include "classify/classifier.h"

namespace nccl_triage {
namespace {

TEST(FormatMatches, TypedHolesTakeOnlyTheirKindOfText) {
  EXPECT_TRUE(FormatMatches("Call to %s failed with error %s", "Call to ibv_reg_mr failed with "
                                                                  "error Bad address"));
  EXPECT_TRUE(FormatMatches("Message truncated : received %d bytes instead of %d",
                            "Message truncated : received 1312 bytes instead of 1280"));
  EXPECT_FALSE(FormatMatches("Message truncated : received %d bytes instead of %d",
                             "Message truncated : received many bytes instead of 1280"));
  EXPECT_TRUE(FormatMatches("comm %p rank %d nRanks %d", "comm 0x55d1c1ff2680 rank 3 nRanks 16"));
  EXPECT_TRUE(FormatMatches("busId %lx", "busId 1b000"));
  EXPECT_TRUE(FormatMatches("%s:%d -> %d", "misc/socket.cc:564 -> 2"));
  EXPECT_TRUE(FormatMatches("100%% done", "100% done"));
  EXPECT_TRUE(FormatMatches("size %zu time %.2f", "size 4096 time 1.25"));
  EXPECT_FALSE(FormatMatches("Duplicate GPU detected", "Duplicate GPU detected : rank 0"));
}

TEST(FormatMatches, AHostileTextCannotMakeItWorkWithoutBound) {
  // Many %s holes against a long text with the separator everywhere: bounded, no hang.
  std::string text(4096, ' ');
  EXPECT_FALSE(FormatMatches("%s %s %s %s %s %s %s %s X", text));
}

constexpr const char* kTsv =
    "# a comment\n"
    "level\tsubsys\tformat\tfile\tpath\tfirst\tlast\n"
    "WARN\t\tCall to %s failed with error %s\tmisc/ibvwrap.cc\tib_verbs\t2.12.12\t2.28.9\n"
    "WARN\t\tsocketStartConnect: Connect to %s failed : %s\tmisc/socket.cc\tsocket\t2.19.3\t"
    "2.28.9\n"
    "WARN\t\tproxy progress stalled on channel %d\ttransport/net.cc\ttransport\t2.12.12\t2.28.9\n"
    "WARN\t\tTopology detection: network path %s is not a PCI device\tgraph/xml.cc\ttopology\t"
    "2.12.12\t2.28.9\n"
    "INFO\tNCCL_INIT\tcomm %p rank %d nranks %d cudaDev %d busId %lx - Destroy COMPLETE\t"
    "init.cc\tmisc\t2.12.12\t2.28.9\n";

// rdma-core prints its own messages on stderr; a text line that is one is never read as an
// NCCL line without its prefix, though an NCCL WARN quoting it still finds its path.
TEST(MessageCatalogue, RdmaCoresMessagesAreNeverNcclsPastedLines) {
  auto cat = MessageCatalogue::Parse(
      "level\tsubsys\tformat\tfile\tpath\tfirst\tlast\n"
      "WARN\t\tlibibverbs: Warning: couldn't load driver '%s'.\tlibibverbs/dynamic_driver.c\t"
      "ib_verbs\t30.14\t64.0\n"
      "INFO\t\tmlx5: Using %d cores for polling\tproviders/mlx5/mlx5.c\tib_verbs\t30.14\t64.0\n"
      "WARN\t\tCall to %s failed with error %s\tmisc/ibvwrap.cc\tib_verbs\t2.12.12\t2.28.9\n");
  ASSERT_TRUE(cat.ok()) << cat.status().message();
  const std::string driver = "libibverbs: Warning: couldn't load driver 'libmlx5-rdmav34.so'.";
  EXPECT_NE((*cat)->MatchWarn(driver), nullptr);
  EXPECT_EQ((*cat)->MatchQuotedWarn(driver), nullptr);
  EXPECT_EQ((*cat)->MatchBareInfo("mlx5: Using 4 cores for polling"), nullptr);
  EXPECT_NE((*cat)->MatchQuotedWarn("Call to ibv_reg_mr failed with error Bad address"), nullptr);
}

TEST(MessageCatalogue, ParsesTheGeneratorsTsvAndMatchesTheLongestEntry) {
  auto cat = MessageCatalogue::Parse(kTsv);
  ASSERT_TRUE(cat.ok()) << cat.status().message();
  EXPECT_EQ((*cat)->messages().size(), 5u);
  const CatalogueMessage* m =
      (*cat)->MatchWarn("socketStartConnect: Connect to 10.0.0.2<41211> failed : No route to host");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->path, "socket");
  EXPECT_EQ((*cat)->MatchWarn("something NCCL never prints"), nullptr);
  ASSERT_NE((*cat)->PathOfFile("graph/xml.cc:332"), nullptr);
  EXPECT_EQ((*cat)->PathOfFile("xml.cc:332")->name, "topology");
  EXPECT_EQ((*cat)->PathOfFile("nowhere.cc:1"), nullptr);
}

TEST(MessageCatalogue, RefusesMalformedRowsWithTheLine) {
  auto no_header = MessageCatalogue::Parse("WARN\tx\n");
  ASSERT_FALSE(no_header.ok());
  EXPECT_NE(no_header.status().message().find("line 1"), std::string::npos);
  auto bad_path = MessageCatalogue::Parse("level\tformat\tfile\tpath\nWARN\tx\ty.cc\tnowhere\n");
  ASSERT_FALSE(bad_path.ok());
  EXPECT_NE(bad_path.status().message().find("unknown path 'nowhere'"), std::string::npos);
  auto short_row = MessageCatalogue::Parse("level\tformat\tfile\tpath\nWARN\tx\n");
  EXPECT_FALSE(short_row.ok());
}

TEST(MessageCatalogue, EveryPathNamesACatalogueCause) {
  for (const auto& p : MessagePaths()) {
    EXPECT_NE(FindCause(p.cause.str()), nullptr) << p.name;
    EXPECT_EQ(FindMessagePath(p.name), &p);
  }
}

Classification Classify(const std::string& log) {
  auto cat = MessageCatalogue::Parse(kTsv);
  LogClassifier c(ActiveRules(), *cat);
  size_t at = 0;
  while (at < log.size()) {
    size_t nl = log.find('\n', at);
    c.Feed(std::string_view(log).substr(at, nl - at));
    if (nl == std::string::npos) break;
    at = nl + 1;
  }
  return c.Finish();
}

TEST(LogClassifierCatalogue, AWarnNoRuleNamesGetsThePathOfItsSourceFile) {
  // A topology WARN no rule names, from a file the catalogue knows: architecture, by its path.
  Classification c = Classify(
      "vm:1:1 [0] graph/xml.cc:999 NCCL WARN Topology detection: network path /sys/devices/odd "
      "is not a PCI device\n"
      "vm:1:1 [0] NCCL INFO graph/topo.cc:700 -> 2\n");
  EXPECT_EQ(c.fault_class, FaultClass::kArchitecture) << c.reason;
  ASSERT_FALSE(c.causes.empty());
  EXPECT_EQ(c.causes.front().cause, "nccl.topology");
  // The same message without the file (releases that print none): matched by its format.
  Classification bare = Classify(
      "vm:1:1 [0] NCCL WARN Topology detection: network path /sys/devices/odd is not a PCI "
      "device\n");
  EXPECT_EQ(bare.fault_class, FaultClass::kArchitecture) << bare.reason;
}

TEST(LogClassifierCatalogue, APathOfUnknownClassDoesNotNameTheRoot) {
  Classification c = Classify(
      "vm:1:1 [0] transport/net.cc:1000 NCCL WARN proxy progress stalled on channel 3\n");
  EXPECT_EQ(c.fault_class, FaultClass::kUnknown) << c.reason;
}

TEST(LogClassifierCatalogue, ACatalogueOnlyWarnBeforeACleanRunIsSetUpNoise) {
  Classification c = Classify(
      "vm:1:1 [0] graph/xml.cc:999 NCCL WARN Topology detection: network path /sys/devices/odd "
      "is not a PCI device\n"
      "vm:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 60 - Init COMPLETE\n"
      "vm:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 60 - Destroy COMPLETE\n");
  EXPECT_EQ(c.fault_class, FaultClass::kHealthy) << c.reason;
}

TEST(MessageCatalogue, AnOfiPluginWarnIsMatchedWithoutItsNetOfiPrefix) {
  // aws-ofi-nccl prints every WARN as `NET/OFI <format>`; its catalogue holds the bare format.
  auto cat = MessageCatalogue::Parse(
      "level\tformat\tfile\tpath\n"
      "WARN\tUnexpected status (%d) for message %hu\tsrc/nccl_ofi_rdma.cpp\tnet_ofi\n"
      "WARN\tsocketStartConnect: Connect to %s failed : %s\tmisc/socket.cc\tsocket\n");
  ASSERT_TRUE(cat.ok()) << cat.status().message();
  const CatalogueMessage* m = (*cat)->MatchWarn("NET/OFI Unexpected status (0) for message 17");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->path, "net_ofi");
  // Only the plugin's own formats answer for the prefix: NCCL's socket message does not.
  EXPECT_EQ((*cat)->MatchWarn("NET/OFI socketStartConnect: Connect to 10.0.0.2<1> failed : x"),
            nullptr);
}

TEST(LogClassifierCatalogue, AnOfiWarnNoRuleNamesIsTheEfaPathNotTheCallThatFollows) {
  // The built-in catalogue: a WARN of aws-ofi-nccl's completion handling, then NCCL 2.21's
  // report that the communicator already holds an error.
  Classification c = ClassifyLogText(
      "ip-10-8-1-77:2019:2019 [5] NCCL INFO NCCL version 2.21.5+cuda12.4\n"
      "ip-10-8-1-77:2019:2101 [5] process_completions:1702 NCCL WARN NET/OFI Send completion from "
      "unexpected request type\n"
      "ip-10-8-1-77:2019:2019 [5] init.cc:290 NCCL WARN Attempt to use communicator before the "
      "previous operation returned ncclSuccess\n");
  EXPECT_EQ(c.fault_class, FaultClass::kIbResource) << c.reason;
  ASSERT_FALSE(c.causes.empty());
  EXPECT_EQ(c.causes.front().cause, "efa.fabric");
}

}  // namespace
}  // namespace nccl_triage
