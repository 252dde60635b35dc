#include "core/catalogue.h"

#include <gtest/gtest.h>

#include <cctype>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/ids.h"

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
  for (const char* id :
       {"versions.nccl", "versions.cuda_driver", "versions.ofed_kernel", "container.host_network",
        "container.rdma_devices", "container.ipc_lock", "limits.memlock", "limits.nofile",
        "security.lsm", "platform.arch", "shm.size", "net.socket_ifname"}) {
    const CauseInfo* c = FindCause(id);
    ASSERT_NE(c, nullptr) << id;
    EXPECT_EQ(c->fault_class, FaultClass::kArchitecture) << id;
    EXPECT_EQ(c->kind, CauseKind::kHostCheck) << id;
  }
  for (const char* id : {"ib.hca_present", "ib.driver", "ib.port_state", "ib.port_rate",
                         "ib.subnet_manager", "ib.pkey", "ib.gid", "ib.port_errors",
                         "ib.mr_register", "ib.contention", "ib.peermem", "ib.rail_topology"}) {
    const CauseInfo* c = FindCause(id);
    ASSERT_NE(c, nullptr) << id;
    EXPECT_EQ(c->fault_class, FaultClass::kIbResource) << id;
    EXPECT_EQ(c->kind, CauseKind::kHostCheck) << id;
  }
}

TEST(Catalogue, UnknownIdIsNotFound) { EXPECT_EQ(FindCause("ib.nonexistent"), nullptr); }

TEST(CauseId, GivesItsEntryAndText) {
  EXPECT_EQ(ids::kIbPortState.str(), "ib.port_state");
  EXPECT_EQ(&ids::kIbPortState.info(), FindCause("ib.port_state"));
  EXPECT_EQ(ids::kLimitsMemlock.info().fault_class, FaultClass::kArchitecture);
  const std::string read = "ib.port_state";  // as from the wire or a report
  EXPECT_TRUE(ids::kIbPortState == read);
  EXPECT_FALSE(ids::kIbPortRate == read);
  EXPECT_NE(ids::kIbPortState, ids::kIbPortRate);
  std::ostringstream out;
  out << ids::kIbGid;
  EXPECT_EQ(out.str(), "ib.gid");
}

// The lines of ids.h with the host-check list the build collects (the NT_HOST_CHECK_ENTRY lines
// of core/host_check_list.inc, each a constant k<Function>) spliced in where ids.h includes it.
std::vector<std::string> IdsHeaderLines() {
  std::vector<std::string> lines;
  std::ifstream in(std::string(NCCL_TRIAGE_SOURCE_DIR) + "/agent/core/ids.h");
  const std::regex entry(R"re(^NT_HOST_CHECK_ENTRY\((\w+), "([^"]+)"\))re");
  std::string line;
  while (std::getline(in, line)) {
    if (line != "#include \"core/host_check_list.inc\"") {
      lines.push_back(line);
      continue;
    }
    std::ifstream list(std::string(NCCL_TRIAGE_BINARY_DIR) + "/generated/core/host_check_list.inc");
    EXPECT_TRUE(list) << "no generated core/host_check_list.inc";
    for (std::string l; std::getline(list, l);) {
      std::smatch m;
      if (std::regex_search(l, m, entry)) {
        lines.push_back("inline constexpr CauseId k" + m[1].str() + "{\"" + m[2].str() + "\"};");
      }
    }
  }
  return lines;
}

// ids.h is the list code names ids from: one constant per entry, in catalogue order, named after
// the id (ib.port_state: kIbPortState; the host checks' constants come from their NT_HOST_CHECK
// declarations). The compiler checks each constant's id; this checks that none is missing, so
// every id can be written as a symbol.
TEST(CauseId, IdsHeaderHasOneConstantPerEntryInCatalogueOrder) {
  const std::vector<std::string> lines = IdsHeaderLines();
  ASSERT_FALSE(lines.empty()) << "agent/core/ids.h";
  const std::regex constant(R"re(inline constexpr CauseId (k\w+)\{"([^"]+)"\};)re");
  std::vector<std::string> listed;
  for (const std::string& line : lines) {
    std::smatch m;
    if (!std::regex_search(line, m, constant)) continue;
    std::string name = "k";
    bool upper = true;
    for (char c : m[2].str()) {
      if (c == '.' || c == '_') {
        upper = true;
        continue;
      }
      name += upper ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
      upper = false;
    }
    EXPECT_EQ(m[1].str(), name) << m[2];
    listed.push_back(m[2].str());
  }
  std::vector<std::string> catalogue;
  for (const auto& e : Catalogue()) catalogue.emplace_back(e.id);
  EXPECT_EQ(listed, catalogue);
}

TEST(CatalogueIds, SelectsByKindAndTraitInCatalogueOrder) {
  constexpr auto kContainers = CatalogueIds<CauseKind::kHostCheck, kRunsInContainers>();
  std::vector<std::string> got;
  for (CauseId id : kContainers) got.emplace_back(id.str());
  std::vector<std::string> want;
  for (const auto& e : Catalogue()) {
    if (e.kind == CauseKind::kHostCheck && e.Has(kRunsInContainers)) want.emplace_back(e.id);
  }
  EXPECT_EQ(got, want);
  EXPECT_EQ(got.front(), "versions.nccl");
  EXPECT_EQ(CatalogueIds<CauseKind::kCrossNode>().size(), 4u);
  EXPECT_EQ((CatalogueIds<CauseKind::kCrossNode, kRunsInContainers>().size()), 0u);
}

// The causes that name no fault of the node they were logged on: a rank whose log says only these
// did not find the cause (the coordinator then looks at the other rank).
TEST(CauseTrait, ConsequencesAreThePeerTheDeadlineAndTheBareCodes) {
  std::vector<std::string> got;
  for (const auto& e : Catalogue()) {
    if (e.Has(kConsequenceOnly)) got.emplace_back(e.id);
  }
  EXPECT_EQ(got, (std::vector<std::string>{"nccl.internal", "nccl.system", "peer.exited",
                                           "nccl.timeout"}));
  EXPECT_TRUE(HasTrait("peer.exited", kConsequenceOnly));
  EXPECT_FALSE(HasTrait("probe.data", kConsequenceOnly));  // unknown class, but a cause
  EXPECT_FALSE(HasTrait("no.such_id", kConsequenceOnly));
}

}  // namespace
}  // namespace nccl_triage
