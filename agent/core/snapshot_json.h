// NodeSnapshot <-> JSON: `check --dump-snapshot` writes it, `check --from-snapshot` reads it back,
// so a snapshot attached to a bug report is judged exactly as on the node.
//
// Every field round-trips. Each Fact is {"value": <value or null>, "source": ..., "error": ...}.
// Reading is strict about types (a string where a number belongs is an error) and lenient about
// absent keys (they keep their defaults), so a snapshot written by an older version still loads.
// Pure functions, thread-safe.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include "base/status.h"
#include "core/snapshot.h"

namespace nccl_triage {

inline constexpr const char* kNodeSnapshotSchema = "nccl-triage/node-snapshot/v1";

nlohmann::json ToJson(const NodeSnapshot& s);

// Error (never an exception): not an object, another schema, or a field of the wrong type; the
// message names the offending key.
StatusOr<NodeSnapshot> SnapshotFromJson(const nlohmann::json& j);

}  // namespace nccl_triage
