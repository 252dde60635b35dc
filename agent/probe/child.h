// The probe child: one NCCL rank of one mode, in its own process (`nccl-triage probe --child`).
//
// It loads libcuda.so.1 and libnccl.so.2 with dlopen (never linked: the agent runs on nodes without
// CUDA), sets up the primary context of one GPU, joins a communicator through a unique id (rank 0
// makes it and prints it on stdout as one line; the other ranks read it from a file descriptor,
// stdin by default, fed by whoever relays it: the runner locally, the coordinator between nodes),
// fills device buffers with rank-dependent values, runs warm-up and timed all-reduces, copies the
// result back and verifies every element, and prints exactly one JSON ProbeResult line last.
//
// Failures are results, not errors: a missing library is `unavailable`, an NCCL or CUDA error is
// `fail` with the codes and texts, a stage that outlives the child's deadline is `timeout` (the
// communicator is aborted; that is only possible with ncclCommInitRankConfig, blocking=0). The
// runner adds what the child cannot know (the classified log, the transport rule, crashes).
// The environment is the runner's business; the child only pins the variables that define its
// mode and log (so a hand-started child cannot probe the wrong path).
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "core/probe_result.h"
#include "probe/nccl_abi.h"

namespace nccl_triage {

// Stdout line prefix that carries the unique id (hex) from rank 0 to the relay.
inline constexpr std::string_view kUniqueIdLinePrefix = "NCCL_TRIAGE_UNIQUE_ID ";

struct ChildOptions {
  ProbeMode mode = ProbeMode::kSocket;
  int rank = 0;
  int nranks = 2;
  int device = 0;  // CUDA ordinal
  // The GPU by PCI bus id ("0000:07:00.0"), found with cuDeviceGetByPCIBusId: CUDA's ordinals
  // follow CUDA_DEVICE_ORDER, a bus id does not. Empty: `device`.
  std::string gpu_bus_id;
  uint64_t size_bytes = 64ull << 20;
  int iterations = 10;
  int warmup = 2;
  int deadline_ms = 110'000;  // for the whole child, from its start
  std::string log_path;       // NCCL_DEBUG_FILE; empty: leave NCCL's logging as the env says
  std::string peer;
  std::vector<std::string> nccl_library_paths;
  std::vector<std::string> cuda_library_paths;
  bool default_library_search = true;
  std::string library_root = "/";
  // --check: load the libraries, read NCCL's version, cuInit and count the devices, then pass
  // (no communicator, no GPU memory): the agent's start-up availability check.
  bool check_only = false;
  // --nccl-diagnostics: with NCCL 2.31 or newer, NCCL_RUN_DIAGNOSTICS=1 (NCCL checks GPU peer
  // access and the network during init and prints its report) unless the environment sets it.
  bool nccl_diagnostics = false;
  int unique_id_fd = 0;                       // ranks > 0 read the id line from here
  std::optional<int64_t> spawn_monotonic_ns;  // CLOCK_MONOTONIC at spawn (for startup_seconds)
};

// Whether the child turns NCCL's active diagnostics on: asked for, NCCL 2.31 or newer
// (ncclGetVersion's code, 23100 and up), and not already set by the environment.
bool WantsNcclDiagnostics(bool asked, int nccl_version_code, const char* env_value);

// Parses `probe --child` arguments (everything after --child). Usage errors are a Status.
StatusOr<ChildOptions> ParseChildArgs(const std::vector<std::string>& args);

std::string EncodeUniqueId(const abi::ncclUniqueId& id);
std::optional<abi::ncclUniqueId> DecodeUniqueId(std::string_view text);  // hex, prefix optional

// Runs the rank. `out` receives the unique-id line (rank 0); the result is returned, not printed.
ProbeResult RunProbeChild(const ChildOptions& options, std::ostream& out);

// `nccl-triage probe --child ...`: runs the rank and prints the JSON result line. Exit 0 whenever
// a result was printed (the result says pass or fail), 2 for usage errors.
int RunProbeChildCommand(const std::vector<std::string>& args, std::ostream& out,
                         std::ostream& err);

}  // namespace nccl_triage
