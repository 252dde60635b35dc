// MetricSpec: one metric family of the runtime contract (name, type, labels, help), and the
// compile-time lookup the code that registers a family goes through.
//
// The agent's table is in exporter/metrics.cc, the coordinator's in
// coordinator/coordinator_metrics.cc; `nccl-triage-server dump-schema` prints both and the
// documentation's metric tables are generated from that. Code names a family as
// DeclaredSpec(kSpecs, "nccl_triage_..."): the lookup runs when the file is compiled, so a name
// that is not in the table is a build error that names ThisMetricIsNotInItsMetricSpecTable, never
// another family's help or a family missing at run time. Header-only, no prometheus-cpp.
#pragma once

#include <array>
#include <cstddef>
#include <string_view>

namespace nccl_triage {

struct MetricSpec {
  std::string_view name;
  std::string_view type;    // gauge | counter | histogram
  std::string_view labels;  // comma list, "" for none
  std::string_view help;    // the HELP line
  // The documentation's text (Markdown: the label values, where a value comes from); empty: the
  // help says it all.
  std::string_view doc = {};
};

// Declared and never defined: a constant expression that reaches this call does not compile, and
// the compiler's message names it.
void ThisMetricIsNotInItsMetricSpecTable();

// The index of `name` in `specs`, found when the calling file is compiled.
template <std::size_t N>
consteval std::size_t DeclaredSpecIndex(const std::array<MetricSpec, N>& specs,
                                        std::string_view name) {
  for (std::size_t i = 0; i < N; ++i) {
    if (specs[i].name == name) return i;
  }
  ThisMetricIsNotInItsMetricSpecTable();
  return N;  // not reached: the call above ends the constant evaluation
}

// The spec of `name` in `specs` (a constexpr table of static storage); a name that is not
// declared there does not compile.
template <std::size_t N>
consteval const MetricSpec& DeclaredSpec(const std::array<MetricSpec, N>& specs,
                                         std::string_view name) {
  return specs[DeclaredSpecIndex(specs, name)];
}

}  // namespace nccl_triage
