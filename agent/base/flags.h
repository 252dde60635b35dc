// FlagParser: the one parser of every subcommand's flags, so that every command takes the same
// spellings and says the same things when they are wrong.
//
//   --name VALUE and --name=VALUE          for flags with a value
//   --name                                 for switches (--name=true / --name=false work too)
//   a repeated flag                        appends (Repeated) or the last one wins (String, Int)
//   -                                      is a positional argument (standard input)
//
// Errors (Status InvalidArgument), worded once here:
//   unknown flag '--bogus' (try --help)
//   --root needs a value
//   --format: expects one of table, json (not 'xml')
//   --iters: expects an integer between 1 and 1000000 (not 'x')
//   unexpected argument 'extra' (try --help)
// The caller prints "<program> <command>: " before the message and exits 2.
#pragma once

#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"

namespace nccl_triage {

class FlagParser {
 public:
  // `names`: the spellings of one flag, e.g. {"--help", "-h"}.
  using Names = std::initializer_list<const char*>;

  FlagParser& Switch(Names names, bool* out);
  FlagParser& String(Names names, std::string* out);
  FlagParser& String(Names names, std::optional<std::string>* out);
  FlagParser& Repeated(Names names, std::vector<std::string>* out);
  FlagParser& Choice(Names names, std::string* out, std::vector<std::string> choices);
  FlagParser& Int(Names names, std::optional<int>* out, int min, int max);
  FlagParser& Int(Names names, int* out, int min, int max);
  // A value checked by `set`, whose error message follows "--name: ".
  FlagParser& Custom(Names names, std::function<Status(const std::string&)> set);
  // Arguments that are not flags, at most `max` of them; without this, any is an error.
  FlagParser& Positional(std::vector<std::string>* out, size_t max,
                         std::string too_many = "more than one input given");

  Status Parse(const std::vector<std::string>& args) const;

 private:
  struct Flag {
    std::vector<std::string> names;
    bool takes_value = true;
    std::function<Status(const std::string&)> set;  // value ("true"/"false" for switches)
  };
  FlagParser& Add(Names names, bool takes_value, std::function<Status(const std::string&)> set);
  Status ParseArgs(const std::vector<std::string>& args) const;
  const Flag* Find(const std::string& name) const;

  std::vector<Flag> flags_;
  std::vector<std::string>* positional_ = nullptr;
  size_t max_positional_ = 0;
  std::string too_many_;
};

}  // namespace nccl_triage
