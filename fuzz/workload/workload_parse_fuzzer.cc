// libFuzzer target: the workload view's parsers on arbitrary bytes (cgroup files, environ buffers,
// maps, net/dev, NCCL_IB_HCA, a pod list as JSON). None may crash, hang or read out of bounds
// (ASan), and the environment filter must never keep a name outside its allow-list.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string_view>

#include "fuzz_check.h"
#include "workload/cgroup.h"
#include "workload/environ.h"
#include "workload/nccl_env.h"
#include "workload/pods.h"
#include "workload/proc_text.h"

using nccl_triage::fuzz::Require;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace nccl_triage::workload;
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  if (auto ref = ParseCgroupFile(text)) {
    Require(ref->container_id.size() == 64);
    Require(NormalizePodUid(ref->pod_uid) == ref->pod_uid);
  }
  (void)ContainerIdFromStatus(text);

  FilteredEnviron env = FilterEnviron(text);
  for (const auto& [name, value] : env.kept) {
    Require(IsKeptEnvName(name));
    Require(value.size() <= kMaxEnvValueBytes);
  }
  (void)NcclSettingsFrom(env.kept);

  if (auto lib = ParseNcclFromMaps(text)) Require(!lib->path.empty() && lib->path.front() == '/');
  if (auto names = ParseNetDevNames(text)) {
    for (const auto& n : *names) Require(!n.empty() && n.size() <= 15);
  }
  HcaFilter filter = ParseHcaFilter(text);
  (void)HcaFilterSelects(filter, "mlx5_0", 1);
  (void)ParseNcclInt(text);

  auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_discarded()) {
    for (const auto& [uid, pod] : ParsePodList(j)) Require(uid == pod.uid && !pod.name.empty());
    (void)ParseNodeResources(j);
  }
  return 0;
}
