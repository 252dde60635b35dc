#include "core/env_names.h"

#include <algorithm>
#include <array>

namespace nccl_triage {

bool IsNcclVariableName(std::string_view name) {
  if (!name.starts_with("NCCL_") || name.size() == 5) return false;
  // NCCL_TRIAGE_* are nccl-triage's own settings (its token among them), not NCCL's.
  if (name.starts_with("NCCL_TRIAGE_")) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
}

namespace {

char Upper(char c) { return c >= 'a' && c <= 'z' ? static_cast<char>(c - 32) : c; }

bool ContainsUpper(std::string_view text, std::string_view upper_part) {
  if (upper_part.size() > text.size()) return false;
  for (size_t i = 0; i + upper_part.size() <= text.size(); ++i) {
    if (std::equal(upper_part.begin(), upper_part.end(), text.begin() + static_cast<long>(i),
                   [](char y, char x) { return Upper(x) == y; })) {
      return true;
    }
  }
  return false;
}

}  // namespace

bool LooksSecret(std::string_view name) {
  // Parts that mark a secret wherever they stand in the name: NCCL_APIKEY, SSH_PRIVATEKEY,
  // NCCL_AUTHORIZATION, DB_PASS, AWS_CREDS.
  static constexpr std::array<std::string_view, 7> kParts = {
      "APIKEY", "PRIVATEKEY", "AUTH", "PASS", "CRED", "SECRET", "TOKEN"};
  for (std::string_view part : kParts) {
    if (ContainsUpper(name, part)) return true;
  }
  static constexpr std::array<std::string_view, 6> kWords = {"TOKEN",    "SECRET", "KEY",
                                                             "PASSWORD", "PASSWD", "CREDENTIAL"};
  auto upper = Upper;
  while (!name.empty()) {
    size_t end = name.find('_');
    std::string_view word = name.substr(0, end);
    name.remove_prefix(end == std::string_view::npos ? name.size() : end + 1);
    for (std::string_view w : kWords) {
      auto same = [&](std::string_view a) {
        return a.size() == w.size() && std::equal(a.begin(), a.end(), w.begin(),
                                                  [&](char x, char y) { return upper(x) == y; });
      };
      if (same(word) || (word.size() == w.size() + 1 && upper(word.back()) == 'S' &&
                         same(word.substr(0, w.size())))) {
        return true;
      }
    }
  }
  return false;
}

std::string MaskSecretsInValue(std::string_view value) {
  std::string out(value);
  // scheme://user:password@host -> scheme://user:<hidden>@host
  for (size_t at = out.find("://"); at != std::string::npos; at = out.find("://", at + 3)) {
    const size_t start = at + 3;
    const size_t end = out.find_first_of("/?# \t", start);
    const size_t auth_end = out.rfind('@', end == std::string::npos ? out.size() : end);
    if (auth_end == std::string::npos || auth_end < start) continue;
    const size_t colon = out.find(':', start);
    if (colon == std::string::npos || colon > auth_end) continue;
    out.replace(colon + 1, auth_end - colon - 1, kHiddenValue);
  }
  // "Bearer TOKEN", "Basic CREDENTIALS" -> the scheme and <hidden>
  for (std::string_view scheme : {std::string_view("Bearer "), std::string_view("Basic ")}) {
    for (size_t at = 0; at + scheme.size() <= out.size();) {
      if (!std::equal(scheme.begin(), scheme.end(), out.begin() + static_cast<long>(at),
                      [](char y, char x) { return Upper(x) == Upper(y); })) {
        ++at;
        continue;
      }
      const size_t start = at + scheme.size();
      size_t end = start;
      while (end < out.size() && out[end] != ' ' && out[end] != '\t' && out[end] != ',' &&
             out[end] != ';' && out[end] != '"' && out[end] != '\'') {
        ++end;
      }
      if (end > start) out.replace(start, end - start, kHiddenValue);
      at = start + (end > start ? kHiddenValue.size() : 0);
    }
  }
  return out;
}

}  // namespace nccl_triage
