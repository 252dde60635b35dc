// The wire value of a model enum, found by name: a proto enum of nccl_triage.v1 spells each value
// as its zero value's prefix and the model's name in upper case, so FaultClass::kIbResource
// ("ib_resource") is FAULT_CLASS_IB_RESOURCE (prefix of FAULT_CLASS_UNSPECIFIED). The model's
// name table (base/reflect.h) and the .proto are then the only lists; a value on one side without
// a partner maps to nullopt, and the caller says what that means (the proto's comments give each
// UNSPECIFIED its reading). tests/wire checks that every value has its partner. The pairs are
// found once per enum, from the proto's descriptor. Thread-safe.
#pragma once

#include <google/protobuf/generated_enum_reflection.h>

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/reflect.h"

namespace nccl_triage {

namespace wire_internal {

template <NamedEnum E, typename P>
const std::vector<std::pair<E, P>>& WirePairs() {
  static const std::vector<std::pair<E, P>> pairs = [] {
    std::vector<std::pair<E, P>> out;
    const google::protobuf::EnumDescriptor* d = google::protobuf::GetEnumDescriptor<P>();
    const std::string zero(d->FindValueByNumber(0)->name());
    constexpr std::string_view kUnspecified = "UNSPECIFIED";
    if (!zero.ends_with(kUnspecified)) return out;
    const std::string prefix = zero.substr(0, zero.size() - kUnspecified.size());
    for (const auto& n : kNamesOf<E>) {
      std::string name = prefix;
      for (char c : n.name) {
        name += c == '-' ? '_' : (c >= 'a' && c <= 'z') ? static_cast<char>(c - 'a' + 'A') : c;
      }
      if (const auto* v = d->FindValueByName(name)) out.emplace_back(n.value, P(v->number()));
    }
    return out;
  }();
  return pairs;
}

}  // namespace wire_internal

// The wire value P of model value `e`, or nullopt when the proto has none of that name.
template <typename P, NamedEnum E>
std::optional<P> ToWire(E e) {
  for (const auto& [model, wire] : wire_internal::WirePairs<E, P>()) {
    if (model == e) return wire;
  }
  return std::nullopt;
}

// The model value E of wire value `p`, or nullopt (UNSPECIFIED, or a number this build does not
// know).
template <NamedEnum E, typename P>
std::optional<E> FromWire(P p) {
  for (const auto& [model, wire] : wire_internal::WirePairs<E, P>()) {
    if (wire == p) return model;
  }
  return std::nullopt;
}

}  // namespace nccl_triage
