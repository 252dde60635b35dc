// Environment variable names that nccl-triage treats specially: the NCCL_* settings it may pass
// to a probe child or show from a workload, and names whose values must never be shown.
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace nccl_triage {

// "NCCL_" followed by one or more of [A-Z0-9_], but not NCCL_TRIAGE_* (nccl-triage's own
// settings, its token among them). The only names probe.env_allowlist accepts: the
// agent's environment holds its own credentials (and LD_PRELOAD would run code in the child).
bool IsNcclVariableName(std::string_view name);

// True when one of the name's '_'-separated words is KEY, PASSWORD, PASSWD, CREDENTIAL (or a
// plural of them), or the name contains APIKEY, PRIVATEKEY, AUTH, PASS, CRED, SECRET or TOKEN
// anywhere (any case): NCCL_SECRET_TOKEN, NCCL_API_KEYS, NCCL_APIKEY, DB_PASS, AWS_CREDS. KEY only
// as a whole word, so NCCL_IB_PKEY is not one. Outputs show such a variable with its value hidden.
bool LooksSecret(std::string_view name);

// `value` with the secrets it carries inside hidden: the password of a URL
// ("https://user:<hidden>@host/") and the credentials after "Bearer " or "Basic ".
std::string MaskSecretsInValue(std::string_view value);

// What outputs show instead of the value of a LooksSecret name.
inline constexpr std::string_view kHiddenValue = "<hidden>";

}  // namespace nccl_triage
