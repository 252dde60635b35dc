// The exporter's contract: a full scrape exports exactly the declared metric families (names,
// types, labels; the documentation's table is generated from the declarations), and the
// documentation's annotation table lists exactly the annotation keys the publisher writes.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "exporter/annotations.h"
#include "exporter/metrics.h"
#include "test_state.h"
#include "support/docs.h"

namespace nccl_triage {
namespace {

std::string ExporterSection() {
  return testing::DocSection("exporter", /*with_open_marker=*/true);
}

std::vector<std::string> Cells(const std::string& row) {
  std::vector<std::string> cells;
  std::stringstream ss(row);
  std::string cell;
  std::getline(ss, cell, '|');  // before the first bar
  while (std::getline(ss, cell, '|')) cells.push_back(cell);
  return cells;
}

std::vector<std::string> Backticked(const std::string& cell) {
  std::vector<std::string> out;
  std::regex re("`([^`]+)`");
  for (std::sregex_iterator it(cell.begin(), cell.end(), re), end; it != end; ++it) {
    out.push_back((*it)[1]);
  }
  return out;
}

std::string Join(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ",") + s;
  return out;
}

// name -> "type|sorted,labels"
using MetricTable = std::map<std::string, std::string>;

// The declared families (exporter/metrics.cc): the documentation's table is generated from them.
MetricTable SpecMetrics() {
  MetricTable code;
  for (const auto& spec : AgentMetricSpecs()) {
    std::vector<std::string> labels;
    std::stringstream ss{std::string(spec.labels)};
    std::string l;
    while (std::getline(ss, l, ',')) labels.push_back(l);
    code[std::string(spec.name)] = std::string(spec.type) + "|" + Join(labels);
  }
  return code;
}

TEST(MetricSpecs, AFullScrapeExportsExactlyTheDeclaredFamilies) {
  AgentState state("gpu-node-1", "v", 0);
  testing::FillCycle(state, testing::TestSnapshot(2),
                     {testing::TestFinding("ib.port_state", FaultClass::kIbResource,
                                           CheckStatus::kFail)},
                     1000);
  testing::FillPeers(state, 2, 2000);
  testing::FillRailProbes(state, 2, 2000);
  state.SetPool("a100-hdr");  // a node in a config.pools entry
  state.SetWorkloadFindings({{"ns", "pod", "c", testing::TestFinding("limits.memlock",
                                                                    FaultClass::kArchitecture,
                                                                    CheckStatus::kFail)}});
  state.SetRasJobs({{"ns", "pod", "stuck", 1, 0, 1, 5000, 2, "gpu.health"}},
                   {{"ok", 1}, {"timeout", 0}});
  AgentMetrics metrics(state, "v");
  metrics.SetKernelCounts([] {
    kernel::KernelCounts k;
    k.link_downs["mlx5_0/1"] = 2;
    k.xids[79] = 1;
    k.dropped["key_limit"] = 1;
    return k;
  });
  MetricTable scraped;
  for (const auto& family : metrics.Collect()) {
    ASSERT_FALSE(family.metric.empty()) << family.name;
    std::vector<std::string> labels;
    for (const auto& l : family.metric[0].label) labels.push_back(l.name);
    std::string type = family.type == prometheus::MetricType::Counter     ? "counter"
                       : family.type == prometheus::MetricType::Histogram ? "histogram"
                                                                          : "gauge";
    scraped[family.name] = type + "|" + Join(labels);
  }
  EXPECT_EQ(SpecMetrics(), scraped);
}

TEST(Readme, AnnotationTableListsExactlyThePublishedKeys) {
  std::set<std::string> readme;
  std::stringstream ss(ExporterSection());
  std::string line;
  while (std::getline(ss, line)) {
    if (line.rfind("| `nccl-triage.io/", 0) == 0) readme.insert(Backticked(Cells(line)[0]).at(0));
  }
  std::set<std::string> code(std::begin(kAnnotationKeys), std::end(kAnnotationKeys));
  EXPECT_EQ(readme, code);
  // And the publisher really writes every one of them (updated is added when sending).
  AgentState state("n", "v", 0);
  testing::FillCycle(state, testing::TestSnapshot(1), {}, 1000);
  auto values = AnnotationsFor(state.View()).values;
  std::set<std::string> written;
  for (const auto& [k, v] : values) written.insert(k);
  written.insert(std::string(kAnnotationUpdated));
  EXPECT_EQ(written, code);
}

}  // namespace
}  // namespace nccl_triage
