// libFuzzer target: the agent's serialisers with their dumps in the loop. An AgentState is built
// from the input (findings with arbitrary messages and evidence, a node verdict and pair verdicts
// as a coordinator could send them, workload findings), then /status (AgentStatusJson), the pod
// annotations (AnnotationsFor, CompactReportJson at several sizes), the node condition and
// /metrics are produced. Text reaches them as the gatherer and the wire filters leave it (clean
// UTF-8, EscapeText); sizes are the input's. Nothing may throw; the report annotation stays within
// its limit and parses, and all annotations together stay far below the API server's 256 KiB.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "core/catalogue.h"
#include "exporter/agent_http.h"
#include "exporter/annotations.h"
#include "exporter/metrics.h"
#include "fuzz_check.h"
#include "host/snapshot_text.h"
#include "state/snapshot_summary.h"

using nccl_triage::fuzz::Require;

namespace {

using namespace nccl_triage;

std::string Text(FuzzedDataProvider& in, size_t max) {
  return EscapeText(in.ConsumeRandomLengthString(max));
}

std::string CatalogueId(FuzzedDataProvider& in) {
  auto all = Catalogue();
  return std::string(all[in.ConsumeIntegralInRange<size_t>(0, all.size() - 1)].id);
}

Finding AFinding(FuzzedDataProvider& in) {
  Finding f;
  f.check = CatalogueId(in);
  f.fault_class = in.PickValueInArray({FaultClass::kHealthy, FaultClass::kArchitecture,
                                       FaultClass::kIbResource, FaultClass::kUnknown});
  f.status = in.PickValueInArray(
      {CheckStatus::kPass, CheckStatus::kWarn, CheckStatus::kFail, CheckStatus::kSkip});
  f.message = Text(in, 4096);
  for (int e = in.ConsumeIntegralInRange<int>(0, 6); e > 0; --e) {
    f.evidence.push_back({Text(in, 64), Text(in, 2048), Text(in, 128)});
  }
  f.remedy = Text(in, 256);
  return f;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  // One state and one metrics object for the whole run: building the Prometheus registry costs
  // tens of milliseconds under ASan. Each input replaces all the state it sets.
  static AgentState state("gpu-node-1", "0.1.0", 1700000000000);
  static AgentMetrics metrics(state, "0.1.0");
  const AgentStateView before = state.View();
  for (const auto& [peer, rec] : before.pairs) state.RemovePeer(peer);
  state.SetProbeVerdict(std::nullopt);
  std::vector<Finding> findings;
  for (int n = in.ConsumeIntegralInRange<int>(0, 40); n > 0; --n) findings.push_back(AFinding(in));
  NodeSnapshot snapshot;
  snapshot.node = "gpu-node-1";
  auto report = std::make_shared<NodeReport>(MakeReport("gpu-node-1", findings, 1700000000000));
  state.SetCycle(report, std::make_shared<const NodeSnapshot>(snapshot),
                 std::make_shared<const SnapshotSummary>(Summarize(snapshot, ExpectConfig{})),
                 1700000000000, 1700000000250, Text(in, 256));
  if (in.ConsumeBool()) {
    NodeVerdict v;
    v.fault_class = in.PickValueInArray({FaultClass::kArchitecture, FaultClass::kIbResource});
    v.basis = Basis::kProbes;
    for (int n = in.ConsumeIntegralInRange<int>(0, 16); n > 0; --n)
      v.causes.push_back(CatalogueId(in));
    v.reason = Text(in, 512);
    state.SetProbeVerdict(v);
  }
  // Up to 300 pair verdicts: more than the agent keeps from one message (256).
  for (int n = in.ConsumeIntegralInRange<int>(0, 300); n > 0 && in.remaining_bytes() > 0; --n) {
    PairVerdict v;
    v.fault_class = in.PickValueInArray({FaultClass::kHealthy, FaultClass::kIbResource});
    v.basis = Basis::kProbes;
    v.causes.push_back(CatalogueId(in));
    v.reason = Text(in, 512);
    state.SetPairVerdict("node-" + std::to_string(n), v, 1700000000000);
  }
  std::vector<WorkloadFinding> workloads;
  for (int n = in.ConsumeIntegralInRange<int>(0, 8); n > 0; --n) {
    workloads.push_back({Text(in, 63), Text(in, 253), Text(in, 63), AFinding(in)});
  }
  state.SetWorkloadFindings(std::move(workloads));

  const AgentStateView view = state.View();
  (void)AgentStatusJson(view).dump(2);
  DesiredAnnotations a = AnnotationsFor(view);
  size_t total = 0;
  for (const auto& [key, value] : a.values) total += key.size() + value.size();
  Require(total < 64 * 1024);
  auto it = a.values.find(std::string(kAnnotationReport));
  if (it != a.values.end()) {
    Require(it->second.size() <= kReportAnnotationMaxBytes);
    Require(!nlohmann::json::parse(it->second, nullptr, false).is_discarded());
  }
  for (size_t max : {size_t{512}, size_t{4096}}) {
    std::string compact = CompactReportJson(view, max);
    Require(compact.size() <= max);
  }
  (void)ConditionFor(view);
  (void)metrics.Scrape();
  return 0;
}
