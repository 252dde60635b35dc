#include "core/snapshot_json.h"

#include <nlohmann/json.hpp>

#include "core/json_reflect.h"

namespace nccl_triage {

// The shape is the description of each struct beside it in core/snapshot.h (FieldsOf); the
// format's rules are core/json_reflect.h's. Only the schema check is particular to the snapshot.

nlohmann::json ToJson(const NodeSnapshot& s) { return ToJsonValue(s); }

StatusOr<NodeSnapshot> SnapshotFromJson(const nlohmann::json& j) {
  if (!j.is_object()) return InvalidArgument("snapshot: expected an object");
  // Required: every other field may be absent (it then reads as missing), so without this "{}"
  // or any JSON object would pass as a snapshot in which nothing could be read.
  auto schema = j.find("schema");
  if (schema == j.end()) {
    return InvalidArgument("snapshot: no 'schema' field; expected " +
                           std::string(kNodeSnapshotSchema) + " (a --dump-snapshot file)");
  }
  if (!schema->is_string()) return InvalidArgument("snapshot.schema: expected a string");
  if (schema->get_ref<const std::string&>() != kNodeSnapshotSchema) {
    return InvalidArgument("snapshot: schema '" + schema->get<std::string>() + "' is not " +
                           kNodeSnapshotSchema);
  }
  NodeSnapshot s;
  if (Status st = FromJsonValue(j, "snapshot", s); !st.ok()) return st;
  return s;
}

}  // namespace nccl_triage
