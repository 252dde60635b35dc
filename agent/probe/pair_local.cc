#include "probe/pair_local.h"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <ostream>

#include "core/catalogue.h"
#include "core/ids.h"
#include "core/report.h"
#include "probe/nccl_abi.h"

namespace nccl_triage {
namespace {

// A failure that only reflects what happened to the other rank.
bool PeerCaused(const ProbeResult& r) {
  if (r.outcome != ProbeOutcome::kFail) return false;
  if (r.nccl_result == abi::kNcclRemoteError) return true;
  if (r.detail.rfind("no unique id", 0) == 0 || r.detail.rfind("stopped: ", 0) == 0) return true;
  return r.classification && !r.classification->causes.empty() &&
         r.classification->causes.front().cause == ids::kPeerExited;
}

int Severity(const ProbeResult& r) {
  switch (r.outcome) {
    case ProbeOutcome::kUnavailable:
      return 0;
    case ProbeOutcome::kCrashed:
      return 1;
    case ProbeOutcome::kFail:
      return PeerCaused(r) ? 4 : 2;
    case ProbeOutcome::kTimeout:
      return 3;
    case ProbeOutcome::kNotRun:
      return 5;
    case ProbeOutcome::kPass:
      return 6;
  }
  return 6;
}

std::string Pad(std::string s, size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s;
}

}  // namespace

std::string FormatBandwidth(double bps) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.2f GB/s", bps / 1e9);
  return buf;
}

ProbeResult MergeRankResults(const std::vector<ProbeResult>& ranks) {
  if (ranks.empty()) return ProbeResult{};
  size_t pick = 0;
  for (size_t i = 1; i < ranks.size(); ++i) {
    if (Severity(ranks[i]) < Severity(ranks[pick])) pick = i;
  }
  ProbeResult merged = ranks[pick];
  if (merged.outcome == ProbeOutcome::kPass) {
    for (const auto& r : ranks)
      merged.duration_seconds = std::max(merged.duration_seconds, r.duration_seconds);
    return merged;
  }
  merged.detail = "rank " + std::to_string(ranks[pick].rank) + ": " + merged.detail;
  // Keep every rank's explanation: the crashed rank's log is often empty, its peer's is not.
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (i == pick || !ranks[i].classification) continue;
    if (!merged.classification) {
      merged.classification = ranks[i].classification;
      continue;
    }
    for (const auto& c : ranks[i].classification->causes) {
      auto& mine = merged.classification->causes;
      if (std::none_of(mine.begin(), mine.end(),
                       [&](const ClassifiedCause& x) { return x.cause == c.cause; })) {
        mine.push_back(c);
      }
    }
  }
  return merged;
}

std::optional<LocalExpectation> ExpectedLocalBandwidth(
    const PairLocalRow& ib_row, const std::map<std::string, double>& port_rates_gbps) {
  double best = 0;
  for (const auto& [port, rate] : port_rates_gbps) best = std::max(best, rate);
  if (best <= 0) return std::nullopt;
  auto gbps = [](double rate) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%g Gb/s", rate);
    return std::string(buf);
  };
  double slowest = 0;
  std::string basis;
  bool gdr = !ib_row.ranks.empty();
  for (const auto& r : ib_row.ranks) {
    gdr = gdr && r.gdrdma;
    double sum = 0;
    std::string used;
    for (const auto& port : r.ib_ports) {
      auto it = port_rates_gbps.find(port);
      if (it == port_rates_gbps.end() || it->second <= 0) continue;
      sum += it->second;
      used += (used.empty() ? "" : " + ") + port + " " + gbps(it->second);
    }
    if (sum <= 0) {
      sum = best;
      used = "best port " + gbps(best) + " (ports used not known)";
    }
    if (slowest == 0 || sum < slowest) {
      slowest = sum;
      basis = "rank " + std::to_string(r.rank) + ": " + used;
    }
  }
  if (slowest <= 0) {
    slowest = best;
    basis = "best port " + gbps(best) + " (ports used not known)";
  }
  basis += gdr ? "; GPUDirect RDMA assumed and used"
               : "; GPUDirect RDMA assumed, not used (no /GDRDMA channel)";
  return LocalExpectation{slowest * 1e9 / 8, basis};
}

