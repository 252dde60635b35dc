// libFuzzer target: the conversions between the gRPC messages and the model, on arbitrary bytes
// parsed as each side's message. What an agent sends (NodeInfoFromHello, ApplySummary,
// FromProbeReport) and what the agent takes from a coordinator (the pieces of its ApplyVerdicts:
// FromProto for pair verdicts, CatalogueCauses and CutWireText for the node verdict,
// ValidNodeName for peers) must stay within their bounds, keep only catalogue ids, and give text
// that JSON can carry; HexToBytes must invert BytesToHex.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "core/catalogue.h"
#include "core/probe_result.h"
#include "fuzz_check.h"
#include "wire/convert.h"

using nccl_triage::fuzz::Require;

namespace {

using namespace nccl_triage;

// Every field of a NodeInfo goes to /status: it must dump.
void CheckInfo(const NodeInfo& info) {
  Require(ValidNodeName(info.name));
  Require(info.hcas.size() <= 64 && info.findings.size() <= 128);
  nlohmann::json j = {{"arch", info.arch},
                      {"nccl", info.nccl_version},
                      {"gpu", info.gpu_model},
                      {"driver", info.nvidia_driver_version},
                      {"topology", info.topology}};
  for (const auto& h : info.hcas) {
    Require(h.ports.size() <= 8);
    j["hcas"].push_back({h.name, h.hca_type});
    for (const auto& p : h.ports) j["ports"].push_back({p.link_layer, p.state, p.phys_state});
  }
  for (const auto& f : info.findings) j["findings"].push_back({f.check, f.message});
  (void)j.dump();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  v1::AgentMessage from_agent;
  if (from_agent.ParseFromArray(data, static_cast<int>(size))) {
    if (from_agent.has_hello()) {
      auto info = NodeInfoFromHello(from_agent.hello(), "topology.kubernetes.io/rack");
      if (info.ok()) {
        CheckInfo(*info);
        if (from_agent.has_heartbeat()) ApplySummary(from_agent.heartbeat().summary(), *info);
        CheckInfo(*info);
      }
    }
    if (from_agent.has_probe_report()) {
      for (ProbeMode mode : {ProbeMode::kSocket, ProbeMode::kIb}) {
        ProbeResult r = FromProbeReport(from_agent.probe_report(), mode, 1, "node-b");
        (void)ToJson(r).dump();
        (void)ToProbeReport(r, "probe-1").SerializeAsString();
      }
    }
  }

  v1::CoordinatorMessage from_coordinator;
  if (from_coordinator.ParseFromArray(data, static_cast<int>(size)) &&
      from_coordinator.has_verdicts()) {
    const v1::Verdicts& v = from_coordinator.verdicts();
    std::vector<std::string> causes = CatalogueCauses(v.node().causes());
    Require(causes.size() <= 16);
    for (const auto& c : causes) Require(FindCause(c) != nullptr);
    std::string reason = CutWireText(v.node().reason());
    Require(reason.size() <= 512);
    (void)nlohmann::json{{"causes", causes}, {"reason", reason}}.dump();
    for (const auto& p : v.pairs()) {
      PairVerdict pv = FromProto(p);
      Require(pv.causes.size() <= 16 && pv.reason.size() <= 512);
      for (const auto& c : pv.causes) Require(FindCause(c) != nullptr);
      (void)nlohmann::json{{"peer", ValidNodeName(p.peer()) ? p.peer() : ""},
                           {"causes", pv.causes},
                           {"reason", pv.reason}}
          .dump();
    }
  }

  const std::string text(reinterpret_cast<const char*>(data), size);
  if (auto bytes = HexToBytes(text)) {
    std::string lower = text;
    for (char& c : lower) c = static_cast<char>(c >= 'A' && c <= 'F' ? c - 'A' + 'a' : c);
    Require(BytesToHex(*bytes) == lower);
  }
  Require(HexToBytes(BytesToHex(text)) == text);
  if (ValidNodeName(text)) Require(text.size() <= 253 && text.front() != '-');
  return 0;
}
