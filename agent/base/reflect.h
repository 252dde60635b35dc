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
// field or value is written in its table and nowhere else: a field left out of FieldsOf, or an
// enumerator left out of NamesOf, does not compile (an enumerator is found by the compiler's name
// for the value, from 16 below the table's lowest value to 16 above its highest).
//
// A field may carry the bounds it has where it crosses a trust boundary (wire/fields.h copies
// such fields to and from protobuf messages), beside its name:
//
//   Field("arch", &NodeInfo::arch, Bound{.max = 64})     // at most 64 bytes
//   Field("hcas", &NodeInfo::hcas, Bound{.items = 64})   // at most 64 entries
//
// Thread-safe (everything is constant).
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
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

// The most a field may hold where it is read from (or written to) a peer. 0: no bound of its own
// (the reader's default applies).
struct Bound {
  uint64_t max = 0;    // a string's bytes (cut on a character boundary), a number's largest value
  uint64_t items = 0;  // a list's entries
};

// One field of struct S: its name where the struct is written out, where it lives, and its bounds.
template <typename S, typename T>
struct FieldInfo {
  std::string_view name;
  T S::*member;
  Bound bound{};
};

template <typename S, typename T>
constexpr FieldInfo<S, T> Field(std::string_view name, T S::*member, Bound bound = {}) {
  return {name, member, bound};
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

// Whether V is an enumerator of its type: the compiler writes an enumerator by its name in the
// function's signature ("[with auto V = nccl_triage::Basis::kChecks]" in g++, "[V = ...]" in
// clang) and any other value as a cast ("(nccl_triage::Basis)5").
template <auto V>
constexpr bool IsEnumerator() {
  // The signature ends with the value, after the last '=' and a space.
  constexpr std::string_view f = __PRETTY_FUNCTION__;
  size_t at = f.size();
  while (at > 0 && f[at - 1] != '=') --at;
  return at > 0 && at + 1 < f.size() && f[at + 1] != '(';
}

// The values the enumerator check looks at: from kScanMargin under the table's lowest value to
// kScanMargin over its highest (kScanMaxWidth at most), within the underlying type's range.
inline constexpr long long kScanMargin = 16;
inline constexpr long long kScanMaxWidth = 256;

template <typename E>
constexpr bool ListsValue(const auto& names, E e) {
  for (const auto& n : names) {
    if (n.value == e) return true;
  }
  return false;
}

// The window [first, last] for a table spanning [lowest, highest] in the underlying type U.
template <typename U>
consteval std::pair<long long, long long> ScanWindow(long long lowest, long long highest) {
  long long first = lowest - kScanMargin;
  long long last = std::min(highest + kScanMargin, first + kScanMaxWidth - 1);
  if constexpr (std::is_signed_v<U> || sizeof(U) < sizeof(long long)) {
    first = std::max(first, static_cast<long long>(std::numeric_limits<U>::min()));
    last = std::min(last, static_cast<long long>(std::numeric_limits<U>::max()));
  }
  return {first, last};
}

template <typename E, long long kFirst, size_t... I>
consteval bool NamesWindow(std::index_sequence<I...>) {
  constexpr auto names = NamesOf(Type<E>{});
  return ((!IsEnumerator<static_cast<E>(kFirst + static_cast<long long>(I))>() ||
           ListsValue(names, static_cast<E>(kFirst + static_cast<long long>(I)))) &&
          ...);
}

// Whether every enumerator of E in the window is in its table.
template <typename E>
consteval bool NamesEveryEnumerator() {
  constexpr auto window = ScanWindow<std::underlying_type_t<E>>(
      [] {
        long long lowest = std::numeric_limits<long long>::max();
        for (const auto& n : NamesOf(Type<E>{})) {
          lowest = std::min(lowest, static_cast<long long>(n.value));
        }
        return lowest;
      }(),
      [] {
        long long highest = std::numeric_limits<long long>::min();
        for (const auto& n : NamesOf(Type<E>{})) {
          highest = std::max(highest, static_cast<long long>(n.value));
        }
        return highest;
      }());
  return NamesWindow<E, window.first>(
      std::make_index_sequence<static_cast<size_t>(window.second - window.first + 1)>{});
}

// The table of E, refused at compile time when a value or a name is listed twice, a name is
// empty, or an enumerator has no name (the throw is not a constant expression).
template <typename E, size_t N>
consteval std::array<EnumName<E>, N> Checked(std::array<EnumName<E>, N> names,
                                             bool every_enumerator) {
  for (size_t i = 0; i < N; ++i) {
    if (names[i].name.empty()) throw "an enum name is empty";
    for (size_t j = i + 1; j < N; ++j) {
      if (names[i].value == names[j].value) throw "an enum value is named twice";
      if (names[i].name == names[j].name) throw "an enum name is used twice";
    }
  }
  if (!every_enumerator) throw "an enumerator has no name in its NamesOf table";
  return names;
}

}  // namespace reflect_internal

// Every (value, name) of E, in the order of its table.
template <NamedEnum E>
inline constexpr auto kNamesOf = reflect_internal::Checked(
    NamesOf(Type<E>{}), reflect_internal::NamesEveryEnumerator<E>());

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
