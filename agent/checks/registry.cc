#include <algorithm>
#include <exception>
#include <string>

#include "checks/check.h"
#include "checks/check_util.h"

namespace nccl_triage {

Status CheckRegistry::Register(Check check) {
  if (check.id.info().kind != CauseKind::kHostCheck) {
    return InvalidArgument("'" + std::string(check.id) + "' is not a host check in the catalogue");
  }
  if (check.run == nullptr) {
    return InvalidArgument("check '" + std::string(check.id) + "' has no function");
  }
  if (Find(check.id) != nullptr) {
    return InvalidArgument("check '" + std::string(check.id) + "' is registered twice");
  }
  checks_.push_back(check);
  return Status::Ok();
}

const Check* CheckRegistry::Find(std::string_view id) const {
  for (const auto& c : checks_) {
    if (c.id == id) return &c;
  }
  return nullptr;
}

CheckRegistry CheckRegistry::Only(std::span<const CauseId> ids) const {
  CheckRegistry subset;
  for (CauseId id : ids) {
    const Check* c = Find(id);
    const bool taken = c != nullptr && subset.Find(id) != nullptr;
    if (c != nullptr && !taken) subset.checks_.push_back(*c);
  }
  return subset;
}

std::vector<Finding> CheckRegistry::Run(const NodeSnapshot& snapshot, const Config& config,
                                        const CheckContext& context) const {
  std::vector<Finding> findings;
  findings.reserve(checks_.size());
  const auto& disabled = config.checks.disabled;
  for (const auto& c : checks_) {
    if (std::find(disabled.begin(), disabled.end(), c.id) != disabled.end()) {
      findings.push_back(checks::FindingBuilder(c.id)
                             .Add("checks.disabled", std::string(c.id), "config")
                             .Skip("disabled by configuration (checks.disabled)"));
      continue;
    }
    try {
      Finding f = c.run(snapshot, config, context);
      f.check = std::string(c.id);  // the registry's id is authoritative
      findings.push_back(std::move(f));
    } catch (const std::exception& e) {
      // Checks do not throw by design; if one does, the node must not be blamed for it.
      findings.push_back(checks::FindingBuilder(c.id)
                             .Add("internal error", e.what(), "nccl-triage")
                             .Skip("the check could not run (internal error)"));
    }
  }
  return findings;
}

}  // namespace nccl_triage
