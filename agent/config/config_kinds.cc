#include "config/config_kinds.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <sstream>

namespace nccl_triage::config_internal {

Status ErrorAt(std::string_view file, const YAML::Mark& mark, const std::string& what) {
  const int line = mark.line >= 0 ? mark.line + 1 : 1;
  return InvalidArgument(std::string(file) + ":" + std::to_string(line) + ": " + what);
}

Status ValueReader::TypeError(const YAML::Node& v, std::string_view expected) const {
  std::string got;
  if (v.IsNull()) {
    got = "null";
  } else if (v.IsScalar()) {
    got = "'" + v.Scalar() + "'";
  } else if (v.IsSequence()) {
    got = "a list";
  } else {
    got = "a mapping";
  }
  return Error(v.IsNull() ? key_mark_ : v.Mark(),
               std::string(key_) + ": expected " + std::string(expected) + ", got " + got);
}

Status ValueReader::RangeCheck(const YAML::Node& v, double value) const {
  if (value < min_ || value > max_) {
    std::ostringstream os;
    os << key_ << ": " << v.Scalar() << " is out of range [" << min_ << ", " << max_ << "]";
    return Error(v.Mark(), os.str());
  }
  return Status::Ok();
}

bool IsPlainScalar(const YAML::Node& v) { return v.IsScalar() && v.Tag() != "!"; }

std::optional<int64_t> ParseInteger(std::string_view text) {
  bool negative = false;
  if (!text.empty() && (text[0] == '-' || text[0] == '+')) {
    negative = text[0] == '-';
    text.remove_prefix(1);
  }
  int base = 10;
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    base = 16;
    text.remove_prefix(2);
  }
  if (text.empty()) return std::nullopt;
  uint64_t v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v, base);
  if (ec != std::errc() || ptr != text.data() + text.size()) return std::nullopt;
  if (v > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
  return negative ? -static_cast<int64_t>(v) : static_cast<int64_t>(v);
}

bool IsVersion(std::string_view t) {
  if (t.empty() || t.front() == '.' || t.back() == '.') return false;
  bool dot_before = true;
  for (char c : t) {
    if (c == '.') {
      if (dot_before) return false;
      dot_before = true;
    } else if (c >= '0' && c <= '9') {
      dot_before = false;
    } else {
      return false;
    }
  }
  return true;
}

bool IsListen(std::string_view t) {
  const size_t colon = t.rfind(':');
  if (colon == std::string_view::npos || colon + 1 >= t.size() || t.size() - colon - 1 > 5) {
    return false;
  }
  for (char c : t.substr(colon + 1)) {
    if (c < '0' || c > '9') return false;
  }
  std::string_view host = t.substr(0, colon);
  if (!host.empty() && host.front() == '[') return host.back() == ']';
  return host.find_first_of(":[]") == std::string_view::npos;
}

namespace {

bool IsLabelName(std::string_view n, size_t max) {
  if (n.empty() || n.size() > max) return false;
  auto alnum = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
  };
  if (!alnum(n.front()) || !alnum(n.back())) return false;
  return std::all_of(n.begin(), n.end(),
                     [&](char c) { return alnum(c) || c == '-' || c == '_' || c == '.'; });
}

}  // namespace

bool IsLabelKey(std::string_view key) {
  const size_t slash = key.find('/');
  if (slash == std::string_view::npos) return IsLabelName(key, 63);
  return IsLabelName(key.substr(0, slash), 253) && IsLabelName(key.substr(slash + 1), 63);
}

bool IsLabelValue(std::string_view value) { return value.empty() || IsLabelName(value, 63); }

std::string FormatDouble(double d) {
  std::array<char, 32> buf{};
  auto [end, ec] = std::to_chars(buf.data(), buf.data() + buf.size(), d);
  return ec == std::errc() ? std::string(buf.data(), end) : "0";
}

std::string HexPkey(uint16_t v) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s = "0x0000";
  for (int i = 0; i < 4; ++i) s[static_cast<size_t>(5 - i)] = kHex[(v >> (4 * i)) & 0xf];
  return s;
}

Json JsonNumber(double v) {
  const bool integral = std::trunc(v) == v && std::fabs(v) < 9e15;
  return integral ? Json(static_cast<int64_t>(v)) : Json(v);
}

Status ReadStrings(const ValueReader& in, const YAML::Node& v, std::vector<std::string>& out) {
  out.clear();
  if (v.IsNull()) return Status::Ok();
  if (!v.IsSequence()) return in.TypeError(v, "a list of strings");
  for (const auto& item : v) {
    if (!item.IsScalar()) return in.TypeError(item, "a string");
    out.push_back(item.Scalar());
  }
  return Status::Ok();
}

}  // namespace nccl_triage::config_internal
