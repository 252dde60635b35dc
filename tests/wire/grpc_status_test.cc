#include "wire/grpc_status.h"

#include <gtest/gtest.h>

#include <set>

namespace nccl_triage {
namespace {

TEST(GrpcCodeText, EveryCodeHasItsOwnWords) {
  std::set<std::string> seen;
  for (int c = 0; c <= 16; ++c) {
    std::string text = GrpcCodeText(static_cast<grpc::StatusCode>(c));
    EXPECT_EQ(text.rfind("code ", 0), std::string::npos) << c << " has no words";
    EXPECT_TRUE(seen.insert(text).second) << text << " names two codes";
  }
  EXPECT_EQ(GrpcCodeText(grpc::StatusCode::UNAVAILABLE), "unavailable");
  EXPECT_EQ(GrpcCodeText(grpc::StatusCode::DEADLINE_EXCEEDED), "deadline exceeded");
}

TEST(GrpcCodeText, ACodeFromANewerPeerIsItsNumber) {
  EXPECT_EQ(GrpcCodeText(static_cast<grpc::StatusCode>(42)), "code 42");
}

TEST(GrpcStatusText, CodeAloneWithoutAMessage) {
  EXPECT_EQ(GrpcStatusText(grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "")),
            "unauthenticated");
}

TEST(GrpcStatusText, TheMessageStaysOnOneLine) {
  EXPECT_EQ(GrpcStatusText(grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                                        "hello as node-b\r\nfrom node-a")),
            "permission denied: hello as node-b  from node-a");
}

TEST(GrpcStatusText, ALongMessageIsCutOnACharacterBoundary) {
  // 3 + 2 * 2 bytes: the cut at 6 would split the second "é".
  std::string text = GrpcStatusText(grpc::Status(grpc::StatusCode::UNAVAILABLE, "abcéé"), 6);
  EXPECT_EQ(text, "unavailable: abcé...");
}

}  // namespace
}  // namespace nccl_triage
