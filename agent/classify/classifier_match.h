// Matching one parsed line against the classifier's knowledge: the rules that hold for the log's
// NCCL version and settings, the catalogue's path of a WARN no rule names, and a rule's
// confidence raised by the setting it names.
//
// Pure functions of their arguments (the rules and the catalogue are immutable).
#pragma once

#include <vector>

#include "classify/classifier_facts.h"
#include "classify/log_line.h"
#include "classify/message_catalogue.h"
#include "classify/rules.h"

namespace nccl_triage::classify {

// The rules that name a line and hold for the log's NCCL version (when it is known) and the
// settings it showed so far (a rule with after_env needs one of them set).
std::vector<CompiledRules::LineMatch> MatchRules(const CompiledRules& rules, const ParsedLine& p,
                                                 const NcclVersion& version, const EnvFacts& env);

// A rule's confidence, raised when the log set the NCCL_* variable the rule names (boost_env).
double Boost(const Rule& r, double confidence, const EnvFacts& env);

// The path of a WARN no rule names: the source file NCCL printed before WARN, else its message
// against NCCL's format strings (and aws-ofi-nccl's `NET/OFI ` prefix); nullptr when unknown.
const MessagePath* CataloguePath(const MessageCatalogue& catalogue, const ParsedLine& p);

}  // namespace nccl_triage::classify
