// The agent connection cap derived from the descriptor limit (coordinator/connection_gate.h).
#include <gtest/gtest.h>

#include "coordinator/connection_gate.h"

namespace nccl_triage {
namespace {

TEST(ConnectionCap, ASmallDescriptorLimitLeavesTheProcessItsOwnDescriptors) {
  // RLIMIT_NOFILE 32: 24 kept for the process, 4 connections (8 descriptors), not 128.
  EXPECT_EQ(ConnectionCapForFdLimit(4352, 32), 4U);
  EXPECT_LE(2 * ConnectionCapForFdLimit(4352, 64) + 24, 64U);
  EXPECT_EQ(ConnectionCapForFdLimit(4352, 768), 192U);
}

TEST(ConnectionCap, ALargeLimitKeepsFiveHundredTwelveAndTheConfiguredCap) {
  EXPECT_EQ(ConnectionCapForFdLimit(100'000, 1024), 256U);
  EXPECT_EQ(ConnectionCapForFdLimit(100'000, 65536), 32512U);
  EXPECT_EQ(ConnectionCapForFdLimit(4352, 1 << 20), 4352U);
}

TEST(ConnectionCap, NeverZero) { EXPECT_EQ(ConnectionCapForFdLimit(4352, 10), 1U); }

}  // namespace
}  // namespace nccl_triage