PairVerdict DecidePairLocal(const std::vector<PairLocalRow>& rows,
                            const std::vector<Finding>& node_findings, double busbw_min_fraction,
                            const std::map<std::string, double>& port_rates_gbps) {
  DecisionInputs in;
  for (const auto& row : rows) {
    if (row.mode == ProbeMode::kSocket) {
      in.socket = row.merged.outcome;
      in.socket_result = &row.merged;
    } else {
      in.ib = row.merged.outcome;
      in.ib_result = &row.merged;
      if (row.merged.size_bytes >= kBandwidthBoundBytes) {
        if (auto e = ExpectedLocalBandwidth(row, port_rates_gbps)) {
          in.expected_ib_bytes_per_second = e->bytes_per_second;
          in.expected_ib_basis = e->basis;
        }
      }
    }
  }
  in.node_findings = node_findings;
  in.busbw_min_fraction = busbw_min_fraction;
  PairVerdict v = Decide(in);
  if (v.basis != Basis::kProbes || v.fault_class != FaultClass::kHealthy) return v;
  // The probes exercised one rail (or whichever NCCL picked); a failing check elsewhere on the
  // node still breaks the jobs that use it, so a passing probe does not clear the node.
  std::string failing;
  for (const auto& f : node_findings) {
    if (f.status != CheckStatus::kFail) continue;
    if (std::find(v.causes.begin(), v.causes.end(), f.check) == v.causes.end())
      v.causes.push_back(f.check);
    failing += (failing.empty() ? "" : ", ") + f.check;
  }
  if (failing.empty()) return v;
  v.fault_class = ClassFromFindings(node_findings);
  if (v.fault_class == FaultClass::kHealthy || v.fault_class == FaultClass::kUnknown) {
    // A failing check of no known class still fails the node (exit 1, not "nothing to say").
    v.fault_class = FaultClass::kIbResource;
  }
  v.reason = "probes pass, node checks fail: " + v.reason + ", but " + failing + " failed";
  return v;
}

std::optional<std::string> GdrWarning(const PairLocalRow& ib_row,
                                      const std::vector<Finding>& node_findings,
                                      const std::vector<LogLine>& log_lines) {
  if (ib_row.mode != ProbeMode::kIb || ib_row.merged.outcome != ProbeOutcome::kPass) {
    return std::nullopt;
  }
  const bool gdr =
      !ib_row.ranks.empty() && std::all_of(ib_row.ranks.begin(), ib_row.ranks.end(),
                                           [](const ProbeResult& r) { return r.gdrdma; });
  if (gdr) return std::nullopt;
  const bool module_loaded = std::any_of(node_findings.begin(), node_findings.end(), [](auto& f) {
    return f.check == ids::kIbPeermem && f.status == CheckStatus::kPass;
  });
  if (!module_loaded) return std::nullopt;  // ib.peermem says so itself
  std::string w =
      "the IB probe ran without GPUDirect RDMA although the peer-memory module is loaded (no "
      "channel says /GDRDMA): NCCL stages through host memory, so expect lower busbw. Why: "
      "NCCL_NET_GDR_LEVEL below the GPU-HCA distance, the GPU and HCA far apart in the PCI "
      "topology (another root complex or socket), or PCI ACS/IOMMU redirecting peer-to-peer "
      "traffic";
  for (const auto& l : log_lines) {
    w += "\n    line " + std::to_string(l.number) + ": " + l.text;
  }
  return w;
}

