// Which rails a probe sweep covers (config key probe.rails), and how one rail is selected for NCCL.
//
// A DGX-class node has eight rails; probing each of them on each of 4,096 nodes every sweep costs
// eight IB probes per pair. probe.rails limits that: `all`, a count `N` (N rails per sweep, taking
// turns from sweep to sweep so every rail is covered within ceil(rails / N) sweeps), or a list of
// rail numbers and HCA names (`0,3`, `mlx5_3,mlx5_5:1`). Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "core/rails.h"

namespace nccl_triage {

struct RailSelection {
  bool all = false;
  int count = 0;                   // > 0: this many rails per sweep
  std::vector<std::string> items;  // a list: rail numbers ("3") or HCA names ("mlx5_3", "mlx5_3:1")

  friend bool operator==(const RailSelection&, const RailSelection&) = default;
};

// "all", "N" (1..64) or a comma-separated list; the error says what was expected.
StatusOr<RailSelection> ParseRailSelection(std::string_view text);

// The rails to probe in sweep number `turn`, as indices into `rails`, in rail order. A list item
// that names no rail is left out (RailSelectionMisses names it).
std::vector<int> SelectRails(const std::vector<Rail>& rails, const RailSelection& selection,
                             uint64_t turn);

// The list items that name no rail of `rails` (for a one-line warning).
std::vector<std::string> RailSelectionMisses(const std::vector<Rail>& rails,
                                             const RailSelection& selection);

// The rails a probe covers in sweep `turn`: SelectRails' rows of `table`, then, for a list, each
// HCA name the table lacks as a rail of its own (index -1, port from "mlx5_3:2" or 1, state
// "absent"): it is still probed, and NCCL's failure names it. A rail number the table lacks, or
// all/N on a node without rails, is an error that says so.
StatusOr<std::vector<Rail>> RailsToProbe(const std::vector<Rail>& table,
                                         const RailSelection& selection, uint64_t turn);

// NCCL_IB_HCA selecting exactly this rail's port: "=mlx5_3:1" (exact name, so mlx5_1 does not
// also select mlx5_10..mlx5_19).
std::string RailIbHca(const Rail& rail);

// What the port should carry, in bytes per second (rate in Gb/s / 8); 0 when the rate is unknown.
double RailExpectedBytesPerSecond(const Rail& rail);

}  // namespace nccl_triage
