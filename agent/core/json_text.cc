#include "core/json_text.h"

#include <nlohmann/json.hpp>

#include "base/utf8.h"

namespace nccl_triage {

nlohmann::json SanitizedJson(const nlohmann::json& j) {
  if (j.is_string()) return SanitizeUtf8(j.get_ref<const std::string&>());
  if (j.is_array()) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& v : j) out.push_back(SanitizedJson(v));
    return out;
  }
  if (j.is_object()) {
    nlohmann::json out = nlohmann::json::object();
    for (const auto& [key, v] : j.items()) out[SanitizeUtf8(key)] = SanitizedJson(v);
    return out;
  }
  return j;
}

std::string DumpJson(const nlohmann::json& j, int indent) {
  try {
    return j.dump(indent);  // the common case: no copy
  } catch (const nlohmann::json::type_error&) {
    // 316: a string that is not UTF-8. Write the sanitised copy (which cannot throw).
    return SanitizedJson(j).dump(indent);
  }
}

std::string StringMember(const nlohmann::json& j, const char* key) {
  if (!j.is_object()) return "";
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace nccl_triage
