// Splitting one NCCL log line into its parts, for every format NCCL 2.4 to 2.30 writes.
//
//   host:pid:tid [dev] NCCL INFO msg                          (all versions)
//   host:pid:tid [dev] file.cc:LINE NCCL WARN msg             (.cu up to 2.6, .c for plugins)
//   [timestamp] host:pid:tid [dev] file.cc:LINE (func) NCCL WARN msg   (HEAD)
//   [rank3]: torch.distributed.DistBackendError: NCCL error in: ...  (PyTorch, a text line)
//   host:pid NCCL DIAG msg                                    (2.31+: NCCL's diagnostics report)
//
// Pure function of the text; the result views into the input line, so it lives no longer than it.
#pragma once

#include <string_view>

namespace nccl_triage {

// kDiag: a line of NCCL's own diagnostics report (NCCL_RUN_DIAGNOSTICS, RAS diagnostics).
enum class NcclLevel { kNone, kInfo, kWarn, kTrace, kDiag };

struct ParsedLine {
  NcclLevel level = NcclLevel::kNone;  // kNone: not an NCCL debug line (text)
  std::string_view timestamp;          // inside the leading `[...]`, empty when absent
  std::string_view rank;               // "host:pid" (the rank key), or "rankN" from PyTorch's
                                       // `[rankN]:` prefix, or empty (DIAG lines: "host:pid")
  std::string_view file;               // "bootstrap.cc:114" on WARN lines that carry it
  std::string_view message;            // after `NCCL WARN ` / `NCCL INFO ` / `NCCL DIAG `; the
                                       // line for text
};

ParsedLine ParseLogLine(std::string_view line);

// The ncclResult_t of a back-trace message (`init.cc:126 -> 5`, `init.cc:126 (func) -> 5`), or -1.
int BacktraceCode(std::string_view message);

}  // namespace nccl_triage