PairLocalReport RunPairLocal(const ProbeRunner& runner, const std::vector<ProbeMode>& modes,
                             std::vector<Finding> node_findings, std::string findings_note,
                             PairLocalObserver* observer,
                             std::map<std::string, double> port_rates_gbps) {
  PairLocalReport report;
  report.node_findings = std::move(node_findings);
  report.findings_note = std::move(findings_note);
  report.port_rates_gbps = std::move(port_rates_gbps);
  report.work_dir = runner.options().work_dir;
  const int count = static_cast<int>(modes.size());
  for (int i = 0; i < count; ++i) {
    PairLocalRow row;
    row.mode = modes[i];
    if (observer) observer->ModeStarted(row.mode, i + 1, count, runner.config().timeout_seconds);
    const auto started = std::chrono::steady_clock::now();
    row.ranks = runner.RunLocalRanks(row.mode, 2);
    row.merged = MergeRankResults(row.ranks);
    if (observer) {
      observer->ModeFinished(
          row, std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
    }
    report.rows.push_back(std::move(row));
  }
  for (const auto& row : report.rows) {
    if (row.mode == ProbeMode::kIb && row.merged.size_bytes >= kBandwidthBoundBytes) {
      report.expected_ib = ExpectedLocalBandwidth(row, report.port_rates_gbps);
    }
  }
  report.verdict = DecidePairLocal(report.rows, report.node_findings,
                                   runner.config().busbw_min_fraction, report.port_rates_gbps);
  for (const auto& row : report.rows) {
    if (row.mode != ProbeMode::kIb || row.ranks.empty()) continue;
    std::vector<LogLine> lines;
    if (auto log = ClassifyLogFile(row.ranks.front().log_path)) lines = log->ib_lines;
    if (auto w = GdrWarning(row, report.node_findings, lines)) report.warnings.push_back(*w);
  }
  return report;
}

std::string ProgressRunningText(ProbeMode mode, int index, int count, int elapsed_seconds,
                                int timeout_seconds) {
  return std::string(ToString(mode)) + " probe (" + std::to_string(index) + "/" +
         std::to_string(count) + "): 2 ranks running, " + std::to_string(elapsed_seconds) +
         " s (limit " + std::to_string(timeout_seconds) + " s)";
}

std::string ProgressDoneText(const PairLocalRow& row, int index, int count, double seconds) {
  char elapsed[32];
  std::snprintf(elapsed, sizeof(elapsed), "%.1f", seconds);
  std::string text = std::string(ToString(row.mode)) + " probe (" + std::to_string(index) + "/" +
                     std::to_string(count) + "): " + std::string(ToString(row.merged.outcome)) +
                     " in " + elapsed + " s";
  if (row.merged.classification && !row.merged.classification->causes.empty()) {
    const auto& causes = row.merged.classification->causes;
    text += " (";
    for (size_t i = 0; i < causes.size(); ++i) text += (i ? "," : "") + causes[i].cause;
    text += ")";
  }
  return text;
}

TerminalProgress::TerminalProgress(std::ostream& out, bool enabled, std::chrono::milliseconds tick)
    : out_(out), enabled_(enabled), tick_(tick) {}

TerminalProgress::~TerminalProgress() { StopTicker(); }

void TerminalProgress::StopTicker() {
  if (ticker_.joinable()) {
    ticker_.request_stop();
    wake_.notify_all();
    ticker_.join();
  }
}

void TerminalProgress::ModeStarted(ProbeMode mode, int index, int count, int timeout_seconds) {
  if (!enabled_) return;
  StopTicker();
  {
    std::lock_guard lock(mu_);
    index_ = index;
    count_ = count;
  }
  ticker_ = std::jthread([this, mode, index, count, timeout_seconds](std::stop_token stop) {
    const auto started = std::chrono::steady_clock::now();
    std::unique_lock lock(mu_);
    while (!stop.stop_requested()) {
      const int elapsed = static_cast<int>(std::chrono::duration_cast<std::chrono::seconds>(
                                               std::chrono::steady_clock::now() - started)
                                               .count());
      // \r and erase-to-end-of-line: the line is rewritten in place, never scrolled.
      out_ << "\r" << ProgressRunningText(mode, index, count, elapsed, timeout_seconds) << "\x1b[K"
           << std::flush;
      wake_.wait_for(lock, stop, tick_, [] { return false; });
    }
  });
}

void TerminalProgress::ModeFinished(const PairLocalRow& row, double seconds) {
  if (!enabled_) return;
  StopTicker();
  std::lock_guard lock(mu_);
  out_ << "\r" << ProgressDoneText(row, index_, count_, seconds) << "\x1b[K\n" << std::flush;
}

int ExitCodeFor(const PairVerdict& v) {
  switch (v.fault_class) {
    case FaultClass::kHealthy:
      return 0;
    case FaultClass::kArchitecture:
    case FaultClass::kIbResource:
      return 1;
    case FaultClass::kUnknown:
      return 3;
  }
  return 3;
}

nlohmann::json ToJson(const PairLocalReport& report) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& row : report.rows) {
    nlohmann::json ranks = nlohmann::json::array();
    for (const auto& r : row.ranks) ranks.push_back(ToJson(r));
    rows.push_back(
        {{"mode", ToString(row.mode)}, {"result", ToJson(row.merged)}, {"ranks", ranks}});
  }
  nlohmann::json causes = nlohmann::json::array();
  for (const auto& id : report.verdict.causes) {
    const CauseInfo* info = FindCause(id);
    nlohmann::json c = {{"cause", id}};
    if (info != nullptr) {
      c["class"] = ToString(info->fault_class);
      c["title"] = info->title;
      c["remedy"] = info->remedy;
    }
    causes.push_back(std::move(c));
  }
  nlohmann::json findings = nlohmann::json::array();
  for (const auto& f : report.node_findings) {
    if (f.status == CheckStatus::kFail) findings.push_back(f.check);
  }
  return {
      {"schema", kProbePairSchema},
      {"rows", rows},
      {"verdict",
       {{"class", ToString(report.verdict.fault_class)},
        {"basis", ToString(report.verdict.basis)},
        {"degraded", report.verdict.degraded},
        {"reason", report.verdict.reason},
        {"causes", causes}}},
      {"failing_checks", findings},
      {"warnings", report.warnings},
      {"expected_ib", report.expected_ib ? nlohmann::json{{"busbw_bytes_per_second",
                                                           report.expected_ib->bytes_per_second},
                                                          {"basis", report.expected_ib->basis}}
                                         : nlohmann::json(nullptr)},
      {"checks_note", report.findings_note},
      {"work_dir", report.work_dir},
  };
}

