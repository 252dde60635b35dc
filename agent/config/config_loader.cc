#include "config/config_loader.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "base/byte_size.h"
#include "base/files.h"
#include "config/config_schema.h"
#include "core/catalogue.h"
#include "core/env_names.h"
#include "core/rail_selection.h"

namespace nccl_triage {
namespace {

using config_internal::KeyKind;
using config_internal::KeySpec;
using config_internal::KeySpecs;

// Inputs beyond these bounds are not configuration files; refusing them early keeps yaml-cpp's
// recursive parser away from pathological nesting.
constexpr size_t kMaxConfigBytes = 1 << 20;
constexpr int kMaxFlowNesting = 32;
constexpr std::string_view kPoolsKey = "pools";

class Loader {
 public:
  explicit Loader(std::string_view name) : name_(name) {}

  Status Error(const YAML::Mark& mark, const std::string& what) const {
    const int line = mark.line >= 0 ? mark.line + 1 : 1;
    return InvalidArgument(std::string(name_) + ":" + std::to_string(line) + ": " + what);
  }

  Status Load(const YAML::Node& root, Config& config) {
    if (!root.IsDefined() || root.IsNull()) return Status::Ok();
    if (!root.IsMap()) return Error(root.Mark(), "expected a mapping of sections at the top level");
    if (Status s = Walk(root, "", config); !s.ok()) return s;
    return LoadPools(config);  // after the whole file: a pool's expect starts from the top-level one
  }

 private:
  // Descends through mappings until the dotted path names a key.
  Status Walk(const YAML::Node& map, const std::string& prefix, Config& config) {
    std::set<std::string> seen;
    for (auto it = map.begin(); it != map.end(); ++it) {
      const YAML::Node k = it->first;  // copies: the iterator yields a temporary pair
      const YAML::Node v = it->second;
      if (!k.IsScalar()) return Error(k.Mark(), "keys must be plain names");
      const std::string key = prefix.empty() ? k.Scalar() : prefix + "." + k.Scalar();
      if (!seen.insert(k.Scalar()).second) return Error(k.Mark(), "duplicate key '" + key + "'");
      if (key == kPoolsKey) {
        pools_ = v;
        continue;
      }
      if (const KeySpec* spec = FindSpec(key)) {
        if (Status s = Set(*spec, k, v, config); !s.ok()) return s;
        continue;
      }
      if (IsSection(key)) {
        if (v.IsNull()) continue;  // an empty section keeps its defaults
        if (!v.IsMap()) return Error(v.Mark(), "'" + key + "' is a section: expected a mapping");
        if (Status s = Walk(v, key, config); !s.ok()) return s;
        continue;
      }
      return Error(k.Mark(), "unknown key '" + key + "'" + Suggestion(key));
    }
    return Status::Ok();
  }

