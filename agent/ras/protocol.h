// Constants of NCCL's RAS client protocol (src/ras/ras_internal.h, 2.24 to 2.30: unchanged).
#pragma once

#include <string_view>

namespace nccl_triage::ras {

// NCCL_RAS_CLIENT_PROTOCOL: the only version NCCL has had (2.24.3 to 2.30.7).
inline constexpr int kClientProtocol = 2;
// NCCL_RAS_ADDR's default, "localhost:28028" (NCCL_RAS_CLIENT_PORT).
inline constexpr const char* kDefaultHost = "localhost";
inline constexpr const char* kDefaultPort = "28028";
// 2.31+: the last line of a DIAGNOSTICS report, after "<host>:<pid> NCCL DIAG "
// ("RAS diagnostics completed in 12.3 ms across 8 RAS peers").
inline constexpr std::string_view kDiagnosticsDone = "RAS diagnostics completed in ";

}  // namespace nccl_triage::ras
