// NodeReport: the verdict on one node, built from findings (and later from probes).
//
// The class of a report built from checks alone is the class of its failing findings,
// architecture before ib_resource (an architecture fault hides what the IB path would show);
// basis stays "checks" until probes confirm it. Serialises to the DESIGN's node-report/v1 JSON.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/model.h"

namespace nccl_triage {

inline constexpr const char* kNodeReportSchema = "nccl-triage/node-report/v1";

struct NodeReport {
  std::string node;
  FaultClass fault_class = FaultClass::kUnknown;
  Basis basis = Basis::kChecks;
  std::vector<std::string> causes;  // ids of failing findings, in catalogue order
  std::vector<Finding> findings;
  int64_t generated_at_unix_ms = 0;
};

// The class of a set of findings: any architecture fail -> architecture; else any ib_resource
// fail -> ib_resource; else healthy if at least one check passed; else unknown (all skipped).
FaultClass ClassFromFindings(const std::vector<Finding>& findings);

// Builds a report from findings (class, causes) without reading the clock.
NodeReport MakeReport(std::string node, std::vector<Finding> findings, int64_t now_unix_ms);

// Exit code of `nccl-triage check`: 0 when every check passed, warned or skipped, 1 when any failed.
int ExitCodeFor(const NodeReport& report);

nlohmann::json ToJson(const Finding& f);
nlohmann::json ToJson(const NodeReport& r);
Finding FindingFromJson(const nlohmann::json& j);  // throws nlohmann::json::exception on bad shape
NodeReport ReportFromJson(const nlohmann::json& j);

}  // namespace nccl_triage
