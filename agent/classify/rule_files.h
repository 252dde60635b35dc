// Loading the classifier's rules from files at start-up: the shipped rule file and the user's.
//
// The shipped file is share/nccl-triage/classify-rules.yaml under the install prefix (in the image,
// /usr/share/nccl-triage/classify-rules.yaml). When it is not there (a binary run from the build
// tree), the same rules built into the binary are used. The user's files (`classify-log --rules`,
// config key `classify.rule_files`) come on top: a rule with a known id replaces it, a new rule is
// tried before the shipped ones. Every error is one line naming the file and the rule.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "classify/rules.h"

namespace nccl_triage {

// Where the shipped rule file is installed.
std::string ShippedRuleFile();

// The shipped rules (from `shipped` when that file exists, else the built-in copy) merged with
// each of `user_files` in order, compiled. A user file that is missing or does not load is an
// error; so is a shipped file that exists but does not load.
StatusOr<std::shared_ptr<const CompiledRules>> LoadRuleFiles(
    const std::vector<std::string>& user_files, const std::string& shipped = ShippedRuleFile());

// LoadRuleFiles, then SetActiveRules on success: what a program calls once at start-up.
Status LoadAndActivateRules(const std::vector<std::string>& user_files,
                            const std::string& shipped = ShippedRuleFile());

}  // namespace nccl_triage
