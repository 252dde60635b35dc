// ProbeResult: the typed outcome of one NCCL probe (one rank, one mode).
//
// Produced by the probe child (as JSON on stdout) and completed by the runner in the parent
// (timeouts, crashes, missing libraries); consumed by the decision table, the coordinator and
// the exporters. Plain value.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/reflect.h"
#include "core/classification.h"

namespace nccl_triage {

// kIntraNode: the GPUs of one node among themselves (one rank per GPU, one host hash), NCCL's
// choice of transport left alone (P2P over NVLink/PCIe, SHM, or NET as a last resort).
enum class ProbeMode { kSocket, kIb, kIntraNode };
constexpr auto NamesOf(Type<ProbeMode>) {
  return std::array{Named(ProbeMode::kSocket, "socket"), Named(ProbeMode::kIb, "ib"),
                    Named(ProbeMode::kIntraNode, "intra")};
}
enum class ProbeOutcome { kPass, kFail, kTimeout, kCrashed, kUnavailable, kNotRun };
constexpr auto NamesOf(Type<ProbeOutcome>) {
  return std::array{Named(ProbeOutcome::kPass, "pass"), Named(ProbeOutcome::kFail, "fail"),
                    Named(ProbeOutcome::kTimeout, "timeout"),
                    Named(ProbeOutcome::kCrashed, "crashed"),
                    Named(ProbeOutcome::kUnavailable, "unavailable"),
                    Named(ProbeOutcome::kNotRun, "not_run")};
}

struct ProbeResult {
  ProbeMode mode = ProbeMode::kSocket;
  ProbeOutcome outcome = ProbeOutcome::kNotRun;
  int rank = 0;
  int nranks = 2;
  std::string peer;    // the other node (or "local" for --pair-local)
  std::string detail;  // one line: why this outcome
  std::string unavailable_cause;  // unavailable: probe.no_nccl, probe.no_cuda or probe.no_gpu
  uint64_t size_bytes = 0;
  int iterations = 0;
  double time_seconds = 0;  // mean time per all-reduce
  double algbw_bytes_per_second = 0;
  double busbw_bytes_per_second = 0;
  bool data_verified = false;
  uint64_t mismatches = 0;
  std::string transport;  // "NET/IB", "NET/Socket", "P2P/CUMEM", "SHM/direct/direct"; "" when no
                          // channel line
  std::vector<std::string> ib_ports;  // HCA ports the IB channels used, "mlx5_0:1" (from the log)
  bool gdrdma = false;                // an IB channel used GPUDirect RDMA (`via NET/IB/0/GDRDMA`)
  std::optional<int> nccl_result;     // ncclResult_t of the failing call
  std::string nccl_error;             // ncclGetErrorString
  std::string last_error;             // ncclGetLastError
  std::optional<int> cuda_result;
  std::string nccl_version;     // "2.28.9"
  int cuda_driver_version = 0;  // 13000
  std::string gpu_name;
  std::string gpu_bus_id;
  std::string nccl_library;     // the path that was loaded
  double startup_seconds = 0;   // child start to the first NCCL call
  double duration_seconds = 0;  // wall time of the whole probe (runner)
  std::string log_path;
  std::optional<Classification> classification;  // of the NCCL log, on failure
};
// The bounds are those of a ProbeReport on the wire (wire/fields.h copies the fields of the same
// names both ways).
constexpr auto FieldsOf(Type<ProbeResult>) {
  using R = ProbeResult;
  return std::tuple{Field("mode", &R::mode),
                    Field("outcome", &R::outcome),
                    Field("rank", &R::rank),
                    Field("nranks", &R::nranks),
                    Field("peer", &R::peer),
                    Field("detail", &R::detail),
                    Field("unavailable_cause", &R::unavailable_cause),
                    Field("size_bytes", &R::size_bytes),
                    Field("iterations", &R::iterations),
                    Field("time_seconds", &R::time_seconds),
                    Field("algbw_bytes_per_second", &R::algbw_bytes_per_second),
                    Field("busbw_bytes_per_second", &R::busbw_bytes_per_second),
                    Field("data_verified", &R::data_verified),
                    Field("mismatches", &R::mismatches),
                    Field("transport", &R::transport, Bound{.max = 32}),
                    Field("ib_ports", &R::ib_ports,
                          Bound{.max = 64, .items = 32}),  // items: NCCL's MAX_IB_DEVS
                    Field("gdrdma", &R::gdrdma),
                    Field("nccl_result", &R::nccl_result),
                    Field("nccl_error", &R::nccl_error),
                    Field("last_error", &R::last_error),
                    Field("cuda_result", &R::cuda_result),
                    Field("nccl_version", &R::nccl_version, Bound{.max = 64}),
                    Field("cuda_driver_version", &R::cuda_driver_version, Bound{.max = 1u << 30}),
                    Field("gpu_name", &R::gpu_name),
                    Field("gpu_bus_id", &R::gpu_bus_id),
                    Field("nccl_library", &R::nccl_library),
                    Field("startup_seconds", &R::startup_seconds),
                    Field("duration_seconds", &R::duration_seconds),
                    Field("log_path", &R::log_path),
                    Field("classification", &R::classification)};
}

nlohmann::json ToJson(const ProbeResult& r);
ProbeResult ProbeResultFromJson(const nlohmann::json& j);  // throws nlohmann::json::exception

}  // namespace nccl_triage
