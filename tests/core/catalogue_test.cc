#include "core/catalogue.h"

#include <gtest/gtest.h>

#include <regex>
#include <set>
#include <string>

namespace nccl_triage {
namespace {

TEST(Catalogue, IdsAreUniqueAndWellFormed) {
  std::set<std::string_view> seen;
  const std::regex id_shape("^[a-z]+\\.[a-z0-9_]+$");
  for (const auto& e : Catalogue()) {
    EXPECT_TRUE(seen.insert(e.id).second) << "duplicate id " << e.id;
    EXPECT_TRUE(std::regex_match(std::string(e.id), id_shape)) << e.id;
    EXPECT_FALSE(e.title.empty()) << e.id;
    EXPECT_FALSE(e.why.empty()) << e.id;
    EXPECT_FALSE(e.remedy.empty()) << e.id;
  }
}

TEST(Catalogue, HostChecksOfDesignArePresentWithTheirClass) {
  // DESIGN.md's two lists: the class is where the fix lives.
  for (const char* id : {"versions.nccl", "versions.cuda_driver", "versions.ofed_kernel",
                         "container.host_network", "container.rdma_devices", "container.ipc_lock",
                         "limits.memlock", "limits.nofile", "security.lsm", "platform.arch",
                         "shm.size", "net.socket_ifname"}) {
    const CauseInfo* c = FindCause(id);
    ASSERT_NE(c, nullptr) << id;
    EXPECT_EQ(c->fault_class, FaultClass::kArchitecture) << id;
    EXPECT_EQ(c->kind, CauseKind::kHostCheck) << id;
  }
  for (const char* id : {"ib.hca_present", "ib.driver", "ib.port_state", "ib.port_rate",
                         "ib.subnet_manager", "ib.pkey", "ib.gid", "ib.port_errors",
                         "ib.mr_register", "ib.contention", "ib.peermem"}) {
    const CauseInfo* c = FindCause(id);
    ASSERT_NE(c, nullptr) << id;
    EXPECT_EQ(c->fault_class, FaultClass::kIbResource) << id;
    EXPECT_EQ(c->kind, CauseKind::kHostCheck) << id;
  }
}

TEST(Catalogue, UnknownIdIsNotFound) { EXPECT_EQ(FindCause("ib.nonexistent"), nullptr); }

}  // namespace
}  // namespace nccl_triage
