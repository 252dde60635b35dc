// Compiled by expect_compile_error.cmake, once per CASE_*: a catalogue id as a symbol compiles, an
// id that is not in the catalogue and a comparison with a string literal do not.
#include "core/ids.h"

namespace nccl_triage {

#if defined(CASE_VALID)
constexpr CauseId kFromText{"ib.port_state"};
static_assert(kFromText == ids::kIbPortState);
bool Compare(std::string_view read) { return ids::kIbPortState == read; }
#elif defined(CASE_UNKNOWN_ID)
constexpr CauseId kMistyped{"ib.port_stat"};
#elif defined(CASE_LITERAL_COMPARISON)
bool Compare() { return ids::kIbPortState == "ib.port_state"; }
#else
#error "define one of CASE_VALID, CASE_UNKNOWN_ID, CASE_LITERAL_COMPARISON"
#endif

}  // namespace nccl_triage
