#include "classify/knowledge.h"

#include <re2/re2.h>

#include <array>
#include <charconv>
#include <memory>

namespace nccl_triage {
namespace {

// NCCL parses these with strcasecmp against its own name tables (NCCL_FACTS; src/graph/tuning.cc
// and src/misc/socket.cc). A name any NCCL release accepts is accepted here: the classifier must
// not call a setting wrong that the log's own NCCL takes.
constexpr std::array kEnumSettings = {
    EnumSetting{"NCCL_ALGO", "Tree,Ring,CollNet,CollNetDirect,CollNetChain,NVLS,NVLSTree,PAT",
                true, ""},
    EnumSetting{"NCCL_PROTO", "LL,LL128,Simple", true, ""},
    EnumSetting{"NCCL_SOCKET_FAMILY", "AF_INET,AF_INET6", false, ""},
};

// The oldest NCCL release that runs on each generation (the same minimums the catalogue's
// versions.nccl remedy names). Patterns name the data-centre parts as logs print them
// (nccl-tests' device list, nvidia-smi, PyTorch's device names).
constexpr std::array kArchitectures = {
    GpuArchitecture{"Blackwell", R"(\b(?:GB?[23]00|B[12]00)\b|\bsm_?100\b)", "2.25"},
    GpuArchitecture{"Hopper", R"(\b(?:GH200|H100|H200|H800|H20)\b|\bsm_?90a?\b)", "2.18"},
    GpuArchitecture{"Ampere", R"(\b(?:A100|A800)\b|\bsm_?80\b)", "2.7.8"},
};

bool IEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '"' || s.front() == '\'')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '"' || s.back() == '\'' ||
                        s.back() == '.')) {
    s.remove_suffix(1);
  }
  return s;
}

bool Accepted(std::string_view token, std::string_view values) {
  while (!values.empty()) {
    size_t comma = values.find(',');
    if (IEquals(token, values.substr(0, comma))) return true;
    if (comma == std::string_view::npos) break;
    values.remove_prefix(comma + 1);
  }
  return false;
}

// The first token of a list setting NCCL would not recognise, or empty. Accepts `^a,b` and the
// per-collective form `allreduce:ring,tree;broadcast:ring`.
std::string_view UnknownToken(std::string_view value, std::string_view values) {
  while (!value.empty()) {
    size_t semi = value.find(';');
    std::string_view part = value.substr(0, semi);
    if (size_t colon = part.find(':'); colon != std::string_view::npos) {
      part = part.substr(colon + 1);
    }
    if (!part.empty() && part.front() == '^') part.remove_prefix(1);
    while (!part.empty()) {
      size_t comma = part.find(',');
      std::string_view token = Trim(part.substr(0, comma));
      if (!token.empty() && !Accepted(token, values)) return token;
      if (comma == std::string_view::npos) break;
      part.remove_prefix(comma + 1);
    }
    if (semi == std::string_view::npos) break;
    value.remove_prefix(semi + 1);
  }
  return {};
}

std::optional<long long> ToInt(std::string_view s) {
  long long v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

}  // namespace

std::span<const EnumSetting> EnumSettings() { return kEnumSettings; }
std::span<const GpuArchitecture> GpuArchitectures() { return kArchitectures; }

std::optional<std::string> CheckEnvValue(std::string_view name, std::string_view raw) {
  const std::string_view value = Trim(raw);
  for (const auto& s : kEnumSettings) {
    if (name != s.name) continue;
    if (s.list) {
      std::string_view bad = UnknownToken(value, s.values);
      if (bad.empty()) return std::nullopt;
      return std::string(name) + "=" + std::string(value) + ": NCCL knows no '" +
             std::string(bad) + "' (it takes " + std::string(s.values) + ")";
    }
    if (Accepted(value, s.values)) return std::nullopt;
    return std::string(name) + "=" + std::string(value) + ": not one of " +
           std::string(s.values);
  }
  if (name == "NCCL_BUFFSIZE") {
    // NCCL's default is 4 MiB; a buffer below a page or above 2 GiB is no tuning NCCL can honour.
    auto v = ToInt(value);
    if (!v) return std::string(name) + "=" + std::string(value) + ": not a number of bytes";
    if (*v < 4096 || *v > (1LL << 31)) {
      return std::string(name) + "=" + std::string(value) +
             ": outside what NCCL can use (default 4194304 bytes)";
    }
  }
  return std::nullopt;
}

std::optional<std::string> CheckEnvCombination(const EnvView& env) {
  auto net = env.Get("NCCL_NET");
  auto disable = env.Get("NCCL_IB_DISABLE");
  if (net && disable && IEquals(Trim(*net), "IB")) {
    auto v = ToInt(Trim(*disable));
    if (v && *v != 0) {
      return "NCCL_NET=IB forces the IB network while NCCL_IB_DISABLE=" +
             std::string(Trim(*disable)) + " turns it off: NCCL can initialise no network";
    }
  }
  return std::nullopt;
}

const GpuArchitecture* FindGpuArchitecture(std::string_view line) {
  static const auto* compiled = [] {
    auto* v = new std::vector<std::unique_ptr<RE2>>();
    for (const auto& a : kArchitectures) v->push_back(std::make_unique<RE2>(a.patterns));
    return v;
  }();
  for (size_t i = 0; i < kArchitectures.size(); ++i) {
    if (RE2::PartialMatch(line, *(*compiled)[i])) return &kArchitectures[i];
  }
  return nullptr;
}

int NcclCudaMajor(std::string_view version_line) {
  size_t at = version_line.find("+cuda");
  if (at == std::string_view::npos) return -1;
  std::string_view rest = version_line.substr(at + 5);
  size_t n = 0;
  while (n < rest.size() && n < 3 && rest[n] >= '0' && rest[n] <= '9') ++n;
  auto v = ToInt(rest.substr(0, n));
  return v ? static_cast<int>(*v) : -1;
}

int DriverCudaMajor(long driver_version) {
  // cuDriverGetVersion: 1000 * major + 10 * minor. Anything below CUDA 9 is no value a driver of
  // an NCCL-capable GPU reports: a garbled line, not a fact.
  if (driver_version < 9000 || driver_version > 99999) return -1;
  return static_cast<int>(driver_version / 1000);
}

}  // namespace nccl_triage
