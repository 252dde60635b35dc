// Conversions between the wire messages (nccl_triage.v1) and the project's plain types, and the
// validation of what an agent sends.
//
// The coordinator and the session work with core/coordinator types; only these functions know the
// generated classes. Validation is strict about what the planner relies on (a node name, a
// 128-byte unique id, enums inside their closed sets) and bounded on everything else (strings are
// cut, lists capped), so a malformed or hostile message can neither crash nor bloat the
// coordinator. Pure; thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "core/decision.h"
#include "core/probe_availability.h"
#include "core/probe_result.h"
#include "core/rails.h"
#include "core/report.h"
#include "core/snapshot.h"
#include "nccl_triage/v1/agent.pb.h"
#include "planner/cluster_verdicts.h"
#include "planner/node_info.h"
#include "planner/sweep.h"
#include "wire/fields.h"

namespace nccl_triage {

// The messages are nccl_triage::v1::* (the proto package), so `v1::` needs no alias here.

inline constexpr uint32_t kProtocolVersion = 1;
inline constexpr size_t kUniqueIdBytes = 128;  // NCCL_UNIQUE_ID_BYTES

v1::FaultClass ToProto(FaultClass c);
FaultClass FromProto(v1::FaultClass c);
v1::Basis ToProto(Basis b);
Basis FromProto(v1::Basis b);
v1::ProbeMode ToProto(ProbeMode m);
std::optional<ProbeMode> FromProto(v1::ProbeMode m);  // nullopt for UNSPECIFIED/unknown
v1::ProbeOutcome ToProto(ProbeOutcome o);
ProbeOutcome FromProto(v1::ProbeOutcome o);
v1::CheckStatus ToProto(CheckStatus s);
CheckStatus FromProto(v1::CheckStatus s);

// The closed set of probe sizes.
std::optional<uint64_t> ProbeSizeBytes(v1::ProbeSize s);  // nullopt for UNSPECIFIED/unknown
// The largest allowed size not above `bytes` (64 KiB at least).
v1::ProbeSize ProbeSizeFor(uint64_t bytes);

// What an agent tells about its node (Hello, Heartbeat): from its latest snapshot and report.
// `nccl_version` / `cuda_driver_version` come from the probes seen so far ("" / 0 when none);
// `gpus_busy` is true when another process holds the GPUs and probes are not allowed then.
v1::NodeSummary MakeNodeSummary(const NodeSnapshot* snapshot, const NodeReport* report,
                                const std::string& nccl_version, int cuda_driver_version,
                                bool gpus_busy);

// The agent's probe availability into its summary (NodeSummary.probe): available, the reason word
// and the detail as evidence, bounded.
void SetProbeAvailability(const ProbeAvailability& availability, v1::NodeSummary& summary);

// Hello -> NodeInfo (bounded copy). Fails on a missing or unusable node name.
StatusOr<NodeInfo> NodeInfoFromHello(const v1::Hello& hello, const std::string& topology_label);
// Applies a summary to an existing NodeInfo (name and topology kept). A summary without `probe`
// leaves the availability unknown (nullopt); an available node's reason is "ok", an unavailable
// one's reason is kept when it is a word of [a-z0-9_] (at most 32 bytes), else "unspecified".

void ApplySummary(const v1::NodeSummary& summary, NodeInfo& info);

// The fields of each struct ApplySummary fills that are not a copy of the message's field of the
// same name (wire/fields.h copies the others, within the bounds of their descriptions): nested
// messages, values that are judged rather than copied, and fields the message does not carry.
// tests/wire checks that every other described field has its partner in the .proto.
inline constexpr std::array<std::string_view, 7> kNodeInfoByHand = {
    "name", "topology", "parallel_probes",  // from the Hello, not the summary
    "hcas", "findings", "rails", "probe"};  // nested; findings through the catalogue
inline constexpr std::array<std::string_view, 1> kHcaInfoByHand = {"ports"};
inline constexpr std::array<std::string_view, 2> kPortInfoByHand = {
    "rate_gbps",  // only a plausible rate
    "pkeys"};
inline constexpr std::array<std::string_view, 1> kPKeyInfoByHand = {"value"};  // 15 bits
inline constexpr std::array<std::string_view, 1> kNodeProbeAvailabilityByHand = {
    "reason"};  // a word, "ok" only when available

// The fields of a Rail that v1::Rail does not carry as a copy (index, device, port and active are
// copied): the rate (0 on the wire when unknown, read back only when plausible), the state (read
// back from active), the GPU's bus id (gpu_bus_id on the wire) and what stays on the node.
inline constexpr std::array<std::string_view, 8> kRailByHand = {
    "rate_gbps", "state", "gpu_bdf",                                 // by hand
    "hca_bdf",   "numa_node", "gpu", "affinity", "shared_depth"};  // the node's

// One row of a rail table on the wire (NodeSummary.rails, TriageNode.rails' rail).
void ToProto(const Rail& rail, v1::Rail& out);

// The fields of a Finding that v1::Finding does not carry as a copy (check and message are
// copied): the enums, and what stays on the node. Read back, the check is a catalogue id, or the
// finding is dropped.
inline constexpr std::array<std::string_view, 4> kFindingNotSent = {"fault_class", "status",
                                                                    "evidence", "remedy"};
inline constexpr auto kFindingNotRead =
    Joined(kFindingNotSent, std::array<std::string_view, 1>{"check"});

// A node name either end accepts: a Kubernetes node name, i.e. a DNS-1123 subdomain of at most
// 253 bytes whose dot-separated labels are [a-z0-9-] and start and end alphanumeric. So a peer
// name can never look like a flag ("--nccl-lib"), a path or an upper-case alias of a node.
bool ValidNodeName(const std::string& name);

// What a verdict from the other end may carry, as FromProto(PairVerdict) filters it and the
// agent filters the coordinator's node verdict: cause ids that are in the catalogue (at most 16),
// and text cut to 512 bytes on a character boundary. Unfiltered, a hostile coordinator's 3 MiB
// reason went into /status and the pod's annotations.
std::vector<std::string> CatalogueCauses(
    const google::protobuf::RepeatedPtrField<std::string>& ids);
std::string CutWireText(const std::string& text, size_t max = 512);

// The fields of ProbeResult a ProbeReport does not carry as a copy: the assignment's (mode, rank,
// peer), the enums, the classification (nested) and what stays on the node. Read back, the
// detail (or the skipped reason) and the times (finite, not negative) are judged by hand too.
inline constexpr std::array<std::string_view, 17> kProbeResultNotSent = {
    "mode", "outcome", "rank", "nranks", "peer",  // the assignment's, and enums
    "unavailable_cause", "size_bytes", "iterations", "time_seconds", "mismatches", "cuda_result",
    "gpu_name", "gpu_bus_id", "nccl_library", "startup_seconds", "log_path",  // the node's
    "classification"};  // nested: log_class and causes
inline constexpr auto kProbeResultNotRead = Joined(
    kProbeResultNotSent, std::array<std::string_view, 4>{"detail", "duration_seconds",
                                                         "busbw_bytes_per_second",
                                                         "algbw_bytes_per_second"});

// One rank's result on the wire, and back.
v1::ProbeReport ToProbeReport(const ProbeResult& r, const std::string& probe_id);
ProbeResult FromProbeReport(const v1::ProbeReport& report, ProbeMode mode, int rank,
                            const std::string& peer);

v1::Localisation ToProto(PairLocalisation l);
v1::PairVerdict ToProto(const std::string& peer, const PairVerdict& v, ProbeOutcome socket,
                        ProbeOutcome ib, PairLocalisation loc, bool confirmed);
PairVerdict FromProto(const v1::PairVerdict& v);
PairLocalisation FromProto(v1::Localisation l);
// What an agent says it was last told (Hello.last_verdicts), bounded and validated like the rest
// of a Hello: unknown cause ids dropped, pairs with invalid peer names skipped, at most
// ClusterVerdicts::kMaxPairsPerAgent pairs.
AgentVerdicts AgentVerdictsFromProto(const v1::Verdicts& v);

// "\x01\x02" <-> "0102" (the probe child prints the unique id in hex).
std::string BytesToHex(const std::string& bytes);
std::optional<std::string> HexToBytes(const std::string& hex);

}  // namespace nccl_triage
