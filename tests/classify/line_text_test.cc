// The classifier's text helpers on their own (agent/classify/line_text.h).
#include "classify/line_text.h"

#include <gtest/gtest.h>

#include <string>

namespace nccl_triage::classify {
namespace {

TEST(Sanitize, KeepsUtf8AndTabsAndReplacesControlAndInvalidBytes) {
  EXPECT_EQ(Sanitize("caf\xc3\xa9\tok"), "caf\xc3\xa9\tok");
  EXPECT_EQ(Sanitize(std::string("a\x01" "b\x7f", 4)), "a?b?");
  EXPECT_EQ(Sanitize("x\xffy"), "x\xef\xbf\xbdy");  // U+FFFD
}

TEST(FileOnly, DropsTheLineNumberAndTheFunction) {
  EXPECT_EQ(FileOnly("misc/shmutils.cc:103 (ncclShmOpen)"), "misc/shmutils.cc");
  EXPECT_EQ(FileOnly("net.cc:42"), "net.cc");
  EXPECT_EQ(FileOnly(""), "");
}

TEST(IsTestsResultRow, AcceptsARowWithNoWrongElementsOnly) {
  EXPECT_TRUE(IsTestsResultRow(
      "     8388608       2097152     float     sum      -1   123.4   68.00  127.50      0"));
  EXPECT_TRUE(IsTestsResultRow("  1048576  262144  float  none  0  80.1  13.09  13.09  N/A"));
  EXPECT_FALSE(IsTestsResultRow(
      "     8388608       2097152     float     sum      -1   123.4   68.00  127.50     12"));
  EXPECT_FALSE(IsTestsResultRow("# size count type redop root time algbw busbw #wrong"));
}

// MPICH's -prepend-rank labels every write of the rank, so the pieces of one row carry it too.
TEST(IsTestsResultRow, AcceptsARowWhosePiecesALauncherLabelled) {
  EXPECT_TRUE(IsTestsResultRow("[0]      1048576        262144     float     sum      -1[0]"
                               "    1626.5    0.64    1.24      0[0]    2302.3    0.46    0.87"
                               "      0"));
  EXPECT_FALSE(IsTestsResultRow("[0]      1048576        262144     float     sum      -1[0]"
                                "    1626.5    0.64    1.24      3[0]    2302.3    0.46    0.87"
                                "      3"));
}

TEST(IsProgressLine, NeedsACountedStepWithAMeasuredFigure) {
  EXPECT_TRUE(IsProgressLine("Iteration: 10. Average time per step so far: 0.0013"));
  EXPECT_TRUE(IsProgressLine("step 200 | loss 2.31"));
  EXPECT_TRUE(IsProgressLine("{'loss': 1.92, 'learning_rate': 2e-05, 'epoch': 0.4}"));
  EXPECT_FALSE(IsProgressLine("step 0 | loss 2.31"));  // nothing ran yet
  EXPECT_FALSE(IsProgressLine("Epoch 3"));             // a count alone
  EXPECT_FALSE(IsProgressLine("loss 2.31"));           // a figure alone
}

TEST(IsProgramSuccessLine, AcceptsAProgramsWordOrACheckedRate) {
  EXPECT_TRUE(IsProgramSuccessLine("vLLM NCCL is successful!"));
  EXPECT_TRUE(IsProgramSuccessLine("all_reduce test passed"));
  EXPECT_TRUE(IsProgramSuccessLine("size 1048576 busbw_GBps 0.773 check ok"));
  EXPECT_FALSE(IsProgramSuccessLine("busbw 12.5 GB/s"));  // a rate without its check
  EXPECT_FALSE(IsProgramSuccessLine("the test failed"));
}

TEST(ParseVersion, ReadsTheDottedNumberAfterNcclVersion) {
  EXPECT_EQ(ParseVersion("NCCL version 2.28.9+cuda13.0"), "2.28.9");
  EXPECT_EQ(ParseVersion("RuntimeError: NCCL error ..., NCCL version 2.7.8"), "2.7.8");
  EXPECT_EQ(ParseVersion("NCCL version 2."), "");  // one number is not a version
  EXPECT_EQ(ParseVersion("no version here"), "");
}

TEST(IEqualsPrefix, IgnoresTheCaseOfTheText) {
  EXPECT_TRUE(IEqualsPrefix("Socket", "SOCKET"));
  EXPECT_TRUE(IEqualsPrefix("IBext_v8", "IB"));
  EXPECT_FALSE(IEqualsPrefix("IB", "IBEXT"));
  EXPECT_EQ(ToUpper("IBext_v8"), "IBEXT_V8");
}

}  // namespace
}  // namespace nccl_triage::classify
