// Parsers for the per-process files the workload view reads that the host parsers do not cover:
// /proc/<pid>/maps (which NCCL library is mapped) and /proc/<pid>/net/dev (which interfaces the
// process's network namespace has). Pure functions of text; thread-safe; never throw.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace nccl_triage::workload {

// The NCCL library mapped into a process.
struct NcclLibrary {
  std::string path;      // as the maps line shows it, without a trailing " (deleted)"
  std::string version;   // "2.28.9" from "libnccl.so.2.28.9"; "" when the file name does not say
  bool deleted = false;  // the file was replaced on disk after the process mapped it
  friend bool operator==(const NcclLibrary&, const NcclLibrary&) = default;
};

// The first libnccl.so mapping in a maps file, or nullopt when NCCL is not mapped (not started
// yet, or linked statically into another library such as libtorch_cuda.so).
std::optional<NcclLibrary> ParseNcclFromMaps(std::string_view maps_text);

// "libnccl.so.2.28.9" -> "2.28.9"; "libnccl.so.2" or another name -> "".
std::string NcclVersionFromFileName(std::string_view file_name);

// Interface names from /proc/<pid>/net/dev (two header lines, then "  eth0: 1234 ..."), in file
// order. Malformed lines are skipped; nullopt when the header is missing (not a net/dev file).
std::optional<std::vector<std::string>> ParseNetDevNames(std::string_view text);

}  // namespace nccl_triage::workload
