#include "classify/classifier.h"

#include <algorithm>
#include <array>
#include <utility>

#include "classify/classifier_explain.h"
#include "classify/classifier_findings.h"
#include "classify/classifier_rank.h"
#include "classify/classifier_read.h"
#include "classify/line_text.h"

namespace nccl_triage {

// One log being classified: the reader's facts and causes, judged once at Finish.
struct LogClassifier::State {
  State(std::shared_ptr<const CompiledRules> rules, std::shared_ptr<const MessageCatalogue> cat)
      : rules_owner(std::move(rules)),
        catalogue(std::move(cat)),
        reader(*rules_owner, catalogue.get()) {}

  std::shared_ptr<const CompiledRules> rules_owner;
  std::shared_ptr<const MessageCatalogue> catalogue;
  classify::LineReader reader;
  bool finished = false;

  Classification Finish();
};

namespace {

// What the lines showed of the network and the software, as the classification reports it.
void Describe(const classify::LogFacts& facts, Classification& out) {
  const classify::NetworkFacts& net = facts.net;
  out.lines = facts.counts.lines;
  out.transports = net.transports;
  out.local_transports = net.local_transports;
  for (int i : net.ib_used) {
    if (i < static_cast<int>(net.ib_devices.size()) && !net.ib_devices[i].empty()) {
      out.ib_ports.push_back(net.ib_devices[i]);
    }
  }
  std::sort(out.ib_ports.begin(), out.ib_ports.end());
  out.gdrdma = net.gdrdma;
  out.ib_lines = net.ib_lines;
  out.network = net.network;
  out.nccl_version = facts.versions.version;
  out.init_complete = facts.run.init_complete;
}

}  // namespace

// Read, then judge: the run's outcome, the findings across lines, the causes that stay in their
// order, the roots, and the reason.
Classification LogClassifier::State::Finish() {
  const classify::LogFacts& facts = reader.facts();
  classify::CauseTable& table = reader.causes();
  Classification out;
  Describe(facts, out);
  const classify::RunOutcome outcome = classify::JudgeRun(facts.run, facts.net);
  classify::AddMultiLineFindings(facts, outcome.completed, table);
  const classify::KeptMap kept =
      classify::KeepCauses(table, outcome, facts.run, facts.net, facts.env, facts.ranks,
                           rules_owner->rules());
  out.causes = classify::RankCauses(kept);
  classify::FillRoots(facts.ranks, outcome.success, out);
  classify::Explain({.counts = facts.counts,
                     .run = facts.run,
                     .net = facts.net,
                     .nccl_version = facts.versions.version,
                     .env_net = facts.env.net,
                     .ranks = facts.ranks,
                     .completed = outcome.completed},
                    kept, out);
  return out;
}

LogClassifier::LogClassifier() : LogClassifier(ActiveRules()) {}
LogClassifier::LogClassifier(std::shared_ptr<const CompiledRules> rules)
    : LogClassifier(std::move(rules), MessageCatalogue::Builtin()) {}
LogClassifier::LogClassifier(std::shared_ptr<const CompiledRules> rules,
                             std::shared_ptr<const MessageCatalogue> catalogue)
    : state_(std::make_unique<State>(std::move(rules), std::move(catalogue))) {}
LogClassifier::~LogClassifier() = default;

void LogClassifier::Feed(std::string_view line) { state_->reader.Feed(line); }

Classification LogClassifier::Finish() {
  Classification c = state_->Finish();
  state_->finished = true;
  return c;
}

Classification ClassifyLog(std::istream& in, std::shared_ptr<const CompiledRules> rules) {
  constexpr size_t kMaxLineBytes = classify::kMaxLineBytes;
  LogClassifier classifier(std::move(rules));
  std::string current;
  bool pending = false;  // bytes after the last newline
  std::array<char, 65536> buf{};
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    auto n = static_cast<size_t>(in.gcount());
    if (n == 0) break;
    std::string_view chunk(buf.data(), n);
    while (!chunk.empty()) {
      size_t nl = chunk.find('\n');
      std::string_view part = chunk.substr(0, nl);
      // Keep at most one byte beyond the cap, so Feed still sees that the line was long.
      if (current.size() <= kMaxLineBytes) {
        current.append(classify::Cap(part, kMaxLineBytes + 1 - current.size()));
      }
      if (nl == std::string_view::npos) {
        pending = true;
        break;
      }
      classifier.Feed(current);
      current.clear();
      pending = false;
      chunk.remove_prefix(nl + 1);
    }
  }
  if (pending) classifier.Feed(current);
  return classifier.Finish();
}

std::string Printable(std::string_view text) { return classify::Sanitize(text); }

Classification ClassifyLogText(std::string_view text) {
  LogClassifier classifier;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    classifier.Feed(text.substr(0, nl));
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
  return classifier.Finish();
}

}  // namespace nccl_triage
