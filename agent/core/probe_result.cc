#include "core/probe_result.h"

#include <nlohmann/json.hpp>

namespace nccl_triage {

nlohmann::json ToJson(const ProbeResult& r) {
  nlohmann::json j = {
      {"mode", ToString(r.mode)},
      {"outcome", ToString(r.outcome)},
      {"rank", r.rank},
      {"nranks", r.nranks},
      {"peer", r.peer},
      {"detail", r.detail},
      {"size_bytes", r.size_bytes},
      {"iterations", r.iterations},
      {"time_seconds", r.time_seconds},
      {"algbw_bytes_per_second", r.algbw_bytes_per_second},
      {"busbw_bytes_per_second", r.busbw_bytes_per_second},
      {"data_verified", r.data_verified},
      {"mismatches", r.mismatches},
      {"transport", r.transport},
      {"ib_ports", r.ib_ports},
      {"gdrdma", r.gdrdma},
      {"nccl_error", r.nccl_error},
      {"last_error", r.last_error},
      {"nccl_version", r.nccl_version},
      {"cuda_driver_version", r.cuda_driver_version},
      {"gpu_name", r.gpu_name},
      {"gpu_bus_id", r.gpu_bus_id},
      {"nccl_library", r.nccl_library},
      {"startup_seconds", r.startup_seconds},
      {"duration_seconds", r.duration_seconds},
      {"log_path", r.log_path},
  };
  j["nccl_result"] = r.nccl_result ? nlohmann::json(*r.nccl_result) : nlohmann::json(nullptr);
  j["cuda_result"] = r.cuda_result ? nlohmann::json(*r.cuda_result) : nlohmann::json(nullptr);
  if (!r.unavailable_cause.empty()) j["unavailable_cause"] = r.unavailable_cause;
  if (r.classification) j["classification"] = ToJson(*r.classification);
  return j;
}

ProbeResult ProbeResultFromJson(const nlohmann::json& j) {
  ProbeResult r;
  r.mode = FromString<ProbeMode>(j.at("mode").get<std::string>()).value_or(ProbeMode::kSocket);
  auto outcome = FromString<ProbeOutcome>(j.at("outcome").get<std::string>());
  if (!outcome) throw nlohmann::json::other_error::create(501, "unknown probe outcome", &j);
  r.outcome = *outcome;
  r.rank = j.value("rank", 0);
  r.nranks = j.value("nranks", 2);
  r.peer = j.value("peer", "");
  r.detail = j.value("detail", "");
  r.unavailable_cause = j.value("unavailable_cause", "");
  r.size_bytes = j.value("size_bytes", uint64_t{0});
  r.iterations = j.value("iterations", 0);
  r.time_seconds = j.value("time_seconds", 0.0);
  r.algbw_bytes_per_second = j.value("algbw_bytes_per_second", 0.0);
  r.busbw_bytes_per_second = j.value("busbw_bytes_per_second", 0.0);
  r.data_verified = j.value("data_verified", false);
  r.mismatches = j.value("mismatches", uint64_t{0});
  r.transport = j.value("transport", "");
  if (j.contains("ib_ports") && j["ib_ports"].is_array()) {
    for (const auto& port : j["ib_ports"]) {
      if (port.is_string()) r.ib_ports.push_back(port.get<std::string>());
    }
  }
  r.gdrdma = j.value("gdrdma", false);
  if (j.contains("nccl_result") && j["nccl_result"].is_number_integer()) {
    r.nccl_result = j["nccl_result"].get<int>();
  }
  if (j.contains("cuda_result") && j["cuda_result"].is_number_integer()) {
    r.cuda_result = j["cuda_result"].get<int>();
  }
  r.nccl_error = j.value("nccl_error", "");
  r.last_error = j.value("last_error", "");
  r.nccl_version = j.value("nccl_version", "");
  r.cuda_driver_version = j.value("cuda_driver_version", 0);
  r.gpu_name = j.value("gpu_name", "");
  r.gpu_bus_id = j.value("gpu_bus_id", "");
  r.nccl_library = j.value("nccl_library", "");
  r.startup_seconds = j.value("startup_seconds", 0.0);
  r.duration_seconds = j.value("duration_seconds", 0.0);
  r.log_path = j.value("log_path", "");
  return r;
}

}  // namespace nccl_triage
