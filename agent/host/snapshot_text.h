// Text every output can carry. Names and link targets under /sys and /proc are bytes, not text: an
// interface "eth\xff\xfe" or an HCA "mlx\xff" made `check --format json` and --dump-snapshot abort
// (nlohmann's type_error 316), /status answer 500, /metrics fail promtool and the coordinator
// refuse the agent's Hello (proto3 strings must be UTF-8). The gatherer passes every string of the
// snapshot through EscapeText once, at the end, so nothing downstream has to care.
#pragma once

#include <string>
#include <string_view>

#include "core/snapshot.h"

namespace nccl_triage {

// `text` with every byte that is not part of valid UTF-8, and every control character other than
// tab, written as "\xHH" ("eth\xff\xfe"); valid text comes back unchanged.
std::string EscapeText(std::string_view text);
bool IsCleanText(std::string_view text);  // EscapeText would change nothing

// Applies EscapeText to every string of the snapshot: names, values, sources, errors, map keys.
void EscapeSnapshotText(NodeSnapshot& snapshot);

}  // namespace nccl_triage
