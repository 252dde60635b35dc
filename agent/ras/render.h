// The `nccl-triage ras` report: a table for the terminal and a JSON document (schema
// nccl-triage/ras/v1), both from the parsed report and its judgement. Pure; thread-safe.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>

#include "ras/report.h"

namespace nccl_triage::ras {

inline constexpr const char* kRasSchema = "nccl-triage/ras/v1";

// Where the report came from, as plain values (the command fills them in).
struct Source {
  std::string target;    // "--addr localhost:28028", "--pid 613", "--pod ml/train-0"
  std::string address;   // the address that answered
  std::string netns;     // "host", or "of pid 613" when the query entered another namespace
  std::string protocol;  // the server's RAS protocol version as sent
  bool protocol_known = true;
  long long elapsed_ms = 0;
  int asked_again_s = 0;  // > 0: the report is the second of two, this many seconds apart
};

// Control characters from the peer's strings are printed as '?'.
std::string RenderTable(const Source& source, const Report& report, const Judgement& judgement);
// Strings are the peer's bytes: dump with error_handler_t::replace (invalid UTF-8 would throw).
nlohmann::json ToJson(const Source& source, const Report& report, const Judgement& judgement);

}  // namespace nccl_triage::ras
