// Copies between a described struct (base/reflect.h) and the protobuf message that has fields of
// the same names, through the message's descriptor: the struct's FieldsOf and the .proto are the
// only lists of the fields, and each field's bounds (Field(..., Bound{...})) are written once,
// beside it.
//
//   CopyFromWire<kNodeInfoByHand>(summary, info);  // every described field but those listed
//
// A field is copied when it is a plain value on both sides: a string, a bool, a double, an integer
// (any width or sign on either side), std::optional of one (a proto field with presence), or
// std::vector of one (a repeated field). Read from a peer, a string is cut to its bound (512 bytes
// by default) on a character boundary, a number is capped at its bound and to the model type's
// range, a list keeps its first `items` entries (128 by default); written, strings and lists are
// bounded the same way and a number is clamped to the wire type's range (a negative value into an
// unsigned field is 0). Everything else (enums, nested messages, units, derived values) is the
// caller's hand code, and its field names are the copy's template argument (a name there that is
// not a described field does not compile).
//
// WireMismatches says which described fields have no field of the same name and a compatible
// type in a message: the wire tests run it for every pair, so a field added to a struct and not
// to the .proto (or to `by_hand`) is caught. A copy skips such a field. Thread-safe.
#pragma once

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>

#include <algorithm>
#include <array>
#include <concepts>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "base/reflect.h"

namespace nccl_triage {

inline constexpr size_t kWireTextBytes = 512;  // a string without a bound of its own
inline constexpr size_t kWireListItems = 128;  // a list without a bound of its own

// The names of the fields a copy leaves to hand code: a constexpr array of static storage when it
// is a template argument of a copy (CopyFromWire<kNodeInfoByHand>), any list for WireMismatches.
using ByHand = std::span<const std::string_view>;
inline constexpr std::array<std::string_view, 0> kNoneByHand{};

// At most n bytes of s, never ending inside a UTF-8 character: the text goes into JSON (/status)
// and protobuf strings, which both refuse a split character.
inline std::string CutUtf8(const std::string& s, size_t n) {
  if (s.size() <= n) return s;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xc0) == 0x80) --n;
  return s.substr(0, n);
}

// Two lists of names as one (a by-hand list that extends another).
template <size_t A, size_t B>
constexpr std::array<std::string_view, A + B> Joined(const std::array<std::string_view, A>& a,
                                                     const std::array<std::string_view, B>& b) {
  std::array<std::string_view, A + B> out{};
  for (size_t i = 0; i < A; ++i) out[i] = a[i];
  for (size_t i = 0; i < B; ++i) out[A + i] = b[i];
  return out;
}

