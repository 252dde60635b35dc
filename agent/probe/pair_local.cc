#include "probe/pair_local.h"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <ostream>

#include "core/catalogue.h"
#include "core/ids.h"
#include "core/rail_selection.h"
#include "core/rates.h"
#include "core/report.h"

namespace nccl_triage {
namespace {

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

std::optional<LocalExpectation> ExpectedLocalBandwidth(
    const PairLocalRow& ib_row, const std::map<std::string, double>& port_rates_gbps) {
  double best = 0;
  for (const auto& [port, rate] : port_rates_gbps) best = std::max(best, rate);
  if (best <= 0) return std::nullopt;
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
      used += (used.empty() ? "" : " + ") + port + " " + FormatGbps(it->second);
    }
    if (sum <= 0) {
      sum = best;
      used = "best port " + FormatGbps(best) + " (ports used not known)";
    }
    if (slowest == 0 || sum < slowest) {
      slowest = sum;
      basis = "rank " + std::to_string(r.rank) + ": " + used;
    }
  }
  if (slowest <= 0) {
    slowest = best;
    basis = "best port " + FormatGbps(best) + " (ports used not known)";
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

std::vector<std::string> PortsNamed(std::string_view message) {
  std::vector<std::string> out;
  auto word_char = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  };
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  for (size_t slash = message.find('/'); slash != std::string_view::npos;
       slash = message.find('/', slash + 1)) {
    size_t a = slash;
    while (a > 0 && word_char(message[a - 1])) --a;
    size_t b = slash + 1;
    while (b < message.size() && digit(message[b])) ++b;
    if (a == slash || b == slash + 1 || !digit(message[slash - 1])) continue;
    const std::string_view word = message.substr(a, slash - a);
    if (std::none_of(word.begin(), word.end(), [](char c) { return c < '0' || c > '9'; })) {
      continue;  // "3/4" is a fraction, not a port
    }
    if (b < message.size() && word_char(message[b])) continue;
    out.emplace_back(message.substr(a, b - a));
  }
  return out;
}

std::vector<Finding> FindingsForRail(const std::vector<Finding>& findings, const Rail& rail) {
  const std::string mine = RailPortName(rail);
  std::vector<Finding> out;
  for (const auto& f : findings) {
    const auto ports = PortsNamed(f.message);
    if (!ports.empty() && std::find(ports.begin(), ports.end(), mine) == ports.end()) continue;
    out.push_back(f);
  }
  return out;
}

std::string RailName(const Rail& r) {
  const std::string port = RailPortName(r);
  if (r.index < 0) return port;
  return "rail " + std::to_string(r.index) + " (" + port +
         (r.gpu >= 0 ? ", GPU " + std::to_string(r.gpu) : std::string()) + ")";
}

namespace {

// One rail's verdict: the socket row against this rail's IB row, the IB busbw judged against the
// port's rate, the node findings about other rails left out.
PairVerdict DecideRail(const PairLocalRow* socket, const RailProbeRow& rail,
                       const std::vector<Finding>& node_findings, double busbw_min_fraction) {
  DecisionInputs in;
  if (socket != nullptr) {
    in.socket = socket->merged.outcome;
    in.socket_result = &socket->merged;
  }
  in.ib = rail.row.merged.outcome;
  in.ib_result = &rail.row.merged;
  in.node_findings = FindingsForRail(node_findings, rail.rail);
  in.busbw_min_fraction = busbw_min_fraction;
  if (rail.expected_bytes_per_second > 0) {
    in.expected_ib_bytes_per_second = rail.expected_bytes_per_second;
    in.expected_ib_basis = rail.rail.device + ":" + std::to_string(rail.rail.port) + " at " +
                           FormatGbps(*rail.rail.rate_gbps);
  }
  return Decide(in);
}

const PairLocalRow* SocketRow(const std::vector<PairLocalRow>& rows) {
  for (const auto& row : rows) {
    if (row.mode == ProbeMode::kSocket) return &row;
  }
  return nullptr;
}

}  // namespace

PairVerdict DecideRails(const PairLocalRow* socket, const std::vector<RailProbeRow>& rails,
                        const std::vector<Finding>& node_findings, double busbw_min_fraction) {
  std::vector<PairLocalRow> rows;
  if (socket != nullptr) rows.push_back(*socket);
  if (socket != nullptr && socket->merged.outcome != ProbeOutcome::kPass &&
      socket->merged.outcome != ProbeOutcome::kNotRun) {
    return DecidePairLocal(rows, node_findings, busbw_min_fraction);
  }
  const RailProbeRow* passed = nullptr;
  int ran = 0;
  for (const auto& r : rails) {
    if (!r.skipped.empty()) continue;
    ++ran;
    const PairVerdict& v = r.verdict;
    if (v.fault_class == FaultClass::kHealthy && !v.degraded) {
      if (passed == nullptr) passed = &r;
      continue;
    }
    // A rail whose probe could not run (unavailable) has only the node checks' verdict, which
    // is not about this rail.
    if (v.fault_class == FaultClass::kUnknown || v.basis != Basis::kProbes) continue;
    PairVerdict out = v;
    out.reason = RailName(r.rail) + ": " + out.reason;
    return out;
  }
  if (passed == nullptr) {
    // Every rail skipped (or unknown): what the node checks say, the skips named.
    PairVerdict v = DecidePairLocal(rows, node_findings, busbw_min_fraction);
    std::string skipped;
    for (const auto& r : rails) {
      if (r.skipped.empty()) continue;
      skipped += (skipped.empty() ? "" : ", ") + RailName(r.rail) + " skipped: " + r.skipped;
    }
    if (!skipped.empty()) v.reason = "no rail probed (" + skipped + "); " + v.reason;
    return v;
  }
  // The pair passed on every rail that ran: DecidePairLocal's view of the first one, so that a
  // failing node check still fails the node.
  rows.push_back(passed->row);
  PairVerdict v = DecidePairLocal(rows, node_findings, busbw_min_fraction);
  v.reason = std::to_string(ran) + " rail(s) probed, each passed; " + v.reason;
  return v;
}

PairLocalReport RunPairLocal(const ProbeRunner& runner, const std::vector<ProbeMode>& modes,
                             std::vector<Finding> node_findings, std::string findings_note,
                             PairLocalObserver* observer, const std::vector<RailTarget>& rails,
                             std::map<std::string, double> port_rates_gbps) {
  PairLocalReport report;
  report.node_findings = std::move(node_findings);
  report.findings_note = std::move(findings_note);
  report.port_rates_gbps = std::move(port_rates_gbps);
  report.work_dir = runner.options().work_dir;
  const double min_fraction = runner.config().busbw_min_fraction;
  const bool per_rail = !rails.empty();
  // The progress line counts the IB mode once per rail that runs.
  int count = 0;
  for (ProbeMode mode : modes) {
    if (mode != ProbeMode::kIb || !per_rail) {
      ++count;
      continue;
    }
    for (const auto& t : rails) count += t.gpu_busy_by.empty() ? 1 : 0;
  }
  int index = 0;
  auto run = [&](const ProbeRequest& base) {
    PairLocalRow row;
    row.mode = base.mode;
    ++index;
    if (observer) observer->ModeStarted(row.mode, index, count, runner.config().timeout_seconds);
    const auto started = std::chrono::steady_clock::now();
    row.ranks = runner.RunLocalRanks(base, 2);
    row.merged = MergeRankResults(row.ranks);
    if (observer) {
      observer->ModeFinished(
          row, std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
    }
    return row;
  };
  for (ProbeMode mode : modes) {
    ProbeRequest base;
    base.mode = mode;
    if (mode != ProbeMode::kIb || !per_rail) {
      report.rows.push_back(run(base));
      continue;
    }
    // One rail after the other: each rail's two ranks share its GPU, and two rails' GPUs may be
    // one GPU (two HCAs on one switch).
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
      ProbeRequest req = base;
      req.ib_hca = RailIbHca(target.rail);
      req.gpu_bus_id = target.rail.gpu_bdf;
      req.tag = "rail" + (target.rail.index >= 0 ? std::to_string(target.rail.index)
                                                 : "-" + target.rail.device);
      rr.row = run(req);
      rr.verdict = DecideRail(SocketRow(report.rows), rr, report.node_findings, min_fraction);
      report.rails.push_back(std::move(rr));
    }
  }
  for (const auto& row : report.rows) {
    if (row.mode == ProbeMode::kIb && row.merged.size_bytes >= kBandwidthBoundBytes) {
      report.expected_ib = ExpectedLocalBandwidth(row, report.port_rates_gbps);
    }
  }
  report.verdict = per_rail ? DecideRails(SocketRow(report.rows), report.rails,
                                          report.node_findings, min_fraction)
                            : DecidePairLocal(report.rows, report.node_findings, min_fraction,
                                              report.port_rates_gbps);
  auto warn = [&](const PairLocalRow& row, const std::string& prefix) {
    if (row.mode != ProbeMode::kIb || row.ranks.empty()) return;
    std::vector<LogLine> lines;
    if (auto log = ClassifyLogFile(row.ranks.front().log_path)) lines = log->ib_lines;
    if (auto w = GdrWarning(row, report.node_findings, lines)) {
      report.warnings.push_back(prefix + *w);
    }
  };
  for (const auto& row : report.rows) warn(row, "");
  for (const auto& r : report.rails) warn(r.row, RailName(r.rail) + ": ");
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
      // Healthy only by the node checks: no probe could run, nothing is concluded.
      return v.basis == Basis::kProbes ? 0 : 3;
    case FaultClass::kArchitecture:
    case FaultClass::kIbResource:
      return 1;
    case FaultClass::kUnknown:
      return 3;
  }
  return 3;
}

