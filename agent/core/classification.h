// Classification: what the NCCL log classifier (classify/) concludes about one log.
//
// Plain values shared by the classifier, the probe runner, the decision table and the exporters.
#pragma once

#include <cstddef>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/model.h"

namespace nccl_triage {

struct LogLine {
  size_t number = 0;  // 1-based line number in the input
  std::string text;   // the line, trimmed of CR/LF, at most a few KiB
};

struct ClassifiedCause {
  std::string cause;                              // catalogue id
  FaultClass fault_class = FaultClass::kUnknown;  // which path failed (the verdict's meaning)
  FaultClass fix_class = FaultClass::kUnknown;    // where the fix lives (the catalogue's class)
  double confidence = 0;                          // 0..1
  std::vector<LogLine> evidence;
  std::string remedy;
  // Named by a failed check of NCCL's own diagnostics report (NCCL_RUN_DIAGNOSTICS, 2.31+):
  // NCCL tested the path itself, so it stands even where the job or the probe then worked.
  bool diagnostics = false;
};

// The first WARN (or error line) of one rank, identified by "host:pid" where the log has it.
struct RankRoot {
  std::string rank;
  LogLine line;
};

struct Classification {
  FaultClass fault_class = FaultClass::kUnknown;  // healthy for a successful run
  std::string reason;                             // one line: why this class (or why unknown)
  std::vector<RankRoot> roots;
  std::vector<ClassifiedCause> causes;  // ranked, most likely first
  std::vector<std::string> transports;  // "NET/IB", "NET/Socket", "P2P", "SHM" seen in channels
  // The intra-node channel kinds in full, as NCCL names them: "P2P/CUMEM", "P2P/CUMEM/read",
  // "P2P/IPC", "P2P/direct pointer", "SHM/direct/direct" (transports has only "P2P", "SHM").
  std::vector<std::string> local_transports;
  std::string network;  // "IB", "Socket", "IBext_v8" from `Using network X`
  // The HCA ports NCCL's channels went through: `via NET/IB/<i>` mapped by the
  // `NET/IB : Using [<i>]mlx5_0:1/IB ...` list, as "mlx5_0:1", in index order.
  std::vector<std::string> ib_ports;
  bool gdrdma = false;             // a NET/IB channel line ended in /GDRDMA
  std::vector<LogLine> ib_lines;   // the Using line and the first NET/IB channel lines
  std::optional<int> result_code;  // first ncclResult_t seen in "-> N" or an error string
  std::string nccl_version;        // "2.28.9" when the log says so
  bool init_complete = false;
  size_t lines = 0;
};

nlohmann::json ToJson(const Classification& c);

}  // namespace nccl_triage
