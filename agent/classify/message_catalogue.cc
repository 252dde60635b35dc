#include "classify/message_catalogue.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstring>

#include "core/ids.h"

namespace nccl_triage {

// The text of agent/classify/catalogue/*.tsv at build time (catalogue_text.cc, generated).
std::string BuiltinMessageCatalogueText();

namespace {

using FC = FaultClass;

// The path of each part of NCCL, and the cause a failure there names when no rule is more
// precise. A path is where the failing call is, as the log classifier judges (DESIGN).
constexpr std::array kPaths = {
    MessagePath{"ib_verbs", FC::kIbResource, ids::kIbVerbsCall, "the IB verbs layer"},
    MessagePath{"net_ib", FC::kIbResource, ids::kIbVerbsCall, "NCCL's IB transport"},
    MessagePath{"net_ofi", FC::kIbResource, ids::kEfaFabric, "the AWS OFI (EFA) plugin"},
    MessagePath{"collnet", FC::kIbResource, ids::kIbVerbsCall, "CollNet (in-network reduction)"},
    MessagePath{"socket", FC::kArchitecture, ids::kNetConnect, "NCCL's TCP sockets"},
    MessagePath{"bootstrap", FC::kArchitecture, ids::kNetConnect, "the bootstrap network"},
    MessagePath{"cuda", FC::kArchitecture, ids::kCudaDriver, "a CUDA call"},
    MessagePath{"topology", FC::kArchitecture, ids::kNcclTopology, "NCCL's topology detection"},
    MessagePath{"shm", FC::kArchitecture, ids::kShmSize, "shared memory"},
    MessagePath{"p2p", FC::kArchitecture, ids::kCudaDriver, "GPU peer-to-peer (CUDA IPC)"},
    MessagePath{"nvls", FC::kArchitecture, ids::kCudaDriver, "NVLink SHARP (CUDA multicast)"},
    MessagePath{"net_plugin", FC::kArchitecture, ids::kNetPlugin, "the network plugin loader"},
    MessagePath{"api_usage", FC::kArchitecture, ids::kNcclApiUsage, "the calling program"},
    MessagePath{"env", FC::kArchitecture, ids::kNcclEnvValue, "NCCL's settings"},
    MessagePath{"alloc", FC::kArchitecture, ids::kHostSyscall, "host memory allocation"},
    MessagePath{"proxy", FC::kUnknown, ids::kNcclInternal, "NCCL's proxy thread"},
    MessagePath{"transport", FC::kUnknown, ids::kNcclInternal, "NCCL's transport setup"},
    MessagePath{"ras", FC::kUnknown, ids::kNcclInternal, "NCCL's RAS thread"},
    MessagePath{"misc", FC::kUnknown, ids::kNcclInternal, "NCCL's core"},
};

constexpr size_t kGateBytes = 4;       // bytes of a key in the index's quick rejection
constexpr size_t kMaxKey = 24;         // leading literal bytes used as the lookup key
constexpr size_t kMaxMatchSteps = 4096;  // work bound of one FormatMatches call
constexpr size_t kMinLiteralLetters = 8;  // letters a format needs to name a message by itself

struct Conversion {
  char conv = 0;  // d i u x X o p s c f g e %
};

// The length of a conversion spec at `f` (after '%'), and its conversion character.
size_t ParseSpec(std::string_view f, Conversion& c) {
  size_t i = 0;
  while (i < f.size() && std::strchr("-+ #0'", f[i]) != nullptr) ++i;
  while (i < f.size() && (std::isdigit(static_cast<unsigned char>(f[i])) || f[i] == '*')) ++i;
  if (i < f.size() && f[i] == '.') {
    ++i;
    while (i < f.size() && (std::isdigit(static_cast<unsigned char>(f[i])) || f[i] == '*')) ++i;
  }
  while (i < f.size() && std::strchr("hlLqjzt", f[i]) != nullptr) ++i;
  c.conv = i < f.size() ? f[i] : 's';
  return std::min(i + 1, f.size());
}

// How many bytes of `t` a typed hole takes at most greedily (%s is handled by the caller).
size_t TakeTyped(char conv, std::string_view t) {
  size_t i = 0;
  auto digits = [&](bool hex) {
    while (i < t.size() && (std::isdigit(static_cast<unsigned char>(t[i])) ||
                            (hex && std::isxdigit(static_cast<unsigned char>(t[i]))))) {
      ++i;
    }
  };
  switch (conv) {
    case 'd':
    case 'i':
      if (i < t.size() && (t[i] == '-' || t[i] == '+')) ++i;
      digits(false);
      return i == 0 || (i == 1 && (t[0] == '-' || t[0] == '+')) ? std::string_view::npos : i;
    case 'u':
    case 'o':
      digits(false);
      return i == 0 ? std::string_view::npos : i;
    case 'x':
    case 'X':
      if (t.substr(0, 2) == "0x") i = 2;
      digits(true);
      return i == 0 ? std::string_view::npos : i;
    case 'p':
      if (t.substr(0, 5) == "(nil)") return 5;
      if (t.substr(0, 2) == "0x") i = 2;
      digits(true);
      return i == 0 ? std::string_view::npos : i;
    case 'c':
      return t.empty() ? std::string_view::npos : 1;
    case 'f':
    case 'g':
    case 'e':
      while (i < t.size() && (std::isdigit(static_cast<unsigned char>(t[i])) ||
                              std::strchr("+-.eEinfa", t[i]) != nullptr)) {
        ++i;
      }
      return i == 0 ? std::string_view::npos : i;
    default:
      return std::string_view::npos;
  }
}

// Backtracking match of a format against text, bounded in steps.
bool Match(std::string_view f, std::string_view t, size_t& steps) {
  while (true) {
    if (++steps > kMaxMatchSteps) return false;
    if (f.empty()) return t.empty();
    if (f[0] != '%') {
      if (t.empty() || t[0] != f[0]) return false;
      f.remove_prefix(1);
      t.remove_prefix(1);
      continue;
    }
    Conversion c;
    size_t spec = ParseSpec(f.substr(1), c);
    std::string_view rest = f.substr(1 + spec);
    if (c.conv == '%') {
      if (t.empty() || t[0] != '%') return false;
      f = rest;
      t.remove_prefix(1);
      continue;
    }
    if (c.conv == 's') {
      // Any text, shortest first; the next literal byte bounds the candidates.
      const char next = rest.empty() ? 0 : rest[0];
      if (rest.empty()) return true;
      for (size_t k = 0; k <= t.size(); ++k) {
        if (next != '%' && (k == t.size() || t[k] != next)) continue;
        if (Match(rest, t.substr(k), steps)) return true;
        if (steps > kMaxMatchSteps) return false;
      }
      return false;
    }
    size_t n = TakeTyped(c.conv, t);
    if (n == std::string_view::npos) return false;
    f = rest;
    t.remove_prefix(n);
  }
}

std::string_view LeadingLiteral(std::string_view format) {
  size_t pct = format.find('%');
  return format.substr(0, pct);
}

// "transport/net_ib.cc:1206 (func)" -> "transport/net_ib.cc"
std::string_view FileOnly(std::string_view file) {
  if (size_t paren = file.find(' '); paren != std::string_view::npos) file = file.substr(0, paren);
  if (size_t colon = file.rfind(':'); colon != std::string_view::npos) {
    file = file.substr(0, colon);
  }
  return file;
}

std::string_view Basename(std::string_view file) {
  if (size_t slash = file.rfind('/'); slash != std::string_view::npos) {
    file = file.substr(slash + 1);
  }
  return file;
}

// One path per key; a key whose messages sit on different paths says nothing (nullptr).
template <typename M>
void Note(M& map, std::string key, const MessagePath* path) {
  auto [it, inserted] = map.emplace(std::move(key), path);
  if (!inserted && it->second != path) it->second = nullptr;
}

// The catalogue writes a tab in a format as \t, a newline as \n and a backslash as \\.
std::string Unescape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size()) {
      const char n = s[i + 1];
      if (n == 't' || n == 'n' || n == '\\') {
        out.push_back(n == 't' ? '\t' : n == 'n' ? '\n' : '\\');
        ++i;
        continue;
      }
    }
    out.push_back(s[i]);
  }
  return out;
}

