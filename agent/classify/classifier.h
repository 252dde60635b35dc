// The NCCL log classifier: a pure function from log text to a class and ranked causes.
//
// Streaming: lines are fed one at a time and only what the verdict needs is kept (the first WARN
// per rank, matched rule lines, success markers), so a 200,000-line, 64-rank log needs no more
// memory than its matches. Rules are data (rules.yaml, see rules.h), each with a cause id from the
// catalogue. Thread-compatible: one LogClassifier per log; the rules are immutable and shared.
#pragma once

#include <istream>
#include <memory>
#include <string>
#include <string_view>

#include "classify/message_catalogue.h"
#include "classify/rules.h"
#include "core/classification.h"

namespace nccl_triage {

class LogClassifier {
 public:
  LogClassifier();  // with ActiveRules()
  explicit LogClassifier(std::shared_ptr<const CompiledRules> rules);  // the built-in catalogue
  LogClassifier(std::shared_ptr<const CompiledRules> rules,
                std::shared_ptr<const MessageCatalogue> catalogue);
  ~LogClassifier();
  LogClassifier(const LogClassifier&) = delete;
  LogClassifier& operator=(const LogClassifier&) = delete;

  void Feed(std::string_view line);  // one line without its terminator (a trailing CR is ignored)
  Classification Finish();           // call once

 private:
  struct State;
  std::unique_ptr<State> state_;
};

Classification ClassifyLog(std::istream& in,
                           std::shared_ptr<const CompiledRules> rules = ActiveRules());
// The text as the classifier keeps evidence: valid UTF-8 stays, invalid bytes become U+FFFD and
// control characters (except tab) '?', so it is safe to print on a terminal and in JSON.
std::string Printable(std::string_view text);
Classification ClassifyLogText(std::string_view text);

}  // namespace nccl_triage
