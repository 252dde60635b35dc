#include "core/probe_result.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace nccl_triage {
namespace {

TEST(ProbeResultJson, RoundTripsEveryScalarField) {
  ProbeResult r;
  r.mode = ProbeMode::kIb;
  r.outcome = ProbeOutcome::kTimeout;
  r.rank = 1;
  r.peer = "gpu-3";
  r.detail = "deadline 120 s";
  r.size_bytes = 1 << 26;
  r.iterations = 10;
  r.time_seconds = 0.036;
  r.algbw_bytes_per_second = 1.8e9;
  r.busbw_bytes_per_second = 1.8e9;
  r.data_verified = true;
  r.transport = "NET/IB";
  r.nccl_result = 5;
  r.last_error = "Failed to initialize any NET plugin";
  r.nccl_version = "2.28.9";
  r.cuda_driver_version = 13000;
  r.gpu_name = "NVIDIA H200";
  r.gpu_bus_id = "0000:00:06.0";
  auto back = ProbeResultFromJson(ToJson(r));
  EXPECT_EQ(back.mode, r.mode);
  EXPECT_EQ(back.outcome, r.outcome);
  EXPECT_EQ(back.rank, 1);
  EXPECT_EQ(back.peer, "gpu-3");
  EXPECT_EQ(back.size_bytes, r.size_bytes);
  EXPECT_DOUBLE_EQ(back.busbw_bytes_per_second, r.busbw_bytes_per_second);
  EXPECT_EQ(back.nccl_result, 5);
  EXPECT_FALSE(back.cuda_result.has_value());
  EXPECT_EQ(back.last_error, r.last_error);
  EXPECT_EQ(back.gpu_name, r.gpu_name);
}

TEST(ProbeResultJson, UnknownOutcomeIsRejected) {
  nlohmann::json j = {{"mode", "ib"}, {"outcome", "splendid"}};
  EXPECT_THROW(ProbeResultFromJson(j), nlohmann::json::exception);
}

TEST(ProbeResultJson, MissingModeIsRejected) {
  EXPECT_THROW(ProbeResultFromJson(nlohmann::json::object()), nlohmann::json::exception);
}

}  // namespace
}  // namespace nccl_triage
