#include "probe/intra_node.h"

#include <algorithm>
#include <filesystem>
#include <iomanip>
#include <nlohmann/json.hpp>
#include <ostream>

#include "core/catalogue.h"
#include "core/ids.h"
#include "core/report.h"
#include "probe/pair_local.h"

namespace nccl_triage {
namespace {

const IntraVariant& Variant(size_t i) {
  static const IntraVariant kVariants[] = {
      {"default", std::nullopt, false},
      {"p2p-off", "LOC", false},  // LOC: "never use P2P"; NCCL takes SHM (or NET) instead
      {"shm-off", std::nullopt, true},
      {"p2p-shm-off", "LOC", true},  // only the network is left between the GPUs
  };
  return kVariants[std::min(i, std::size(kVariants) - 1)];
}
constexpr size_t kVariantCount = 4;

bool Ran(ProbeOutcome o) {
  return o == ProbeOutcome::kPass || o == ProbeOutcome::kFail || o == ProbeOutcome::kTimeout ||
         o == ProbeOutcome::kCrashed;
}

std::string Via(const ProbeResult& r) {
  return r.transport.empty() ? "no channel line in the log" : "via " + r.transport;
}

std::string Summary(const ProbeResult& r) {
  if (r.outcome == ProbeOutcome::kPass) {
    return "pass, busbw " + FormatBandwidth(r.busbw_bytes_per_second) + ", " + Via(r);
  }
  return std::string(ToString(r.outcome)) + ": " + r.detail;
}

std::string CausesOf(const ProbeResult& r) {
  std::string out;
  if (!r.classification) return out;
  for (const auto& c : r.classification->causes) out += (out.empty() ? "" : ", ") + c.cause;
  return out;
}

}  // namespace

std::string IntraVariant::EnvText() const {
  std::string out;
  if (p2p_level) out = "NCCL_P2P_LEVEL=" + *p2p_level;
  if (shm_disable) out += std::string(out.empty() ? "" : " ") + "NCCL_SHM_DISABLE=1";
  return out;
}

std::optional<IntraVariant> NextIntraVariant(const std::vector<IntraNodeRun>& runs,
                                             size_t gpu_count) {
  if (runs.empty()) return Variant(0);
  const ProbeOutcome first = runs.front().merged.outcome;
  const ProbeOutcome last = runs.back().merged.outcome;
  if (!Ran(first) || last == ProbeOutcome::kPass || gpu_count < 2) return std::nullopt;
  if (runs.size() >= kVariantCount) return std::nullopt;
  return Variant(runs.size());
}

Finding JudgeIntraNode(const std::vector<IntraNodeRun>& runs,
                       const std::vector<std::string>& gpus) {
  Finding f;
  f.check = std::string(ids::kProbeIntraNode.str());
  f.fault_class = ids::kProbeIntraNode.info().fault_class;
  f.remedy = std::string(ids::kProbeIntraNode.info().remedy);
  std::string gpu_list;
  for (const auto& g : gpus) gpu_list += (gpu_list.empty() ? "" : ", ") + g;
  f.evidence.push_back({"GPUs", gpu_list.empty() ? "none" : gpu_list, "proc/driver/nvidia/gpus"});
  for (const auto& run : runs) {
    std::string key = "all-reduce " + run.variant.name;
    if (!run.variant.EnvText().empty()) key += " (" + run.variant.EnvText() + ")";
    std::string value = Summary(run.merged);
    std::string causes = CausesOf(run.merged);
    if (!causes.empty()) value += " [" + causes + "]";
    f.evidence.push_back({key, value, run.merged.log_path});
  }
  const std::string n = std::to_string(gpus.size()) + " GPUs";
  if (runs.empty() || !Ran(runs.front().merged.outcome)) {
    f.status = CheckStatus::kSkip;
    f.message = gpus.empty() ? "no idle GPU to probe"
                             : "not run: " + (runs.empty() ? std::string("no result")
                                                           : runs.front().merged.detail);
    return f;
  }
  const ProbeResult& first = runs.front().merged;
  if (first.outcome == ProbeOutcome::kPass) {
    const std::string bw = "busbw " + FormatBandwidth(first.busbw_bytes_per_second);
    if (gpus.size() < 2) {
      f.status = CheckStatus::kPass;
      f.message = "one GPU (" + (gpus.empty() ? first.gpu_bus_id : gpus.front()) +
                  "): NCCL ran a one-rank communicator; no link between GPUs to test";
    } else if (first.transport.starts_with("P2P")) {
      f.status = CheckStatus::kPass;
      f.message = n + ": all-reduce " + bw + " via " + first.transport;
    } else if (first.transport.empty()) {
      f.status = CheckStatus::kWarn;
      f.message = n + ": all-reduce passed (" + bw +
                  ") but the log names no channel transport (NCCL_DEBUG_SUBSYS without INIT?)";
    } else {
      f.status = CheckStatus::kWarn;
      f.message = n + ": all-reduce passed (" + bw + ") via " + first.transport +
                  ", not P2P: NCCL cannot use peer access between these GPUs (PCIe ACS, IOMMU, "
                  "virtualisation, or a topology without P2P)";
    }
    return f;
  }
  f.status = CheckStatus::kFail;
  const std::string failed = "all-reduce among " + n + " fails by default (" +
                             std::string(ToString(first.outcome)) + ": " + first.detail + ")";
  const IntraNodeRun* passed = nullptr;
  for (const auto& run : runs) {
    if (run.merged.outcome == ProbeOutcome::kPass) passed = &run;
  }
  if (passed == nullptr) {
    std::string causes = CausesOf(first);
    f.message = failed + " and with P2P and SHM disabled: the GPUs, the driver or NCCL itself" +
                (causes.empty() ? "" : " [" + causes + "]");
    return f;
  }
  const std::string works =
      " and passes with " + passed->variant.EnvText() + " (" + Via(passed->merged) + ")";
  if (passed->variant.p2p_level && !passed->variant.shm_disable) {
    f.message = "P2P between the GPUs is broken: " + failed + works +
                "; PCIe ACS, the IOMMU or NVLink, not the network";
  } else if (passed->variant.shm_disable && !passed->variant.p2p_level) {
    f.message = "SHM between the ranks is broken: " + failed + works + "; check /dev/shm";
  } else {
    f.message = "P2P and SHM are both broken: " + failed + works;
  }
  return f;
}

IntraNodeReport RunIntraNode(const ProbeRunner& runner, std::vector<std::string> gpus,
                             std::string gpu_note, std::stop_token stop) {
  IntraNodeReport report;
  report.gpus = std::move(gpus);
  report.gpu_note = std::move(gpu_note);
  report.work_dir = runner.options().work_dir;
  if (!report.gpus.empty()) {
    while (!stop.stop_requested()) {
      auto variant = NextIntraVariant(report.runs, report.gpus.size());
      if (!variant) break;
      std::vector<ProbeRequest> requests;
      for (const auto& bus : report.gpus) {
        ProbeRequest req;
        req.mode = ProbeMode::kIntraNode;
        req.peer = "local";
        req.gpu_bus_id = bus;
        req.tag = variant->name;
        req.p2p_level = variant->p2p_level;
        req.shm_disable = variant->shm_disable;
        requests.push_back(std::move(req));
      }
      IntraNodeRun run;
      run.variant = *variant;
      run.ranks = runner.RunRanks(std::move(requests), stop);
      run.merged = MergeRankResults(run.ranks);
      report.runs.push_back(std::move(run));
    }
  }
  report.finding = JudgeIntraNode(report.runs, report.gpus);
  return report;
}

std::vector<std::string> ListNodeGpus(const std::string& root) {
  std::vector<std::string> out;
  std::string base = root.empty() || root == "/" ? "" : root;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(base + "/proc/driver/nvidia/gpus", ec)) {
    out.push_back(e.path().filename().string());
    if (out.size() >= 64) break;  // more than any node has: a bound, not a limit
  }
  std::sort(out.begin(), out.end());
  return out;
}

