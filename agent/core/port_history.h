// PortHistory: what the agent remembers about the node's HCA ports between its polls and across
// its own restarts, so that a port's state is judged with its past (ib.port_state,
// ib.port_errors, kernel.link_flap):
//   - whether the port was seen ACTIVE/LinkUp earlier in this boot: a port DOWN on the first
//     poll after the agent started counts at once only with evidence that it should be up;
//   - when the port last flapped (it left ACTIVE between two polls, or its link_downed counter
//     rose): a flapped port is held bad until it has been stable for `flap_stable_ms`, then it is
//     released.
// The memory belongs to one boot (boot_id): after a reboot it starts empty, because a port that
// was up before the reboot says nothing about how it comes up now. Pure values and functions;
// state/port_memory.h keeps it in the agent's state directory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "core/snapshot.h"

namespace nccl_triage {

// One port ("mlx5_0/1").
struct PortMemo {
  bool seen_up = false;          // ACTIVE/LinkUp at an earlier poll of this boot
  int64_t last_flap_unix_ms = 0;  // 0: not seen flapping in this boot
  std::string flap_reason;        // "left ACTIVE (4: ACTIVE -> 1: DOWN)", "link_downed +2"
  friend bool operator==(const PortMemo&, const PortMemo&) = default;
};

// The most ports remembered (a node has at most a few dozen; a hostile tree cannot grow it).
inline constexpr size_t kMaxRememberedPorts = 256;

struct PortHistory {
  std::string boot_id;      // the boot the memory belongs to ("" unknown)
  bool first_poll = true;   // no earlier poll by this agent process
  int64_t now_unix_ms = 0;  // the time of the poll being judged
  int64_t flap_stable_ms = 600'000;  // checks.flap_stable_seconds
  std::map<std::string, PortMemo> ports;

  const PortMemo* Find(const std::string& port) const;
  // The port flapped and has not yet been stable for flap_stable_ms.
  bool Flapping(const std::string& port) const;
  friend bool operator==(const PortHistory&, const PortHistory&) = default;
};

// Records the flaps between `previous` and `now` (ports present in both): a port that left
// ACTIVE/LinkUp, or whose link_downed counter rose. A port that comes up is not a flap. Stamps
// them with `now.taken_at_unix_ms`.
void RecordPortFlaps(PortHistory& history, const NodeSnapshot& now, const NodeSnapshot* previous);

// Marks the ports ACTIVE/LinkUp in `now` as seen up, and ends the first poll.
void RecordPortsSeen(PortHistory& history, const NodeSnapshot& now);

// Text form kept on disk: `boot_id <id>` then one `port <name> <seen_up 0|1> <last_flap_ms>
// <reason...>` line per port. Parse returns nullopt for anything else (a damaged file starts
// afresh); first_poll, now and flap_stable_ms are not kept.
std::string FormatPortHistory(const PortHistory& history);
std::optional<PortHistory> ParsePortHistory(std::string_view text);

}  // namespace nccl_triage
