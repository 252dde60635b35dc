#include "base/flags.h"

#include <charconv>
#include <memory>

namespace nccl_triage {
namespace {

// An error message echoes what was typed; a control byte in it (an argument with a newline, found
// by flags_fuzzer) is written as \xNN so that the error stays one line.
std::string OneLine(const std::string& text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (const char c : text) {
    const auto b = static_cast<unsigned char>(c);
    if (b < 0x20 || b == 0x7f) {
      out += "\\x";
      out += kHex[b >> 4];
      out += kHex[b & 0xf];
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

FlagParser& FlagParser::Add(Names names, bool takes_value,
                            std::function<Status(const std::string&)> set) {
  Flag f;
  for (const char* n : names) f.names.emplace_back(n);
  f.takes_value = takes_value;
  f.set = std::move(set);
  flags_.push_back(std::move(f));
  return *this;
}

FlagParser& FlagParser::Switch(Names names, bool* out) {
  return Add(names, false, [out](const std::string& v) -> Status {
    if (v != "true" && v != "false")
      return InvalidArgument("expects true or false (not '" + v + "')");
    *out = v == "true";
    return Status::Ok();
  });
}

FlagParser& FlagParser::String(Names names, std::string* out) {
  return Add(names, true, [out](const std::string& v) {
    *out = v;
    return Status::Ok();
  });
}

FlagParser& FlagParser::String(Names names, std::optional<std::string>* out) {
  return Add(names, true, [out](const std::string& v) {
    *out = v;
    return Status::Ok();
  });
}

FlagParser& FlagParser::Repeated(Names names, std::vector<std::string>* out) {
  return Add(names, true, [out](const std::string& v) {
    out->push_back(v);
    return Status::Ok();
  });
}

FlagParser& FlagParser::Choice(Names names, std::string* out, std::vector<std::string> choices) {
  return Add(names, true, [out, choices = std::move(choices)](const std::string& v) -> Status {
    for (const auto& c : choices) {
      if (c == v) {
        *out = v;
        return Status::Ok();
      }
    }
    std::string list;
    for (const auto& c : choices) list += (list.empty() ? "" : ", ") + c;
    return InvalidArgument("expects one of " + list + " (not '" + v + "')");
  });
}

FlagParser& FlagParser::Int(Names names, std::optional<int>* out, int min, int max) {
  return Add(names, true, [out, min, max](const std::string& v) -> Status {
    int n = 0;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (v.empty() || ec != std::errc() || end != v.data() + v.size() || n < min || n > max) {
      return InvalidArgument("expects an integer between " + std::to_string(min) + " and " +
                             std::to_string(max) + " (not '" + v + "')");
    }
    *out = n;
    return Status::Ok();
  });
}

FlagParser& FlagParser::Int(Names names, int* out, int min, int max) {
  auto holder = std::make_shared<std::optional<int>>();
  Int(names, holder.get(), min, max);
  auto inner = std::move(flags_.back().set);
  flags_.back().set = [holder, inner = std::move(inner), out](const std::string& v) -> Status {
    Status s = inner(v);
    if (s.ok()) *out = **holder;
    return s;
  };
  return *this;
}

FlagParser& FlagParser::Custom(Names names, std::function<Status(const std::string&)> set) {
  return Add(names, true, std::move(set));
}

FlagParser& FlagParser::Positional(std::vector<std::string>* out, size_t max,
                                   std::string too_many) {
  positional_ = out;
  max_positional_ = max;
  too_many_ = std::move(too_many);
  return *this;
}

const FlagParser::Flag* FlagParser::Find(const std::string& name) const {
  for (const auto& f : flags_) {
    for (const auto& n : f.names) {
      if (n == name) return &f;
    }
  }
  return nullptr;
}

Status FlagParser::Parse(const std::vector<std::string>& args) const {
  Status s = ParseArgs(args);
  return s.ok() ? s : InvalidArgument(OneLine(s.message()));
}

Status FlagParser::ParseArgs(const std::vector<std::string>& args) const {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg.size() < 2 || arg[0] != '-') {  // "-" and words are positional
      if (positional_ == nullptr)
        return InvalidArgument("unexpected argument '" + arg + "' (try --help)");
      if (positional_->size() >= max_positional_)
        return InvalidArgument(too_many_ + " (try --help)");
      positional_->push_back(arg);
      continue;
    }
    std::string name = arg;
    std::optional<std::string> inline_value;
    if (const size_t eq = arg.find('='); eq != std::string::npos && arg.rfind("--", 0) == 0) {
      name = arg.substr(0, eq);
      inline_value = arg.substr(eq + 1);
    }
    const Flag* f = Find(name);
    if (f == nullptr) return InvalidArgument("unknown flag '" + name + "' (try --help)");
    std::string value;
    if (!f->takes_value) {
      value = inline_value.value_or("true");
    } else if (inline_value) {
      value = *inline_value;
    } else if (i + 1 < args.size()) {
      value = args[++i];
    } else {
      return InvalidArgument(name + " needs a value");
    }
    if (f->takes_value && value.empty()) return InvalidArgument(name + " needs a value");
    Status s = f->set(value);
    if (!s.ok()) return InvalidArgument(name + ": " + s.message());
  }
  return Status::Ok();
}

}  // namespace nccl_triage