int ExitCodeFor(const Finding& f) {
  switch (f.status) {
    case CheckStatus::kPass:
      return 0;
    case CheckStatus::kWarn:
    case CheckStatus::kFail:
      return 1;
    case CheckStatus::kSkip:
      return 3;
  }
  return 3;
}

nlohmann::json ToJson(const IntraNodeReport& report) {
  nlohmann::json runs = nlohmann::json::array();
  for (const auto& run : report.runs) {
    nlohmann::json ranks = nlohmann::json::array();
    for (const auto& r : run.ranks) ranks.push_back(ToJson(r));
    runs.push_back({{"variant", run.variant.name},
                    {"env", run.variant.EnvText()},
                    {"result", ToJson(run.merged)},
                    {"ranks", ranks}});
  }
  return {{"schema", kProbeIntraSchema},       {"gpus", report.gpus},
          {"gpu_note", report.gpu_note},       {"runs", runs},
          {"finding", ToJson(report.finding)}, {"work_dir", report.work_dir}};
}

void PrintIntraTable(const IntraNodeReport& report, std::ostream& out) {
  out << "GPUs: " << report.gpus.size();
  for (const auto& g : report.gpus) out << " " << g;
  if (!report.gpu_note.empty()) out << " (" << report.gpu_note << ")";
  out << "\n\n"
      << std::left << std::setw(13) << "VARIANT" << std::setw(13) << "OUTCOME" << std::setw(13)
      << "BUSBW" << std::setw(20) << "TRANSPORT"
      << "DETAIL\n";
  for (const auto& run : report.runs) {
    const ProbeResult& r = run.merged;
    out << std::setw(13) << run.variant.name << std::setw(13) << ToString(r.outcome)
        << std::setw(13)
        << (r.outcome == ProbeOutcome::kPass ? FormatBandwidth(r.busbw_bytes_per_second) : "-")
        << std::setw(20) << (r.transport.empty() ? "-" : r.transport) << r.detail << "\n";
  }
  const Finding& f = report.finding;
  out << "\n" << f.check << ": " << ToString(f.status) << "\n  " << f.message << "\n";
  if (f.status != CheckStatus::kPass && f.status != CheckStatus::kSkip) {
    out << "  fix: " << f.remedy << "\n";
  }
  if (!report.work_dir.empty()) out << "NCCL logs: " << report.work_dir << "\n";
}

}  // namespace nccl_triage
