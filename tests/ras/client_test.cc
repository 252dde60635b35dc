// The RAS client against the fake RAS port: replayed NCCL transcripts, and the faults an untrusted
// port can show (refused, silent, garbage, endless, early close, unknown protocol).
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>

#include "ras/client.h"
#include "ras/fake_ras_server.h"
#include "ras/netns.h"

namespace nccl_triage::ras {
namespace {

using testing::FakeMode;
using testing::FakeRasServer;
using testing::ReadTranscriptFile;

QueryOptions To(const FakeRasServer& s) {
  QueryOptions o;
  o.host = "127.0.0.1";
  o.port = std::to_string(s.port());
  o.deadline = std::chrono::seconds(5);
  return o;
}

// A port nothing listens on: bound, then closed.
int FreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

TEST(RasClient, AsksForJsonAndGetsIt) {
  FakeRasServer s(ReadTranscriptFile("nccl-2.28.9-2-lagging-json.txt"));
  auto r = QueryRas(To(s));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->format, ReplyFormat::kJson);
  EXPECT_EQ(r->server_protocol, "2");
  EXPECT_TRUE(r->protocol_known);
  EXPECT_EQ(r->address, s.addr());
  EXPECT_EQ(r->body.front(), '{');
  EXPECT_EQ(s.received(), (std::vector<std::string>{"CLIENT PROTOCOL 2", "SET FORMAT json",
                                                    "STATUS"}));
}

TEST(RasClient, FallsBackToTextBeforeNccl2287) {
  FakeRasServer s(ReadTranscriptFile("nccl-2.24.3-modelled-lagging-text.txt"));
  auto r = QueryRas(To(s));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->format, ReplyFormat::kText);
  EXPECT_EQ(r->body.rfind("NCCL version 2.24.3", 0), 0u);

  QueryOptions json_only = To(s);
  json_only.format = ReplyFormat::kJson;
  auto refused = QueryRas(json_only);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("has no JSON report"), std::string::npos);
}

TEST(RasClient, TextOnlyAndVerboseSendWhatNcclExpects) {
  FakeRasServer s(ReadTranscriptFile("nccl-2.28.9-1-healthy-text.txt"));
  QueryOptions o = To(s);
  o.format = ReplyFormat::kText;
  o.verbose = true;
  auto r = QueryRas(o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(s.received(), (std::vector<std::string>{"CLIENT PROTOCOL 2", "VERBOSE STATUS"}));
}

TEST(RasClient, RefusedIsOneLine) {
  QueryOptions o;
  o.host = "127.0.0.1";
  o.port = std::to_string(FreePort());
  auto r = QueryRas(o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(r.status().message().find("Connection refused"), std::string::npos);
  EXPECT_NE(r.status().message().find("NCCL_RAS_ADDR"), std::string::npos);
  EXPECT_EQ(r.status().message().find('\n'), std::string::npos);
}

TEST(RasClient, SilentServerTimesOutAtTheDeadline) {
  FakeRasServer s("", FakeMode::kSilent);
  QueryOptions o = To(s);
  o.deadline = std::chrono::milliseconds(300);
  const auto start = std::chrono::steady_clock::now();
  auto r = QueryRas(o);
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDeadlineExceeded);
  EXPECT_NE(r.status().message().find("timed out waiting for the handshake answer"),
            std::string::npos)
      << r.status().message();
  EXPECT_LT(took, std::chrono::seconds(3));
}

TEST(RasClient, GarbageIsNotARasServer) {
  FakeRasServer s("", FakeMode::kGarbage);
  auto r = QueryRas(To(s));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("not an NCCL RAS server: answered 'HTTP/1.1 400 Bad "
                                      "Request' to the handshake"),
            std::string::npos)
      << r.status().message();
}

TEST(RasClient, EarlyCloseIsOneLine) {
  FakeRasServer s("", FakeMode::kCloseAtOnce);
  auto r = QueryRas(To(s));
  ASSERT_FALSE(r.ok());
  // Closed before or after the client's first line arrived: a close or a reset.
  const std::string& m = r.status().message();
  EXPECT_TRUE(m.find("closed the connection") != std::string::npos ||
              m.find("reset the connection") != std::string::npos)
      << m;
  EXPECT_EQ(m.find('\n'), std::string::npos);
}

