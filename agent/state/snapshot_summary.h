// SnapshotSummary: the few numbers of a NodeSnapshot that the exporters publish (port states,
// rates and error counters, memlock, /dev/shm size, expected IB bandwidth), derived once per cycle.
//
// Summarize() is a pure function of the snapshot and the expectations, so the metric values are
// unit-tested without a scrape. Plain value; safe to share between threads once built.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/config.h"
#include "core/rails.h"
#include "core/snapshot.h"

namespace nccl_triage {

struct PortSummary {
  std::string device;  // "mlx5_0"
  int port = 0;
  // The kernel's names ("ACTIVE", "LinkUp") and numbers (4, 5) from "4: ACTIVE" / "5: LinkUp";
  // empty / -1 when the file could not be read or parsed.
  std::string state;
  int state_id = -1;
  std::string phys_state;
  int phys_state_id = -1;
  std::optional<double> rate_bytes_per_second;  // "200 Gb/sec (4X HDR)" -> 25e9
  std::string link_layer;
  std::map<std::string, uint64_t> error_counters;  // the sysfs error counters that were present
};

struct SnapshotSummary {
  std::string node;
  int64_t taken_at_unix_ms = 0;
  std::vector<PortSummary> ports;             // in device, then port order
  std::optional<double> memlock_limit_bytes;  // the soft limit; +Inf when unlimited
  std::optional<double> shm_size_bytes;       // size of the /dev/shm tmpfs
  // What one port of this node should carry: expect.rate_gbps when configured, otherwise the
  // highest rate among the node's ports (a degraded port must not lower the expectation).
  std::optional<double> expected_ib_bytes_per_second;
  std::vector<Rail> rails;  // core/rails.h: each HCA port with its closest GPU
  std::string pool;         // the config.pools entry whose expect judged this node ("": none)
};

// The port error counters nccl-triage exports (names of files under ports/<n>/counters/).
inline constexpr std::string_view kPortErrorCounters[] = {
    "excessive_buffer_overrun_errors",
    "link_downed",
    "link_error_recovery",
    "local_link_integrity_errors",
    "port_rcv_constraint_errors",
    "port_rcv_errors",
    "port_rcv_remote_physical_errors",
    "port_rcv_switch_relay_errors",
    "port_xmit_constraint_errors",
    "port_xmit_discards",
    "symbol_error",
    "VL15_dropped",
};

SnapshotSummary Summarize(const NodeSnapshot& snapshot, const ExpectConfig& expect);

// "4: ACTIVE" -> {4, "ACTIVE"}; false when the text has no "<number>: <name>" shape.
bool ParseNumberedState(std::string_view text, int* id, std::string* name);

// tmpfs "size=" option (bytes with an optional k/m/g/t suffix, or a percentage of `mem_total`).
std::optional<double> ParseTmpfsSize(std::string_view value, std::optional<uint64_t> mem_total);

nlohmann::json ToJson(const SnapshotSummary& s);

}  // namespace nccl_triage
