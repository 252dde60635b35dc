// The whole content of a file as text, "" when it cannot be read: for tests that compare or copy
// a file they made or that the kernel serves (/proc). Header-only.
#pragma once

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace nccl_triage::testing {

inline std::string ReadTextFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace nccl_triage::testing
