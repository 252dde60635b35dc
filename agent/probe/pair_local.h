// The local pair: both ranks of each probe mode on this host, the A/B table, and the verdict of
// the decision table (core Decide) — what `nccl-triage probe --pair-local` prints.
//
// The two ranks run with different NCCL_HOSTID values, so NCCL treats them as two nodes and must
// use the network (socket probe: TCP; IB probe: the HCA in loopback). The per-mode row merges the
// ranks with core MergeRankResults, the rule the coordinator's pair verdict uses too.
// Pure functions, apart from RunPairLocal which drives a ProbeRunner.
#pragma once

#include <chrono>
#include <condition_variable>
#include <iosfwd>
#include <map>
#include <mutex>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "core/decision.h"
#include "core/model.h"
#include "core/probe_result.h"
#include "core/rank_merge.h"
#include "core/rails.h"
#include "probe/runner.h"

namespace nccl_triage {

inline constexpr const char* kProbePairSchema = "nccl-triage/probe-pair/v1";

struct PairLocalRow {
  ProbeMode mode = ProbeMode::kSocket;
  ProbeResult merged;              // the row of the table (and the decision input)
  std::vector<ProbeResult> ranks;  // rank order
};

// The IB busbw the local pair should reach (ExpectedLocalBandwidth).
struct LocalExpectation {
  double bytes_per_second = 0;
  std::string basis;  // "rank 0: mlx5_3:1 200 Gb/s; GPUDirect RDMA assumed and used"
};

// A rail to probe: its row of the rail table and whether another process holds its GPU.
struct RailTarget {
  Rail rail;
  std::string gpu_busy_by;  // "python3 pid 31337 holds /dev/nvidia0" (GpuBusyBy); empty: idle
};

// One rail's IB probe: NCCL_IB_HCA selecting only that rail's port (RailIbHca), both ranks on the
// GPU nearest its HCA (by PCI bus id), judged against the socket probe and the port's rate.
struct RailProbeRow {
  Rail rail;
  std::string skipped;  // "gpu busy (python3 pid 31337 holds /dev/nvidia0)": not run
  PairLocalRow row;     // the IB row, when it ran
  double expected_bytes_per_second = 0;  // what the port should carry (its rate / 8)
  PairVerdict verdict;                   // socket row x this rail's IB row
};

struct PairLocalReport {
  std::vector<PairLocalRow> rows;   // socket first, then IB (as run); no IB row with rails
  std::vector<RailProbeRow> rails;  // per-rail IB probes, in rail order (empty: one IB probe)
  std::vector<Finding> node_findings;
  std::string findings_note;  // why there are none, when there are none
  // The node's IB/RoCE port rates in Gb/s ("mlx5_0:1" -> 200), for the expected IB busbw.
  std::map<std::string, double> port_rates_gbps;
  // What the IB row should carry (ExpectedLocalBandwidth), when rates are known and the probe
  // was large enough (kBandwidthBoundBytes) for the verdict to compare.
  std::optional<LocalExpectation> expected_ib;
  PairVerdict verdict;
  // Findings that do not change the verdict: an IB probe without GPUDirect RDMA although the
  // peer-memory module is loaded (why, and the log lines that show it).
  std::vector<std::string> warnings;
  std::string work_dir;  // where the NCCL logs are
};

// What the local pair's IB probe should carry, as the coordinator derives it for two nodes: per
// rank, the summed rate of the ports its channels used (ProbeResult::ib_ports); the slower rank
// counts; a rank whose ports are unknown counts the node's best port. The basis says which ports
// and whether GPUDirect RDMA, which the rate assumes, was used. nullopt without any rate.
std::optional<LocalExpectation> ExpectedLocalBandwidth(
    const PairLocalRow& ib_row, const std::map<std::string, double>& port_rates_gbps);

// The verdict of the decision table for the rows that ran (a mode not run is not_run). With port
// rates and an IB probe of at least kBandwidthBoundBytes, its busbw is compared with
// busbw_min_fraction of ExpectedLocalBandwidth (ib.bandwidth when below).
PairVerdict DecidePairLocal(const std::vector<PairLocalRow>& rows,
                            const std::vector<Finding>& node_findings, double busbw_min_fraction,
                            const std::map<std::string, double>& port_rates_gbps = {});

// Told when each mode starts and ends (the progress line); called on the caller's thread.
class PairLocalObserver {
 public:
  virtual ~PairLocalObserver() = default;
  virtual void ModeStarted(ProbeMode mode, int index, int count, int timeout_seconds) = 0;
  virtual void ModeFinished(const PairLocalRow& row, double seconds) = 0;
};

// The warning for an IB row that passed without a GDRDMA channel while the node's ib.peermem
// check passed (nvidia_peermem or nv_peer_mem loaded); `log_lines` are the IB lines of its log.
// nullopt when GDR was used, the module is not loaded, or the row did not pass.
std::optional<std::string> GdrWarning(const PairLocalRow& ib_row,
                                      const std::vector<Finding>& node_findings,
                                      const std::vector<LogLine>& log_lines);

// Runs the modes in order (socket before IB, as the triage does) and decides. With `rails`, the
// IB mode runs once per rail, one rail after the other (a rail whose GPU is busy is skipped),
// and the verdict is the first rail's fault, its reason naming the rail.
PairLocalReport RunPairLocal(const ProbeRunner& runner, const std::vector<ProbeMode>& modes,
                             std::vector<Finding> node_findings, std::string findings_note,
                             PairLocalObserver* observer = nullptr,
                             const std::vector<RailTarget>& rails = {},
                             std::map<std::string, double> port_rates_gbps = {});

// The verdict over per-rail rows: a failed socket probe -> architecture; else the first rail with a
// fault (its reason starting "rail K (mlx5_K/1, GPU G): "); else healthy when a rail passed (or
// the node checks' fault, as DecidePairLocal); else (every rail skipped) the node checks' verdict.
PairVerdict DecideRails(const PairLocalRow* socket, const std::vector<RailProbeRow>& rails,
                        const std::vector<Finding>& node_findings, double busbw_min_fraction);

// The HCA ports a message names ("mlx5_2/1 at 100 Gb/sec ..." -> {"mlx5_2/1"}): a word with a
// letter, of letters, digits and '_', ending in a digit, then '/', then digits.
std::vector<std::string> PortsNamed(std::string_view message);

// The node findings that bear on one rail's probe: a finding whose message names HCA ports, none
// of them this rail's, is about other rails (mlx5_2's slow port does not explain mlx5_5's
// failure) and is left out; findings that name no port are kept.
std::vector<Finding> FindingsForRail(const std::vector<Finding>& findings, const Rail& rail);

// "rail 5 (mlx5_5/1, GPU 5)"; a rail the node does not list: "mlx5_0/1".
std::string RailName(const Rail& rail);

// "socket probe (1/2): 2 ranks running, 14 s (limit 120 s)".
std::string ProgressRunningText(ProbeMode mode, int index, int count, int elapsed_seconds,
                                int timeout_seconds);
// "socket probe (1/2): pass in 3.2 s" / "ib probe (2/2): fail in 120.0 s (ib.port_state)".
std::string ProgressDoneText(const PairLocalRow& row, int index, int count, double seconds);

// The progress of `probe --pair-local` on a terminal: each mode can take up to two probe
// timeouts (2 x 120 s by default) with nothing else to show, so one line per mode is rewritten
// in place every second while its ranks run, then replaced by the mode's outcome. Enabled only
// when the stream is a terminal (the caller checks isatty), so pipes, logs and --format json
// stay clean. Thread-safe: a ticker thread of its own rewrites the line.
class TerminalProgress final : public PairLocalObserver {
 public:
  TerminalProgress(std::ostream& out, bool enabled,
                   std::chrono::milliseconds tick = std::chrono::seconds(1));
  ~TerminalProgress() override;
  TerminalProgress(const TerminalProgress&) = delete;
  TerminalProgress& operator=(const TerminalProgress&) = delete;

  void ModeStarted(ProbeMode mode, int index, int count, int timeout_seconds) override;
  void ModeFinished(const PairLocalRow& row, double seconds) override;

 private:
  void StopTicker();

  std::ostream& out_;
  const bool enabled_;
  const std::chrono::milliseconds tick_;
  std::mutex mu_;
  std::condition_variable_any wake_;
  std::jthread ticker_;
  int index_ = 0, count_ = 0;
};

// 0 healthy by the probes, 1 a fault verdict (architecture or ib_resource), 3 nothing to conclude
// (unknown, or healthy only by the node checks because no probe could run).
int ExitCodeFor(const PairVerdict& verdict);

nlohmann::json ToJson(const PairLocalReport& report);
void PrintPairTable(const PairLocalReport& report, std::ostream& out);

// "1.83 GB/s" (decimal units, as nccl-tests prints them).
std::string FormatBandwidth(double bytes_per_second);

}  // namespace nccl_triage
