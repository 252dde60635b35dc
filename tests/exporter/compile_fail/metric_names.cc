// Compiled by tests/core/compile_fail/expect_compile_error.cmake, once per CASE_*: a family named
// as its table declares it compiles, a misspelt one does not (the metrics code registers every
// family through DeclaredSpec, so a typo there is this build error, not a fallback at run time).
#include <array>

#include "exporter/metric_spec.h"

namespace nccl_triage {

constexpr std::array kTable = {
    MetricSpec{"nccl_triage_first", "gauge", "", "The first family."},
    MetricSpec{"nccl_triage_node_verdict", "gauge", "class", "The one the code names."},
};

#if defined(CASE_VALID)
static_assert(DeclaredSpec(kTable, "nccl_triage_node_verdict").help == "The one the code names.");
static_assert(&DeclaredSpec(kTable, "nccl_triage_first") == &kTable[0]);
#elif defined(CASE_UNKNOWN_NAME)
constexpr std::string_view kHelp = DeclaredSpec(kTable, "nccl_triage_node_verdikt").help;
#else
#error "define one of CASE_VALID, CASE_UNKNOWN_NAME"
#endif

}  // namespace nccl_triage
