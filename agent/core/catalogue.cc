// The catalogue's own rules, checked when core is built: a broken entry is a build error, not a
// test failure found later. The table itself is in catalogue.h (it must be constexpr-visible for
// CauseId).
#include "core/catalogue.h"

#include <ostream>

namespace nccl_triage {
namespace {

constexpr bool IsLower(char c) { return c >= 'a' && c <= 'z'; }
constexpr bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// `family.name`: lower-case letters, then one dot, then lower-case letters, digits and '_'. Ids
// are metric label values, annotation values and config keys (checks.disabled).
constexpr bool WellFormed(std::string_view id) {
  const size_t dot = id.find('.');
  if (dot == 0 || dot == std::string_view::npos || dot + 1 == id.size()) return false;
  for (size_t i = 0; i < id.size(); ++i) {
    const char c = id[i];
    const bool ok = i < dot ? IsLower(c) : i == dot || IsLower(c) || IsDigit(c) || c == '_';
    if (!ok) return false;
  }
  return true;
}

constexpr bool IdsWellFormedAndUnique() {
  for (size_t i = 0; i < Catalogue().size(); ++i) {
    if (!WellFormed(Catalogue()[i].id)) return false;
    for (size_t j = 0; j < i; ++j) {
      if (Catalogue()[j].id == Catalogue()[i].id) return false;
    }
  }
  return true;
}

constexpr bool Documented() {
  for (const CauseInfo& e : Catalogue()) {
    if (e.title.empty() || e.why.empty() || e.remedy.empty()) return false;
    const bool host = e.kind == CauseKind::kHostCheck;
    if (host && (e.looks_at.empty() || e.verdict.empty())) return false;
  }
  return true;
}

// Each trait is read by code that only ever sees ids of some kinds: a trait on another kind would
// be silently ignored.
constexpr bool TraitsFitTheKind() {
  constexpr unsigned kAll =
      kRunsInContainers | kExplainsSlowIb | kMarksDegraded | kConsequenceOnly | kFromProbeResult;
  for (const CauseInfo& e : Catalogue()) {
    if ((e.traits & ~kAll) != 0) return false;
    const bool host = e.kind == CauseKind::kHostCheck;
    const bool log = e.kind == CauseKind::kLogCause;
    if (e.Has(kRunsInContainers) && !host) return false;  // judge.h runs host checks
    if (e.Has(kExplainsSlowIb) && !host) return false;    // decision.h reads node findings
    if ((e.Has(kMarksDegraded) || e.Has(kConsequenceOnly) || e.Has(kFromProbeResult)) && !log) {
      return false;  // verdict causes named from logs and probe results
    }
  }
  return true;
}

static_assert(IdsWellFormedAndUnique(), "catalogue ids must be unique and look like family.name");
static_assert(Documented(),
              "every catalogue entry needs a title, a why and a remedy (a host check also what it "
              "looks at and its verdicts)");
static_assert(TraitsFitTheKind(), "a CauseTrait is set on an entry of a kind that never reads it");

}  // namespace

std::ostream& operator<<(std::ostream& out, CauseId id) { return out << id.str(); }

Finding MakeFinding(CauseId id, CheckStatus status, std::string message) {
  Finding f;
  f.check = std::string(id.str());
  f.fault_class = id.info().fault_class;
  f.status = status;
  f.message = std::move(message);
  if (status != CheckStatus::kPass) f.remedy = std::string(id.info().remedy);
  return f;
}

}  // namespace nccl_triage
