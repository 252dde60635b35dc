// Host checks: the interface, the registry and the entry point that runs them.
//
// A check is a pure function of a NodeSnapshot, the effective Config and a CheckContext; it never
// touches the OS (CMake rejects file, OS and verbs headers in this folder). Each check produces
// exactly one Finding whose id, class and remedy come from the catalogue (core/catalogue.h);
// the message and evidence are specific to the node. A check that cannot look returns `skip` (or
// `warn`) with the reason as evidence, never `fail`.
//
// Each check declares itself in its own file with NT_HOST_CHECK (below): its function, its
// position and its catalogue row; the build collects the declarations into the catalogue, ids.h,
// builtin.h and the registration table. The registry is still filled explicitly (no static
// initialisers): the app, the agent loop and the tests each build their own with
// BuiltinCheckRegistry. A filled registry is immutable in use and may be shared between threads
// for RunChecks. Check ids are CauseIds, so a check of an id that is not in the catalogue does not
// compile; the built-in table is also verified at compile time to hold every host check of the
// catalogue once (builtin.cc).
#pragma once

#include <span>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "core/catalogue.h"
#include "core/config.h"
#include "core/model.h"
#include "core/port_history.h"
#include "core/snapshot.h"

// Declares a host check, once, in its own file (agent/checks/<id>.cc), at namespace scope:
//
//   NT_HOST_CHECK(IbPortState, 150,
//       CauseInfo{"ib.port_state", kIb, kHost, kNone, "Port state", "<why>", "<remedy>",
//                 "<what it looks at>", "<its verdicts>"});
//
//   Finding IbPortState(const NodeSnapshot& s, const Config& c, const CheckContext& ctx) { ... }
//
// The build collects these declarations (cmake/collect_host_checks.cmake): the row goes into the
// catalogue at its position among the host checks (core/catalogue.h; positions go in tens,
// architecture before ib_resource), the id becomes ids::kIbPortState (core/ids.h), the function is
// declared in checks/builtin.h and registered by RegisterBuiltinChecks. Nothing else is edited to
// add a check. In the check's own file the declaration asserts that the catalogue holds exactly
// this row (the collected copy is current). The row's names (kIb, kHost, ...) are those of
// core/catalogue.h's table.
#define NT_HOST_CHECK(function, position, ...)                                              \
  static_assert(                                                                             \
      [] {                                                                                   \
        using namespace ::nccl_triage::catalogue_table;                                      \
        return ::nccl_triage::IsCataloguedHostCheck(__VA_ARGS__);                           \
      }(),                                                                                   \
      "NT_HOST_CHECK(" #function ", " #position "): the catalogue holds another row for it")

namespace nccl_triage {

// Whether the catalogue holds `row`, field by field, as a host check.
constexpr bool IsCataloguedHostCheck(const CauseInfo& row) {
  const CauseInfo* e = FindCause(row.id);
  return e != nullptr && e->kind == CauseKind::kHostCheck && row.kind == e->kind &&
         e->fault_class == row.fault_class && e->traits == row.traits && e->title == row.title &&
         e->why == row.why && e->remedy == row.remedy && e->looks_at == row.looks_at &&
         e->verdict == row.verdict;
}

}  // namespace nccl_triage

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
  // The agent's memory of the ports (first poll, ports seen up, flaps); null for a one-shot
  // check, which judges the ports as they are.
  const PortHistory* ports = nullptr;
};

using CheckFn = Finding (*)(const NodeSnapshot& snapshot, const Config& config,
                            const CheckContext& context);

// One host check: its catalogue id (of kind kHostCheck) and the function that judges it.
struct Check {
  CauseId id;
  CheckFn run = nullptr;
};

// An ordered set of checks. Thread-compatible: register first, then run from any thread.
class CheckRegistry {
 public:
  // Rejects ids that are not host checks in the catalogue, and duplicates.
  Status Register(Check check);

  std::span<const Check> checks() const { return checks_; }
  const Check* Find(std::string_view id) const;

  // The checks of `ids` that this registry holds, in the order of `ids` (ids it lacks are left
  // out). They were validated when registered here, so taking a subset cannot fail.
  CheckRegistry Only(std::span<const CauseId> ids) const;

  // Runs every check in registration order. Checks listed in config.checks.disabled produce a
  // `skip` finding that says so (the operator still sees that the check exists). A check that
  // throws (it should not) becomes a `skip` finding carrying the exception text.
  std::vector<Finding> Run(const NodeSnapshot& snapshot, const Config& config,
                           const CheckContext& context) const;

 private:
  std::vector<Check> checks_;
};

// Adds every built-in host check, in catalogue order. The table cannot hold a wrong id (it is
// checked at compile time), so this fails only when `registry` already holds one of the checks;
// the error names it. Callers must not drop it: a registry missing a check would report a node
// without judging it.
[[nodiscard]] Status RegisterBuiltinChecks(CheckRegistry& registry);

// A registry holding exactly the built-in checks. Registration into a fresh registry cannot fail
// unless the program itself is broken; if it does, this throws std::logic_error with the
// registry's message (the program stops at start-up rather than run with a check missing).
CheckRegistry BuiltinCheckRegistry();

}  // namespace nccl_triage
