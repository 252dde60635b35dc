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

PairVerdict DecidePairLocal(const std::vector<PairLocalRow>& rows,
                            const std::vector<Finding>& node_findings, double busbw_min_fraction) {
  DecisionInputs in;
  for (const auto& row : rows) {
    if (row.mode == ProbeMode::kSocket) {
      in.socket = row.merged.outcome;
      in.socket_result = &row.merged;
    } else {
      in.ib = row.merged.outcome;
      in.ib_result = &row.merged;
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

namespace {

std::string RailName(const Rail& r) {
  return "rail " + std::to_string(r.index) + " (" + r.device + "/" + std::to_string(r.port) +
         (r.gpu >= 0 ? ", GPU " + std::to_string(r.gpu) : std::string()) + ")";
}

}  // namespace

PairVerdict DecideRails(const PairLocalRow* socket, const std::vector<RailProbeRow>& rails,
                        const std::vector<Finding>& node_findings, double busbw_min_fraction) {
  std::vector<PairLocalRow> socket_only;
  if (socket != nullptr) socket_only.push_back(*socket);
  if (socket != nullptr && socket->merged.outcome != ProbeOutcome::kPass) {
    return DecidePairLocal(socket_only, node_findings, busbw_min_fraction);
  }
  const RailProbeRow* passed = nullptr;
  for (const auto& r : rails) {
    if (!r.skipped.empty()) continue;
    if (r.verdict.fault_class == FaultClass::kHealthy && !r.verdict.degraded) {
      if (passed == nullptr) passed = &r;
      continue;
    }
    if (r.verdict.fault_class == FaultClass::kUnknown) continue;
    PairVerdict v = r.verdict;
    v.reason = RailName(r.rail) + ": " + v.reason;
    return v;
  }
  if (passed != nullptr) {
    PairVerdict v = passed->verdict;
    int ran = 0;
    for (const auto& r : rails) ran += r.skipped.empty() ? 1 : 0;
    v.reason = std::to_string(ran) + " rail(s) probed, each passed; " + v.reason;
    return v;
  }
  PairVerdict v = DecidePairLocal(socket_only, node_findings, busbw_min_fraction);
  if (!rails.empty()) v.reason = "no rail probed (" + rails.front().skipped + "); " + v.reason;
  return v;
}

PairLocalReport RunPairLocal(const ProbeRunner& runner, const std::vector<ProbeMode>& modes,
                             std::vector<Finding> node_findings, std::string findings_note,
                             const std::vector<RailTarget>& rails) {
  PairLocalReport report;
  report.node_findings = std::move(node_findings);
  report.findings_note = std::move(findings_note);
  report.work_dir = runner.options().work_dir;
  const double min_fraction = runner.config().busbw_min_fraction;
  for (ProbeMode mode : modes) {
    if (mode == ProbeMode::kIb && !rails.empty()) {
      const PairLocalRow* socket = nullptr;
      for (const auto& row : report.rows) {
        if (row.mode == ProbeMode::kSocket) socket = &row;
      }
      for (const auto& target : rails) {
        RailProbeRow rr;
        rr.rail = target.rail;
        rr.expected_bytes_per_second = RailExpectedBytesPerSecond(target.rail);
        rr.row.mode = ProbeMode::kIb;
        if (!target.gpu_busy_by.empty()) {
          rr.skipped = "gpu busy (" + target.gpu_busy_by + ")";
          report.rails.push_back(std::move(rr));
          continue;
        }
        ProbeRequest base;
        base.mode = ProbeMode::kIb;
        base.ib_hca = RailIbHca(target.rail);
        base.gpu_bus_id = target.rail.gpu_bdf;
        base.tag = "rail" + std::to_string(target.rail.index);
        rr.row.ranks = runner.RunLocalRanks(base, 2);
        rr.row.merged = MergeRankResults(rr.row.ranks);
        std::vector<PairLocalRow> pair;
        if (socket != nullptr) pair.push_back(*socket);
        pair.push_back(rr.row);
        DecisionInputs in;
        for (const auto& row : pair) {
          if (row.mode == ProbeMode::kSocket) {
            in.socket = row.merged.outcome;
            in.socket_result = &row.merged;
          } else {
            in.ib = row.merged.outcome;
            in.ib_result = &row.merged;
          }
        }
        in.node_findings = report.node_findings;
        in.busbw_min_fraction = min_fraction;
        if (rr.expected_bytes_per_second > 0) {
          in.expected_ib_bytes_per_second = rr.expected_bytes_per_second;
        }
        rr.verdict = Decide(in);
        report.rails.push_back(std::move(rr));
      }
      continue;
    }
    PairLocalRow row;
    row.mode = mode;
    row.ranks = runner.RunLocalRanks(mode, 2);
    row.merged = MergeRankResults(row.ranks);
    report.rows.push_back(std::move(row));
  }
  report.verdict =
      DecidePairLocal(report.rows, report.node_findings, runner.config().busbw_min_fraction);
  for (const auto& row : report.rows) {
    if (row.mode != ProbeMode::kIb || row.ranks.empty()) continue;
    std::vector<LogLine> lines;
    if (auto log = ClassifyLogFile(row.ranks.front().log_path)) lines = log->ib_lines;
    if (auto w = GdrWarning(row, report.node_findings, lines)) report.warnings.push_back(*w);
  }
  return report;
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
  if (!report.findings_note.empty()) out << "node checks: " << report.findings_note << "\n";
  if (!report.work_dir.empty()) out << "NCCL logs: " << report.work_dir << "\n";
}

}  // namespace nccl_triage
