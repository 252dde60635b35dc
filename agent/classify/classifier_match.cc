#include "classify/classifier_match.h"

#include <algorithm>
#include <string>

#include "classify/line_text.h"

namespace nccl_triage::classify {

std::vector<CompiledRules::LineMatch> MatchRules(const CompiledRules& rules, const ParsedLine& p,
                                                 const NcclVersion& version, const EnvFacts& env) {
  std::vector<CompiledRules::LineMatch> matches = rules.MatchLine(p);
  std::erase_if(matches, [&](const CompiledRules::LineMatch& m) {
    const Rule& r = rules.rules()[m.rule];
    if (!r.AppliesTo(version)) return true;
    return !r.after_env.empty() &&
           std::none_of(r.after_env.begin(), r.after_env.end(),
                        [&](const std::string& e) { return env.Has(e); });
  });
  return matches;
}

double Boost(const Rule& r, double confidence, const EnvFacts& env) {
  if (!r.boost_env.empty() && env.Boosted(r.boost_env)) return std::min(0.95, confidence + 0.3);
  return confidence;
}

const MessagePath* CataloguePath(const MessageCatalogue& catalogue, const ParsedLine& p) {
  // The file first: one lookup, and as precise (a file answers only when all its WARNs share
  // one path). The message is matched when the line names no file or an ambiguous one.
  if (!p.file.empty()) {
    if (const MessagePath* path = catalogue.PathOfFile(p.file)) return path;
  }
  if (const CatalogueMessage* m = catalogue.MatchWarn(Cap(p.message, 1024))) {
    return FindMessagePath(m->path);
  }
  // aws-ofi-nccl puts `NET/OFI ` before every warning it prints (NCCL_OFI_WARN), also those
  // whose text the catalogue cannot hold (formats pasted together from macros, releases it has
  // not read): the plugin's path all the same.
  if (StartsWith(p.message, "NET/OFI ")) return FindMessagePath("net_ofi");
  return nullptr;
}

}  // namespace nccl_triage::classify
