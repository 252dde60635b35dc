// What an expert knows about NCCL beyond its messages, as data: the values NCCL accepts for its
// enumerated settings, the oldest NCCL that supports each GPU architecture, and which CUDA a
// driver must offer for an NCCL build. The classifier checks what a log shows (`NCCL_X set by
// environment to V`, `NCCL version 2.14.3+cuda11.7`, `cudaDriverVersion 12020`, a GPU's name)
// against these tables. Pure and immutable; the tables are the only place these facts live (the
// docs name them from here).
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace nccl_triage {

// An NCCL_* setting whose values NCCL parses from a fixed list.
struct EnumSetting {
  std::string_view name;     // NCCL_ALGO
  std::string_view values;   // accepted tokens, comma-separated, compared case-insensitively
  bool list = false;         // a comma-separated list, optionally `^`-negated, per-collective
                             // `coll:a,b;coll2:c` accepted (NCCL_ALGO, NCCL_PROTO)
  std::string_view since;    // NCCL version from which this list holds ("" = all)
};
std::span<const EnumSetting> EnumSettings();

// A GPU generation and the oldest NCCL that runs on it.
struct GpuArchitecture {
  std::string_view name;      // "Hopper"
  std::string_view patterns;  // RE2: how a log names its GPUs ("H100|H200|H800|sm_?90")
  std::string_view min_nccl;  // "2.18"
};
std::span<const GpuArchitecture> GpuArchitectures();

// The problem a log's setting has, or nullopt when NCCL accepts it. `value` as the log prints it.
std::optional<std::string> CheckEnvValue(std::string_view name, std::string_view value);

// Two settings that contradict each other (NCCL_NET=IB with NCCL_IB_DISABLE=1): the problem, or
// nullopt. `get` returns a setting's value as the log showed it, or nullopt.
struct EnvView {
  virtual ~EnvView() = default;
  virtual std::optional<std::string_view> Get(std::string_view name) const = 0;
};
std::optional<std::string> CheckEnvCombination(const EnvView& env);

// The GPU generation a text line names, or nullptr.
const GpuArchitecture* FindGpuArchitecture(std::string_view line);

// The CUDA major an NCCL build was made for: 12 from "2.21.5+cuda12.4", or -1.
int NcclCudaMajor(std::string_view version_line);
// The CUDA major a driver offers: 12 from cudaDriverVersion 12020, or -1.
int DriverCudaMajor(long driver_version);

}  // namespace nccl_triage
