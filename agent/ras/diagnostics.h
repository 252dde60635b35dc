// NCCL's RAS diagnostics report (2.31+, the answer to DIAGNOSTICS, ras/client.h), read and judged
// with the log classifier's DIAG rules, and printed for `nccl-triage ras --diagnostics`.
//
// The report is lines "<host>:<pid> NCCL DIAG <line>": a header "=== RAS Diagnostics ===", one
// line per check result, most tagged "[OK]", "[INFO]" or "[WARN]" (GPU inventory, CUDA driver,
// ECC, NVLink, the NCCL_* environment of each communicator's ranks, and more in 2.32), and the
// completion line "RAS diagnostics completed in X ms across N RAS peers". A line that a rule of
// agent/classify/rules.yaml (`lines: [diag]`) names is a finding with that rule's cause id; a
// check NCCL tagged [WARN] or [FAIL] that no rule names is a finding without one. Passed and
// informational lines name nothing. Pure; thread-safe.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "classify/rules.h"
#include "ras/render.h"

namespace nccl_triage::ras {

inline constexpr const char* kRasDiagnosticsSchema = "nccl-triage/ras-diagnostics/v1";

struct DiagLine {
  int number = 0;      // 1-based, in the report
  std::string origin;  // "host:pid" of the process that printed it
  std::string tag;     // "OK", "INFO", "WARN", ... without brackets; "" when the line has none
  std::string text;    // after "NCCL DIAG " and the tag
  std::string raw;     // the line as received
};

struct DiagReport {
  std::vector<DiagLine> lines;  // every line of the report, in order
  bool complete = false;        // the completion line is there
  double took_ms = -1;          // NCCL's own time, from the completion line
  int peers = -1;               // "across N RAS peers" (or ranks)
  std::string peers_unit;       // "RAS peers" or "ranks"
  std::vector<std::string> errors;  // NCCL's own "ERROR: ..." lines (a summary that failed)
};

// Lines as QueryRasDiagnostics returns them. Never fails: lines that are not DIAG lines are kept
// with an empty origin.
DiagReport ParseDiagnostics(const std::vector<std::string>& lines);

struct DiagFinding {
  int line = 0;          // DiagLine::number
  std::string origin;
  std::string tag;
  std::string text;
  std::string cause;     // the catalogue's cause id ("gpu.health"); "" when no rule names it
  std::string rule;      // the rule's name; ""
  std::string strength;  // the rule's strength (root, suspect, peer, ...); "" without a rule
};

struct DiagJudgement {
  // "ok": no check failed and nothing differs; "findings": at least one finding; "error": NCCL
  // reported that its summary failed (and no finding).
  std::string state;
  std::string summary;  // one line
  std::vector<DiagFinding> findings;
  int passed = 0;  // [OK] lines
  // Findings that name a fault: a failed check, or a line a root or generic rule names; not the
  // suspects (a setting that differs between ranks, which jobs may do on purpose).
  int faults = 0;
  // The distinct cause ids the findings name, in report order (findings no rule names add none).
  std::vector<std::string> causes;
};

DiagJudgement JudgeDiagnostics(const DiagReport& report, const CompiledRules& rules);

// The table for the terminal and the JSON document (schema kRasDiagnosticsSchema). The peer's
// bytes are printed with control characters as '?'.
std::string RenderDiagnosticsTable(const Source& source, const DiagReport& report,
                                   const DiagJudgement& judgement);
nlohmann::json DiagnosticsToJson(const Source& source, const DiagReport& report,
                                 const DiagJudgement& judgement);

}  // namespace nccl_triage::ras