  // `pools`: a list of {name, selector, expect}; each expect is walked like the top-level one,
  // over a copy of it.
  Status LoadPools(Config& config) {
    config.pools.clear();
    if (!pools_.IsDefined() || pools_.IsNull()) return Status::Ok();
    if (!pools_.IsSequence()) {
      return Error(pools_.Mark(), "pools: expected a list of {name, selector, expect}");
    }
    std::set<std::string> names;
    for (size_t i = 0; i < pools_.size(); ++i) {
      const YAML::Node item = pools_[i];
      const std::string where = "pools[" + std::to_string(i) + "]";
      if (!item.IsMap()) return Error(item.Mark(), where + ": expected a mapping {name, selector, expect}");
      PoolConfig pool;
      pool.expect = config.expect;
      YAML::Node expect;
      std::set<std::string> seen;
      for (auto it = item.begin(); it != item.end(); ++it) {
        const YAML::Node k = it->first;
        const YAML::Node v = it->second;
        if (!k.IsScalar()) return Error(k.Mark(), "keys must be plain names");
        const std::string& key = k.Scalar();
        if (!seen.insert(key).second) return Error(k.Mark(), "duplicate key '" + where + "." + key + "'");
        if (key == "name") {
          if (!v.IsScalar() || !IsPoolName(v.Scalar())) {
            return Error(v.IsNull() ? k.Mark() : v.Mark(),
                         where + ".name: expected 1-63 letters, digits, '.', '_' or '-'");
          }
          pool.name = v.Scalar();
        } else if (key == "selector") {
          if (!v.IsMap()) {
            return Error(v.IsNull() ? k.Mark() : v.Mark(),
                         where + ".selector: expected a mapping of node labels to values");
          }
          if (v.size() == 0) {
            return Error(v.Mark(), where + ".selector: empty; name at least one node label (a " +
                                       "pool for every node is the top-level expect)");
          }
          for (auto l = v.begin(); l != v.end(); ++l) {
            if (!l->first.IsScalar() || !l->second.IsScalar()) {
              return Error(l->first.Mark(), where + ".selector: labels and values are strings");
            }
            if (!pool.selector.emplace(l->first.Scalar(), l->second.Scalar()).second) {
              return Error(l->first.Mark(),
                           where + ".selector: duplicate label '" + l->first.Scalar() + "'");
            }
          }
        } else if (key == "expect") {
          if (!v.IsNull() && !v.IsMap()) return Error(v.Mark(), where + ".expect: expected a mapping");
          expect = v;
        } else {
          return Error(k.Mark(), "unknown key '" + where + "." + key +
                                     "' (a pool has name, selector and expect)");
        }
      }
      if (pool.name.empty()) return Error(item.Mark(), where + ": name is required");
      if (pool.selector.empty()) return Error(item.Mark(), where + ": selector is required");
      if (!names.insert(pool.name).second) {
        return Error(item.Mark(), where + ": duplicate pool name '" + pool.name + "'");
      }
      if (expect.IsMap()) {
        Config scratch;
        scratch.expect = config.expect;
        if (Status s = Walk(expect, "expect", scratch); !s.ok()) return s;
        pool.expect = scratch.expect;
      }
      config.pools.push_back(std::move(pool));
    }
    return Status::Ok();
  }

  static bool IsPoolName(std::string_view n) {
    return !n.empty() && n.size() <= 63 && std::all_of(n.begin(), n.end(), [](char c) {
      return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
             c == '.' || c == '_' || c == '-';
    });
  }

  static const KeySpec* FindSpec(const std::string& key) {
    for (const auto& s : KeySpecs()) {
      if (s.info.key == key) return &s;
    }
    return nullptr;
  }

  static bool IsSection(const std::string& key) {
    for (const auto& s : KeySpecs()) {
      if (s.info.key.size() > key.size() && s.info.key.substr(0, key.size()) == key &&
          s.info.key[key.size()] == '.') {
        return true;
      }
    }
    return false;
  }

  static size_t Distance(std::string_view a, std::string_view b) {
    std::vector<size_t> row(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
      size_t diag = row[0];
      row[0] = i;
      for (size_t j = 1; j <= b.size(); ++j) {
        const size_t up = row[j];
        row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
        diag = up;
      }
    }
    return row[b.size()];
  }

  static std::string Suggestion(const std::string& key) {
    std::string_view best;
    size_t best_d = 4;  // only close misspellings
    for (const auto& s : KeySpecs()) {
      const size_t d = Distance(key, s.info.key);
      if (d < best_d) {
        best_d = d;
        best = s.info.key;
      }
    }
    return best.empty() ? "" : " (did you mean '" + std::string(best) + "'?)";
  }

  // A scalar written without quotes; quoted scalars are strings, never numbers or booleans.
  static bool IsPlainScalar(const YAML::Node& v) { return v.IsScalar() && v.Tag() != "!"; }

  // `v` is described; the error points at `at_` (the value, or its key when the value is an
  // implicit null without a position of its own).
  Status TypeError(const KeySpec& spec, const YAML::Node& v, std::string_view expected) const {
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
    return Error(v.IsNull() ? at_ : v.Mark(), std::string(spec.info.key) + ": expected " +
                                                  std::string(expected) + ", got " + got);
  }

