// Host checks: the interface, the registry and the entry point that runs them.
//
// A check is a pure function of a NodeSnapshot, the effective Config and a CheckContext; it never
// touches the OS (CMake rejects file, OS and verbs headers in this folder). Each check produces
// exactly one Finding whose id, class and remedy come from the catalogue (core/catalogue.h);
// the message and evidence are specific to the node. A check that cannot look returns `skip` (or
// `warn`) with the reason as evidence, never `fail`.
//
// The registry is filled explicitly by RegisterBuiltinChecks (no static initialisers): the app,
// the agent loop and the tests each build their own. A filled registry is immutable in use and
// may be shared between threads for RunChecks.
#pragma once

#include <span>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "core/config.h"
#include "core/model.h"
#include "core/snapshot.h"

namespace nccl_triage {

struct ProbeResult;

// What a check may know beyond the node's current snapshot. Both pointers are optional and are
// not owned; they must outlive the call.
struct CheckContext {
  // The snapshot of the same node from an earlier cycle: counter checks turn absolute counts
  // into rates with it.
  const NodeSnapshot* previous = nullptr;
  // A probe run on this node: the only source of the NCCL version on a single node.
  const ProbeResult* probe = nullptr;
};

using CheckFn = Finding (*)(const NodeSnapshot& snapshot, const Config& config,
                            const CheckContext& context);

struct Check {
  std::string_view id;  // a catalogue id of kind kHostCheck
  CheckFn run = nullptr;
};

// An ordered set of checks. Thread-compatible: register first, then run from any thread.
class CheckRegistry {
 public:
  // Rejects ids that are not host checks in the catalogue, and duplicates.
  Status Register(Check check);

  std::span<const Check> checks() const { return checks_; }
  const Check* Find(std::string_view id) const;

  // Runs every check in registration order. Checks listed in config.checks.disabled produce a
  // `skip` finding that says so (the operator still sees that the check exists). A check that
  // throws (it should not) becomes a `skip` finding carrying the exception text.
  std::vector<Finding> Run(const NodeSnapshot& snapshot, const Config& config,
                           const CheckContext& context) const;

 private:
  std::vector<Check> checks_;
};

// Adds every built-in host check, in catalogue order.
void RegisterBuiltinChecks(CheckRegistry& registry);

}  // namespace nccl_triage
