// How a link rate reads in reasons and tables. Pure.
#pragma once

#include <charconv>
#include <string>

namespace nccl_triage {

// "200 Gb/s", "12.5 Gb/s", "53.125 Gb/s": a port's rate in Gb/s in its shortest exact form.
inline std::string FormatGbps(double rate_gbps) {
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof(buf), rate_gbps);
  return (r.ec == std::errc() ? std::string(buf, r.ptr) : std::string("?")) + " Gb/s";
}

}  // namespace nccl_triage