void PrintPairTable(const PairLocalReport& report, std::ostream& out) {
  out << Pad("MODE", 8) << Pad("OUTCOME", 13) << Pad("BUSBW", 13) << Pad("TRANSPORT", 12)
      << "DETAIL\n";
  for (const auto& row : report.rows) {
    const ProbeResult& r = row.merged;
    std::string bw = r.outcome == ProbeOutcome::kPass || r.busbw_bytes_per_second > 0
                         ? FormatBandwidth(r.busbw_bytes_per_second)
                         : "-";
    out << Pad(std::string(ToString(row.mode)), 8) << Pad(std::string(ToString(r.outcome)), 13)
        << Pad(bw, 13) << Pad(r.transport.empty() ? "-" : r.transport, 12) << r.detail << "\n";
  }
  const ProbeResult* any = report.rows.empty() ? nullptr : &report.rows.front().merged;
  if (any != nullptr && (!any->nccl_version.empty() || !any->gpu_name.empty())) {
    out << "\nNCCL " << (any->nccl_version.empty() ? "?" : any->nccl_version);
    if (!any->nccl_library.empty()) out << " (" << any->nccl_library << ")";
    if (any->cuda_driver_version > 0) out << ", CUDA driver " << any->cuda_driver_version;
    if (!any->gpu_name.empty()) out << ", " << any->gpu_name << " " << any->gpu_bus_id;
    out << "\n";
  }
  const PairVerdict& v = report.verdict;
  out << "\nverdict: " << ToString(v.fault_class) << " (basis: " << ToString(v.basis) << ")"
      << (v.degraded ? " degraded" : "") << "\n  " << v.reason << "\n";
  if (!v.causes.empty()) out << "causes:\n";
  for (const auto& id : v.causes) {
    const CauseInfo* info = FindCause(id);
    out << "  " << Pad(id, 24) << (info != nullptr ? std::string(info->title) : "") << "\n";
    if (info != nullptr) out << "    fix: " << info->remedy << "\n";
  }
  for (const auto& w : report.warnings) out << "warning: " << w << "\n";
  if (report.expected_ib) {
    out << "expected IB busbw: " << FormatBandwidth(report.expected_ib->bytes_per_second) << " ("
        << report.expected_ib->basis << ")\n";
  }
  if (!report.findings_note.empty()) out << "node checks: " << report.findings_note << "\n";
  if (!report.work_dir.empty()) out << "NCCL logs: " << report.work_dir << "\n";
}

}  // namespace nccl_triage
