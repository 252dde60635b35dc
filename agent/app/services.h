// The serving half of the command line, loaded only when it is used.
//
// `agent`, `coordinator`, `demo` and `check --workloads` need gRPC, protobuf, HTTP, TLS and
// prometheus-cpp. Linking those into the binary costs every invocation ~10 MiB of resident memory
// (relocations of some 60 shared objects at load), which `check` on a node cannot afford. They
// live in a module, nccl-triage-services.so, installed beside the binary (or in
// ../lib/nccl-triage/ relative to it); the binary dlopen()s it only for those subcommands, so
// `check`, `classify-log` and `probe` load nothing but yaml-cpp and libibverbs.
//
// The module exports one C symbol, ncclTriageServices, returning the table below. The binary
// refuses a module whose ABI number or version differs from its own (one line, exit 2).
#pragma once

#include <iosfwd>
#include <nlohmann/json.hpp>
#include <string>

#include "app/cli.h"
#include "core/config.h"
#include "core/snapshot.h"
#include "core/status.h"

namespace nccl_triage {

// The workload section of `check --workloads`: the report's "workloads" object, the table
// section for the terminal, and the exit code it contributes (1 when a container fails a check).
struct WorkloadCheckOutput {
  nlohmann::json json;
  std::string table;
  int exit_code = 0;
};

using WorkloadCheckFn = WorkloadCheckOutput (*)(const std::string& root,
                                                const NodeSnapshot& snapshot, const Config& config,
                                                std::ostream& err);

// Bump when this struct or any type it passes changes shape.
inline constexpr int kServicesAbi = 1;

struct Services {
  int abi;
  const char* version;  // the module's NCCL_TRIAGE_VERSION
  SubcommandFn agent;
  SubcommandFn coordinator;
  SubcommandFn demo;
  WorkloadCheckFn check_workloads;
};

inline constexpr const char* kServicesFile = "nccl-triage-services.so";
inline constexpr const char* kServicesSymbol = "ncclTriageServices";
using ServicesEntryFn = const Services* (*)();

// The table of the first candidate (in order: $NCCL_TRIAGE_SERVICES when set, exactly that
// file; else the module beside the binary, then <binary dir>/../lib/nccl-triage/) that exists
// (loaded once per process), or the linked table when UseLinkedServices was called. Errors: the
// candidate exists but does not load, is not a module or comes from another build (why, with its
// path); none exists (every path tried).
StatusOr<const Services*> LoadServices(const std::string& self_exe);

// For programs that link nccl_triage::services themselves (the in-process tests).
void UseLinkedServices(const Services* services);

}  // namespace nccl_triage
