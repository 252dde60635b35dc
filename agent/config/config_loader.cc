#include "config/config_loader.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <optional>
#include <set>

#include "base/files.h"
#include "config/config_schema.h"

namespace nccl_triage {
namespace {

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
    return config_internal::ErrorAt(name_, mark, what);
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

  // The spec reads the value into its member of `config`; its errors name `key`'s line when the
  // value has none of its own (an implicit null).
  Status Set(const KeySpec& spec, const YAML::Node& key, const YAML::Node& v, Config& config) {
    const config_internal::ValueReader in(name_, spec.info.key, key.Mark(), spec.min, spec.max);
    return spec.set(in, v, config);
  }

  std::string_view name_;
  YAML::Node pools_;  // the top-level `pools`, loaded last
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
    spec.emit(out, config);
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
      spec.emit(out, scratch);
    }
    out << YAML::EndMap << YAML::EndMap;
  }
  out << YAML::EndSeq;
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace nccl_triage
