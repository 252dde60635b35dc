// The generic field copies of wire/fields.h: every described struct the coordinator fills from a
// NodeSummary has a partner of the same name and kind in the .proto for each field it does not
// convert by hand (a field added to a struct and forgotten in the .proto fails here), and the
// bounds of the descriptions hold against a hostile summary.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "wire/convert.h"
#include "wire/fields.h"

namespace nccl_triage {

// What adding a field to NodeInfo without adding it to NodeSummary looks like, and other
// mistakes a description can make against its message.
struct SummaryWithNewField {
  std::string arch;
  int gpu_count = 0;
  std::string kernel_version;  // not in NodeSummary
};
constexpr auto FieldsOf(Type<SummaryWithNewField>) {
  return std::tuple{Field("arch", &SummaryWithNewField::arch),
                    Field("gpu_count", &SummaryWithNewField::gpu_count),
                    Field("kernel_version", &SummaryWithNewField::kernel_version)};
}

struct SummaryOfWrongKinds {
  int arch = 0;                     // a string in NodeSummary
  std::string gpu_count;            // a number there
  std::vector<int> gpus_busy;       // a single bool there
  std::optional<int> gpu_model;     // a string without presence there
  std::optional<int> checks_passed; // right: proto3 optional uint32
};
constexpr auto FieldsOf(Type<SummaryOfWrongKinds>) {
  return std::tuple{Field("arch", &SummaryOfWrongKinds::arch),
                    Field("gpu_count", &SummaryOfWrongKinds::gpu_count),
                    Field("gpus_busy", &SummaryOfWrongKinds::gpus_busy),
                    Field("gpu_model", &SummaryOfWrongKinds::gpu_model),
                    Field("checks_passed", &SummaryOfWrongKinds::checks_passed)};
}

// A probe report's plain fields, both ways: optional, list and numbers of other widths.
struct ReportPart {
  std::string detail;
  double duration_seconds = 0;
  std::optional<int> nccl_result;
  std::vector<std::string> ib_ports;
  int64_t cuda_driver_version = 0;  // uint32 on the wire
  bool data_verified = false;
};
constexpr auto FieldsOf(Type<ReportPart>) {
  return std::tuple{Field("detail", &ReportPart::detail, Bound{.max = 8}),
                    Field("duration_seconds", &ReportPart::duration_seconds),
                    Field("nccl_result", &ReportPart::nccl_result),
                    Field("ib_ports", &ReportPart::ib_ports, Bound{.max = 6, .items = 2}),
                    Field("cuda_driver_version", &ReportPart::cuda_driver_version,
                          Bound{.max = 1u << 30}),
                    Field("data_verified", &ReportPart::data_verified)};
}

namespace {

using Mismatches = std::vector<std::string>;
constexpr std::array<std::string_view, 1> kKernelVersionByHand = {"kernel_version"};

TEST(WireFields, EveryDescribedFieldOfTheSummaryHasItsPartnerInTheProto) {
  EXPECT_EQ(WireMismatches<NodeInfo>(*v1::NodeSummary::descriptor(), kNodeInfoByHand),
            Mismatches{});
  EXPECT_EQ(WireMismatches<HcaInfo>(*v1::Hca::descriptor(), kHcaInfoByHand), Mismatches{});
  EXPECT_EQ(WireMismatches<PortInfo>(*v1::Port::descriptor(), kPortInfoByHand), Mismatches{});
  EXPECT_EQ(WireMismatches<PKeyInfo>(*v1::PKey::descriptor(), kPKeyInfoByHand), Mismatches{});
  EXPECT_EQ(WireMismatches<NodeProbeAvailability>(*v1::ProbeAvailability::descriptor(),
                                                  kNodeProbeAvailabilityByHand),
            Mismatches{});
  EXPECT_EQ(WireMismatches<ProbeResult>(*v1::ProbeReport::descriptor(), kProbeResultNotSent),
            Mismatches{});
  EXPECT_EQ(WireMismatches<ProbeResult>(*v1::ProbeReport::descriptor(), kProbeResultNotRead),
            Mismatches{});
}

TEST(WireFields, EveryDescribedFieldOfARailAndAFindingHasItsPartnerInTheProto) {
  EXPECT_EQ(WireMismatches<Rail>(*v1::Rail::descriptor(), kRailByHand), Mismatches{});
  EXPECT_EQ(WireMismatches<Finding>(*v1::Finding::descriptor(), kFindingNotSent), Mismatches{});
  EXPECT_EQ(WireMismatches<Finding>(*v1::Finding::descriptor(), kFindingNotRead), Mismatches{});
}

TEST(WireFields, AProbeResultCrossesTheWireWithinItsBounds) {
  ProbeResult r;
  r.mode = ProbeMode::kIb;
  r.outcome = ProbeOutcome::kFail;
  r.detail = std::string(600, 'd');
  r.duration_seconds = 2.5;
  r.busbw_bytes_per_second = 1e9;
  r.algbw_bytes_per_second = 2e9;
  r.transport = std::string(40, 't');
  r.nccl_result = 3;
  r.nccl_error = "internal error";
  r.last_error = "ibv_modify_qp failed";
  r.nccl_version = "2.28.9";
  r.cuda_driver_version = 13000;
  r.data_verified = true;
  for (int i = 0; i < 40; ++i) r.ib_ports.push_back("mlx5_" + std::to_string(i) + ":1");
  r.gdrdma = true;
  r.gpu_name = "stays on the node";
  const v1::ProbeReport p = ToProbeReport(r, "probe-7");
  EXPECT_EQ(p.probe_id(), "probe-7");
  EXPECT_EQ(p.outcome(), v1::PROBE_OUTCOME_FAIL);
  EXPECT_EQ(p.detail(), std::string(512, 'd'));
  EXPECT_EQ(p.transport(), std::string(32, 't'));
  EXPECT_EQ(p.nccl_result(), 3);
  EXPECT_EQ(p.cuda_driver_version(), 13000u);
  EXPECT_EQ(p.ib_ports_size(), 32);
  EXPECT_TRUE(p.gdrdma());

  const ProbeResult back = FromProbeReport(p, ProbeMode::kIb, 1, "gpu-2");
  EXPECT_EQ(back.mode, ProbeMode::kIb);
  EXPECT_EQ(back.rank, 1);
  EXPECT_EQ(back.peer, "gpu-2");
  EXPECT_EQ(back.outcome, ProbeOutcome::kFail);
  EXPECT_EQ(back.detail, std::string(512, 'd'));
  EXPECT_EQ(back.duration_seconds, 2.5);
  EXPECT_EQ(back.busbw_bytes_per_second, 1e9);
  EXPECT_EQ(back.algbw_bytes_per_second, 2e9);
  EXPECT_EQ(back.transport, std::string(32, 't'));
  EXPECT_EQ(back.nccl_result, 3);
  EXPECT_EQ(back.nccl_error, "internal error");
  EXPECT_EQ(back.last_error, "ibv_modify_qp failed");
  EXPECT_EQ(back.nccl_version, "2.28.9");
  EXPECT_EQ(back.cuda_driver_version, 13000);
  EXPECT_TRUE(back.data_verified);
  EXPECT_EQ(back.ib_ports.size(), 32u);
  EXPECT_TRUE(back.gdrdma);
  EXPECT_EQ(back.gpu_name, "");  // not on the wire

  // A hostile report: times that are not finite or negative read as 0, the skipped reason wins
  // over the detail, an absent nccl_result stays absent, a huge driver version is capped.
  v1::ProbeReport h = p;
  h.set_duration_seconds(std::numeric_limits<double>::infinity());
  h.set_busbw_bytes_per_second(-1);
  h.set_algbw_bytes_per_second(std::numeric_limits<double>::quiet_NaN());
  h.set_skipped_reason("GPUs busy");
  h.clear_nccl_result();
  h.set_cuda_driver_version(std::numeric_limits<uint32_t>::max());
  for (int i = 0; i < 10; ++i) h.set_ib_ports(i, std::string(100, 'p'));
  const ProbeResult read = FromProbeReport(h, ProbeMode::kSocket, 0, "gpu-3");
  EXPECT_EQ(read.duration_seconds, 0);
  EXPECT_EQ(read.busbw_bytes_per_second, 0);
  EXPECT_EQ(read.algbw_bytes_per_second, 0);
  EXPECT_EQ(read.detail, "GPUs busy");
  EXPECT_EQ(read.nccl_result, std::nullopt);
  EXPECT_EQ(read.cuda_driver_version, 1 << 30);
  EXPECT_EQ(read.ib_ports[0], std::string(64, 'p'));
}

TEST(WireFields, AFieldWithoutAPartnerInTheProtoIsCaught) {
  EXPECT_EQ(WireMismatches<SummaryWithNewField>(*v1::NodeSummary::descriptor(), {}),
            Mismatches{"kernel_version: the message has no field of this name"});
  // Listing it as converted by hand is the other way to account for it.
  EXPECT_EQ(
      WireMismatches<SummaryWithNewField>(*v1::NodeSummary::descriptor(), kKernelVersionByHand),
      Mismatches{});
  // A copy leaves it alone.
  v1::NodeSummary s;
  s.set_arch("aarch64");
  SummaryWithNewField out;
  out.kernel_version = "6.8";
  CopyFromWire<kNoneByHand>(s, out);
  EXPECT_EQ(out.arch, "aarch64");
  EXPECT_EQ(out.kernel_version, "6.8");
}

TEST(WireFields, AFieldOfAnotherKindOrAStaleByHandNameIsCaught) {
  constexpr std::array<std::string_view, 1> stale = {"no_such_field"};
  EXPECT_EQ(WireMismatches<SummaryOfWrongKinds>(*v1::NodeSummary::descriptor(), stale),
            (Mismatches{"arch: not a field of the same kind",
                        "gpu_count: not a field of the same kind",
                        "gpus_busy: not a repeated field of the same kind",
                        "gpu_model: not an optional field of the same kind",
                        "no_such_field: listed as by hand but not a described field"}));
  // A struct inside a struct is converted by hand, and says so until it is listed.
  EXPECT_EQ(WireMismatches<HcaInfo>(*v1::Hca::descriptor(), {}),
            Mismatches{"ports: a list of structs is copied by hand"});
}

TEST(WireFields, CopiesBothWaysWithinTheBounds) {
  ReportPart part;
  part.detail = "abcdefgh\xc3\xa9";  // cut before the two-byte character
  part.duration_seconds = 1.5;
  part.nccl_result = 6;
  part.ib_ports = {"mlx5_0:1", "mlx5_1:1", "mlx5_2:1"};
  part.cuda_driver_version = -3;
  part.data_verified = true;
  v1::ProbeReport wire;
  CopyToWire<kNoneByHand>(part, wire);
  EXPECT_EQ(wire.detail(), "abcdefgh");
  EXPECT_EQ(wire.duration_seconds(), 1.5);
  ASSERT_TRUE(wire.has_nccl_result());
  EXPECT_EQ(wire.nccl_result(), 6);
  ASSERT_EQ(wire.ib_ports_size(), 2);
  EXPECT_EQ(wire.ib_ports(0), "mlx5_0");
  EXPECT_EQ(wire.cuda_driver_version(), 0u);  // negative into unsigned
  EXPECT_TRUE(wire.data_verified());

  wire.set_cuda_driver_version(std::numeric_limits<uint32_t>::max());
  wire.set_detail("0123456789");
  wire.clear_nccl_result();
  ReportPart back;
  back.nccl_result = 1;
  back.ib_ports = {"stale"};
  CopyFromWire<kNoneByHand>(wire, back);
  EXPECT_EQ(back.detail, "01234567");
  EXPECT_EQ(back.cuda_driver_version, int64_t{1} << 30);
  EXPECT_EQ(back.nccl_result, std::nullopt);  // absent on the wire: reset
  EXPECT_EQ(back.ib_ports, (std::vector<std::string>{"mlx5_0", "mlx5_1"}));
  EXPECT_EQ(back.duration_seconds, 1.5);
  EXPECT_TRUE(back.data_verified);
}

TEST(WireFields, BoundOfReadsTheDescription) {
  static_assert(BoundOf<NodeInfo>("hcas").items == 64);
  static_assert(BoundOf<NodeInfo>("arch").max == 64);
  static_assert(BoundOf<PortInfo>("num").max == 255);
  static_assert(BoundOf<NodeInfo>("gpus_busy").max == 0);
  SUCCEED();
}

// ApplySummary against a hostile summary: every bound as the field-by-field code had it.
TEST(WireFields, AHostileSummaryIsReadWithinTheDescribedBounds) {
  v1::NodeSummary s;
  s.set_arch(std::string(63, 'a') + "\xc3\xa9");  // the character would end at byte 65
  s.set_nccl_version(std::string(100, 'n'));
  s.set_cuda_driver_version(std::numeric_limits<uint32_t>::max());
  s.set_nvidia_driver_version(std::string(100, 'v'));
  s.set_gpu_model(std::string(200, 'g'));
  s.set_gpu_count(5000);
  s.set_gpus_busy(true);
  s.set_checks_passed(std::numeric_limits<uint32_t>::max());
  for (int i = 0; i < 70; ++i) {
    v1::Hca* h = s.add_hcas();
    h->set_name("mlx5_" + std::to_string(i) + std::string(100, 'x'));
    h->set_hca_type(std::string(100, 't'));
    for (int j = 0; j < 10; ++j) {
      v1::Port* p = h->add_ports();
      p->set_num(300);
      p->set_link_layer(std::string(40, 'l'));
      p->set_rate_gbps(400);
      p->set_state(std::string(40, 's'));
      p->set_phys_state("LinkUp");
      for (int k = 0; k < 130; ++k) {
        v1::PKey* key = p->add_pkeys();
        key->set_value(0x18001);
        key->set_full_member(k % 2 == 0);
        key->set_index(70000);
      }
    }
  }
  NodeInfo info;
  info.name = "gpu-1";
  info.topology = "rack-1";
  info.parallel_probes = 3;
  ApplySummary(s, info);
  EXPECT_EQ(info.name, "gpu-1");  // not the summary's
  EXPECT_EQ(info.topology, "rack-1");
  EXPECT_EQ(info.parallel_probes, 3);
  EXPECT_EQ(info.arch, std::string(63, 'a'));
  EXPECT_EQ(info.nccl_version, std::string(64, 'n'));
  EXPECT_EQ(info.cuda_driver_version, 1 << 30);
  EXPECT_EQ(info.nvidia_driver_version, std::string(64, 'v'));
  EXPECT_EQ(info.gpu_model, std::string(128, 'g'));
  EXPECT_EQ(info.gpu_count, 1024);
  EXPECT_TRUE(info.gpus_busy);
  EXPECT_EQ(info.checks_passed, 1 << 20);
  ASSERT_EQ(info.hcas.size(), 64u);
  EXPECT_EQ(info.hcas[0].name.size(), 64u);
  EXPECT_EQ(info.hcas[0].hca_type, std::string(64, 't'));
  ASSERT_EQ(info.hcas[0].ports.size(), 8u);
  const PortInfo& port = info.hcas[0].ports[0];
  EXPECT_EQ(port.num, 255);
  EXPECT_EQ(port.link_layer, std::string(32, 'l'));
  EXPECT_EQ(port.rate_gbps, 400);
  EXPECT_EQ(port.state, std::string(32, 's'));
  EXPECT_EQ(port.phys_state, "LinkUp");
  ASSERT_EQ(port.pkeys.size(), 128u);
  EXPECT_EQ(port.pkeys[0], (PKeyInfo{1, true, 65535}));  // value: 15 bits, not capped
  EXPECT_EQ(port.pkeys[1], (PKeyInfo{1, false, 65535}));

  // A summary without the optional count: unknown again.
  s.clear_checks_passed();
  s.clear_hcas();
  ApplySummary(s, info);
  EXPECT_EQ(info.checks_passed, std::nullopt);
  EXPECT_TRUE(info.hcas.empty());
}

}  // namespace
}  // namespace nccl_triage
