// The user documentation as one text, for the tests that hold it to the code (tables generated
// from the catalogue, worked examples that are a command's real output, documented config keys).
//
// The documentation is README.md (the front page) plus the pages under docs/ and the benchmark
// results in bench/RESULTS.md; a section may move between them without its test changing, since
// the tests find it by its markers (<!-- section:NAME --> ... <!-- /section:NAME -->) or its text,
// never by its file. Header-only; reads the source tree named by NCCL_TRIAGE_SOURCE_DIR.
#pragma once

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "support/text_file.h"

namespace nccl_triage::testing {

// README.md, docs/*.md (in name order) and bench/RESULTS.md, each followed by a newline.
inline std::string ReadUserDocs() {
  namespace fs = std::filesystem;
  const fs::path src = NCCL_TRIAGE_SOURCE_DIR;
  std::vector<fs::path> files = {src / "README.md"};
  std::vector<fs::path> pages;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(src / "docs", ec)) {
    if (e.path().extension() == ".md") pages.push_back(e.path());
  }
  std::sort(pages.begin(), pages.end());
  files.insert(files.end(), pages.begin(), pages.end());
  files.push_back(src / "bench/RESULTS.md");
  std::string text;
  for (const auto& f : files) {
    if (fs::exists(f)) text += ReadTextFile(f) + "\n";
  }
  return text;
}

// The text between <!-- section:NAME --> and <!-- /section:NAME --> (with the opening marker when
// `with_open_marker`); "" when either marker is missing.
inline std::string DocSection(const std::string& name, bool with_open_marker = false) {
  const std::string text = ReadUserDocs();
  const std::string open = "<!-- section:" + name + " -->";
  const std::string close = "<!-- /section:" + name + " -->";
  const size_t a = text.find(open), b = text.find(close);
  if (a == std::string::npos || b == std::string::npos || b < a) return "";
  const size_t from = with_open_marker ? a : a + open.size();
  return text.substr(from, b - from);
}

}  // namespace nccl_triage::testing
