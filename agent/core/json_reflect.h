// JSON for the types described in base/reflect.h: a described struct is an object of its fields,
// a named enum its name, an optional null or its value, a vector an array, a string-keyed map an
// object; everything else is what nlohmann::json makes of it (strings, numbers, booleans).
//
// Reading is strict about types (a string where a number belongs, a number out of the field's
// range and an unknown enum name are errors) and lenient about absent keys (they keep their
// defaults, so a document written by an older version still loads). An error names where it is,
// from the caller's root: "snapshot.ib_devices[0].ports[1].lid.value: expected an integer".
// Pure functions, thread-safe.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "base/reflect.h"
#include "base/status.h"

namespace nccl_triage {

template <typename T>
nlohmann::json ToJsonValue(const T& v);

// Reads `j` into `out` (which keeps the defaults of absent keys); the errors are named from
// `root`. The error Status is InvalidArgument.
template <typename T>
Status FromJsonValue(const nlohmann::json& j, std::string_view root, T& out);

namespace json_reflect_internal {

template <typename T>
struct IsOptional : std::false_type {};
template <typename T>
struct IsOptional<std::optional<T>> : std::true_type {};
template <typename T>
struct IsVector : std::false_type {};
template <typename T, typename A>
struct IsVector<std::vector<T, A>> : std::true_type {};
template <typename T>
struct IsStringMap : std::false_type {};
template <typename T, typename C, typename A>
struct IsStringMap<std::map<std::string, T, C, A>> : std::true_type {};

// Where the reader is, kept as a chain of frames on the stack and written out only for an error:
// building "a.b[3].c" for every value read cost more than the reading.
struct Path {
  const Path* parent = nullptr;
  std::string_view key;           // a member name, or the root's name when parent is null
  size_t index = SIZE_MAX;        // an array element when not SIZE_MAX

  std::string Text() const {
    std::string out = parent == nullptr ? std::string() : parent->Text();
    if (index != SIZE_MAX) return out + "[" + std::to_string(index) + "]";
    if (parent != nullptr) out += ".";
    return out.append(key);
  }
};

// Thrown inside the reader only; FromJsonValue turns it into a Status.
struct BadShape {
  std::string message;
};

[[noreturn]] inline void Fail(const Path& path, const std::string& why) {
  throw BadShape{path.Text() + ": " + why};
}

template <typename T>
void Read(const nlohmann::json& v, const Path& path, T& out);

template <typename T>
requires std::is_integral_v<T>
void ReadInteger(const nlohmann::json& v, const Path& path, T& out) {
  if (v.is_number_unsigned()) {
    const auto u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<T>::max())) Fail(path, "number out of range");
    out = static_cast<T>(u);
  } else if (v.is_number_integer()) {
    const auto i = v.get<int64_t>();
    if constexpr (std::is_unsigned_v<T>) {
      constexpr auto kMax = static_cast<uint64_t>(std::numeric_limits<T>::max());
      if (i < 0 || static_cast<uint64_t>(i) > kMax) Fail(path, "number out of range");
    } else if (i < static_cast<int64_t>(std::numeric_limits<T>::min()) ||
               i > static_cast<int64_t>(std::numeric_limits<T>::max())) {
      Fail(path, "number out of range");
    }
    out = static_cast<T>(i);
  } else {
    Fail(path, "expected an integer");
  }
}

template <NamedEnum E>
void ReadEnum(const nlohmann::json& v, const Path& path, E& out) {
  if (!v.is_string()) Fail(path, "expected a string");
  const auto& text = v.get_ref<const std::string&>();
  if (auto e = FromString<E>(text)) {
    out = *e;
    return;
  }
  std::string names;
  for (const auto& n : kNamesOf<E>) names += (names.empty() ? "" : ", ") + std::string(n.name);
  Fail(path, "unknown value '" + text + "'; expected one of " + names);
}

template <typename T>
void Read(const nlohmann::json& v, const Path& path, T& out) {
  if constexpr (Described<T>) {
    if (!v.is_object()) Fail(path, "expected an object");
    ForEachField(out, [&](std::string_view name, auto& field) {
      if (auto it = v.find(name); it != v.end()) Read(*it, Path{&path, name}, field);
    });
  } else if constexpr (NamedEnum<T>) {
    ReadEnum(v, path, out);
  } else if constexpr (IsOptional<T>::value) {
    if (v.is_null()) {
      out.reset();
    } else {
      Read(v, path, out.emplace());
    }
  } else if constexpr (IsVector<T>::value) {
    if (!v.is_array()) Fail(path, "expected an array");
    out.clear();
    out.reserve(v.size());
    for (size_t i = 0; i < v.size(); ++i) Read(v[i], Path{&path, {}, i}, out.emplace_back());
  } else if constexpr (IsStringMap<T>::value) {
    if (!v.is_object()) Fail(path, "expected an object");
    out.clear();
    for (const auto& [k, item] : v.items()) Read(item, Path{&path, k}, out[k]);
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (!v.is_string()) Fail(path, "expected a string");
    out = v.get<std::string>();
  } else if constexpr (std::is_same_v<T, bool>) {
    if (!v.is_boolean()) Fail(path, "expected true or false");
    out = v.get<bool>();
  } else if constexpr (std::is_floating_point_v<T>) {
    if (!v.is_number()) Fail(path, "expected a number");
    out = v.get<T>();
  } else if constexpr (std::is_integral_v<T>) {
    ReadInteger(v, path, out);
  } else {
    static_assert(sizeof(T) == 0, "no JSON reading for this type: describe it (base/reflect.h)");
  }
}

}  // namespace json_reflect_internal

template <typename T>
nlohmann::json ToJsonValue(const T& v) {
  using nlohmann::json;
  namespace internal = json_reflect_internal;
  if constexpr (Described<T>) {
    json out = json::object();
    ForEachField(v, [&](std::string_view name, const auto& field) {
      out.emplace(std::string(name), ToJsonValue(field));
    });
    return out;
  } else if constexpr (NamedEnum<T>) {
    return json(std::string(ToString(v)));
  } else if constexpr (internal::IsOptional<T>::value) {
    return v ? ToJsonValue(*v) : json(nullptr);
  } else if constexpr (internal::IsVector<T>::value) {
    json out = json::array();
    for (const auto& item : v) out.push_back(ToJsonValue(item));
    return out;
  } else if constexpr (internal::IsStringMap<T>::value) {
    json out = json::object();
    for (const auto& [k, item] : v) out.emplace(k, ToJsonValue(item));
    return out;
  } else {
    return json(v);
  }
}

template <typename T>
Status FromJsonValue(const nlohmann::json& j, std::string_view root, T& out) {
  namespace internal = json_reflect_internal;
  try {
    internal::Read(j, internal::Path{nullptr, root}, out);
  } catch (const internal::BadShape& e) {
    return InvalidArgument(e.message);
  } catch (const nlohmann::json::exception& e) {
    return InvalidArgument(std::string(root) + ": " + e.what());
  }
  return Status::Ok();
}

}  // namespace nccl_triage
