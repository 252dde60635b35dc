#include "core/json_text.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "base/utf8.h"
#include "core/catalogue.h"
#include "core/ids.h"
#include "core/report.h"

namespace nccl_triage {
namespace {

// nlohmann's dump() threw type_error 316 on these bytes: `check --format json` aborted and
// GET /status answered 500 for as long as the line stayed in the window.
TEST(DumpJson, AReportWithANonUtf8ProcessNameDumpsAsValidJson) {
  NodeReport report;
  report.node = "gpu-\xFF";
  Finding f = MakeFinding(ids::kKernelXid, CheckStatus::kWarn,
                          "GPU 0000:44:00: Xid 31 (name=\xFF\xFE, Ch 8)");
  f.evidence.push_back({"kernel log \xC3", "pid=1, name=\xFF\xFE, Ch 8", "dev/kmsg"});
  report.findings.push_back(f);
  const nlohmann::json j = ToJson(report);
  EXPECT_THROW((void)j.dump(), nlohmann::json::type_error);  // what every writer did
  for (int indent : {-1, 2}) {
    const std::string text = DumpJson(j, indent);
    EXPECT_TRUE(IsValidUtf8(text));
    const auto back = nlohmann::json::parse(text, nullptr, false);
    ASSERT_FALSE(back.is_discarded());
    EXPECT_EQ(back["findings"][0]["evidence"][0]["value"],
              "pid=1, name=\xEF\xBF\xBD\xEF\xBF\xBD, Ch 8");
  }
}

TEST(DumpJson, ValidJsonIsWrittenExactlyAsDumpWritesIt) {
  const nlohmann::json j = {{"a", "\xC3\xA9"}, {"b", {1, 2, "x"}}, {"c", nullptr}};
  EXPECT_EQ(DumpJson(j), j.dump());
  EXPECT_EQ(DumpJson(j, 2), j.dump(2));
}

TEST(StringMember, IsTheStringOrEmptyWhateverTheShape) {
  const nlohmann::json node = {{"metadata", {{"name", "gpu-1"}, {"uid", 7}}}};
  EXPECT_EQ(StringMember(node["metadata"], "name"), "gpu-1");
  EXPECT_EQ(StringMember(node["metadata"], "uid"), "");      // not a string
  EXPECT_EQ(StringMember(node["metadata"], "missing"), "");  // no such member
  EXPECT_EQ(StringMember(nlohmann::json::array({"name"}), "name"), "");  // not an object
  EXPECT_EQ(StringMember(nlohmann::json(), "name"), "");
}

}  // namespace
}  // namespace nccl_triage
