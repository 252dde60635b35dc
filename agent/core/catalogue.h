// The one catalogue of check ids and cause ids.
//
// Every id that can appear in a finding, a classifier cause, a probe verdict, a metric label, an
// annotation or an alert is listed here once, with its class (where the fix lives), a title, why it
// matters and the remedy. The README's tables are checked against this table by a test, so adding
// an id means adding its documentation. The table is append-only in spirit: ids are API.
#pragma once

#include <span>
#include <string_view>

#include "core/model.h"

namespace nccl_triage {

// Where an id is produced. An id may be produced in several places (kHostCheck ids are also
// classifier causes when the log names the same fault).
enum class CauseKind {
  kHostCheck,   // a pure check over one NodeSnapshot (`nccl-triage check`)
  kLogCause,    // produced only by the NCCL log classifier / probe explanation
  kCrossNode,   // a pure check over two or more snapshots (coordinator)
  kWorkloadCheck,  // a pure check of a workload container's own settings (its NCCL environment)
};

struct CauseInfo {
  std::string_view id;
  FaultClass fault_class;
  CauseKind kind;
  std::string_view title;   // short noun phrase, used in tables and annotations
  std::string_view why;     // one or two sentences: why this breaks or slows NCCL
  std::string_view remedy;  // what an operator does about it
};

// All entries, in documentation order.
std::span<const CauseInfo> Catalogue();

// The entry for `id`, or nullptr when the id is not in the catalogue.
const CauseInfo* FindCause(std::string_view id);

}  // namespace nccl_triage
