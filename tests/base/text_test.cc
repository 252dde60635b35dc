// base/byte_size.h and base/text.h: the one byte-size grammar, the one join, the one ASCII excerpt.
#include <gtest/gtest.h>

#include <regex>
#include <set>
#include <string>
#include <vector>

#include "base/byte_size.h"
#include "base/text.h"

namespace nccl_triage {
namespace {

TEST(ByteSize, BinaryUnitsWithOrWithoutTheirLongNames) {
  EXPECT_EQ(ParseByteSize("4096"), 4096u);
  EXPECT_EQ(ParseByteSize("4096B"), 4096u);
  EXPECT_EQ(ParseByteSize("2k"), 2048u);
  EXPECT_EQ(ParseByteSize("2K"), 2048u);
  EXPECT_EQ(ParseByteSize("2Ki"), 2048u);
  EXPECT_EQ(ParseByteSize("2KiB"), 2048u);
  EXPECT_EQ(ParseByteSize("64M"), 64u << 20);
  EXPECT_EQ(ParseByteSize("64Mi"), 64u << 20);
  EXPECT_EQ(ParseByteSize("1G"), 1u << 30);
  EXPECT_EQ(ParseByteSize("1GiB"), 1u << 30);
  EXPECT_EQ(ParseByteSize("3TiB"), 3ull << 40);
}

TEST(ByteSize, AnythingElseIsNotASize) {
  for (const char* bad : {"", "M", "12Q", "-1", "+4", " 4", "4 ", "1.5G", "4MB", "4kB", "4mi",
                          "99999999999999999999", "99999999999999999999G", "16777216T"}) {
    EXPECT_EQ(ParseByteSize(bad), std::nullopt) << bad;
  }
  EXPECT_EQ(ParseByteSize("16777215T"), 16777215ull << 40);
}

// The chart's schema takes kByteSizePattern: it must accept exactly the strings the parser does.
TEST(ByteSize, ThePatternAcceptsWhatTheParserAccepts) {
  const std::regex pattern{std::string(kByteSizePattern)};
  for (const char* s : {"1", "1B", "1k", "1K", "1Ki", "1KiB", "1M", "1Mi", "1MiB", "1G", "1Gi",
                        "1GiB", "1T", "1Ti", "1TiB", "", "1b", "1KB", "1 M", "x", "1Gib", "-1"}) {
    EXPECT_EQ(std::regex_match(s, pattern), ParseByteSize(s).has_value()) << s;
  }
}

TEST(Join, SeparatesEveryItemOfAnyRangeOfStrings) {
  EXPECT_EQ(Join(std::vector<std::string>{"a", "b", "c"}), "a, b, c");
  EXPECT_EQ(Join(std::set<std::string>{"roce", "ib"}, ","), "ib,roce");
  EXPECT_EQ(Join(std::vector<std::string>{}), "");
  EXPECT_EQ(Join(std::vector<std::string>{"", "x"}, "|"), "|x");
}

TEST(PrintableAscii, ReplacesEveryByteOutsidePrintableAsciiAndCuts) {
  EXPECT_EQ(PrintableAscii("ok\n\x1b[2J\xff", 100), "ok??[2J?");
  EXPECT_EQ(PrintableAscii("abcdef", 3, '.'), "abc");
  EXPECT_EQ(PrintableAscii(std::string("a\0b", 3), 10, '.'), "a.b");
}

}  // namespace
}  // namespace nccl_triage
