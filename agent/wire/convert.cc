#include "wire/convert.h"

#include <algorithm>
#include <cmath>

#include "core/catalogue.h"
#include "core/config.h"
#include "core/rails.h"
#include "core/report.h"
#include "wire/enum_map.h"
#include "wire/fields.h"

namespace nccl_triage {
namespace {

// The bounds are the descriptions' (planner/node_info.h, core/rails.h, core/model.h): a field
// the agent writes by hand is cut where the coordinator's copy of it would be. Only the
// verdicts' causes, which no description covers, have their own.
template <Described S>
consteval size_t BytesOf(std::string_view field) {
  return BoundOf<S>(field).max;
}
template <Described S>
consteval int ItemsOf(std::string_view field) {
  return static_cast<int>(BoundOf<S>(field).items);
}
constexpr int kMaxHcas = ItemsOf<NodeInfo>("hcas");
constexpr int kMaxPorts = ItemsOf<HcaInfo>("ports");
constexpr int kMaxPkeys = ItemsOf<PortInfo>("pkeys");
constexpr int kMaxFindings = ItemsOf<NodeInfo>("findings");
constexpr size_t kMaxReason = BytesOf<NodeProbeAvailability>("reason");
constexpr int kMaxCauses = 16;
constexpr int kMaxEvidence = 4;
constexpr size_t kMaxCauseId = 64;

// At most n bytes, never ending inside a UTF-8 character (wire/fields.h).
std::string Cut(const std::string& s, size_t n = kWireTextBytes) { return CutUtf8(s, n); }

// A reason word as metrics and /status can show it: 1 to kMaxReason of [a-z0-9_].
bool ReasonWord(const std::string& s) {
  return !s.empty() && s.size() <= kMaxReason && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

// Control characters (a newline) as spaces: the text is one line of /status and a report table.
std::string OneLine(std::string s) {
  for (char& c : s) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  }
  return s;
}

// "4: ACTIVE" -> "ACTIVE" (the kernel's name without its number).
std::string StateName(const std::string& text) {
  auto colon = text.find(':');
  std::string s = colon == std::string::npos ? text : text.substr(colon + 1);
  s.erase(0, s.find_first_not_of(' '));
  while (!s.empty() && (s.back() == ' ' || s.back() == '\n')) s.pop_back();
  return s;
}

}  // namespace

// The enums: value for value by name (wire/enum_map.h). What follows each lookup is the reading of
// a value without a partner: UNSPECIFIED (or a number from a newer peer) as the .proto documents
// it, and ProbeMode::kIntraNode, which no assignment carries (intra-node probes never cross the
// wire), as socket.
v1::FaultClass ToProto(FaultClass c) {
  return ToWire<v1::FaultClass>(c).value_or(v1::FAULT_CLASS_UNKNOWN);
}
FaultClass FromProto(v1::FaultClass c) {
  return FromWire<FaultClass>(c).value_or(FaultClass::kUnknown);
}
v1::Basis ToProto(Basis b) { return ToWire<v1::Basis>(b).value_or(v1::BASIS_CHECKS); }
Basis FromProto(v1::Basis b) { return FromWire<Basis>(b).value_or(Basis::kChecks); }
v1::ProbeMode ToProto(ProbeMode m) {
  return ToWire<v1::ProbeMode>(m).value_or(v1::PROBE_MODE_SOCKET);
}
std::optional<ProbeMode> FromProto(v1::ProbeMode m) { return FromWire<ProbeMode>(m); }
v1::ProbeOutcome ToProto(ProbeOutcome o) {
  return ToWire<v1::ProbeOutcome>(o).value_or(v1::PROBE_OUTCOME_NOT_RUN);
}
ProbeOutcome FromProto(v1::ProbeOutcome o) {
  return FromWire<ProbeOutcome>(o).value_or(ProbeOutcome::kNotRun);
}
v1::CheckStatus ToProto(CheckStatus s) {
  return ToWire<v1::CheckStatus>(s).value_or(v1::CHECK_STATUS_SKIP);
}
CheckStatus FromProto(v1::CheckStatus s) {
  return FromWire<CheckStatus>(s).value_or(CheckStatus::kSkip);
}
v1::Localisation ToProto(PairLocalisation l) {
  return ToWire<v1::Localisation>(l).value_or(v1::LOCALISATION_UNSPECIFIED);
}
PairLocalisation FromProto(v1::Localisation l) {
  return FromWire<PairLocalisation>(l).value_or(PairLocalisation::kNone);
}

std::optional<uint64_t> ProbeSizeBytes(v1::ProbeSize s) {
  switch (s) {
    case v1::PROBE_SIZE_64KIB:
      return 64ull << 10;
    case v1::PROBE_SIZE_1MIB:
      return 1ull << 20;
    case v1::PROBE_SIZE_64MIB:
      return 64ull << 20;
    case v1::PROBE_SIZE_1GIB:
      return 1ull << 30;
    default:
      return std::nullopt;
  }
}

v1::ProbeSize ProbeSizeFor(uint64_t bytes) {
  if (bytes >= (1ull << 30)) return v1::PROBE_SIZE_1GIB;
  if (bytes >= (64ull << 20)) return v1::PROBE_SIZE_64MIB;
  if (bytes >= (1ull << 20)) return v1::PROBE_SIZE_1MIB;
  return v1::PROBE_SIZE_64KIB;
}

v1::NodeSummary MakeNodeSummary(const NodeSnapshot* snapshot, const NodeReport* report,
                                const std::string& nccl_version, int cuda_driver_version,
                                bool gpus_busy) {
  v1::NodeSummary s;
  s.set_nccl_version(Cut(nccl_version, BytesOf<NodeInfo>("nccl_version")));
  s.set_cuda_driver_version(static_cast<uint32_t>(std::max(cuda_driver_version, 0)));
  s.set_gpus_busy(gpus_busy);
  if (snapshot != nullptr) {
    if (snapshot->arch.ok()) s.set_arch(Cut(*snapshot->arch.value, BytesOf<NodeInfo>("arch")));
    for (const auto& dev : snapshot->ib_devices) {
      if (s.hcas_size() >= kMaxHcas) break;
      v1::Hca* h = s.add_hcas();
      h->set_name(Cut(dev.name, BytesOf<HcaInfo>("name")));
      if (dev.hca_type.ok()) {
        h->set_hca_type(Cut(*dev.hca_type.value, BytesOf<HcaInfo>("hca_type")));
      }
      for (const auto& port : dev.ports) {
        if (h->ports_size() >= kMaxPorts) break;
        v1::Port* p = h->add_ports();
        p->set_num(static_cast<uint32_t>(std::max(port.num, 0)));
        if (port.link_layer.ok()) {
          p->set_link_layer(Cut(*port.link_layer.value, BytesOf<PortInfo>("link_layer")));
        }
        if (port.rate_gbps.ok()) p->set_rate_gbps(*port.rate_gbps.value);
        if (port.state.ok()) {
          p->set_state(Cut(StateName(*port.state.value), BytesOf<PortInfo>("state")));
        }
        if (port.phys_state.ok()) {
          p->set_phys_state(
              Cut(StateName(*port.phys_state.value), BytesOf<PortInfo>("phys_state")));
        }
        for (size_t i = 0; i < port.pkeys.size() && p->pkeys_size() < kMaxPkeys; ++i) {
          v1::PKey* k = p->add_pkeys();
          k->set_value(port.pkeys[i] & 0x7fff);
          k->set_full_member((port.pkeys[i] & 0x8000) != 0);
          k->set_index(i < port.pkey_indices.size() ? port.pkey_indices[i] : static_cast<int>(i));
        }
      }
    }
    if (snapshot->nvidia_driver_version.ok()) {
      s.set_nvidia_driver_version(Cut(*snapshot->nvidia_driver_version.value,
                                      BytesOf<NodeInfo>("nvidia_driver_version")));
    }
    if (!snapshot->gpus.empty()) {
      s.set_gpu_model(Cut(snapshot->gpus.front().model, BytesOf<NodeInfo>("gpu_model")));
    }
    s.set_gpu_count(static_cast<uint32_t>(snapshot->gpus.size()));
    for (const Rail& rail : RailTable(*snapshot)) {
      if (s.rails_size() >= kMaxRails) break;
      ToProto(rail, *s.add_rails());
    }
  }
  // Without a report nothing has passed yet (the agent's own verdict is unknown too).
  uint32_t passed = 0;
  if (report != nullptr) {
    passed = static_cast<uint32_t>(
        std::count_if(report->findings.begin(), report->findings.end(),
                      [](const Finding& f) { return f.status == CheckStatus::kPass; }));
    for (const auto& f : report->findings) {
      if (s.findings_size() >= kMaxFindings) break;
      if (f.status != CheckStatus::kFail && f.status != CheckStatus::kWarn) continue;
      v1::Finding* out = s.add_findings();
      CopyToWire<kFindingNotSent>(f, *out);
      out->set_fault_class(ToProto(f.fault_class));
      out->set_status(ToProto(f.status));
    }
  }
  s.set_checks_passed(passed);
  return s;
}

void SetProbeAvailability(const ProbeAvailability& a, v1::NodeSummary& s) {
  v1::ProbeAvailability* p = s.mutable_probe();
  p->set_available(a.available());
  p->set_reason(Cut(a.reason, kMaxReason));
  p->set_evidence(Cut(a.detail));
}

bool ValidNodeName(const std::string& name) {
  if (name.empty() || name.size() > 253) return false;
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  // Each dot-separated label: 1..63 of [a-z0-9-], starting and ending alphanumeric.
  size_t start = 0;
  while (start <= name.size()) {
    size_t end = name.find('.', start);
    if (end == std::string::npos) end = name.size();
    const std::string_view label(name.data() + start, end - start);
    if (label.empty() || label.size() > 63 || !alnum(label.front()) || !alnum(label.back()) ||
        !std::all_of(label.begin(), label.end(), [&](char c) { return alnum(c) || c == '-'; })) {
      return false;
    }
    start = end + 1;
  }
  return true;
}

std::vector<std::string> CatalogueCauses(
    const google::protobuf::RepeatedPtrField<std::string>& ids) {
  std::vector<std::string> out;
  for (const auto& id : ids) {
    if (static_cast<int>(out.size()) >= kMaxCauses) break;
    if (FindCause(id) != nullptr) out.push_back(id);
  }
  return out;
}

std::string CutWireText(const std::string& text, size_t max) { return Cut(text, max); }

void ToProto(const Rail& rail, v1::Rail& out) {
  CopyToWire<kRailByHand>(rail, out);
  if (rail.rate_gbps) out.set_rate_gbps(*rail.rate_gbps);
  out.set_gpu_bus_id(Cut(rail.gpu_bdf, BytesOf<Rail>("gpu_bdf")));
}

void ApplySummary(const v1::NodeSummary& s, NodeInfo& info) {
  CopyFromWire<kNodeInfoByHand>(s, info);
  info.hcas.clear();
  for (int i = 0; i < s.hcas_size() && i < kMaxHcas; ++i) {
    const v1::Hca& h = s.hcas(i);
    HcaInfo hca;
    CopyFromWire<kHcaInfoByHand>(h, hca);
    for (int j = 0; j < h.ports_size() && j < kMaxPorts; ++j) {
      const v1::Port& p = h.ports(j);
      PortInfo port;
      CopyFromWire<kPortInfoByHand>(p, port);
      port.rate_gbps = PlausiblePortRate(p.rate_gbps());  // NaN and inf are not plausible
      for (int k = 0; k < p.pkeys_size() && k < kMaxPkeys; ++k) {
        PKeyInfo key;
        CopyFromWire<kPKeyInfoByHand>(p.pkeys(k), key);
        key.value = static_cast<uint16_t>(p.pkeys(k).value() & 0x7fff);
        port.pkeys.push_back(key);
      }
      hca.ports.push_back(std::move(port));
    }
    info.hcas.push_back(std::move(hca));
  }
  info.rails.clear();
  for (int i = 0; i < s.rails_size() && i < kMaxRails; ++i) {
    const v1::Rail& r = s.rails(i);
    Rail rail;
    CopyFromWire<kRailByHand>(r, rail);
    if (PlausiblePortRate(r.rate_gbps()) > 0) rail.rate_gbps = r.rate_gbps();
    rail.state = rail.active ? "ACTIVE" : "unknown";
    rail.gpu_bdf = Cut(r.gpu_bus_id(), BytesOf<Rail>("gpu_bdf"));
    info.rails.push_back(std::move(rail));
  }
  info.probe.reset();
  if (s.has_probe()) {
    NodeProbeAvailability probe;
    CopyFromWire<kNodeProbeAvailabilityByHand>(s.probe(), probe);
    if (probe.available) {
      probe.reason = "ok";
    } else {
      const std::string& reason = s.probe().reason();
      probe.reason = ReasonWord(reason) && reason != "ok" ? reason : "unspecified";
    }
    probe.evidence = OneLine(probe.evidence);
    info.probe = std::move(probe);
  }
  info.findings.clear();
  for (int i = 0; i < s.findings_size() && i < kMaxFindings; ++i) {
    const v1::Finding& f = s.findings(i);
    // Only ids of the catalogue: a finding the coordinator cannot explain is not a cause.
    const CauseInfo* cause = FindCause(f.check());
    if (cause == nullptr) continue;
    Finding out;
    CopyFromWire<kFindingNotRead>(f, out);
    out.check = std::string(cause->id);
    out.fault_class = cause->fault_class;
    out.status = FromProto(f.status());
    out.remedy = std::string(cause->remedy);
    info.findings.push_back(std::move(out));
  }
}

StatusOr<NodeInfo> NodeInfoFromHello(const v1::Hello& hello, const std::string& topology_label) {
  if (!ValidNodeName(hello.node())) {
    return InvalidArgument("hello: node name '" + Cut(hello.node(), 64) +
                           "' is empty, too long or has characters outside [A-Za-z0-9._-]");
  }
  NodeInfo info;
  info.name = hello.node();
  if (!topology_label.empty()) {
    auto it = hello.labels().find(topology_label);
    if (it != hello.labels().end()) info.topology = Cut(it->second, BytesOf<NodeInfo>("topology"));
  }
  ApplySummary(hello.summary(), info);
  info.parallel_probes =
      static_cast<int>(std::clamp<uint32_t>(hello.parallel_probes(), 1, kMaxParallelRails));
  return info;
}

v1::ProbeReport ToProbeReport(const ProbeResult& r, const std::string& probe_id) {
  v1::ProbeReport p;
  p.set_probe_id(probe_id);
  p.set_outcome(ToProto(r.outcome));
  CopyToWire<kProbeResultNotSent>(r, p);
  if (r.classification) {
    p.set_log_class(ToProto(r.classification->fault_class));
    for (const auto& c : r.classification->causes) {
      if (p.causes_size() >= kMaxCauses) break;
      v1::Cause* out = p.add_causes();
      out->set_cause(Cut(c.cause, kMaxCauseId));
      out->set_fault_class(ToProto(c.fault_class));
      out->set_diagnostics(c.diagnostics);
      for (const auto& line : c.evidence) {
        if (out->evidence_size() >= kMaxEvidence) break;
        out->add_evidence(Cut(line.text));
      }
    }
  }
  return p;
}

ProbeResult FromProbeReport(const v1::ProbeReport& p, ProbeMode mode, int rank,
                            const std::string& peer) {
  ProbeResult r;
  r.mode = mode;
  r.rank = rank;
  r.peer = peer;
  r.outcome = FromProto(p.outcome());
  CopyFromWire<kProbeResultNotRead>(p, r);
  r.detail = Cut(!p.skipped_reason().empty() ? p.skipped_reason() : p.detail());
  auto finite = [](double x) { return std::isfinite(x) && x > 0 ? x : 0.0; };
  r.duration_seconds = finite(p.duration_seconds());
  r.busbw_bytes_per_second = finite(p.busbw_bytes_per_second());
  r.algbw_bytes_per_second = finite(p.algbw_bytes_per_second());
  if (p.log_class() != v1::FAULT_CLASS_UNSPECIFIED || p.causes_size() > 0) {
    Classification c;
    c.fault_class = FromProto(p.log_class());
    for (int i = 0; i < p.causes_size() && i < kMaxCauses; ++i) {
      const v1::Cause& in = p.causes(i);
      const CauseInfo* info = FindCause(in.cause());
      if (info == nullptr) continue;  // not an id of the catalogue: dropped
      ClassifiedCause cc;
      cc.cause = std::string(info->id);
      cc.fault_class = FromProto(in.fault_class());
      cc.remedy = std::string(info->remedy);
      cc.diagnostics = in.diagnostics();
      for (int k = 0; k < in.evidence_size() && k < kMaxEvidence; ++k) {
        cc.evidence.push_back({0, Cut(in.evidence(k))});
      }
      c.causes.push_back(std::move(cc));
    }
    r.classification = std::move(c);
  }
  return r;
}

v1::PairVerdict ToProto(const std::string& peer, const PairVerdict& v, ProbeOutcome socket,
                        ProbeOutcome ib, PairLocalisation loc, bool confirmed) {
  v1::PairVerdict p;
  p.set_peer(peer);
  p.set_fault_class(ToProto(v.fault_class));
  p.set_basis(ToProto(v.basis));
  for (const auto& c : v.causes) p.add_causes(c);
  p.set_reason(Cut(v.reason));
  p.set_socket(ToProto(socket));
  p.set_ib(ToProto(ib));
  p.set_localisation(ToProto(loc));
  p.set_confirmed(confirmed);
  return p;
}

PairVerdict FromProto(const v1::PairVerdict& p) {
  PairVerdict v;
  v.fault_class = FromProto(p.fault_class());
  v.basis = FromProto(p.basis());
  v.causes = CatalogueCauses(p.causes());
  v.reason = Cut(p.reason());
  v.degraded = IsDegraded(v.causes);
  return v;
}

AgentVerdicts AgentVerdictsFromProto(const v1::Verdicts& v) {
  AgentVerdicts out;
  if (v.has_node() && v.node().fault_class() != v1::FAULT_CLASS_UNSPECIFIED) {
    AgentVerdicts::Node n;
    n.verdict.fault_class = FromProto(v.node().fault_class());
    n.verdict.basis = FromProto(v.node().basis());
    for (int i = 0; i < v.node().causes_size() && i < kMaxCauses; ++i) {
      if (FindCause(v.node().causes(i)) != nullptr) n.verdict.causes.push_back(v.node().causes(i));
    }
    n.verdict.reason = Cut(v.node().reason());
    n.localisation = FromProto(v.node().localisation());
    n.confirmed = v.node().confirmed();
    out.node = std::move(n);
  }
  for (const auto& p : v.pairs()) {
    if (out.pairs.size() >= ClusterVerdicts::kMaxPairsPerAgent) break;
    if (!ValidNodeName(p.peer())) continue;
    out.pairs.push_back({p.peer(), FromProto(p), FromProto(p.socket()), FromProto(p.ib()),
                         FromProto(p.localisation()), p.confirmed()});
  }
  return out;
}

std::string BytesToHex(const std::string& bytes) {
  static const char* kDigits = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 15]);
  }
  return out;
}

std::optional<std::string> HexToBytes(const std::string& hex) {
  if (hex.size() % 2 != 0) return std::nullopt;
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  out.reserve(hex.size() / 2);
  for (size_t i = 0; i < hex.size(); i += 2) {
    int hi = nibble(hex[i]);
    int lo = nibble(hex[i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out.push_back(static_cast<char>((hi << 4) | lo));
  }
  return out;
}

}  // namespace nccl_triage
