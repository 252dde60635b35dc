#include "base/utf8.h"

#include <gtest/gtest.h>

namespace nccl_triage {
namespace {

TEST(Utf8, ValidTextIsReturnedUnchanged) {
  const std::string text = "mlx5_0 \xC3\xA9t\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80 \t\x01";
  EXPECT_TRUE(IsValidUtf8(text));
  EXPECT_EQ(SanitizeUtf8(text), text);
}

TEST(Utf8, EachByteThatIsNotUtf8BecomesOneReplacementCharacter) {
  EXPECT_EQ(SanitizeUtf8("name=\xFF\xFE, Ch 8"), "name=\xEF\xBF\xBD\xEF\xBF\xBD, Ch 8");
  EXPECT_EQ(SanitizeUtf8("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD");          // overlong '/'
  EXPECT_EQ(SanitizeUtf8("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // surrogate
  EXPECT_EQ(SanitizeUtf8("\xF4\x90\x80\x80").size(), 12u);                  // above U+10FFFF
  EXPECT_EQ(SanitizeUtf8("a\xE2\x82"), "a\xEF\xBF\xBD\xEF\xBF\xBD");          // cut short
  for (const char* bad : {"\xFF", "\x80", "\xC3", "\xE2\x28\xA1"}) {
    EXPECT_FALSE(IsValidUtf8(bad)) << bad;
    EXPECT_TRUE(IsValidUtf8(SanitizeUtf8(bad))) << bad;
  }
}

TEST(Utf8, APrefixNeverEndsInsideACharacter) {
  const std::string euros = "\xE2\x82\xAC\xE2\x82\xAC";  // two three-byte characters
  EXPECT_EQ(Utf8Prefix(euros, 6), euros);
  EXPECT_EQ(Utf8Prefix(euros, 5), "\xE2\x82\xAC");
  EXPECT_EQ(Utf8Prefix(euros, 4), "\xE2\x82\xAC");
  EXPECT_EQ(Utf8Prefix(euros, 3), "\xE2\x82\xAC");
  EXPECT_EQ(Utf8Prefix(euros, 2), "");
  EXPECT_EQ(Utf8Prefix("abc", 2), "ab");
}

}  // namespace
}  // namespace nccl_triage