TEST(RasClient, EndlessReportStopsAtTheCap) {
  FakeRasServer s(ReadTranscriptFile("nccl-2.28.9-1-healthy-text.txt"), FakeMode::kEndless);
  QueryOptions o = To(s);
  o.max_reply_bytes = 256 << 10;
  auto r = QueryRas(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("the status report exceeds 256 KiB; stopped reading"),
            std::string::npos)
      << r.status().message();
}

TEST(RasClient, UnknownProtocolVersionIsReadAndSaidSo) {
  FakeRasServer s(ReadTranscriptFile("nccl-2.28.9-1-healthy-text.txt"), FakeMode::kReplay, "3");
  auto r = QueryRas(To(s));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->server_protocol, "3");
  EXPECT_FALSE(r->protocol_known);
}

TEST(RasClient, AddressesAsNcclRasAddrWritesThem) {
  EXPECT_EQ(*SplitHostPort("localhost:28028"), std::make_pair(std::string("localhost"),
                                                              std::string("28028")));
  EXPECT_EQ(*SplitHostPort("[::1]:29000"), std::make_pair(std::string("::1"),
                                                          std::string("29000")));
  EXPECT_EQ(*SplitHostPort(":29000"), std::make_pair(std::string("localhost"),
                                                     std::string("29000")));
  EXPECT_EQ(*SplitHostPort("10.0.0.1"), std::make_pair(std::string("10.0.0.1"),
                                                       std::string("28028")));
  EXPECT_FALSE(SplitHostPort("host:http").ok());
  EXPECT_FALSE(SplitHostPort("host:70000").ok());
  EXPECT_FALSE(SplitHostPort("[::1").ok());
}

TEST(RasNetns, RunsInAnotherThreadOfTheSameNamespace) {
  auto same = SameNamespace("/proc/self/ns/net", "/proc/1/ns/net");
  ASSERT_TRUE(same.ok() || same.status().code() == StatusCode::kNotFound);
  FakeRasServer s(ReadTranscriptFile("nccl-2.28.9-1-healthy-text.txt"));
  std::optional<StatusOr<RawReply>> reply;
  Status entered =
      RunInNetworkNamespace("/proc/self/ns/net", [&] { reply.emplace(QueryRas(To(s))); });
  if (!entered.ok() && entered.message().find("Operation not permitted") != std::string::npos) {
    GTEST_SKIP() << "setns needs CAP_SYS_ADMIN: " << entered.message();
  }
  ASSERT_TRUE(entered.ok()) << entered.message();
  ASSERT_TRUE(reply.has_value() && reply->ok());
  Status gone = RunInNetworkNamespace("/proc/999999999/ns/net", [] { FAIL(); });
  EXPECT_EQ(gone.code(), StatusCode::kNotFound);
}

// ---- DIAGNOSTICS (NCCL 2.31+)

TEST(RasDiagnostics, ReadsTheReportToItsCompletionLine) {
  FakeRasServer s(ReadTranscriptFile("nccl-2.32.6-modelled-diag-ok.txt"));
  auto r = QueryRasDiagnostics(To(s));
  ASSERT_TRUE(r.ok()) << r.status().message();
  // No SET FORMAT: NCCL refuses diagnostics on a JSON connection.
  EXPECT_EQ(s.received(), (std::vector<std::string>{"CLIENT PROTOCOL 2", "DIAGNOSTICS"}));
  EXPECT_FALSE(r->busy);
  EXPECT_TRUE(r->complete);
  ASSERT_EQ(r->lines.size(), 6u);
  EXPECT_EQ(r->lines.front(), "node-a:101 NCCL DIAG === RAS Diagnostics ===");
  EXPECT_EQ(r->server_protocol, "2");
  EXPECT_EQ(r->transcript.rfind("> CLIENT PROTOCOL 2\n< SERVER PROTOCOL 2\n> DIAGNOSTICS\n", 0),
            0u);
}

