// The built-in host checks, one function per catalogue id (one source file each, named after the
// id: ib.port_state lives in ib_port_state.cc, declared there with NT_HOST_CHECK, checks/check.h).
// Declared here so tests can call a single check. Every function is pure and thread-safe.
#pragma once

#include "checks/check.h"

namespace nccl_triage::checks {

// One declaration per NT_HOST_CHECK of agent/checks/*.cc, collected by the build.
#define NT_HOST_CHECK_ENTRY(function, id) \
  Finding function(const NodeSnapshot& s, const Config& c, const CheckContext& ctx);
#include "core/host_check_list.inc"
#undef NT_HOST_CHECK_ENTRY

}  // namespace nccl_triage::checks
