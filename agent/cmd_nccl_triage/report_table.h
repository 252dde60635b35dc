// The node report as a person at a terminal reads it: the class verdict first, then each failing
// check with its cause, evidence and fix, then the warnings, then everything else one line each.
// Presentation only (the JSON form is core/report.h's ToJson). Pure: writes to the given stream.
#pragma once

#include <iosfwd>
#include <vector>

#include "core/rails.h"
#include "core/report.h"

namespace nccl_triage {

struct TableOptions {
  bool color = false;       // ANSI colours (the caller decides: a TTY and NO_COLOR unset)
  int width = 100;          // wrap long messages and remedies at this column
  size_t max_evidence = 6;  // evidence lines shown per failing or warning check
};

void RenderReportTable(const NodeReport& report, std::ostream& os, const TableOptions& options);

// The node's rails, one line each: rail, HCA/port, PCI address, GPU, affinity, NUMA node, rate,
// state. Writes nothing when the node has no rail.
void RenderRailTable(const std::vector<Rail>& rails, std::ostream& os);

}  // namespace nccl_triage