TEST(RasDiagnostics, BusyIsAnAnswerNotAnError) {
  FakeRasServer s(ReadTranscriptFile("nccl-2.32.6-3-diag-busy.txt"));
  auto r = QueryRasDiagnostics(To(s));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->busy);
  EXPECT_TRUE(r->lines.empty());
}

TEST(RasDiagnostics, AnNcclBefore231SaysSoAndIsNotWaitedFor) {
  // NCCL 2.28.9 answers "ERROR: Unknown command DIAGNOSTICS" and keeps the connection open (as
  // recorded on a GPU, nccl-2.28.9-5-diag-unknown-command.txt: still open 3 s later): the client
  // stops at that line (a read to the end would run into the deadline instead).
  FakeRasServer s(ReadTranscriptFile("nccl-2.28.9-5-diag-unknown-command.txt"));
  QueryOptions o = To(s);
  o.deadline = std::chrono::seconds(2);
  auto r = QueryRasDiagnostics(o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find(kNoDiagnostics), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("Unknown command DIAGNOSTICS"), std::string::npos);
}

TEST(RasDiagnostics, EndlessReportLinesStopAtTheCap) {
  FakeRasServer s(ReadTranscriptFile("nccl-2.32.6-modelled-diag-ok.txt"), FakeMode::kEndlessLines);
  QueryOptions o = To(s);
  o.max_reply_bytes = 256 << 10;
  auto r = QueryRasDiagnostics(o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("the diagnostics report exceeds 256 KiB; stopped reading"),
            std::string::npos)
      << r.status().message();
}

TEST(RasDiagnostics, ALineWithoutEndIsNotAReport) {
  FakeRasServer s(ReadTranscriptFile("nccl-2.32.6-modelled-diag-ok.txt"), FakeMode::kEndless);
  auto r = QueryRasDiagnostics(To(s));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("no line end in the first 4096 bytes"), std::string::npos)
      << r.status().message();
  EXPECT_EQ(r.status().message().find('\n'), std::string::npos);
}

TEST(RasDiagnostics, GarbageInsteadOfAReport) {
  FakeRasServer s("> CLIENT PROTOCOL 2\n< SERVER PROTOCOL 2\n> DIAGNOSTICS\nHTTP/1.1 200 OK\n");
  auto r = QueryRasDiagnostics(To(s));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("not an NCCL diagnostics report: the first line is "
                                      "'HTTP/1.1 200 OK'"),
            std::string::npos)
      << r.status().message();
}

TEST(RasDiagnostics, TheServersOwnErrorIsOneLine) {
  FakeRasServer s(
      "> CLIENT PROTOCOL 2\n< SERVER PROTOCOL 2\n> DIAGNOSTICS\n"
      "ERROR: diagnostics failed to start (3)\n");
  auto r = QueryRasDiagnostics(To(s));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("refused DIAGNOSTICS: 'ERROR: diagnostics failed to start"),
            std::string::npos)
      << r.status().message();
}

TEST(RasDiagnostics, ACloseMidReportIsAnError) {
  FakeRasServer s(ReadTranscriptFile("nccl-2.32.6-modelled-diag-env-ecc.txt"),
                  FakeMode::kCloseMidway);
  auto r = QueryRasDiagnostics(To(s));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(r.status().message().find("after 3 report line(s), before the completion line"),
            std::string::npos)
      << r.status().message();
}

TEST(RasDiagnostics, AWholeReportOnAConnectionLeftOpenIsKept) {
  FakeRasServer s(ReadTranscriptFile("nccl-2.32.6-modelled-diag-ok.txt"), FakeMode::kHoldOpen);
  QueryOptions o = To(s);
  o.deadline = std::chrono::milliseconds(300);
  auto r = QueryRasDiagnostics(o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->complete);
  EXPECT_EQ(r->lines.size(), 6u);
}

TEST(RasDiagnostics, ASilentServerTimesOut) {
  FakeRasServer s("", FakeMode::kSilent);
  QueryOptions o = To(s);
  o.deadline = std::chrono::milliseconds(300);
  auto r = QueryRasDiagnostics(o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDeadlineExceeded);
}

}  // namespace
}  // namespace nccl_triage::ras
