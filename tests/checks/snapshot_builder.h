// Hand-built NodeSnapshots for check tests: a healthy GPU node with InfiniBand HCAs, a bare node
// with no RDMA or GPU, and small helpers to write facts. Tests start from one and change the one
// value the test is about.
#pragma once

#include <ostream>
#include <string>

#include "checks/check.h"
#include "core/snapshot.h"

namespace nccl_triage {
// Readable statuses in gtest failure messages.
inline void PrintTo(CheckStatus s, std::ostream* os) { *os << ToString(s); }
inline void PrintTo(FaultClass c, std::ostream* os) { *os << ToString(c); }
}  // namespace nccl_triage

namespace nccl_triage::testing {

template <typename T>
Fact<T> Have(T value, std::string source = "test") {
  return Fact<T>{std::move(value), std::move(source), ""};
}
template <typename T>
Fact<T> Missing(std::string source = "test") {
  return Fact<T>{std::nullopt, std::move(source), "missing"};
}
template <typename T>
Fact<T> Unreadable(std::string source = "test") {
  return Fact<T>{std::nullopt, std::move(source), "unreadable: EACCES"};
}

// `hcas` ConnectX-6 HCAs (MT4123) with one ACTIVE 200 Gb/s InfiniBand port each, SM configured,
// full default PKey, uverbs and /dev/infiniband entries, eight A100 GPUs on driver 535, OFED
// 5.8 modules with nvidia_peermem, unlimited memlock, host network, 32 GiB /dev/shm.
NodeSnapshot HealthyIbNode(int hcas = 4);
// The same node with its HCAs on the Ethernet link layer (RoCE) with RoCE v2 GIDs.
NodeSnapshot HealthyRoceNode(int hcas = 2);
// A machine with neither RDMA hardware nor GPUs (a laptop or a CI runner), otherwise healthy.
NodeSnapshot BareNode();

// Every Fact in the snapshot made unreadable (the lists stay).
void MakeEveryFactUnreadable(NodeSnapshot& s);

Finding RunOne(CheckFn fn, const NodeSnapshot& s, const Config& c = {},
               const CheckContext& ctx = {});

bool HasEvidenceFrom(const Finding& f, std::string_view source_part);

}  // namespace nccl_triage::testing
