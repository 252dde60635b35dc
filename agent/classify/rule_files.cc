#include "classify/rule_files.h"

#include <sys/stat.h>

#include "base/files.h"

namespace nccl_triage {

std::string ShippedRuleFile() { return NCCL_TRIAGE_RULES_FILE; }

StatusOr<std::shared_ptr<const CompiledRules>> LoadRuleFiles(
    const std::vector<std::string>& user_files, const std::string& shipped) {
  struct stat st{};
  std::vector<Rule> rules;
  if (!shipped.empty() && ::stat(shipped.c_str(), &st) == 0) {
    auto text = ReadWholeFile(shipped, "rule file");
    if (!text.ok()) return text.status();
    auto parsed = ParseRules(*text, shipped);
    if (!parsed.ok()) return parsed.status();
    rules = std::move(parsed).value();
  } else {
    auto parsed = ParseRules(BuiltinRuleText(), "classify-rules.yaml (built in)");
    if (!parsed.ok()) return parsed.status();
    rules = std::move(parsed).value();
  }
  for (const std::string& path : user_files) {
    auto text = ReadWholeFile(path, "rule file");
    if (!text.ok()) return text.status();
    auto parsed = ParseRules(*text, path);
    if (!parsed.ok()) return parsed.status();
    rules = MergeRules(std::move(rules), std::move(parsed).value());
  }
  return CompiledRules::Compile(std::move(rules));
}

Status LoadAndActivateRules(const std::vector<std::string>& user_files,
                            const std::string& shipped) {
  auto loaded = LoadRuleFiles(user_files, shipped);
  if (!loaded.ok()) return loaded.status();
  SetActiveRules(std::move(loaded).value());
  return Status::Ok();
}

}  // namespace nccl_triage
