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

// NCCL_TRIAGE_TOKEN is an NCCL_* name by its letters and passed the allow-list into the probe
// child; nccl-triage's own settings are not NCCL's.
TEST(IsNcclVariableName, RefusesNcclTriageOwnSettingsSoTheTokenNeverReachesAProbe) {
  EXPECT_FALSE(IsNcclVariableName("NCCL_TRIAGE_TOKEN"));
  EXPECT_FALSE(IsNcclVariableName("NCCL_TRIAGE_ANYTHING"));
  EXPECT_TRUE(IsNcclVariableName("NCCL_TRIAGED"));
}

// Names the whole-word rule missed: run-together words and the usual short forms.
TEST(LooksSecret, MatchesApiKeyPrivateKeyAuthPassAndCredsAnywhereInTheName) {
  for (const char* secret : {"NCCL_APIKEY", "SSH_PRIVATEKEY", "NCCL_MY_PRIVATEKEY_PEM", "NCCL_AUTH",
                             "HTTP_AUTHORIZATION", "DB_PASS", "NCCL_PASSPHRASE", "AWS_CREDS",
                             "NCCL_GITTOKEN"}) {
    EXPECT_TRUE(LooksSecret(secret)) << secret;
  }
}

TEST(MaskSecretsInValue, HidesUrlPasswordsAndBearerOrBasicCredentials) {
  EXPECT_EQ(MaskSecretsInValue("https://user:s3cret@registry.example/x?y=1"),
            "https://user:<hidden>@registry.example/x?y=1");
  EXPECT_EQ(MaskSecretsInValue("Authorization: Bearer eyJhbGciOi.x.y, next"),
            "Authorization: Bearer <hidden>, next");
  EXPECT_EQ(MaskSecretsInValue("basic dXNlcjpwYXNz"), "basic <hidden>");
  // Nothing secret: unchanged.
  for (const char* plain : {"mlx5_0:1,mlx5_1:1", "https://example.com/a@b", "http://host:8080/",
                            "eth0", ""}) {
    EXPECT_EQ(MaskSecretsInValue(plain), plain);
  }
}

}  // namespace
}  // namespace nccl_triage