namespace {

nlohmann::json CausesJson(const std::vector<std::string>& ids) {
  nlohmann::json causes = nlohmann::json::array();
  for (const auto& id : ids) {
    const CauseInfo* info = FindCause(id);
    nlohmann::json c = {{"cause", id}};
    if (info != nullptr) {
      c["class"] = ToString(info->fault_class);
      c["title"] = info->title;
      c["remedy"] = info->remedy;
    }
    causes.push_back(std::move(c));
  }
  return causes;
}

nlohmann::json VerdictJson(const PairVerdict& v) {
  return {{"class", ToString(v.fault_class)},
          {"basis", ToString(v.basis)},
          {"degraded", v.degraded},
          {"reason", v.reason},
          {"causes", CausesJson(v.causes)}};
}

nlohmann::json RanksJson(const std::vector<ProbeResult>& ranks) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& r : ranks) out.push_back(ToJson(r));
  return out;
}

// "skipped" when the rail did not run, else the outcome of its IB probe.
std::string RailOutcome(const RailProbeRow& r) {
  return r.skipped.empty() ? std::string(ToString(r.row.merged.outcome)) : "skipped";
}

nlohmann::json RailRowJson(const RailProbeRow& r) {
  nlohmann::json j = {
      {"rail", r.rail.index},
      {"device", r.rail.device},
      {"port", r.rail.port},
      {"ib_hca", RailIbHca(r.rail)},
      {"state", r.rail.state},
      {"gpu", r.rail.gpu},
      {"gpu_bdf", r.rail.gpu_bdf},
      {"outcome", RailOutcome(r)},
      {"expected_busbw_bytes_per_second", r.expected_bytes_per_second},
  };
  if (r.rail.rate_gbps) j["rate_gbps"] = *r.rail.rate_gbps;
  if (!r.skipped.empty()) {
    j["skipped"] = r.skipped;
    return j;
  }
  j["busbw_bytes_per_second"] = r.row.merged.busbw_bytes_per_second;
  j["verdict"] = VerdictJson(r.verdict);
  j["result"] = ToJson(r.row.merged);
  j["ranks"] = RanksJson(r.row.ranks);
  return j;
}

}  // namespace

