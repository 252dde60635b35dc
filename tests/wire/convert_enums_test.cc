// The model's enums on the wire: each value and its proto value, both ways, and what a value
// without a partner (UNSPECIFIED, a number from a newer peer, a model value the wire has no word
// for) reads as. The pairs are found by name (wire/enum_map.h), so a value added on one side only
// fails here.
#include <gtest/gtest.h>

#include <google/protobuf/generated_enum_reflection.h>

#include "wire/convert.h"
#include "wire/enum_map.h"

namespace nccl_triage {
namespace {

// Every model value has a wire partner (but `except`), and every wire value but UNSPECIFIED a
// model partner; each pair maps back to itself.
template <NamedEnum E, typename P>
void ExpectEveryValuePaired(std::optional<E> except = std::nullopt) {
  for (E e : AllValues<E>()) {
    auto wire = ToWire<P>(e);
    if (except && e == *except) {
      EXPECT_FALSE(wire.has_value()) << ToString(e);
      continue;
    }
    ASSERT_TRUE(wire.has_value()) << ToString(e) << " has no wire value";
    EXPECT_EQ(FromWire<E>(*wire), e) << ToString(e);
  }
  const auto* d = google::protobuf::GetEnumDescriptor<P>();
  for (int i = 0; i < d->value_count(); ++i) {
    const P p = static_cast<P>(d->value(i)->number());
    auto model = FromWire<E>(p);
    if (d->value(i)->number() == 0) {
      EXPECT_FALSE(model.has_value()) << d->value(i)->name();
      continue;
    }
    ASSERT_TRUE(model.has_value()) << d->value(i)->name() << " has no model value";
    EXPECT_EQ(ToWire<P>(*model), p) << d->value(i)->name();
  }
  EXPECT_FALSE(FromWire<E>(static_cast<P>(99)).has_value());
}

TEST(WireEnums, EveryValueHasItsPartner) {
  ExpectEveryValuePaired<FaultClass, v1::FaultClass>();
  ExpectEveryValuePaired<Basis, v1::Basis>();
  ExpectEveryValuePaired<CheckStatus, v1::CheckStatus>();
  ExpectEveryValuePaired<ProbeMode, v1::ProbeMode>(ProbeMode::kIntraNode);
  ExpectEveryValuePaired<ProbeOutcome, v1::ProbeOutcome>();
  ExpectEveryValuePaired<PairLocalisation, v1::Localisation>();
}

// The pairs as the switch statements wrote them.
TEST(WireEnums, ThePairsAreTheNamedOnes) {
  EXPECT_EQ(ToProto(FaultClass::kHealthy), v1::FAULT_CLASS_HEALTHY);
  EXPECT_EQ(ToProto(FaultClass::kArchitecture), v1::FAULT_CLASS_ARCHITECTURE);
  EXPECT_EQ(ToProto(FaultClass::kIbResource), v1::FAULT_CLASS_IB_RESOURCE);
  EXPECT_EQ(ToProto(FaultClass::kUnknown), v1::FAULT_CLASS_UNKNOWN);
  EXPECT_EQ(ToProto(Basis::kChecks), v1::BASIS_CHECKS);
  EXPECT_EQ(ToProto(Basis::kProbes), v1::BASIS_PROBES);
  EXPECT_EQ(ToProto(CheckStatus::kPass), v1::CHECK_STATUS_PASS);
  EXPECT_EQ(ToProto(CheckStatus::kWarn), v1::CHECK_STATUS_WARN);
  EXPECT_EQ(ToProto(CheckStatus::kFail), v1::CHECK_STATUS_FAIL);
  EXPECT_EQ(ToProto(CheckStatus::kSkip), v1::CHECK_STATUS_SKIP);
  EXPECT_EQ(ToProto(ProbeMode::kSocket), v1::PROBE_MODE_SOCKET);
  EXPECT_EQ(ToProto(ProbeMode::kIb), v1::PROBE_MODE_IB);
  EXPECT_EQ(ToProto(ProbeOutcome::kPass), v1::PROBE_OUTCOME_PASS);
  EXPECT_EQ(ToProto(ProbeOutcome::kFail), v1::PROBE_OUTCOME_FAIL);
  EXPECT_EQ(ToProto(ProbeOutcome::kTimeout), v1::PROBE_OUTCOME_TIMEOUT);
  EXPECT_EQ(ToProto(ProbeOutcome::kCrashed), v1::PROBE_OUTCOME_CRASHED);
  EXPECT_EQ(ToProto(ProbeOutcome::kUnavailable), v1::PROBE_OUTCOME_UNAVAILABLE);
  EXPECT_EQ(ToProto(ProbeOutcome::kNotRun), v1::PROBE_OUTCOME_NOT_RUN);
  EXPECT_EQ(ToProto(PairLocalisation::kNone), v1::LOCALISATION_NONE);
  EXPECT_EQ(ToProto(PairLocalisation::kNode), v1::LOCALISATION_NODE);
  EXPECT_EQ(ToProto(PairLocalisation::kLink), v1::LOCALISATION_LINK);
  EXPECT_EQ(ToProto(PairLocalisation::kInconclusive), v1::LOCALISATION_INCONCLUSIVE);
}

// What the .proto says each UNSPECIFIED (or unknown number) reads as.
TEST(WireEnums, ValuesWithoutPartnerReadAsDocumented) {
  EXPECT_EQ(FromProto(v1::FAULT_CLASS_UNSPECIFIED), FaultClass::kUnknown);
  EXPECT_EQ(FromProto(static_cast<v1::FaultClass>(42)), FaultClass::kUnknown);
  EXPECT_EQ(FromProto(v1::BASIS_UNSPECIFIED), Basis::kChecks);
  EXPECT_EQ(FromProto(v1::CHECK_STATUS_UNSPECIFIED), CheckStatus::kSkip);
  EXPECT_EQ(FromProto(v1::PROBE_MODE_UNSPECIFIED), std::nullopt);
  EXPECT_EQ(FromProto(static_cast<v1::ProbeMode>(7)), std::nullopt);
  EXPECT_EQ(FromProto(v1::PROBE_OUTCOME_UNSPECIFIED), ProbeOutcome::kNotRun);
  EXPECT_EQ(FromProto(v1::LOCALISATION_UNSPECIFIED), PairLocalisation::kNone);
  // Intra-node probes are never assigned over the wire; the old mapping sent socket.
  EXPECT_EQ(ToProto(ProbeMode::kIntraNode), v1::PROBE_MODE_SOCKET);
}

}  // namespace
}  // namespace nccl_triage
