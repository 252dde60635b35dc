// Describing a type once: the fields of a plain struct and the names of an enum, as constexpr
// tables written beside the type, from which the serialisers, ToString and FromString are
// generic. Plain templates, no macros; header-only, no I/O.
//
// A struct is described by a function found by argument-dependent lookup in the struct's
// namespace, returning its fields in order as a tuple of (name, member pointer):
//
//   struct IbGid { int index = 0; std::string gid; };
//   constexpr auto FieldsOf(Type<IbGid>) {
//     return std::tuple{Field("index", &IbGid::index), Field("gid", &IbGid::gid)};
//   }
//
// An enum by a table of (value, name), every value once and every name once (checked when the
// program is compiled):
//
//   enum class Basis { kChecks, kProbes };
//   constexpr auto NamesOf(Type<Basis>) {
//     return std::array{Named(Basis::kChecks, "checks"), Named(Basis::kProbes, "probes")};
//   }
//
// then ToString(Basis::kProbes) is "probes" and FromString<Basis>("checks") is kChecks. A new
// field or value is written in its table and nowhere else. Thread-safe (everything is constant).
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

namespace nccl_triage {

// A tag naming a type, so that a description is a function of the tag found by ADL.
template <typename T>
struct Type {};

// ---- structs ----

// One field of struct S: its name where the struct is written out, and where it lives.
template <typename S, typename T>
struct FieldInfo {
  std::string_view name;
  T S::*member;
};

template <typename S, typename T>
constexpr FieldInfo<S, T> Field(std::string_view name, T S::*member) {
  return {name, member};
}

template <typename S>
concept Described = requires { FieldsOf(Type<S>{}); };

namespace reflect_internal {

// Converts to anything: S{Any{}, Any{}, ...} compiles with up to as many as S has fields.
struct Any {
  template <typename T>
  operator T() const;  // NOLINT(google-explicit-constructor): declared only, never called
};

template <typename S, size_t... I>
constexpr bool BraceConstructible(std::index_sequence<I...>) {
  return requires { S{(void(I), Any{})...}; };
}

// The number of fields of the aggregate S (members, not counting base classes).
template <typename S, size_t N = 0>
constexpr size_t AggregateFieldCount() {
  if constexpr (N > 128 || !BraceConstructible<S>(std::make_index_sequence<N + 1>{})) {
    return N;
  } else {
    return AggregateFieldCount<S, N + 1>();
  }
}

// A description that leaves out a field of an aggregate does not compile: a field added to the
// struct and not to FieldsOf would otherwise silently not be written or read.
template <typename S>
consteval bool ListsEveryField() {
  if constexpr (std::is_aggregate_v<S>) {
    return AggregateFieldCount<S>() == std::tuple_size_v<decltype(FieldsOf(Type<S>{}))>;
  } else {
    return true;
  }
}

}  // namespace reflect_internal

// Calls f(name, field) for each described field of `s`, in the order of the description; the
// field is const when `s` is.
template <typename S, typename F>
requires Described<std::remove_const_t<S>>
constexpr void ForEachField(S& s, F&& f) {
  static_assert(reflect_internal::ListsEveryField<std::remove_const_t<S>>(),
                "FieldsOf(Type<S>) must list every field of S");
  std::apply([&](const auto&... field) { (f(field.name, s.*(field.member)), ...); },
             FieldsOf(Type<std::remove_const_t<S>>{}));
}

// ---- enums ----

template <typename E>
struct EnumName {
  E value;
  std::string_view name;
};

template <typename E>
requires std::is_enum_v<E>
constexpr EnumName<E> Named(E value, std::string_view name) {
  return {value, name};
}

template <typename E>
concept NamedEnum = std::is_enum_v<E> && requires { NamesOf(Type<E>{}); };

namespace reflect_internal {

// The table of E, refused at compile time when a value or a name is listed twice or a name is
// empty (the throw is not a constant expression).
template <typename E, size_t N>
consteval std::array<EnumName<E>, N> Checked(std::array<EnumName<E>, N> names) {
  for (size_t i = 0; i < N; ++i) {
    if (names[i].name.empty()) throw "an enum name is empty";
    for (size_t j = i + 1; j < N; ++j) {
      if (names[i].value == names[j].value) throw "an enum value is named twice";
      if (names[i].name == names[j].name) throw "an enum name is used twice";
    }
  }
  return names;
}

}  // namespace reflect_internal

// Every (value, name) of E, in the order of its table.
template <NamedEnum E>
inline constexpr auto kNamesOf = reflect_internal::Checked(NamesOf(Type<E>{}));

// The name of `e`; "unknown" for a value outside the table (only a cast can make one).
template <NamedEnum E>
constexpr std::string_view ToString(E e) {
  for (const auto& n : kNamesOf<E>) {
    if (n.value == e) return n.name;
  }
  return "unknown";
}

// The value named `s` exactly, or nullopt.
template <NamedEnum E>
constexpr std::optional<E> FromString(std::string_view s) {
  for (const auto& n : kNamesOf<E>) {
    if (n.name == s) return n.value;
  }
  return std::nullopt;
}

// Every value of E, in the order of its table.
template <NamedEnum E>
constexpr auto AllValues() {
  std::array<E, kNamesOf<E>.size()> out{};
  for (size_t i = 0; i < out.size(); ++i) out[i] = kNamesOf<E>[i].value;
  return out;
}

}  // namespace nccl_triage
