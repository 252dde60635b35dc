#include "core/env_names.h"

#include <gtest/gtest.h>

namespace nccl_triage {
namespace {

TEST(IsNcclVariableName, IsNcclFollowedByUpperCaseDigitsAndUnderscores) {
  for (const char* good : {"NCCL_DEBUG", "NCCL_IB_HCA", "NCCL_P2P_LEVEL", "NCCL_FAKE_ROOT"}) {
    EXPECT_TRUE(IsNcclVariableName(good)) << good;
  }
  for (const char* bad : {"NCCL_", "NCCL", "nccl_debug", "NCCL_debug", "XNCCL_DEBUG", "LD_PRELOAD",
                          "AWS_SECRET_ACCESS_KEY", "NCCL_A=B", "NCCL_A B", ""}) {
    EXPECT_FALSE(IsNcclVariableName(bad)) << bad;
  }
}

TEST(LooksSecret, MatchesWholeWordsOfCredentialNames) {
  for (const char* secret : {"NCCL_SECRET_TOKEN", "NCCL_API_KEY", "NCCL_KEYS", "NCCL_PASSWORD",
                             "NCCL_DB_PASSWD", "NCCL_CREDENTIALS", "NCCL_tokens"}) {
    EXPECT_TRUE(LooksSecret(secret)) << secret;
  }
  for (const char* plain :
       {"NCCL_IB_PKEY", "NCCL_DEBUG", "NCCL_KEYBOARD", "NCCL_MONKEY", "NCCL_SOCKET_IFNAME"}) {
    EXPECT_FALSE(LooksSecret(plain)) << plain;
  }
}

}  // namespace
}  // namespace nccl_triage
