// libFuzzer target: the one flag parser of every subcommand (base/flags.h) on an arbitrary command
// line (the input split at NUL bytes), with flags of every kind. No crash or exception; an error is
// one line; a value that parsed is within its declared range or choices, and a switch given
// "=value" is only true or false.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/flags.h"
#include "fuzz_check.h"

using nccl_triage::fuzz::Require;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace nccl_triage;
  std::vector<std::string> args;
  std::string current;
  for (size_t i = 0; i < size; ++i) {
    if (data[i] == 0) {
      args.push_back(std::move(current));
      current.clear();
    } else {
      current.push_back(static_cast<char>(data[i]));
    }
  }
  if (!current.empty() || size == 0) args.push_back(std::move(current));

  bool help = false, once = false;
  std::string format = "table";
  std::optional<std::string> root, config;
  std::vector<std::string> env_allow, positional;
  std::optional<int> iters;
  int timeout = 120;
  std::string custom;
  Status parsed = FlagParser()
                      .Switch({"--help", "-h"}, &help)
                      .Switch({"--once"}, &once)
                      .Choice({"--format"}, &format, {"table", "json"})
                      .String({"--root"}, &root)
                      .String({"--config"}, &config)
                      .Repeated({"--env-allow"}, &env_allow)
                      .Int({"--iters"}, &iters, 1, 1000000)
                      .Int({"--timeout"}, &timeout, 1, 86400)
                      .Custom({"--node"},
                              [&custom](const std::string& v) {
                                if (v.empty()) return InvalidArgument("must not be empty");
                                custom = v;
                                return Status::Ok();
                              })
                      .Positional(&positional, 1)
                      .Parse(args);
  if (!parsed.ok()) {
    Require(!parsed.message().empty() && parsed.message().find('\n') == std::string::npos);
    return 0;
  }
  Require(format == "table" || format == "json");
  Require(!iters || (*iters >= 1 && *iters <= 1000000));
  Require(timeout >= 1 && timeout <= 86400);
  Require(positional.size() <= 1);
  return 0;
}
