// Reading lines on their own (agent/classify/classifier_read.h): which facts each line records.
#include "classify/classifier_read.h"

#include <gtest/gtest.h>

#include <initializer_list>
#include <string_view>

namespace nccl_triage::classify {
namespace {

struct Read {
  LineReader reader{*ActiveRules(), MessageCatalogue::Builtin().get()};
  explicit Read(std::initializer_list<std::string_view> lines) {
    for (std::string_view l : lines) reader.Feed(l);
  }
  const LogFacts& facts() const { return reader.facts(); }
};

TEST(LineReader, CountsLinesByKind) {
  Read r({"h:1:1 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>", "plain text", "",
          std::string_view("bin\0ary", 7), "h:1:1 [0] x.cc:1 NCCL WARN something\r"});
  EXPECT_EQ(r.facts().counts.lines, 5u);
  EXPECT_EQ(r.facts().counts.nccl, 2u);
  EXPECT_EQ(r.facts().counts.warn, 1u);
  EXPECT_EQ(r.facts().counts.nonempty_text, 2u);
  EXPECT_EQ(r.facts().counts.binary, 1u);
  EXPECT_TRUE(r.facts().run.setup_seen);
  EXPECT_EQ(r.facts().run.last_warn_line, 5u);
}

TEST(LineReader, RecordsInitAndTeardownPerRank) {
  Read r({"h:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1000 - Init COMPLETE",
          "h:2:2 [1] NCCL INFO comm 0x2 rank 1 nranks 2 cudaDev 1 busId 2000 - Init COMPLETE",
          "h:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1000 - Destroy COMPLETE"});
  const RunProgress& run = r.facts().run;
  EXPECT_TRUE(run.init_complete);
  EXPECT_EQ(run.ranks_initialised, 2u);
  EXPECT_EQ(run.ranks_torn_down, 1u);
  EXPECT_EQ(run.last_init_line, 2u);
  EXPECT_EQ(run.last_success_line, 3u);
  EXPECT_TRUE(r.facts().devices.device_opened_line.has_value());
}

TEST(LineReader, RecordsTheNetworkItsPortsAndChannels) {
  Read r({"h:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/RoCE [RO]; OOB ib0:1<0>",
          "h:1:1 [0] NCCL INFO Using network IB",
          "h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] [send] via NET/IB/1/GDRDMA",
          "h:1:1 [0] NCCL INFO Channel 00 : 0[0] -> 1[1] via P2P/CUMEM/read"});
  const NetworkFacts& net = r.facts().net;
  EXPECT_EQ(net.network, "IB");
  ASSERT_EQ(net.ib_devices.size(), 2u);
  EXPECT_EQ(net.ib_devices[1], "mlx5_1:1");
  EXPECT_EQ(net.ib_used, std::vector<int>{1});
  EXPECT_TRUE(net.gdrdma);
  EXPECT_EQ(net.transports, (std::vector<std::string>{"NET/IB", "P2P"}));
  EXPECT_EQ(net.local_transports, std::vector<std::string>{"P2P/CUMEM/read"});
  EXPECT_TRUE(r.facts().ranks.Find("h:1")->ib_gdr);
}

TEST(LineReader, RecordsSettingsVersionsAndTheDriver) {
  Read r({"h:1:1 [0] NCCL INFO NCCL_NET set by environment to IB.",
          "h:1:1 [0] NCCL INFO NCCL_PROTO set by environment to fast",
          "NCCL version 2.21.5+cuda12.4", "h:1:1 [0] NCCL INFO cudaDriverVersion 12020"});
  const EnvFacts& env = r.facts().env;
  EXPECT_EQ(env.net, "IB");
  EXPECT_EQ(env.names, (std::vector<std::string>{"NCCL_NET", "NCCL_PROTO"}));
  EXPECT_EQ(env.values[1], "fast");
  EXPECT_EQ(env.rejected_quoted, std::vector<std::string>{"\"fast\""});
  const VersionFacts& versions = r.facts().versions;
  EXPECT_EQ(versions.version, "2.21.5");
  EXPECT_EQ(versions.nccl_cuda_major, 12);
  EXPECT_EQ(versions.driver_cuda_major, 12);
}

TEST(LineReader, KeepsTheFirstWarnOfEachRankAsItsRoot) {
  Read r({"h:1:1 [0] misc/ibvwrap.cc:262 NCCL WARN Call to ibv_reg_mr failed",
          "h:1:1 [0] misc/ibvwrap.cc:262 NCCL WARN Call to ibv_reg_mr failed again",
          "h:1:1 [0] NCCL INFO init.cc:100 -> 2",
          "h:2:2 [0] NCCL INFO transport/net.cc:10 -> 3"});
  const RankFacts& ranks = r.facts().ranks;
  ASSERT_EQ(ranks.roots.size(), 1u);
  EXPECT_EQ(ranks.roots[0].rank, "h:1");
  EXPECT_EQ(ranks.roots[0].line.number, 1u);
  EXPECT_EQ(ranks.Find("h:1")->warns, 2);
  EXPECT_EQ(ranks.Find("h:1")->code_after_warn, 2);
  EXPECT_EQ(ranks.orphan_code, 3);  // the rank without a WARN
  EXPECT_EQ(ranks.orphan_line.number, 4u);
}

}  // namespace
}  // namespace nccl_triage::classify
