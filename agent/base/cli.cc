#include "base/cli.h"

#include <unistd.h>

#include <array>
#include <climits>
#include <ostream>
#include <string_view>

namespace nccl_triage {
namespace {

void PrintUsage(const CliProgram& program, std::ostream& os) {
  os << "usage: " << program.name << " <command> [flags]\n\ncommands:\n";
  for (const auto& s : program.subcommands) {
    if (s.summary == nullptr) continue;
    const std::string_view name(s.name);
    os << "  " << name << std::string(name.size() < 16 ? 16 - name.size() : 1, ' ') << s.summary
       << "\n";
  }
  os << "\n`" << program.name << " <command> --help` shows the flags of one command.\n";
}

}  // namespace

int RunProgram(const CliProgram& program, const std::vector<std::string>& argv, std::ostream& out,
               std::ostream& err) {
  if (argv.size() < 2 || argv[1] == "--help" || argv[1] == "-h" || argv[1] == "help") {
    PrintUsage(program, argv.size() < 2 ? err : out);
    return argv.size() < 2 ? 2 : 0;
  }
  if (argv[1] == "--version" || argv[1] == "version") {
    out << program.name << " " << program.version << "\n";
    return 0;
  }
  for (const auto& s : program.subcommands) {
    if (argv[1] == s.name) {
      CliContext ctx{{argv.begin() + 2, argv.end()}, out, err, SelfExe(argv[0])};
      return s.run(ctx);
    }
  }
  err << program.name << ": unknown command '" << argv[1] << "' (try --help)\n";
  return 2;
}

std::string SelfExe(const std::string& argv0) {
  std::array<char, PATH_MAX> buf{};
  const ssize_t n = readlink("/proc/self/exe", buf.data(), buf.size() - 1);
  return n > 0 ? std::string(buf.data(), static_cast<size_t>(n)) : argv0;
}

std::string SiblingExe(const std::string& self_exe, const std::string& name) {
  const auto slash = self_exe.rfind('/');
  return slash == std::string::npos ? name : self_exe.substr(0, slash + 1) + name;
}

}  // namespace nccl_triage