std::vector<std::string_view> SplitTabs(std::string_view line) {
  std::vector<std::string_view> out;
  while (true) {
    size_t tab = line.find('\t');
    out.push_back(line.substr(0, tab));
    if (tab == std::string_view::npos) break;
    line.remove_prefix(tab + 1);
  }
  return out;
}

}  // namespace

std::span<const MessagePath> MessagePaths() { return kPaths; }

const MessagePath* FindMessagePath(std::string_view name) {
  for (const auto& p : kPaths) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

bool FormatMatches(std::string_view format, std::string_view text) {
  size_t steps = 0;
  return Match(format, text, steps);
}

StatusOr<std::shared_ptr<const MessageCatalogue>> MessageCatalogue::Parse(std::string_view tsv) {
  std::shared_ptr<MessageCatalogue> cat(new MessageCatalogue());
  std::vector<std::string_view> header;
  int col_level = -1, col_format = -1, col_file = -1, col_path = -1, col_first = -1,
      col_last = -1;
  size_t line_no = 0;
  while (!tsv.empty()) {
    size_t nl = tsv.find('\n');
    std::string_view line = tsv.substr(0, nl);
    tsv.remove_prefix(nl == std::string_view::npos ? tsv.size() : nl + 1);
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string_view> cols = SplitTabs(line);
    // Each file of the catalogue starts with its header; the built-in text is their
    // concatenation.
    if (header.empty() || cols[0] == "level") {
      header = cols;
      for (size_t i = 0; i < cols.size(); ++i) {
        const std::string_view h = cols[i];
        const int at = static_cast<int>(i);
        if (h == "level") col_level = at;
        if (h == "format") col_format = at;
        if (h == "file") col_file = at;
        if (h == "path") col_path = at;
        if (h == "first" || h == "first_version") col_first = at;
        if (h == "last" || h == "last_version") col_last = at;
      }
      if (col_level < 0 || col_format < 0 || col_file < 0 || col_path < 0) {
        return InvalidArgument("catalogue line " + std::to_string(line_no) +
                               ": the header must name level, format, file and path");
      }
      continue;
    }
    if (cols.size() < header.size()) {
      return InvalidArgument("catalogue line " + std::to_string(line_no) + ": " +
                             std::to_string(cols.size()) + " columns, the header has " +
                             std::to_string(header.size()));
    }
    CatalogueMessage m;
    m.level = std::string(cols[col_level]);
    m.format = Unescape(cols[col_format]);
    m.file = std::string(cols[col_file]);
    m.path = std::string(cols[col_path]);
    if (col_first >= 0) m.first = std::string(cols[col_first]);
    if (col_last >= 0) m.last = std::string(cols[col_last]);
    if (FindMessagePath(m.path) == nullptr) {
      return InvalidArgument("catalogue line " + std::to_string(line_no) + ": unknown path '" +
                             m.path + "'");
    }
    cat->messages_.push_back(std::move(m));
  }
  for (size_t i = 0; i < cat->messages_.size(); ++i) {
    const CatalogueMessage& m = cat->messages_[i];
    // The path of a file: only when all of its messages are on one path (init.cc, enqueue.cc
    // and others mix several), by the path NCCL prints, else by a base name no other file has.
    if (!m.file.empty() && m.level == "WARN") {
      Note(cat->file_paths_, m.file, FindMessagePath(m.path));
      Note(cat->base_paths_, std::string(Basename(m.file)), FindMessagePath(m.path));
      auto [it, inserted] = cat->base_files_.emplace(std::string(Basename(m.file)), m.file);
      if (!inserted && it->second != m.file) cat->base_paths_[it->first] = nullptr;
    }
    if (m.level != "WARN" && m.level != "INFO") continue;
    // A format that is mostly holes (`%s`, `%s: %s`) would match any message: it names nothing.
    size_t literal = 0;
    for (size_t k = 0; k < m.format.size(); ++k) {
      if (m.format[k] == '%') {
        Conversion c;
        k += ParseSpec(std::string_view(m.format).substr(k + 1), c);
        continue;
      }
      literal += std::isalpha(static_cast<unsigned char>(m.format[k])) ? 1 : 0;
    }
    if (literal < kMinLiteralLetters) continue;
    std::string_view lead = LeadingLiteral(m.format);
    if (lead.empty()) {
      if (m.level == "WARN") cat->open_start_.push_back(i);
      continue;
    }
    PrefixIndex& index = m.level == "WARN" ? cat->warn_ : cat->info_;
    std::string key(lead.substr(0, kMaxKey));
    std::vector<PrefixIndex::Key>& bucket = index.buckets[key.substr(0, kGateBytes)];
    auto same = std::find_if(bucket.begin(), bucket.end(),
                             [&](const PrefixIndex::Key& k) { return k.text == key; });
    if (same == bucket.end()) {
      if (key.size() < kGateBytes &&
          std::find(index.short_lengths.begin(), index.short_lengths.end(), key.size()) ==
              index.short_lengths.end()) {
        index.short_lengths.push_back(key.size());
      }
      bucket.push_back({key, {}});
      same = bucket.end() - 1;
    }
    same->entries.push_back(i);
  }
  for (PrefixIndex* index : {&cat->warn_, &cat->info_}) {
    std::sort(index->short_lengths.rbegin(), index->short_lengths.rend());
    for (auto& [gate, keys] : index->buckets) {
      std::stable_sort(keys.begin(), keys.end(),
                       [](const PrefixIndex::Key& a, const PrefixIndex::Key& b) {
                         return a.text.size() > b.text.size();
                       });
    }
  }
  return std::shared_ptr<const MessageCatalogue>(std::move(cat));
}

std::shared_ptr<const MessageCatalogue> MessageCatalogue::Builtin() {
  static const std::shared_ptr<const MessageCatalogue> builtin = [] {
    auto parsed = Parse(BuiltinMessageCatalogueText());
    // The build's own data is checked by the tests; a broken one must not take the program down.
    return parsed.ok() ? *parsed : std::shared_ptr<const MessageCatalogue>(new MessageCatalogue());
  }();
  return builtin;
}

Status MessageCatalogue::BuiltinStatus() {
  auto parsed = Parse(BuiltinMessageCatalogueText());
  return parsed.ok() ? Status::Ok() : parsed.status();
}

const CatalogueMessage* MessageCatalogue::MatchIndexed(const PrefixIndex& index,
                                                       std::string_view message,
                                                       bool open_start) const {
  while (!message.empty() && (message.back() == ' ' || message.back() == '\r')) {
    message.remove_suffix(1);
  }
  const CatalogueMessage* best = nullptr;
  size_t best_literal = 0;
  auto consider = [&](size_t i) {
    const CatalogueMessage& m = messages_[i];
    std::string_view f = m.format;
    while (!f.empty() && (f.back() == '\n' || f.back() == ' ')) f.remove_suffix(1);
    if (!FormatMatches(f, message)) return;
    size_t literal = 0;
    for (size_t k = 0; k < f.size(); ++k) literal += f[k] != '%' ? 1 : 0;
    if (best == nullptr || literal > best_literal) {
      best = &m;
      best_literal = literal;
    }
  };
  // Longest literal first, as the buckets hold them: the full-width bucket, then the short keys.
  auto scan = [&](std::string_view gate) {
    auto it = index.buckets.find(gate);
    if (it == index.buckets.end()) return;
    for (const PrefixIndex::Key& key : it->second) {
      if (!message.starts_with(key.text)) continue;
      for (size_t i : key.entries) consider(i);
    }
  };
  if (message.size() >= kGateBytes) scan(message.substr(0, kGateBytes));
  for (size_t n : index.short_lengths) {
    if (n <= message.size()) scan(message.substr(0, n));
  }
  if (best == nullptr && open_start) {
    for (size_t i : open_start_) consider(i);
  }
  // aws-ofi-nccl's NCCL_OFI_WARN prefixes every format with `NET/OFI ` (the catalogue holds the
  // format as the plugin's source writes it): without the prefix, only the plugin's own formats.
  constexpr std::string_view kOfiPrefix = "NET/OFI ";
  if (best == nullptr && &index == &warn_ && message.substr(0, kOfiPrefix.size()) == kOfiPrefix) {
    const CatalogueMessage* inner =
        MatchIndexed(index, message.substr(kOfiPrefix.size()), open_start);
    if (inner != nullptr && inner->path == "net_ofi") return inner;
  }
  return best;
}

const CatalogueMessage* MessageCatalogue::MatchWarn(std::string_view message) const {
  return MatchIndexed(warn_, message, /*open_start=*/true);
}

namespace {

// rdma-core's own messages (libibverbs, the mlx5 provider) are always plain text on stderr, never
// an NCCL line that lost its prefix: the text rules read them.
const CatalogueMessage* NcclsOwn(const CatalogueMessage* m) {
  if (m == nullptr || m->file.starts_with("libibverbs/") || m->file.starts_with("providers/")) {
    return nullptr;
  }
  return m;
}

}  // namespace

const CatalogueMessage* MessageCatalogue::MatchQuotedWarn(std::string_view message) const {
  return NcclsOwn(MatchIndexed(warn_, message, /*open_start=*/false));
}

const CatalogueMessage* MessageCatalogue::MatchBareInfo(std::string_view message) const {
  return NcclsOwn(MatchIndexed(info_, message, /*open_start=*/false));
}

const MessagePath* MessageCatalogue::PathOfFile(std::string_view file_and_line) const {
  const std::string_view file = FileOnly(file_and_line);
  if (auto it = file_paths_.find(file); it != file_paths_.end()) return it->second;
  auto it = base_paths_.find(Basename(file));
  return it == base_paths_.end() ? nullptr : it->second;
}

}  // namespace nccl_triage
