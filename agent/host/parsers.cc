#include "host/parsers.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>

namespace nccl_triage {
namespace {

bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\0' || c == '\v' || c == '\f';
}

// Splits text into lines, dropping a trailing '\r' from each (CRLF files parse like LF files).
std::vector<std::string_view> Lines(std::string_view text) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    out.push_back(line);
    start = end + 1;
  }
  return out;
}

std::vector<std::string_view> Fields(std::string_view s) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && IsSpace(s[i])) ++i;
    size_t j = i;
    while (j < s.size() && !IsSpace(s[j])) ++j;
    if (j > i) out.push_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

template <typename T>
std::optional<T> ParseUnsigned(std::string_view s, int base) {
  if (s.empty()) return std::nullopt;
  T v{};
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

std::string DecodeOctalEscapes(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size()) {
      std::string_view oct = s.substr(i + 1, 3);
      if (std::all_of(oct.begin(), oct.end(), [](char c) { return c >= '0' && c <= '7'; })) {
        out.push_back(
            static_cast<char>(((oct[0] - '0') << 6) | ((oct[1] - '0') << 3) | (oct[2] - '0')));
        i += 3;
        continue;
      }
    }
    out.push_back(s[i]);
  }
  return out;
}

bool IsVersionToken(std::string_view t) {
  if (t.empty() || !std::isdigit(static_cast<unsigned char>(t.front())) ||
      !std::isdigit(static_cast<unsigned char>(t.back()))) {
    return false;
  }
  bool dot = false;
  for (char c : t) {
    if (c == '.') {
      dot = true;
    } else if (!std::isdigit(static_cast<unsigned char>(c))) {
      return false;
    }
  }
  return dot;
}

}  // namespace

std::string_view TrimText(std::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

std::optional<uint32_t> ParseHexU32(std::string_view s) {
  s = TrimText(s);
  if (StartsWith(s, "0x") || StartsWith(s, "0X")) s.remove_prefix(2);
  return ParseUnsigned<uint32_t>(s, 16);
}

std::optional<uint64_t> ParseHexU64(std::string_view s) {
  s = TrimText(s);
  if (StartsWith(s, "0x") || StartsWith(s, "0X")) s.remove_prefix(2);
  return ParseUnsigned<uint64_t>(s, 16);
}

std::optional<uint64_t> ParseDecimalU64(std::string_view s) {
  return ParseUnsigned<uint64_t>(TrimText(s), 10);
}

std::optional<int> ParseDecimalInt(std::string_view s) {
  s = TrimText(s);
  if (s.empty()) return std::nullopt;
  int v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, 10);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<uint16_t> ParsePkey(std::string_view s) {
  s = TrimText(s);
  if (!StartsWith(s, "0x") && !StartsWith(s, "0X")) return std::nullopt;
  s.remove_prefix(2);
  return ParseUnsigned<uint16_t>(s, 16);
}

namespace {

bool IsHexDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isxdigit(static_cast<unsigned char>(c)) != 0;
  });
}

// "pci0000:00" (domain:bus of a root complex; VMD domains have five hex digits).
bool IsRootComplex(std::string_view s) {
  if (!StartsWith(s, "pci")) return false;
  s.remove_prefix(3);
  const size_t colon = s.find(':');
  return colon != std::string_view::npos && IsHexDigits(s.substr(0, colon)) &&
         IsHexDigits(s.substr(colon + 1));
}

// "0000:07:00.0": domain:bus:device.function.
bool IsBusAddress(std::string_view s) {
  const size_t c1 = s.find(':');
  const size_t c2 = s.rfind(':');
  const size_t dot = s.rfind('.');
  if (c1 == std::string_view::npos || c1 == c2 || dot == std::string_view::npos || dot < c2) {
    return false;
  }
  return IsHexDigits(s.substr(0, c1)) && IsHexDigits(s.substr(c1 + 1, c2 - c1 - 1)) &&
         IsHexDigits(s.substr(c2 + 1, dot - c2 - 1)) && IsHexDigits(s.substr(dot + 1));
}

}  // namespace

std::optional<std::vector<std::string>> ParsePciPath(std::string_view link_target,
                                                     std::string_view bdf) {
  std::vector<std::string> path;
  std::string_view rest = TrimText(link_target);
  while (!rest.empty()) {
    const size_t slash = rest.find('/');
    std::string_view part = rest.substr(0, slash);
    rest = slash == std::string_view::npos ? std::string_view() : rest.substr(slash + 1);
    if (part.empty()) continue;
    if (IsRootComplex(part)) {
      path.emplace_back(part);
    } else if (!path.empty()) {
      if (!IsBusAddress(part)) return std::nullopt;
      path.emplace_back(part);
    }
  }
  if (path.size() < 2 || path.back() != bdf) return std::nullopt;
  return path;
}