  Status RangeCheck(const KeySpec& spec, const YAML::Node& v, double value) const {
    if (value < spec.min || value > spec.max) {
      std::ostringstream os;
      os << spec.info.key << ": " << v.Scalar() << " is out of range [" << spec.min << ", "
         << spec.max << "]";
      return Error(v.Mark(), os.str());
    }
    return Status::Ok();
  }

  static std::optional<int64_t> ParseInteger(std::string_view text) {
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

  static bool IsVersion(std::string_view t) {
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

  static bool IsListen(std::string_view t) {
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

  Status Strings(const KeySpec& spec, const YAML::Node& v, std::vector<std::string>& out) const {
    out.clear();
    if (v.IsNull()) return Status::Ok();
    if (!v.IsSequence()) return TypeError(spec, v, "a list of strings");
    for (const auto& item : v) {
      if (!item.IsScalar()) return TypeError(spec, item, "a string");
      out.push_back(item.Scalar());
    }
    return Status::Ok();
  }

  // A node label's key as Kubernetes takes it: an optional DNS-subdomain prefix and '/', then a
  // name of at most 63 characters, alphanumeric at both ends, with '-', '_' and '.' inside.
  // A label value is such a name too, or empty.
  static bool IsLabelName(std::string_view n, size_t max) {
    if (n.empty() || n.size() > max) return false;
    auto alnum = [](char c) {
      return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    };
    if (!alnum(n.front()) || !alnum(n.back())) return false;
    return std::all_of(n.begin(), n.end(),
                       [&](char c) { return alnum(c) || c == '-' || c == '_' || c == '.'; });
  }
  static bool IsLabelKey(std::string_view key) {
    const size_t slash = key.find('/');
    if (slash == std::string_view::npos) return IsLabelName(key, 63);
    return IsLabelName(key.substr(0, slash), 253) && IsLabelName(key.substr(slash + 1), 63);
  }

  // A mapping of node labels to values (a nodeSelector); null is empty.
  Status SetLabelMap(const KeySpec& spec, const YAML::Node& v,
                     std::map<std::string, std::string>& out) const {
    out.clear();
    if (v.IsNull()) return Status::Ok();
    if (!v.IsMap()) return TypeError(spec, v, "a mapping of node labels to values");
    for (auto it = v.begin(); it != v.end(); ++it) {
      const YAML::Node label = it->first;
      const YAML::Node value = it->second;
      if (!label.IsScalar() || !IsLabelKey(label.Scalar())) {
        return Error(label.Mark(), std::string(spec.info.key) + ": '" +
                                       (label.IsScalar() ? label.Scalar() : std::string("?")) +
                                       "' is not a node label key");
      }
      if (!value.IsScalar() || (!value.Scalar().empty() && !IsLabelName(value.Scalar(), 63))) {
        return Error(value.IsScalar() ? value.Mark() : label.Mark(),
                     std::string(spec.info.key) + "." + label.Scalar() +
                         ": expected a label value (at most 63 letters, digits, '-', '_' or "
                         "'.', alphanumeric at both ends)");
      }
      if (!out.emplace(label.Scalar(), value.Scalar()).second) {
        return Error(label.Mark(),
                     std::string(spec.info.key) + ": duplicate label '" + label.Scalar() + "'");
      }
    }
    return Status::Ok();
  }

  // An optional key set to null goes back to unset.
  static bool ResetIfOptional(KeyKind kind, void* field) {
    switch (kind) {
      case KeyKind::kOptInt:
        static_cast<std::optional<int>*>(field)->reset();
        return true;
      case KeyKind::kOptBytes:
        static_cast<std::optional<uint64_t>*>(field)->reset();
        return true;
      case KeyKind::kOptDouble:
        static_cast<std::optional<double>*>(field)->reset();
        return true;
      case KeyKind::kOptPkey:
        static_cast<std::optional<uint16_t>*>(field)->reset();
        return true;
      case KeyKind::kOptString:
      case KeyKind::kOptVersion:
      case KeyKind::kOptRails:
        static_cast<std::optional<std::string>*>(field)->reset();
        return true;
      default:
        return false;
    }
  }

  // kInt, kOptInt, kUint and kOptPkey: a plain integer in range (a PKey loses its membership bit).
  Status SetInteger(const KeySpec& spec, const YAML::Node& v, void* field) {
    const bool is_uint = spec.kind == KeyKind::kUint;
    const std::string_view expected = spec.kind == KeyKind::kOptPkey ? "a PKey (0x0000-0xffff)"
                                      : is_uint                      ? "a non-negative integer"
                                                                     : "an integer";
    // A PKey may be quoted: ibstat and the sysfs pkeys files print it as a string "0x8001".
    const bool quoted_pkey = spec.kind == KeyKind::kOptPkey && v.IsScalar() &&
                             v.Scalar().size() > 2 && v.Scalar().size() <= 6 &&
                             (v.Scalar().starts_with("0x") || v.Scalar().starts_with("0X"));
    if (!IsPlainScalar(v) && !quoted_pkey) return TypeError(spec, v, expected);
    auto n = ParseInteger(v.Scalar());
    if (!n || (is_uint && *n < 0)) return TypeError(spec, v, expected);
    if (spec.kind == KeyKind::kOptPkey) {
      if (*n < 0 || *n > 0xffff) return TypeError(spec, v, expected);
      *static_cast<std::optional<uint16_t>*>(field) = static_cast<uint16_t>(*n & 0x7fff);
      return Status::Ok();
    }
    if (Status s = RangeCheck(spec, v, static_cast<double>(*n)); !s.ok()) return s;
    if (is_uint) {
      *static_cast<uint64_t*>(field) = static_cast<uint64_t>(*n);
    } else {
      if (*n < INT32_MIN || *n > INT32_MAX) return TypeError(spec, v, expected);
      if (spec.kind == KeyKind::kInt) {
        *static_cast<int*>(field) = static_cast<int>(*n);
      } else {
        *static_cast<std::optional<int>*>(field) = static_cast<int>(*n);
      }
    }
    return Status::Ok();
  }

  // A list of strings, each of which `valid` accepts; `what` ends the error for one it refuses.
  template <typename Valid>
  Status SetCheckedList(const KeySpec& spec, const YAML::Node& v, void* field, Valid valid,
                        std::string_view what) {
    auto& items = *static_cast<std::vector<std::string>*>(field);
    if (Status s = Strings(spec, v, items); !s.ok()) return s;
    size_t i = 0;
    for (const auto& item : v) {
      if (!valid(items[i])) {
        return Error(item.Mark(), std::string(spec.info.key) + ": '" + items[i] + "' " +
                                      std::string(what));
      }
      ++i;
    }
    return Status::Ok();
  }

  Status Set(const KeySpec& spec, const YAML::Node& key, const YAML::Node& v, Config& config) {
    void* field = spec.field(config);
    at_ = key.Mark();
    if (v.IsNull() && ResetIfOptional(spec.kind, field)) return Status::Ok();
    switch (spec.kind) {
      case KeyKind::kInt:
      case KeyKind::kOptInt:
      case KeyKind::kUint:
      case KeyKind::kOptPkey:
        return SetInteger(spec, v, field);
      case KeyKind::kBytes:
      case KeyKind::kOptBytes: {
        constexpr std::string_view kExpected = "a size in bytes (an integer, or e.g. 64Mi, 1Gi)";
        if (!v.IsScalar()) return TypeError(spec, v, kExpected);
        auto n = ParseByteSize(v.Scalar());
        if (!n) return TypeError(spec, v, kExpected);
        if (Status s = RangeCheck(spec, v, static_cast<double>(*n)); !s.ok()) return s;
        if (spec.kind == KeyKind::kBytes) {
          *static_cast<uint64_t*>(field) = *n;
        } else {
          *static_cast<std::optional<uint64_t>*>(field) = *n;
        }
        return Status::Ok();
      }
      case KeyKind::kDouble:
      case KeyKind::kOptDouble: {
        if (!IsPlainScalar(v)) return TypeError(spec, v, "a number");
        const std::string& t = v.Scalar();
        double d = 0;
        auto [ptr, ec] = std::from_chars(t.data(), t.data() + t.size(), d);
        if (ec != std::errc() || ptr != t.data() + t.size() || !std::isfinite(d)) {
          return TypeError(spec, v, "a number");
        }
        if (Status s = RangeCheck(spec, v, d); !s.ok()) return s;
        if (spec.kind == KeyKind::kDouble) {
          *static_cast<double*>(field) = d;
        } else {
          *static_cast<std::optional<double>*>(field) = d;
        }
        return Status::Ok();
      }
      case KeyKind::kBool: {
        if (!IsPlainScalar(v)) return TypeError(spec, v, "true or false");
        const std::string& t = v.Scalar();
        if (t == "true" || t == "True" || t == "TRUE") {
          *static_cast<bool*>(field) = true;
        } else if (t == "false" || t == "False" || t == "FALSE") {
          *static_cast<bool*>(field) = false;
        } else {
          return TypeError(spec, v, "true or false");
        }
        return Status::Ok();
      }
      case KeyKind::kString:
      case KeyKind::kOptString:
      case KeyKind::kListen:
      case KeyKind::kOptVersion:
      case KeyKind::kHttpAuth: {
        const std::string_view expected = spec.kind == KeyKind::kListen ? "host:port"
                                          : spec.kind == KeyKind::kOptVersion
                                              ? "a version such as \"550.54\""
                                          : spec.kind == KeyKind::kHttpAuth ? "kubernetes or none"
                                                                            : "a string";
        if (!v.IsScalar()) return TypeError(spec, v, expected);
        const std::string& t = v.Scalar();
        if (spec.kind == KeyKind::kListen && !IsListen(t)) return TypeError(spec, v, expected);
        if (spec.kind == KeyKind::kOptVersion && !IsVersion(t)) {
          return TypeError(spec, v, expected);
        }
        if (spec.kind == KeyKind::kHttpAuth && t != kHttpAuthKubernetes && t != kHttpAuthNone) {
          return TypeError(spec, v, expected);
        }
        if (spec.kind == KeyKind::kString || spec.kind == KeyKind::kListen ||
            spec.kind == KeyKind::kHttpAuth) {
          *static_cast<std::string*>(field) = t;
        } else {
          *static_cast<std::optional<std::string>*>(field) = t;
        }
        return Status::Ok();
      }
      case KeyKind::kOptRails: {
        if (!v.IsScalar()) {
          return TypeError(spec, v, "all, a number of rails or a list such as \"0,3\"");
        }
        auto selection = ParseRailSelection(v.Scalar());
        if (!selection.ok()) {
          return Error(v.Mark(), std::string(spec.info.key) + ": " + selection.status().message());
        }
        *static_cast<std::optional<std::string>*>(field) = v.Scalar();
        return Status::Ok();
      }
      case KeyKind::kRemediationMode: {
        constexpr std::string_view kModes = "off, dry-run, taint or cordon";
        auto mode = v.IsScalar() ? FromString<RemediationMode>(v.Scalar()) : std::nullopt;
        if (!mode) return TypeError(spec, v, kModes);
        *static_cast<RemediationMode*>(field) = *mode;
        return Status::Ok();
      }
      case KeyKind::kStringList:
        return Strings(spec, v, *static_cast<std::vector<std::string>*>(field));
      case KeyKind::kLabelMap:
        return SetLabelMap(spec, v, *static_cast<std::map<std::string, std::string>*>(field));
      case KeyKind::kNcclEnvNames:
        return SetCheckedList(spec, v, field, IsNcclVariableName,
                              "is not an NCCL_* variable name (only NCCL_ followed by upper-case "
                              "letters, digits and '_' reach the probe)");
      case KeyKind::kCheckIds:
        return SetCheckedList(
            spec, v, field,
            [](const std::string& id) {
              const CauseInfo* info = FindCause(id);
              return info != nullptr && (info->kind == CauseKind::kHostCheck ||
                                         info->kind == CauseKind::kWorkloadCheck);
            },
            "is not a check id (see nccl-triage check output)");
    }
    return Error(v.Mark(), "internal: unhandled key kind");
  }

  std::string_view name_;
  YAML::Mark at_;      // the key being set, for errors about a value without a position
  YAML::Node pools_;   // the top-level `pools`, loaded last
};

// The 1-based line of the first byte sequence that is not UTF-8 text (invalid UTF-8 or a control
// character), or 0 when the text is valid.
// YAML is Unicode text; rejecting other bytes up front keeps every loaded string printable and
// every dump loadable.
size_t FirstInvalidUtf8Line(std::string_view text) {
  size_t line = 1;
  for (size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '\n') ++line;
    size_t len = 0;
    uint32_t cp = 0;
    if (c < 0x80) {
      // C0 controls other than tab and line ends (NUL included) are not YAML text either.
      if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f) return line;
      ++i;
      continue;
    } else if ((c & 0xe0) == 0xc0) {
      len = 2;
      cp = c & 0x1f;
    } else if ((c & 0xf0) == 0xe0) {
      len = 3;
      cp = c & 0x0f;
    } else if ((c & 0xf8) == 0xf0) {
      len = 4;
      cp = c & 0x07;
    } else {
      return line;
    }
    if (i + len > text.size()) return line;
    for (size_t k = 1; k < len; ++k) {
      const auto cc = static_cast<unsigned char>(text[i + k]);
      if ((cc & 0xc0) != 0x80) return line;
      cp = (cp << 6) | (cc & 0x3f);
    }
    // Overlong forms, surrogates and values beyond Unicode.
    if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
        (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff) {
      return line;
    }
    i += len;
  }
  return 0;
}

// What the pre-scan below found wrong, at which line.
struct PrescanIssue {
  size_t line = 0;
  std::string what;
};

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\r'; }

// A light lexical pass over the text before yaml-cpp sees it. yaml-cpp 0.7 loops forever on a
// ',' that starts a token in block context (",", "--- ,", "- ,", "&a ,") and recurses once per
// level of flow nesting; both are rejected here. The pass tracks quotes, comments, flow nesting
// and block scalars well enough to stay clear of valid configuration files (a comma inside a plain
// scalar such as "^lo,docker" is fine).
std::optional<PrescanIssue> Prescan(std::string_view text) {
  int depth = 0;
  char quote = 0;
  int block_indent = -1;  // inside a block scalar whose header line had this indentation
  size_t line = 0;
  size_t pos = 0;
  while (pos <= text.size()) {
    ++line;
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view ln = text.substr(pos, end - pos);
    pos = end + 1;
    size_t indent = 0;
    while (indent < ln.size() && ln[indent] == ' ') ++indent;
    const bool blank = std::all_of(ln.begin(), ln.end(), IsSpace);
    if (block_indent >= 0 && quote == 0) {
      if (blank || static_cast<int>(indent) > block_indent) continue;
      block_indent = -1;
    }
    char prev = '\n';     // the previous character on this line; '\n' at the line's start
    bool closed = false;  // the last non-space character closed a quoted or flow node at depth 0
    size_t content_end = ln.size();
    for (size_t k = 0; k < ln.size(); ++k) {
      const char c = ln[k];
      if (quote != 0) {
        if (quote == '"' && c == '\\') {
          ++k;
        } else if (c == quote) {
          quote = 0;
          closed = depth == 0;
        }
        prev = 'x';
        continue;
      }
      const bool after_space = prev == '\n' || IsSpace(prev);
      const bool token_start = after_space || prev == '[' || prev == '{' || prev == ',';
      if (c == '#' && after_space) {
        content_end = k;
        break;
      }
      if (c == ',' && depth == 0) {
        // A ',' outside flow collections is part of a plain scalar ("^lo,docker") unless it
        // follows a complete node, sits in an anchor or tag, or starts a token after nothing, an
        // indicator, an anchor, a tag or a key: then it would start a node, which yaml-cpp
        // cannot handle.
        size_t t_end = k;
        while (t_end > 0 && IsSpace(ln[t_end - 1])) --t_end;
        size_t t_start = t_end;
        while (t_start > 0 && !IsSpace(ln[t_start - 1])) --t_start;
        const std::string_view token = ln.substr(t_start, t_end - t_start);
        const bool in_token = !after_space && !token.empty();
        const bool bad =
            closed || (in_token && (token.front() == '&' || token.front() == '!')) ||
            (after_space && (token.empty() || token == "-" || token == "?" || token == ":" ||
                             token == "---" || token == "..." || token.front() == '&' ||
                             token.front() == '!' || token.back() == ':' || token.back() == '"' ||
                             token.back() == '\'' || token.back() == ']' || token.back() == '}'));
        if (bad) {
          return PrescanIssue{line, "invalid YAML: ',' cannot start a value outside [ ] or { }"};
        }
      } else if ((c == '"' || c == '\'') && (token_start || prev == ':')) {
        quote = c;
      } else if ((c == '[' || c == '{') && (token_start || prev == ':')) {
        if (++depth > kMaxFlowNesting) {
          return PrescanIssue{line, "nested deeper than " + std::to_string(kMaxFlowNesting) +
                                        " levels, not a configuration file"};
        }
      } else if ((c == ']' || c == '}') && depth > 0) {
        closed = --depth == 0;
        prev = c;
        continue;
      }
      if (!IsSpace(c)) closed = false;
      prev = c;
    }
    // A block scalar header ("|", ">-", "|2") ends the line: what follows, more indented, is
    // literal text.
    if (quote == 0 && depth == 0) {
      std::string_view content = ln.substr(0, content_end);
      while (!content.empty() && IsSpace(content.back())) content.remove_suffix(1);
      const size_t last_space = content.find_last_of(" \t");
      const std::string_view last =
          content.substr(last_space == std::string_view::npos ? 0 : last_space + 1);
      if (!last.empty() && (last.front() == '|' || last.front() == '>') &&
          last.find_first_not_of("|>+-0123456789") == std::string_view::npos) {
        block_indent = static_cast<int>(indent);
      }
    }
    if (end == text.size()) break;
  }
  return std::nullopt;
}

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

void EmitValue(YAML::Emitter& out, const KeySpec& spec, Config& config) {
  void* field = spec.field(config);
  switch (spec.kind) {
    case KeyKind::kInt:
      out << *static_cast<int*>(field);
      return;
    case KeyKind::kOptInt: {
      const auto& o = *static_cast<std::optional<int>*>(field);
      if (o)
        out << *o;
      else
        out << YAML::Null;
      return;
    }
    case KeyKind::kUint:
    case KeyKind::kBytes:
      out << *static_cast<uint64_t*>(field);
      return;
    case KeyKind::kOptBytes: {
      const auto& o = *static_cast<std::optional<uint64_t>*>(field);
      if (o)
        out << *o;
      else
        out << YAML::Null;
      return;
    }
    case KeyKind::kDouble:
      out << FormatDouble(*static_cast<double*>(field));
      return;
    case KeyKind::kOptDouble: {
      const auto& o = *static_cast<std::optional<double>*>(field);
      if (o)
        out << FormatDouble(*o);
      else
        out << YAML::Null;
      return;
    }
    case KeyKind::kBool:
      out << (*static_cast<bool*>(field) ? "true" : "false");
      return;
    case KeyKind::kString:
    case KeyKind::kListen:
    case KeyKind::kHttpAuth:
      out << YAML::DoubleQuoted << *static_cast<std::string*>(field);
      return;
    case KeyKind::kOptString:
    case KeyKind::kOptVersion:
    case KeyKind::kOptRails: {
      const auto& o = *static_cast<std::optional<std::string>*>(field);
      if (o)
        out << YAML::DoubleQuoted << *o;
      else
        out << YAML::Null;
      return;
    }
    case KeyKind::kRemediationMode:
      // Quoted: YAML 1.1 readers (helm's) take a bare off for false.
      out << YAML::DoubleQuoted << std::string(ToString(*static_cast<RemediationMode*>(field)));
      return;
    case KeyKind::kOptPkey: {
      const auto& o = *static_cast<std::optional<uint16_t>*>(field);
      if (o)
        out << HexPkey(*o);
      else
        out << YAML::Null;
      return;
    }
    case KeyKind::kStringList:
    case KeyKind::kNcclEnvNames:
    case KeyKind::kCheckIds: {
      const auto& list = *static_cast<std::vector<std::string>*>(field);
      out << YAML::Flow << YAML::BeginSeq;
      for (const auto& s : list) out << YAML::DoubleQuoted << s;
      out << YAML::EndSeq;
      return;
    }
    case KeyKind::kLabelMap: {
      const auto& labels = *static_cast<std::map<std::string, std::string>*>(field);
      out << YAML::Flow << YAML::BeginMap;
      for (const auto& [label, value] : labels) {
        out << YAML::Key << YAML::DoubleQuoted << label << YAML::Value << YAML::DoubleQuoted
            << value;
      }
      out << YAML::EndMap;
      return;
    }
  }
}

}  // namespace

StatusOr<Config> LoadConfigFromString(std::string_view yaml, std::string_view name) {
  const std::string prefix(name);
  if (yaml.size() > kMaxConfigBytes) {
    return InvalidArgument(prefix + ": larger than " + std::to_string(kMaxConfigBytes) +
                           " bytes, not a configuration file");
  }
  if (auto issue = Prescan(yaml)) {
    return InvalidArgument(prefix + ":" + std::to_string(issue->line) + ": " + issue->what);
  }
  if (const size_t line = FirstInvalidUtf8Line(yaml); line != 0) {
    return InvalidArgument(prefix + ":" + std::to_string(line) +
                           ": not UTF-8 text (invalid byte or control character)");
  }
  Loader loader(name);
  try {
    std::vector<YAML::Node> docs = YAML::LoadAll(std::string(yaml));
    if (docs.size() > 1) return loader.Error(docs[1].Mark(), "more than one YAML document");
    Config config;
    if (docs.empty()) return config;
    if (Status s = loader.Load(docs[0], config); !s.ok()) return s;
    return config;
  } catch (const YAML::Exception& e) {
    return loader.Error(e.mark, "invalid YAML: " + e.msg);
  } catch (const std::exception& e) {
    return InvalidArgument(prefix + ": " + e.what());
  }
}

StatusOr<Config> LoadConfigFile(const std::string& path) {
  auto text = ReadWholeFile(path, "configuration", kMaxConfigBytes);
  if (!text.ok()) return text.status();
  return LoadConfigFromString(*text, path);
}

std::string DumpConfig(const Config& config) {
  Config copy = config;  // the accessors take a mutable Config; nothing is changed
  YAML::Emitter out;
  out << YAML::Comment("nccl-triage effective configuration (--dump-config); ~ means unset");
  out << YAML::BeginMap;
  std::string section;
  for (const auto& spec : KeySpecs()) {
    const std::string_view key = spec.info.key;
    const size_t dot = key.find('.');
    const std::string sec(key.substr(0, dot));
    if (sec != section) {
      if (!section.empty()) out << YAML::EndMap;
      out << YAML::Key << sec << YAML::Value << YAML::BeginMap;
      section = sec;
    }
    out << YAML::Key << std::string(key.substr(dot + 1)) << YAML::Value;
    EmitValue(out, spec, copy);
  }
  if (!section.empty()) out << YAML::EndMap;
  // Each pool with its whole effective expect.
  out << YAML::Key << std::string(kPoolsKey) << YAML::Value << YAML::BeginSeq;
  for (const PoolConfig& pool : config.pools) {
    out << YAML::BeginMap << YAML::Key << "name" << YAML::Value << YAML::DoubleQuoted << pool.name;
    out << YAML::Key << "selector" << YAML::Value << YAML::BeginMap;
    for (const auto& [label, value] : pool.selector) {
      out << YAML::Key << YAML::DoubleQuoted << label << YAML::Value << YAML::DoubleQuoted << value;
    }
    out << YAML::EndMap << YAML::Key << "expect" << YAML::Value << YAML::BeginMap;
    Config scratch;
    scratch.expect = pool.expect;
    for (const auto& spec : KeySpecs()) {
      const std::string_view key = spec.info.key;
      if (!key.starts_with("expect.")) continue;
      out << YAML::Key << std::string(key.substr(7)) << YAML::Value;
      EmitValue(out, spec, scratch);
    }
    out << YAML::EndMap << YAML::EndMap;
  }
  out << YAML::EndSeq;
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace nccl_triage
