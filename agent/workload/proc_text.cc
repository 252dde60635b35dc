#include "workload/proc_text.h"

namespace nccl_triage::workload {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

template <typename Fn>
void ForEachLine(std::string_view text, Fn&& fn) {
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    if (!fn(text.substr(start, end - start))) return;
    start = end + 1;
  }
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

}  // namespace

std::string NcclVersionFromFileName(std::string_view name) {
  constexpr std::string_view kPrefix = "libnccl.so.";
  if (!name.starts_with(kPrefix)) return "";
  std::string_view rest = name.substr(kPrefix.size());
  // Exactly three dot-separated numbers: major.minor.patch.
  int parts = 0;
  size_t i = 0;
  while (i < rest.size()) {
    size_t start = i;
    while (i < rest.size() && IsDigit(rest[i])) ++i;
    if (i == start || i - start > 4) return "";
    ++parts;
    if (i == rest.size()) break;
    if (rest[i] != '.') return "";
    ++i;
    if (i == rest.size()) return "";
  }
  return parts == 3 ? std::string(rest) : "";
}

std::optional<NcclLibrary> ParseNcclFromMaps(std::string_view maps_text) {
  std::optional<NcclLibrary> found;
  ForEachLine(maps_text, [&](std::string_view line) {
    // "start-end perms offset dev inode   path": the path is what follows the fifth field.
    std::string_view rest = line;
    for (int field = 0; field < 5; ++field) {
      rest = Trim(rest);
      size_t sp = rest.find(' ');
      if (sp == std::string_view::npos) return true;
      rest.remove_prefix(sp);
    }
    std::string_view path = Trim(rest);
    if (!path.starts_with('/')) return true;
    bool deleted = false;
    constexpr std::string_view kDeleted = " (deleted)";
    if (path.ends_with(kDeleted)) {
      path.remove_suffix(kDeleted.size());
      deleted = true;
    }
    size_t slash = path.rfind('/');
    std::string_view file = path.substr(slash + 1);
    if (!file.starts_with("libnccl.so")) return true;
    found = NcclLibrary{std::string(path), NcclVersionFromFileName(file), deleted};
    return false;
  });
  return found;
}

std::optional<std::vector<std::string>> ParseNetDevNames(std::string_view text) {
  std::vector<std::string> names;
  int line_no = 0;
  bool header_ok = true;
  ForEachLine(text, [&](std::string_view line) {
    ++line_no;
    if (line_no == 1) {
      header_ok = line.find("Receive") != std::string_view::npos;
      return header_ok;
    }
    if (line_no == 2) {
      header_ok = line.find('|') != std::string_view::npos;
      return header_ok;
    }
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) return true;
    std::string_view name = Trim(line.substr(0, colon));
    // IFNAMSIZ is 16 including the NUL; names have no spaces or slashes.
    if (name.empty() || name.size() > 15 || name.find_first_of(" /") != std::string_view::npos) {
      return true;
    }
    names.emplace_back(name);
    return true;
  });
  if (!header_ok || line_no < 2) return std::nullopt;
  return names;
}

}  // namespace nccl_triage::workload
