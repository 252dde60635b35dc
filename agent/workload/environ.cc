#include "workload/environ.h"

#include <array>

#include "core/env_names.h"

namespace nccl_triage::workload {
namespace {

constexpr std::array<std::string_view, 7> kAllowList = {
    "CUDA_VISIBLE_DEVICES",    // which GPUs the process may use
    "NVIDIA_VISIBLE_DEVICES",  // which GPUs the container runtime mounted
    "LOCAL_RANK",              // torchrun / launcher placement
    "RANK",
    "WORLD_SIZE",
    "LOCAL_WORLD_SIZE",
    "OMPI_COMM_WORLD_LOCAL_RANK",  // MPI launchers
};

bool IsNameChar(char c) { return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'; }

bool IsPrintable(std::string_view v) {
  for (char c : v) {
    auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u >= 0x7f) return false;
  }
  return true;
}

// A name that is well formed in any case (lower-case letters are legal in environments); only
// used to tell malformed entries from well-formed ones that are simply not kept.
bool IsIdentifier(std::string_view name) {
  if (name.empty()) return false;
  for (char c : name) {
    bool ok = IsNameChar(c) || (c >= 'a' && c <= 'z');
    if (!ok) return false;
  }
  return true;
}

}  // namespace

std::span<const std::string_view> EnvironAllowList() { return kAllowList; }

bool IsKeptEnvName(std::string_view name) {
  if (IsNcclVariableName(name)) return true;
  for (auto allowed : kAllowList) {
    if (name == allowed) return true;
  }
  return false;
}

FilteredEnviron FilterEnviron(std::string_view raw) {
  FilteredEnviron out;
  size_t start = 0;
  while (start < raw.size()) {
    size_t end = raw.find('\0', start);
    if (end == std::string_view::npos) end = raw.size();
    std::string_view entry = raw.substr(start, end - start);
    start = end + 1;
    if (entry.empty()) continue;
    ++out.total;
    size_t eq = entry.find('=');
    if (eq == std::string_view::npos || !IsIdentifier(entry.substr(0, eq))) {
      ++out.malformed;
      continue;
    }
    std::string_view name = entry.substr(0, eq);
    if (!IsKeptEnvName(name)) continue;
    std::string_view value = entry.substr(eq + 1);
    if (value.size() > kMaxEnvValueBytes || !IsPrintable(value)) {
      ++out.bad_values;
      continue;
    }
    // A name defined twice: glibc's getenv() returns the first definition, so NCCL sees that one.
    // A name that looks like a credential (NCCL_SECRET_TOKEN) is kept with its value hidden, so
    // no output (check --workloads, /status, annotations) can show it; no check reads one. A
    // token inside another value (a URL's password, "Bearer ...") is hidden in place.
    out.kept.emplace(std::string(name),
                     LooksSecret(name) ? std::string(kHiddenValue) : MaskSecretsInValue(value));
  }
  return out;
}

}  // namespace nccl_triage::workload