namespace wire_internal {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

template <typename T>
struct Optional : std::false_type {};
template <typename T>
struct Optional<std::optional<T>> : std::true_type {
  using type = T;
};
template <typename T>
struct List : std::false_type {};
template <typename T>
struct List<std::vector<T>> : std::true_type {
  using type = T;
};

template <typename T>
constexpr bool kPlain = std::is_same_v<T, std::string> || std::is_same_v<T, bool> ||
                        std::is_same_v<T, double> || std::is_integral_v<T>;

// Whether a T can be copied at all: plain, or an optional or a list of plain values.
template <typename T>
constexpr bool kCopyable = kPlain<T> || (List<T>::value && kPlain<typename List<T>::type>) ||
                           (Optional<T>::value && kPlain<typename Optional<T>::type>);

// Whether a plain T and a field of this C++ type hold the same kind of value.
template <typename T>
bool SameKind(const FieldDescriptor& f) {
  switch (f.cpp_type()) {
    case FieldDescriptor::CPPTYPE_STRING:
      return std::is_same_v<T, std::string>;
    case FieldDescriptor::CPPTYPE_BOOL:
      return std::is_same_v<T, bool>;
    case FieldDescriptor::CPPTYPE_DOUBLE:
      return std::is_same_v<T, double>;
    case FieldDescriptor::CPPTYPE_INT32:
    case FieldDescriptor::CPPTYPE_INT64:
    case FieldDescriptor::CPPTYPE_UINT32:
    case FieldDescriptor::CPPTYPE_UINT64:
      return std::is_integral_v<T> && !std::is_same_v<T, bool>;
    default:
      return false;
  }
}

// Why a field of type T cannot be copied to and from `f`; "" when it can.
template <typename T>
std::string Mismatch(const FieldDescriptor* f) {
  if (f == nullptr) return "the message has no field of this name";
  if constexpr (List<T>::value) {
    if constexpr (!kPlain<typename List<T>::type>) {
      return "a list of structs is copied by hand";
    } else if (!f->is_repeated() || !SameKind<typename List<T>::type>(*f)) {
      return "not a repeated field of the same kind";
    }
  } else if constexpr (Optional<T>::value) {
    if constexpr (!kPlain<typename Optional<T>::type>) {
      return "an optional struct is copied by hand";
    } else if (f->is_repeated() || !f->has_presence() ||
               !SameKind<typename Optional<T>::type>(*f)) {
      return "not an optional field of the same kind";
    }
  } else if constexpr (!kPlain<T>) {
    return "not a plain value: copied by hand";
  } else if (f->is_repeated() || !SameKind<T>(*f)) {
    return "not a field of the same kind";
  }
  return "";
}

inline bool Listed(ByHand by_hand, std::string_view name) {
  return std::find(by_hand.begin(), by_hand.end(), name) != by_hand.end();
}

// v as T, within T's range and at most `max` (0: T's range only).
template <typename T, typename V>
T Clamped(V v, uint64_t max) {
  using L = std::numeric_limits<T>;
  if (std::cmp_less(v, L::min())) return L::min();
  if (max != 0 && std::cmp_less(max, L::max())) {
    if (std::cmp_greater(v, max)) return static_cast<T>(max);
  } else if (std::cmp_greater(v, L::max())) {
    return L::max();
  }
  return static_cast<T>(v);
}

// One plain value of field f (entry `index` of a repeated field, -1 for a single one).
template <typename T>
T Read(const Reflection& r, const Message& m, const FieldDescriptor& f, int index,
       const Bound& bound) {
  const bool one = index < 0;
  if constexpr (std::is_same_v<T, std::string>) {
    std::string scratch;
    const std::string& v = one ? r.GetStringReference(m, &f, &scratch)
                               : r.GetRepeatedStringReference(m, &f, index, &scratch);
    return CutUtf8(v, bound.max != 0 ? bound.max : kWireTextBytes);
  } else if constexpr (std::is_same_v<T, bool>) {
    return one ? r.GetBool(m, &f) : r.GetRepeatedBool(m, &f, index);
  } else if constexpr (std::is_same_v<T, double>) {
    return one ? r.GetDouble(m, &f) : r.GetRepeatedDouble(m, &f, index);
  } else {
    switch (f.cpp_type()) {
      case FieldDescriptor::CPPTYPE_INT32:
        return Clamped<T>(one ? r.GetInt32(m, &f) : r.GetRepeatedInt32(m, &f, index), bound.max);
      case FieldDescriptor::CPPTYPE_INT64:
        return Clamped<T>(one ? r.GetInt64(m, &f) : r.GetRepeatedInt64(m, &f, index), bound.max);
      case FieldDescriptor::CPPTYPE_UINT32:
        return Clamped<T>(one ? r.GetUInt32(m, &f) : r.GetRepeatedUInt32(m, &f, index),
                          bound.max);
      default:
        return Clamped<T>(one ? r.GetUInt64(m, &f) : r.GetRepeatedUInt64(m, &f, index),
                          bound.max);
    }
  }
}

// Writes one plain value into field f (appended when f is repeated).
template <typename T>
void Write(const Reflection& r, const T& v, Message& m, const FieldDescriptor& f,
           const Bound& bound) {
  const bool add = f.is_repeated();
  if constexpr (std::is_same_v<T, std::string>) {
    std::string s = CutUtf8(v, bound.max != 0 ? bound.max : kWireTextBytes);
    add ? r.AddString(&m, &f, std::move(s)) : r.SetString(&m, &f, std::move(s));
  } else if constexpr (std::is_same_v<T, bool>) {
    add ? r.AddBool(&m, &f, v) : r.SetBool(&m, &f, v);
  } else if constexpr (std::is_same_v<T, double>) {
    add ? r.AddDouble(&m, &f, v) : r.SetDouble(&m, &f, v);
  } else {
    switch (f.cpp_type()) {
      case FieldDescriptor::CPPTYPE_INT32: {
        const auto x = Clamped<int32_t>(v, 0);
        add ? r.AddInt32(&m, &f, x) : r.SetInt32(&m, &f, x);
        break;
      }
      case FieldDescriptor::CPPTYPE_INT64: {
        const auto x = Clamped<int64_t>(v, 0);
        add ? r.AddInt64(&m, &f, x) : r.SetInt64(&m, &f, x);
        break;
      }
      case FieldDescriptor::CPPTYPE_UINT32: {
        const auto x = Clamped<uint32_t>(v, 0);
        add ? r.AddUInt32(&m, &f, x) : r.SetUInt32(&m, &f, x);
        break;
      }
      default: {
        const auto x = Clamped<uint64_t>(v, 0);
        add ? r.AddUInt64(&m, &f, x) : r.SetUInt64(&m, &f, x);
        break;
      }
    }
  }
}

// M's reflection, and the field of M that each described field of S is copied to and from, in the
// order of the description (nullptr: none of that name and kind): looked up once per pair of types
// (a lookup per copy made a summary's copy several times slower).
template <size_t N>
struct PartnerTable {
  const Reflection* reflection = nullptr;
  std::array<const FieldDescriptor*, N> fields{};
};

template <Described S, typename M>
const auto& Partners() {
  static_assert(reflect_internal::ListsEveryField<S>(),
                "FieldsOf(Type<S>) must list every field of S");
  static const auto partners = [] {
    constexpr size_t kFields = std::tuple_size_v<decltype(FieldsOf(Type<S>{}))>;
    PartnerTable<kFields> out;
    out.reflection = M::GetReflection();
    const google::protobuf::Descriptor& d = *M::descriptor();
    size_t i = 0;
    std::apply(
        [&](const auto&... field) {
          auto one = [&](const auto& field) {
            using T = std::remove_cvref_t<decltype(std::declval<S&>().*(field.member))>;
            const FieldDescriptor* f = d.FindFieldByName(std::string(field.name));
            out.fields[i++] = Mismatch<T>(f).empty() ? f : nullptr;
          };
          (one(field), ...);
        },
        FieldsOf(Type<S>{}));
    return out;
  }();
  return partners;
}

// For each described field of S, whether kByHand lists it; a name of kByHand that is not a field
// of S does not compile.
template <Described S, const auto& kByHand>
consteval auto ListedByHand() {
  constexpr auto fields = FieldsOf(Type<S>{});
  std::array<bool, std::tuple_size_v<decltype(fields)>> out{};
  size_t matched = 0;
  std::apply(
      [&](const auto&... field) {
        size_t i = 0;
        ((out[i++] = std::find(kByHand.begin(), kByHand.end(), field.name) != kByHand.end()),
         ...);
      },
      fields);
  for (bool listed : out) matched += listed ? 1 : 0;
  if (matched != kByHand.size()) throw "a by-hand name is not a described field (or is twice)";
  return out;
}

// Calls f(field, descriptor, reflection) for each described field of S that kByHand does not list
// and that has a field of the same name and a compatible type in M.
template <Described S, typename M, const auto& kByHand, typename F>
void ForEachCopied(F&& f) {
  const auto& partners = Partners<S, M>();
  static constexpr auto kListed = ListedByHand<S, kByHand>();
  constexpr auto fields = FieldsOf(Type<S>{});
  [&]<size_t... I>(std::index_sequence<I...>) {
    auto one = [&](const auto& field, const FieldDescriptor* partner, bool listed) {
      using T = std::remove_cvref_t<decltype(std::declval<S&>().*(field.member))>;
      if constexpr (kCopyable<T>) {
        if (partner != nullptr && !listed) f(field, *partner, *partners.reflection);
      }
    };
    (one(std::get<I>(fields), partners.fields[I], kListed[I]), ...);
  }(std::make_index_sequence<std::tuple_size_v<decltype(fields)>>{});
}

}  // namespace wire_internal

