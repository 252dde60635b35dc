#include "checks/builtin.h"

#include <array>
#include <stdexcept>
#include <string>

#include "core/catalogue.h"

namespace nccl_triage {
namespace {

// Catalogue order (the positions of the NT_HOST_CHECK declarations): architecture first, then
// ib_resource, as the documentation's table lists them.
constexpr std::array kBuiltins = {
#define NT_HOST_CHECK_ENTRY(function, id) Check{CauseId(id), &checks::function},
#include "core/host_check_list.inc"
#undef NT_HOST_CHECK_ENTRY
};

// What the registry would reject at run time, and what the README's check table needs, decided
// when this file is built: the table is exactly the catalogue's host checks, in its order, each
// with a function.
constexpr bool IsTheCataloguesHostChecksInOrder() {
  constexpr auto kHostChecks = CatalogueIds<CauseKind::kHostCheck>();
  if (kHostChecks.size() != kBuiltins.size()) return false;
  for (size_t i = 0; i < kBuiltins.size(); ++i) {
    if (kBuiltins[i].id != kHostChecks[i] || kBuiltins[i].run == nullptr) return false;
  }
  return true;
}
static_assert(IsTheCataloguesHostChecksInOrder(),
              "kBuiltins must list every host check of the catalogue once, in catalogue order");

}  // namespace

Status RegisterBuiltinChecks(CheckRegistry& registry) {
  for (const auto& c : kBuiltins) {
    if (Status s = registry.Register(c); !s.ok()) {
      return Internal("built-in checks: " + s.message());
    }
  }
  return Status::Ok();
}

CheckRegistry BuiltinCheckRegistry() {
  CheckRegistry registry;
  if (Status s = RegisterBuiltinChecks(registry); !s.ok()) throw std::logic_error(s.message());
  return registry;
}

}  // namespace nccl_triage
