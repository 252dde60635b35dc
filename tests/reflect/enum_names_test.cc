// The name of every value of every enum with a name table, against a golden written from the
// switch statements the tables replaced: names are in reports, metrics labels, annotations and
// files, so a table edit that renames one must show up here.
#include <gtest/gtest.h>

#include <string>

#include "base/log.h"
#include "classify/rules.h"
#include "core/catalogue.h"
#include "core/config.h"
#include "core/model.h"
#include "core/probe_result.h"
#include "core/rails.h"
#include "kernel/kernel_events.h"
#include "kernel/xid_table.h"
#include "planner/pair_judge.h"
#include "planner/rail_localisation.h"
#include "planner/remediation.h"
#include "planner/sweep.h"
#include "probe/subprocess.h"
#include "ras/report.h"
#include "support/text_file.h"
#include "workload/ras_watch.h"

namespace nccl_triage {
namespace {

// "Enum index name" for each value in declaration order (the enums count from 0 without gaps),
// checking on the way that the name reads back to the value.
template <NamedEnum E>
std::string Lines(std::string_view enum_name) {
  std::string out;
  const size_t n = kNamesOf<E>.size();
  for (size_t i = 0; i < n; ++i) {
    const auto e = static_cast<E>(i);
    const std::string_view name = ToString(e);
    bool listed = false;
    for (const auto& n : kNamesOf<E>) listed |= n.value == e;
    EXPECT_TRUE(listed) << enum_name << " " << i << " is not in the table"
                        << " (every value is named, and the values are 0..n-1)";
    EXPECT_EQ(FromString<E>(name), e) << enum_name << " " << name;
    out += std::string(enum_name) + " " + std::to_string(i) + " " + std::string(name) + "\n";
  }
  EXPECT_EQ(ToString(static_cast<E>(n)), "unknown") << enum_name;
  EXPECT_EQ(FromString<E>("no such name"), std::nullopt) << enum_name;
  EXPECT_EQ(FromString<E>(""), std::nullopt) << enum_name;
  return out;
}

TEST(EnumNames, EveryValueKeepsItsName) {
  std::string text;
  text += Lines<FaultClass>("FaultClass");
  text += Lines<CheckStatus>("CheckStatus");
  text += Lines<Basis>("Basis");
  text += Lines<ProbeMode>("ProbeMode");
  text += Lines<ProbeOutcome>("ProbeOutcome");
  text += Lines<RemediationMode>("RemediationMode");
  text += Lines<RailAffinity>("RailAffinity");
  text += Lines<FaultKind>("FaultKind");
  text += Lines<NodeState>("NodeState");
  text += Lines<PairLocalisation>("PairLocalisation");
  text += Lines<PairStatus>("PairStatus");
  text += Lines<RailFaultKind>("RailFaultKind");
  text += Lines<RemediationActionKind>("RemediationActionKind");
  text += Lines<Strength>("Strength");
  text += Lines<kernel::EventKind>("EventKind");
  text += Lines<kernel::XidAction>("XidAction");
  text += Lines<LogLevel>("LogLevel");
  text += Lines<LogFormat>("LogFormat");
  text += Lines<workload::RasOutcome>("RasOutcome");
  text += Lines<ras::RankState>("RankState");
  text += Lines<ras::FindingKind>("FindingKind");
  text += Lines<ExitKind>("ExitKind");
  text += Lines<CauseKind>("CauseKind");
  EXPECT_EQ(text, testing::ReadTextFile(std::string(NCCL_TRIAGE_SOURCE_DIR) +
                                        "/tests/reflect/golden/enum_names.txt"));
}

TEST(EnumNames, FromStringIsExact) {
  EXPECT_EQ(FromString<FaultClass>("ib_resource"), FaultClass::kIbResource);
  EXPECT_EQ(FromString<FaultClass>("IB_RESOURCE"), std::nullopt);
  EXPECT_EQ(FromString<FaultClass>("ib_resource "), std::nullopt);
  EXPECT_EQ(FromString<RemediationMode>("dry-run"), RemediationMode::kDryRun);
  EXPECT_EQ(FromString<RemediationMode>("dry_run"), std::nullopt);
}

TEST(EnumNames, LogLevelParsesWithoutRegardToCase) {
  LogLevel level = LogLevel::kInfo;
  EXPECT_TRUE(ParseLogLevel("debug", &level));
  EXPECT_EQ(level, LogLevel::kDebug);
  EXPECT_TRUE(ParseLogLevel("Warn", &level));
  EXPECT_EQ(level, LogLevel::kWarn);
  EXPECT_FALSE(ParseLogLevel("verbose", &level));
  EXPECT_EQ(level, LogLevel::kWarn);
  LogFormat format = LogFormat::kText;
  EXPECT_TRUE(ParseLogFormat("json", &format));
  EXPECT_EQ(format, LogFormat::kJson);
  EXPECT_FALSE(ParseLogFormat("JSON", &format));
}

}  // namespace
}  // namespace nccl_triage