// The bounds of S's field `name`, for hand code that copies it; a name that is not a field of S
// does not compile.
template <Described S>
consteval Bound BoundOf(std::string_view name) {
  Bound out;
  bool found = false;
  std::apply(
      [&](const auto&... field) {
        ((field.name == name ? (out = field.bound, found = true) : false), ...);
      },
      FieldsOf(Type<S>{}));
  if (!found) throw "BoundOf: not a described field";
  return out;
}

// "name: why" for each described field of S, not in `by_hand`, that message type `d` cannot
// carry as a copy, and for each name of `by_hand` that is not a field of S. Empty when the
// description, `by_hand` and the .proto agree.
template <Described S>
std::vector<std::string> WireMismatches(const google::protobuf::Descriptor& d, ByHand by_hand) {
  static_assert(reflect_internal::ListsEveryField<S>(),
                "FieldsOf(Type<S>) must list every field of S");
  std::vector<std::string> out;
  std::vector<std::string_view> names;
  std::apply(
      [&](const auto&... field) {
        auto one = [&](const auto& field) {
          using T = std::remove_cvref_t<decltype(std::declval<S&>().*(field.member))>;
          names.push_back(field.name);
          if (wire_internal::Listed(by_hand, field.name)) return;
          const std::string why =
              wire_internal::Mismatch<T>(d.FindFieldByName(std::string(field.name)));
          if (!why.empty()) out.push_back(std::string(field.name) + ": " + why);
        };
        (one(field), ...);
      },
      FieldsOf(Type<S>{}));
  for (std::string_view name : by_hand) {
    if (std::find(names.begin(), names.end(), name) == names.end()) {
      out.push_back(std::string(name) + ": listed as by hand but not a described field");
    }
  }
  return out;
}