std::optional<double> ParseRate(std::string_view s) {
  s = TrimText(s);
  size_t unit = s.find(" Gb/sec");
  if (unit == std::string_view::npos || unit == 0) return std::nullopt;
  std::string_view num = s.substr(0, unit);
  double v = 0;
  auto [p, ec] = std::from_chars(num.data(), num.data() + num.size(), v);
  if (ec != std::errc() || p != num.data() + num.size() || !std::isfinite(v) || v < 0) {
    return std::nullopt;
  }
  return v;
}

std::optional<NumberedState> ParseNumberedState(std::string_view s) {
  s = TrimText(s);
  size_t colon = s.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  auto id = ParseDecimalInt(s.substr(0, colon));
  std::string_view name = TrimText(s.substr(colon + 1));
  if (!id || *id < 0 || name.empty()) return std::nullopt;
  for (char c : name) {
    if (!std::isprint(static_cast<unsigned char>(c))) return std::nullopt;
  }
  return NumberedState{*id, std::string(name)};
}

std::optional<std::string> ParseGid(std::string_view s) {
  s = TrimText(s);
  if (s.size() != 39) return std::nullopt;
  std::string out(s);
  for (size_t i = 0; i < out.size(); ++i) {
    char& c = out[i];
    if (i % 5 == 4) {
      if (c != ':') return std::nullopt;
    } else {
      if (!std::isxdigit(static_cast<unsigned char>(c))) return std::nullopt;
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
  }
  return out;
}

bool IsZeroGid(std::string_view gid) {
  return std::all_of(gid.begin(), gid.end(), [](char c) { return c == '0' || c == ':'; });
}

std::optional<Limit> ParseLimitValue(std::string_view s) {
  s = TrimText(s);
  if (s == "unlimited") return Limit{true, 0};
  auto v = ParseDecimalU64(s);
  if (!v) return std::nullopt;
  return Limit{false, *v};
}

std::map<std::string, LimitPair> ParseLimits(std::string_view text) {
  std::map<std::string, LimitPair> out;
  for (std::string_view line : Lines(text)) {
    // The name column holds spaces ("Max locked memory"), so find the first value-shaped field
    // and take the words before it as the name.
    auto fields = Fields(line);
    size_t first_value = fields.size();
    for (size_t i = 0; i < fields.size(); ++i) {
      if (ParseLimitValue(fields[i])) {
        first_value = i;
        break;
      }
    }
    if (first_value == 0 || first_value + 1 >= fields.size()) continue;
    auto soft = ParseLimitValue(fields[first_value]);
    auto hard = ParseLimitValue(fields[first_value + 1]);
    if (!soft || !hard) continue;
    std::string name;
    for (size_t i = 0; i < first_value; ++i) {
      if (!name.empty()) name += ' ';
      name += fields[i];
    }
    out[name] = LimitPair{*soft, *hard};
  }
  return out;
}

std::optional<std::string> ParseStatusField(std::string_view text, std::string_view key) {
  for (std::string_view line : Lines(text)) {
    if (line.size() > key.size() && StartsWith(line, key) && line[key.size()] == ':') {
      return std::string(TrimText(line.substr(key.size() + 1)));
    }
  }
  return std::nullopt;
}

std::optional<uint64_t> ParseStatusCapEff(std::string_view text) {
  auto v = ParseStatusField(text, "CapEff");
  if (!v || v->empty() || v->size() > 16) return std::nullopt;
  if (StartsWith(*v, "0x")) return std::nullopt;  // the kernel writes bare hex
  return ParseHexU64(*v);
}

std::optional<int> ParseStatusSeccomp(std::string_view text) {
  auto v = ParseStatusField(text, "Seccomp");
  if (!v) return std::nullopt;
  auto mode = ParseDecimalInt(*v);
  if (!mode || *mode < 0 || *mode > 2) return std::nullopt;
  return mode;
}

std::vector<MountEntry> ParseMountinfo(std::string_view text) {
  // 36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue
  std::vector<MountEntry> out;
  for (std::string_view line : Lines(text)) {
    auto f = Fields(line);
    size_t sep = f.size();
    for (size_t i = 6; i < f.size(); ++i) {
      if (f[i] == "-") {
        sep = i;
        break;
      }
    }
    // Need the 6 fixed fields before the separator and the fstype after it; source and super
    // options may be missing on a truncated last line, which still tells type and mount point.
    if (sep == f.size() || sep + 1 >= f.size()) continue;
    if (!ParseDecimalU64(f[0]) || !ParseDecimalU64(f[1])) continue;
    if (f[4].empty() || f[4].front() != '/') continue;
    MountEntry e;
    e.mount_point = DecodeOctalEscapes(f[4]);
    e.fs_type = std::string(f[sep + 1]);
    e.source = sep + 2 < f.size() ? DecodeOctalEscapes(f[sep + 2]) : std::string();
    e.super_options = sep + 3 < f.size() ? std::string(f[sep + 3]) : std::string();
    out.push_back(std::move(e));
  }
  return out;
}

std::optional<uint64_t> ParseTmpfsSizeOption(std::string_view opts) {
  size_t start = 0;
  while (start <= opts.size()) {
    size_t end = opts.find(',', start);
    if (end == std::string_view::npos) end = opts.size();
    std::string_view opt = opts.substr(start, end - start);
    if (StartsWith(opt, "size=")) {
      std::string_view v = opt.substr(5);
      uint64_t mult = 1;
      if (!v.empty()) {
        switch (std::tolower(static_cast<unsigned char>(v.back()))) {
          case 'k':
            mult = 1ull << 10;
            break;
          case 'm':
            mult = 1ull << 20;
            break;
          case 'g':
            mult = 1ull << 30;
            break;
          case 't':
            mult = 1ull << 40;
            break;
          case 'p':
            mult = 1ull << 50;
            break;
          case 'e':
            mult = 1ull << 60;
            break;
          default:
            break;
        }
        if (mult != 1) v.remove_suffix(1);
      }
      auto n = ParseUnsigned<uint64_t>(v, 10);
      if (!n || (*n != 0 && mult > UINT64_MAX / *n)) return std::nullopt;
      return *n * mult;
    }
    start = end + 1;
  }
  return std::nullopt;
}

std::optional<bool> ParseCpuinfoHypervisor(std::string_view text) {
  bool seen = false;
  for (std::string_view line : Lines(text)) {
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view key = TrimText(line.substr(0, colon));
    if (key != "flags" && key != "Features") continue;
    seen = true;
    for (std::string_view flag : Fields(line.substr(colon + 1))) {
      if (flag == "hypervisor") return true;
    }
  }
  if (!seen) return std::nullopt;
  return false;
}

std::optional<uint64_t> ParseProcStatBtime(std::string_view text) {
  for (std::string_view line : Lines(text)) {
    auto f = Fields(line);
    if (f.size() == 2 && f[0] == "btime") return ParseDecimalU64(f[1]);
  }
  return std::nullopt;
}

std::optional<uint64_t> ParseMeminfoTotal(std::string_view text) {
  for (std::string_view line : Lines(text)) {
    if (!StartsWith(line, "MemTotal:")) continue;
    auto f = Fields(line.substr(9));
    if (f.size() != 2 || f[1] != "kB") return std::nullopt;
    auto kb = ParseDecimalU64(f[0]);
    if (!kb || *kb > UINT64_MAX / 1024) return std::nullopt;
    return *kb * 1024;
  }
  return std::nullopt;
}

std::optional<std::string> ParseNvidiaVersion(std::string_view text) {
  // NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.129.03  Thu Oct 19 18:56:32 UTC 2023
  // NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.54.15  Release Build  (...)
  for (std::string_view line : Lines(text)) {
    if (!StartsWith(line, "NVRM version:")) continue;
    std::string_view rest = line.substr(13);
    size_t module = rest.find("Kernel Module");
    if (module == std::string_view::npos) return std::nullopt;
    for (std::string_view t : Fields(rest.substr(module))) {
      if (IsVersionToken(t)) return std::string(t);
    }
    return std::nullopt;
  }
  return std::nullopt;
}

std::optional<NvidiaGpuInformation> ParseNvidiaGpuInformation(std::string_view text) {
  NvidiaGpuInformation info;
  bool any = false;
  for (std::string_view line : Lines(text)) {
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view key = TrimText(line.substr(0, colon));
    std::string_view value = TrimText(line.substr(colon + 1));
    if (key == "Model") {
      info.model = std::string(value);
      any = !value.empty();
    } else if (key == "GPU UUID") {
      info.uuid = std::string(value);
    } else if (key == "Bus Location") {
      info.bus_location = std::string(value);
    } else if (key == "Device Minor") {
      info.minor = ParseDecimalInt(value);
    }
  }
  if (!any) return std::nullopt;
  return info;
}

std::optional<std::string> ParseNamespaceLink(std::string_view s) {
  s = TrimText(s);
  size_t open = s.find(":[");
  if (open == std::string_view::npos || open == 0 || s.back() != ']') return std::nullopt;
  std::string_view inode = s.substr(open + 2, s.size() - open - 3);
  if (!ParseUnsigned<uint64_t>(inode, 10)) return std::nullopt;
  return std::string(s);
}

bool IsUverbsDevicePath(std::string_view target) {
  constexpr std::string_view kPrefix = "/dev/infiniband/uverbs";
  if (!StartsWith(target, kPrefix) || target.size() == kPrefix.size()) return false;
  return ParseUnsigned<uint32_t>(target.substr(kPrefix.size()), 10).has_value();
}

bool IsNvidiaGpuDevicePath(std::string_view target) {
  constexpr std::string_view kPrefix = "/dev/nvidia";
  if (!StartsWith(target, kPrefix) || target.size() == kPrefix.size()) return false;
  return ParseUnsigned<uint32_t>(target.substr(kPrefix.size()), 10).has_value();
}

std::string UnparseableError(std::string_view text) {
  std::string shown(TrimText(text).substr(0, 40));
  for (char& c : shown) {
    if (!std::isprint(static_cast<unsigned char>(c))) c = '?';
  }
  return "unparseable: '" + shown + "'";
}

}  // namespace nccl_triage
