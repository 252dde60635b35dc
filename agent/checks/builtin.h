// The built-in host checks, one function per catalogue id (one source file each, named after the
// id: ib.port_state lives in ib_port_state.cc). Declared here so tests can call a single check.
// Every function is pure and thread-safe.
#pragma once

#include "checks/check.h"

namespace nccl_triage::checks {

// ib_resource
Finding IbHcaPresent(const NodeSnapshot& s, const Config& c, const CheckContext& ctx);
Finding IbDriver(const NodeSnapshot& s, const Config& c, const CheckContext& ctx);
Finding IbPortState(const NodeSnapshot& s, const Config& c, const CheckContext& ctx);
Finding IbPortRate(const NodeSnapshot& s, const Config& c, const CheckContext& ctx);
Finding IbSubnetManager(const NodeSnapshot& s, const Config& c, const CheckContext& ctx);
Finding IbPkey(const NodeSnapshot& s, const Config& c, const CheckContext& ctx);
Finding IbGid(const NodeSnapshot& s, const Config& c, const CheckContext& ctx);
Finding IbPortErrors(const NodeSnapshot& s, const Config& c, const CheckContext& ctx);
Finding IbMrRegister(const NodeSnapshot& s, const Config& c, const CheckContext& ctx);
Finding IbVerbsView(const NodeSnapshot& s, const Config& c, const CheckContext& ctx);
Finding IbContention(const NodeSnapshot& s, const Config& c, const CheckContext& ctx);
Finding IbPeermem(const NodeSnapshot& s, const Config& c, const CheckContext& ctx);
Finding IbRailTopology(const NodeSnapshot& s, const Config& c, const CheckContext& ctx);

// architecture
Finding VersionsNccl(const NodeSnapshot& s, const Config& c, const CheckContext& ctx);
Finding VersionsCudaDriver(const NodeSnapshot& s, const Config& c, const CheckContext& ctx);
Finding VersionsOfedKernel(const NodeSnapshot& s, const Config& c, const CheckContext& ctx);
Finding ContainerHostNetwork(const NodeSnapshot& s, const Config& c, const CheckContext& ctx);
Finding ContainerRdmaDevices(const NodeSnapshot& s, const Config& c, const CheckContext& ctx);
Finding ContainerIpcLock(const NodeSnapshot& s, const Config& c, const CheckContext& ctx);
Finding LimitsMemlock(const NodeSnapshot& s, const Config& c, const CheckContext& ctx);
Finding LimitsNofile(const NodeSnapshot& s, const Config& c, const CheckContext& ctx);
Finding SecurityLsm(const NodeSnapshot& s, const Config& c, const CheckContext& ctx);
Finding PlatformArch(const NodeSnapshot& s, const Config& c, const CheckContext& ctx);
Finding ShmSize(const NodeSnapshot& s, const Config& c, const CheckContext& ctx);
Finding NetSocketIfname(const NodeSnapshot& s, const Config& c, const CheckContext& ctx);

}  // namespace nccl_triage::checks