// Sets every copied field of `s` from `m` (a list is replaced, an optional without its field in
// `m` is reset); the fields of kByHand are left as they are.
template <const auto& kByHand, Described S, std::derived_from<google::protobuf::Message> M>
void CopyFromWire(const M& m, S& s) {
  using wire_internal::List;
  using wire_internal::Optional;
  using wire_internal::Read;
  wire_internal::ForEachCopied<S, M, kByHand>([&](const auto& field, const auto& f,
                                                 const auto& r) {
    auto& v = s.*(field.member);
    using T = std::remove_cvref_t<decltype(v)>;
    if constexpr (List<T>::value) {
      v.clear();
      const int n = r.FieldSize(m, &f);
      const uint64_t items = field.bound.items != 0 ? field.bound.items : kWireListItems;
      for (int i = 0; i < n && static_cast<uint64_t>(i) < items; ++i) {
        v.push_back(Read<typename List<T>::type>(r, m, f, i, field.bound));
      }
    } else if constexpr (Optional<T>::value) {
      v.reset();
      if (r.HasField(m, &f)) {
        v = Read<typename Optional<T>::type>(r, m, f, -1, field.bound);
      }
    } else {
      v = Read<T>(r, m, f, -1, field.bound);
    }
  });
}

// Sets every copied field of `m` from `s` (an optional without a value leaves its field as it
// is, a list is appended to); the fields of kByHand are left to the caller.
template <const auto& kByHand, Described S, std::derived_from<google::protobuf::Message> M>
void CopyToWire(const S& s, M& m) {
  using wire_internal::List;
  using wire_internal::Optional;
  using wire_internal::Write;
  wire_internal::ForEachCopied<S, M, kByHand>([&](const auto& field, const auto& f,
                                                 const auto& r) {
    const auto& v = s.*(field.member);
    using T = std::remove_cvref_t<decltype(v)>;
    if constexpr (List<T>::value) {
      const uint64_t items = field.bound.items != 0 ? field.bound.items : kWireListItems;
      for (size_t i = 0; i < v.size() && i < items; ++i) {
        Write<typename List<T>::type>(r, v[i], m, f, field.bound);
      }
    } else if constexpr (Optional<T>::value) {
      if (v) Write<typename Optional<T>::type>(r, *v, m, f, field.bound);
    } else {
      Write<T>(r, v, m, f, field.bound);
    }
  });
}

}  // namespace nccl_triage
