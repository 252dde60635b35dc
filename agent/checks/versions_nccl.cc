// versions.nccl: NCCL lives in the workload's image, not on the node, so one node can judge it
// only from a probe run (which loads the library and reports its version). Skew between nodes is
// a cross-node check.
#include "checks/builtin.h"
#include "checks/check_util.h"
#include "core/ids.h"
#include "core/probe_result.h"

namespace nccl_triage::checks {

// The catalogue row of this check, in the catalogue's position 10 (checks/check.h).
NT_HOST_CHECK(VersionsNccl, 10,
    CauseInfo{"versions.nccl", kArch, kHost, kInContainers, "NCCL version",
              "NCCL older than the GPU generation needs, or different NCCL versions between the "
              "ranks of one job (NCCL refuses to initialise across versions).",
              "Use one NCCL build on every node, at least the minimum for the GPU generation "
              "(A100: 2.7.8, H100/H200: 2.18, B200: 2.25); rebuild the image rather than mixing.",
              "the probe result (NCCL version, GPU name)",
              "skip without a probe; fail when NCCL is older than the GPU generation needs (A100 "
              "2.7.8, H100/H200 2.18, B200 2.25)"});

Finding VersionsNccl(const NodeSnapshot& s, const Config&, const CheckContext& ctx) {
  FindingBuilder b(ids::kVersionsNccl);
  if (ctx.probe == nullptr) {
    b.Add("probe", "not run", "nccl-triage probe");
    return b.Skip("the NCCL version is known only from a probe run; none was given");
  }
  const ProbeResult& p = *ctx.probe;
  if (p.nccl_version.empty()) {
    b.Add("probe", std::string(ToString(p.outcome)) + (p.detail.empty() ? "" : ": " + p.detail),
          "nccl-triage probe");
    return b.Skip("the probe did not report an NCCL version");
  }
  b.Add("NCCL", p.nccl_version, p.nccl_library.empty() ? "probe" : p.nccl_library);
  std::string model = p.gpu_name;
  if (model.empty() && !s.gpus.empty()) model = s.gpus.front().model;
  if (!model.empty()) b.Add("GPU", model, p.gpu_name.empty() ? s.gpus.front().source : "probe");
  const auto gen = GenerationOf(model);
  if (!gen || gen->nccl_min.empty()) {
    return b.Skip("NCCL " + p.nccl_version + "; no known minimum for " +
                  (model.empty() ? std::string("an unknown GPU") : model));
  }
  b.Add("required", ">= " + std::string(gen->nccl_min), std::string(gen->name) + " generation");
  if (CompareVersions(ParseVersion(p.nccl_version), ParseVersion(gen->nccl_min)) < 0) {
    return b.Fail("NCCL " + p.nccl_version + " is older than " + std::string(gen->nccl_min) +
                  ", the first release for " + std::string(gen->name) + " (" + model + ")");
  }
  return b.Pass("NCCL " + p.nccl_version + " >= " + std::string(gen->nccl_min) + " for " +
                std::string(gen->name));
}

}  // namespace nccl_triage::checks