nlohmann::json ToJson(const PairLocalReport& report) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& row : report.rows) {
    rows.push_back({{"mode", ToString(row.mode)},
                    {"result", ToJson(row.merged)},
                    {"ranks", RanksJson(row.ranks)}});
  }
  nlohmann::json rails = nlohmann::json::array();
  for (const auto& r : report.rails) rails.push_back(RailRowJson(r));
  nlohmann::json findings = nlohmann::json::array();
  for (const auto& f : report.node_findings) {
    if (f.status == CheckStatus::kFail) findings.push_back(f.check);
  }
  return {
      {"schema", kProbePairSchema},
      {"rows", rows},
      {"rails", rails},
      {"verdict", VerdictJson(report.verdict)},
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
  if (!report.rails.empty()) {
    out << "\n"
        << Pad("RAIL", 6) << Pad("HCA/PORT", 11) << Pad("GPU", 16) << Pad("OUTCOME", 13)
        << Pad("BUSBW", 13) << Pad("EXPECTED", 13) << "VERDICT\n";
    for (const auto& r : report.rails) {
      const ProbeResult& m = r.row.merged;
      const bool ran = r.skipped.empty();
      std::string gpu = r.rail.gpu >= 0 ? std::to_string(r.rail.gpu) + " " + r.rail.gpu_bdf : "-";
      std::string bw = ran && (m.outcome == ProbeOutcome::kPass || m.busbw_bytes_per_second > 0)
                           ? FormatBandwidth(m.busbw_bytes_per_second)
                           : "-";
      std::string expected =
          r.expected_bytes_per_second > 0 ? FormatBandwidth(r.expected_bytes_per_second) : "-";
      std::string verdict;
      if (!ran) {
        verdict = "skipped: " + r.skipped;
      } else if (r.verdict.basis != Basis::kProbes) {
        verdict = "not judged: " + m.detail;  // the probe could not run
      } else {
        verdict = std::string(ToString(r.verdict.fault_class)) +
                  (r.verdict.degraded ? " degraded" : "") +
                  (r.verdict.fault_class == FaultClass::kHealthy ? "" : ": " + m.detail);
      }
      out << Pad(r.rail.index >= 0 ? std::to_string(r.rail.index) : "-", 6)
          << Pad(RailPortName(r.rail), 11) << Pad(gpu, 16) << Pad(RailOutcome(r), 13) << Pad(bw, 13)
          << Pad(expected, 13) << verdict << "\n";
    }
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
