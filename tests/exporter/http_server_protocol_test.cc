#include "exporter/http_server_protocol.h"

#include <gtest/gtest.h>

namespace nccl_triage {
namespace {

TEST(FindHeadEnd, FindsTheBlankLineAcrossReadsWithCrlfOrBareLf) {
  EXPECT_EQ(FindHeadEnd("GET / HTTP/1.1\r\nA: b\r\n\r\nbody"), 24u);
  EXPECT_EQ(FindHeadEnd("GET / HTTP/1.1\nA: b\n\nbody"), 21u);
  EXPECT_FALSE(FindHeadEnd("GET / HTTP/1.1\r\nA: b\r\n"));
  // The search resumes where it stopped, also when the line end was split between two reads.
  std::string buf = "GET / HTTP/1.1\r\nA: b\r\n\r";
  EXPECT_FALSE(FindHeadEnd(buf));
  const size_t scanned = buf.size();
  buf += "\nrest";
  EXPECT_EQ(FindHeadEnd(buf, scanned), 24u);
}

TEST(ParseHttpHead, ReadsRequestLineHeadersQueryAndBodyLength) {
  auto r = ParseHttpHead(
      "POST /sweep%2Fnow?reason=manual+run&x=%41 HTTP/1.1\r\nHost: c\r\n"
      "Authorization:  Bearer abc \r\nContent-Length: 12\r\n\r\n");
  ASSERT_TRUE(r.head) << r.error;
  EXPECT_EQ(r.head->method, "POST");
  EXPECT_EQ(r.head->path, "/sweep/now");
  EXPECT_EQ(r.head->params.find("reason")->second, "manual run");
  EXPECT_EQ(r.head->params.find("x")->second, "A");
  EXPECT_EQ(r.head->content_length, 12u);
  EXPECT_TRUE(r.head->keep_alive);
  ASSERT_EQ(r.head->headers.size(), 3u);
  EXPECT_EQ(r.head->headers[1].first, "authorization");
  EXPECT_EQ(r.head->headers[1].second, "Bearer abc");
}

TEST(ParseHttpHead, KeepAliveFollowsTheVersionAndConnectionHeader) {
  EXPECT_FALSE(ParseHttpHead("GET / HTTP/1.0\r\n").head->keep_alive);
  EXPECT_TRUE(ParseHttpHead("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n").head->keep_alive);
  EXPECT_FALSE(ParseHttpHead("GET / HTTP/1.1\r\nConnection: close\r\n").head->keep_alive);
  EXPECT_FALSE(ParseHttpHead("GET / HTTP/1.1\r\nConnection: close\r\nConnection: keep-alive\r\n")
                   .head->keep_alive);
}

TEST(ParseHttpHead, RefusesWhatItDoesNotSpeakWithTheRightStatus) {
  auto status = [](std::string_view head, HttpLimits limits = {}) {
    auto r = ParseHttpHead(head, limits);
    EXPECT_FALSE(r.head) << head;
    EXPECT_FALSE(r.error.empty());
    return r.error_status;
  };
  EXPECT_EQ(status(""), 400);
  EXPECT_EQ(status("GET /\r\n"), 400);
  EXPECT_EQ(status("GET  / HTTP/1.1\r\n"), 400);
  EXPECT_EQ(status("GET http://x/ HTTP/1.1\r\n"), 400);
  EXPECT_EQ(status("G(T / HTTP/1.1\r\n"), 400);
  EXPECT_EQ(status("GET / HTTP/2.0\r\n"), 505);
  EXPECT_EQ(status("GET / HTTP/1.1\r\nNo colon\r\n"), 400);
  EXPECT_EQ(status("GET / HTTP/1.1\r\nBad name: x\r\n"), 400);
  EXPECT_EQ(status("GET / HTTP/1.1\r\nA: b\r\n  folded\r\n"), 400);
  EXPECT_EQ(status("GET / HTTP/1.1\r\nA: b\x01\r\n"), 400);
  EXPECT_EQ(status("POST / HTTP/1.1\r\nContent-Length: 1x\r\n"), 400);
  EXPECT_EQ(status("POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n"), 400);
  EXPECT_EQ(status("POST / HTTP/1.1\r\nContent-Length: 99999999999999999999999\r\n"), 400);
  EXPECT_EQ(status("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n"), 501);
  EXPECT_EQ(status("POST / HTTP/1.1\r\nExpect: magic\r\n"), 417);
  EXPECT_EQ(status("GET /" + std::string(5000, 'a') + " HTTP/1.1\r\n"), 414);
  HttpLimits small;
  small.max_headers = 2;
  EXPECT_EQ(status("GET / HTTP/1.1\r\na: 1\r\nb: 2\r\nc: 3\r\n", small), 431);
  small.max_head_bytes = 10;
  EXPECT_EQ(status("GET / HTTP/1.1\r\n", small), 431);
}

TEST(FormatHttpResponse, WritesStatusLengthConnectionAndExtraHeaders) {
  EXPECT_EQ(FormatHttpResponse(401, "text/plain", "no\n", false, {{"WWW-Authenticate", "Bearer"}}),
            "HTTP/1.1 401 Unauthorized\r\nContent-Type: text/plain\r\nContent-Length: 3\r\n"
            "Connection: close\r\nWWW-Authenticate: Bearer\r\n\r\nno\n");
  EXPECT_NE(FormatHttpResponse(200, "a", "", true).find("Connection: keep-alive"),
            std::string::npos);
}

}  // namespace
}  // namespace nccl_triage
