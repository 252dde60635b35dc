// The intra-node probe: the node's own GPUs among themselves, before any network is involved
// (the isolation step "single node first, then across nodes").
//
// One rank per GPU, all with one host hash (no NCCL_HOSTID), so NCCL picks its intra-node
// transport itself: P2P (NVLink or PCIe peer access: `via P2P/CUMEM`, `via P2P/IPC`), SHM through
// host memory (`via SHM/direct/direct`), or the network as a last resort. NCCL_NET is not set.
// When the default run fails, variants narrow it down: NCCL_P2P_LEVEL=LOC (never P2P), then
// NCCL_SHM_DISABLE=1, then both. A variant that passes names the broken path, so a P2P fault
// (PCIe ACS, IOMMU, NVLink) is reported as such and not blamed on the fabric.
//
// One GPU: NCCL still builds a one-rank communicator and its all-reduce is a local copy, so the
// run proves the driver, the CUDA context, NCCL's init and device memory on that GPU, but no link
// between GPUs; the finding says so, and bus bandwidth is 0 by definition (2(n-1)/n).
//
// JudgeIntraNode and NextIntraVariant are pure; RunIntraNode drives a ProbeRunner.
#pragma once

#include <iosfwd>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/model.h"
#include "core/probe_result.h"
#include "probe/runner.h"

namespace nccl_triage {

inline constexpr const char* kProbeIntraSchema = "nccl-triage/probe-intra/v1";

// One way of running the all-reduce; `name` is also the tag of its logs.
struct IntraVariant {
  std::string name;                      // "default", "p2p-off", "shm-off", "p2p-shm-off"
  std::optional<std::string> p2p_level;  // NCCL_P2P_LEVEL
  bool shm_disable = false;              // NCCL_SHM_DISABLE=1

  std::string EnvText() const;  // "NCCL_P2P_LEVEL=LOC NCCL_SHM_DISABLE=1", "" for the default
};

struct IntraNodeRun {
  IntraVariant variant;
  ProbeResult merged;              // MergeRankResults of `ranks`
  std::vector<ProbeResult> ranks;  // rank order (rank i on GPU i of the report)
};

struct IntraNodeReport {
  std::vector<std::string> gpus;  // PCI bus ids, rank order
  std::string gpu_note;           // how the GPUs were picked (and which were left out)
  std::vector<IntraNodeRun> runs;
  Finding finding;  // probe.intra_node
  std::string work_dir;
};

// The variant to run after `runs` (the default first), or nullopt when the runs say enough: a
// pass, a default that could not run (unavailable), one GPU (nothing to vary), or all tried.
std::optional<IntraVariant> NextIntraVariant(const std::vector<IntraNodeRun>& runs,
                                             size_t gpu_count);

// The probe.intra_node finding of the runs: pass (P2P, or one GPU), warn (the GPUs talk only
// through SHM or the network), fail (which path is broken, by the variant that passed), skip
// (nothing ran).
Finding JudgeIntraNode(const std::vector<IntraNodeRun>& runs, const std::vector<std::string>& gpus);

// Runs the variants over `gpus` (PCI bus ids) until NextIntraVariant says stop, and judges.
// `stop` cancels the running variant (its ranks are killed) and runs no other.
IntraNodeReport RunIntraNode(const ProbeRunner& runner, std::vector<std::string> gpus,
                             std::string gpu_note, std::stop_token stop = {});

// The GPUs the NVIDIA driver lists under <root>/proc/driver/nvidia/gpus (bus ids, sorted).
std::vector<std::string> ListNodeGpus(const std::string& root);

// 0 pass, 1 warn or fail, 3 skip (nothing to conclude).
int ExitCodeFor(const Finding& finding);

nlohmann::json ToJson(const IntraNodeReport& report);
void PrintIntraTable(const IntraNodeReport& report, std::ostream& out);

}  // namespace nccl_triage
