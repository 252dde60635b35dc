// The pure pieces of the triage stream: frames between the two executables, a log read as the
// API streams it (timestamps, head and tail, bounds), and the records' round trip.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "triage/frames.h"
#include "triage/log_reader.h"
#include "triage/records.h"

namespace nccl_triage::triage {
namespace {

using nlohmann::json;

std::vector<std::string> Decode(const std::string& stream, size_t piece, Status* status) {
  FrameDecoder d;
  std::vector<std::string> got;
  for (size_t i = 0; i < stream.size(); i += piece) {
    *status = d.Feed(stream.substr(i, piece), [&](const Frame& f) {
      got.push_back(std::string(1, f.kind) + std::to_string(f.stream) + ":" +
                    std::string(f.payload));
      return Status::Ok();
    });
    if (!status->ok()) return got;
  }
  *status = d.Finish();
  return got;
}

TEST(FrameDecoder, CutsFramesFedInPiecesOfAnySize) {
  const std::string stream = std::string(kFetchMagic) + JsonFrame("pod", {{"name", "a"}}) +
                             LogFrameHeader(3, 5) + "ab\ncd" + LogFrameHeader(3, 0);
  for (size_t piece : {1, 2, 7, 4096}) {
    Status s;
    auto got = Decode(stream, piece, &s);
    ASSERT_TRUE(s.ok()) << s.message();
    ASSERT_EQ(got.size(), 3U) << piece;
    EXPECT_EQ(got[0], R"(J0:{"name":"a","type":"pod"})");
    EXPECT_EQ(got[1], "L3:ab\ncd");
    EXPECT_EQ(got[2], "L3:");
  }
}

TEST(FrameDecoder, RefusesAStreamOfAnotherKind) {
  Status s;
  Decode("HTTP/1.1 200 OK\r\n", 64, &s);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("not a triage-fetch stream"), std::string::npos) << s.message();
}

TEST(FrameDecoder, RefusesAnOversizedFrameBeforeBufferingIt) {
  Status s;
  Decode(std::string(kFetchMagic) + "L 1 99999999\n", 64, &s);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("at most 65536"), std::string::npos) << s.message();
}

TEST(FrameDecoder, RefusesAMalformedHeaderAndAStreamCutInsideAFrame) {
  Status s;
  Decode(std::string(kFetchMagic) + "J zero 3\n{}}", 64, &s);
  EXPECT_NE(s.message().find("malformed frame header"), std::string::npos) << s.message();
  Decode(std::string(kFetchMagic) + LogFrameHeader(1, 10) + "short", 64, &s);
  EXPECT_NE(s.message().find("ended inside a frame"), std::string::npos) << s.message();
  Decode("", 64, &s);
  EXPECT_NE(s.message().find("before it began"), std::string::npos) << s.message();
}

TEST(FrameDecoder, AHandlerErrorStopsTheStream) {
  FrameDecoder d;
  const std::string stream =
      std::string(kFetchMagic) + JsonFrame("x", json::object()) + JsonFrame("y", json::object());
  int calls = 0;
  Status s = d.Feed(stream, [&](const Frame&) {
    ++calls;
    return InvalidArgument("no");
  });
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(s.message(), "no");
  EXPECT_EQ(d.Feed("more", [](const Frame&) { return Status::Ok(); }).message(), "no");
}

TEST(Rfc3339, ParsesTheKubeletsTimesWithAnyFractionAndOffsets) {
  EXPECT_EQ(ParseRfc3339Nanos("1970-01-01T00:00:01Z"), 1'000'000'000);
  EXPECT_EQ(ParseRfc3339Nanos("1970-01-01T00:00:01.5Z"), 1'500'000'000);
  EXPECT_EQ(ParseRfc3339Nanos("1970-01-01T00:00:01.000000001Z"), 1'000'000'001);
  EXPECT_EQ(ParseRfc3339Nanos("1970-01-01T01:00:00+01:00"), 0);
  EXPECT_EQ(ParseRfc3339Nanos("2024-02-29T12:00:00Z"), int64_t{1709208000} * 1'000'000'000);
  // A shorter fraction is not earlier: ".1" is 100 ms, after ".099".
  EXPECT_GT(*ParseRfc3339Nanos("2024-01-01T00:00:00.1Z"),
            *ParseRfc3339Nanos("2024-01-01T00:00:00.099Z"));
  for (const char* bad : {"", "2024-01-01", "2024-13-01T00:00:00Z", "2024-01-01T00:00:00",
                          "2024-01-01T00:00:00.Z", "2024-01-01T00:00:00Zjunk", "vm:533:533"}) {
    EXPECT_FALSE(ParseRfc3339Nanos(bad).has_value()) << bad;
  }
}

const char* kWarn =
    "gpu-a17:4121:4121 [0] misc/ibvwrap.cc:262 NCCL WARN Call to ibv_reg_mr failed with error "
    "Cannot allocate memory";

TEST(LogReader, TakesTheTimeOffEachLineAndTimesTheFirstFailure) {
  LogReader r;
  r.Feed("2024-01-01T00:00:00.5Z gpu-a17:4121:4121 [0] NCCL INFO NCCL version 2.18.3\n");
  r.Feed("2024-01-01T00:00:01.25Z ");
  r.Feed(kWarn);
  r.Feed("\n2024-01-01T00:00:02Z gpu-a17:4121:4121 [0] NCCL INFO transport/net_ib.cc:692 -> 2\n");
  LogSummary s = r.Finish();
  EXPECT_EQ(s.lines, 3U);
  EXPECT_EQ(s.classification.fault_class, FaultClass::kIbResource);
  ASSERT_FALSE(s.classification.roots.empty());
  EXPECT_EQ(s.classification.roots.front().line.text, kWarn);  // no time prefix in evidence
  ASSERT_TRUE(s.root_ns.has_value());
  EXPECT_EQ(*s.root_ns, *ParseRfc3339Nanos("2024-01-01T00:00:01.25Z"));
  EXPECT_TRUE(s.root_time_exact);
  EXPECT_EQ(s.classification.nccl_version, "2.18.3");
}

TEST(LogReader, ATailSkipsWhatTheHeadAlreadyReadAndTheHeadsCutLine) {
  LogReader r;
  r.Feed("2024-01-01T00:00:01Z a NCCL INFO one\n2024-01-01T00:00:02Z a NCCL INFO two\n");
  r.Feed("2024-01-01T00:00:03Z a NCCL INFO thr");  // the head's limit cut this line
  r.StartTail();
  r.Feed("2024-01-01T00:00:02Z a NCCL INFO two\n2024-01-01T00:00:03Z a NCCL INFO three\n");
  r.Feed("2024-01-01T00:00:04Z a NCCL INFO four\n");
  LogSummary s = r.Finish();
  EXPECT_EQ(s.lines, 4U);  // one, two, three, four
  EXPECT_EQ(s.overlap_lines, 1U);
  EXPECT_EQ(s.gap_after_line, 2U);
}

TEST(LogReader, LinesWithoutATimeAreReadAsTheyAre) {
  LogReader r;
  r.Feed(std::string(kWarn) + "\n");
  LogSummary s = r.Finish();
  EXPECT_EQ(s.lines, 1U);
  EXPECT_EQ(s.classification.fault_class, FaultClass::kIbResource);
  EXPECT_FALSE(s.root_ns.has_value());
}

TEST(LogReader, AHugeLineIsCutAndMemoryStaysBounded) {
  LogReader r;
  const std::string big(1 << 20, 'x');
  for (int i = 0; i < 8; ++i) r.Feed(big);  // 8 MiB without a newline
  r.Feed("\n");
  r.Feed(std::string(kWarn) + "\n");
  LogSummary s = r.Finish();
  EXPECT_EQ(s.lines, 2U);
  EXPECT_EQ(s.cut_lines, 1U);
  EXPECT_EQ(s.bytes, 8U * (1 << 20) + 1 + std::string(kWarn).size() + 1);
  EXPECT_EQ(s.classification.fault_class, FaultClass::kIbResource);
}

TEST(LogReader, ControlCharactersNeverReachTheEvidence) {
  LogReader r;
  r.Feed(
      "2024-01-01T00:00:01Z gpu:1:1 [0] misc/ibvwrap.cc:262 NCCL WARN Call to ibv_reg_mr "
      "failed with error Cannot allocate memory \x1b]0;pwned\x07\x1b[2J\n");
  LogSummary s = r.Finish();
  ASSERT_FALSE(s.classification.roots.empty());
  const std::string& text = s.classification.roots.front().line.text;
  EXPECT_EQ(text.find('\x1b'), std::string::npos) << text;
  EXPECT_EQ(text.find('\x07'), std::string::npos) << text;
}

TEST(LogReader, AnEmptyLogIsUnknown) {
  LogReader r;
  LogSummary s = r.Finish();
  EXPECT_EQ(s.lines, 0U);
  EXPECT_EQ(s.classification.fault_class, FaultClass::kUnknown);
}

TEST(Records, APodFromTheApiKeepsWhereItRanAndHowItsContainersEnded) {
  const json api = json::parse(R"({
    "metadata": {"name": "train-7-worker-3", "namespace": "ml", "uid": "u-3",
      "labels": {"batch.kubernetes.io/job-completion-index": "3"},
      "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "train-7",
                           "uid": "j-1", "controller": true}]},
    "spec": {"nodeName": "gpu-03", "hostNetwork": true,
             "containers": [{"name": "trainer"}, {"name": "sidecar"}]},
    "status": {"phase": "Failed", "podIP": "10.0.0.3", "hostIP": "10.0.0.3",
               "startTime": "2025-02-11T09:00:00Z",
      "podIPs": [{"ip": "10.0.0.3"}, {"ip": "fd00::3"}],
      "containerStatuses": [
        {"name": "trainer", "restartCount": 2,
         "state": {"terminated": {"reason": "Error", "exitCode": 1}},
         "lastState": {"terminated": {"reason": "OOMKilled", "exitCode": 137}}},
        {"name": "sidecar", "restartCount": 0, "state": {"running": {}}}]}})");
  JobPod p = PodFromApi(api);
  EXPECT_EQ(p.name, "train-7-worker-3");
  EXPECT_EQ(p.node, "gpu-03");
  EXPECT_TRUE(p.host_network);
  EXPECT_EQ(p.index, "3");
  EXPECT_EQ(p.start_time, "2025-02-11T09:00:00Z");
  EXPECT_EQ(p.owner.kind, "Job");
  EXPECT_EQ(p.owner.uid, "j-1");
  ASSERT_EQ(p.pod_ips.size(), 2U);
  ASSERT_EQ(p.containers.size(), 2U);
  EXPECT_EQ(p.containers[0].state, "terminated");
  EXPECT_EQ(p.containers[0].exit_code, 1);
  EXPECT_EQ(p.containers[0].last_reason, "OOMKilled");
  EXPECT_EQ(p.containers[0].restart_count, 2);
  EXPECT_EQ(p.containers[1].state, "running");

  auto back = JobPodFromJson(ToJson(p));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->containers[0].last_exit_code, 137);
  EXPECT_EQ(back->owner.name, "train-7");
}

TEST(Records, AFieldOfTheWrongTypeIsAnErrorNotACrash) {
  auto bad = JobPodFromJson(json{{"name", 7}});
  EXPECT_FALSE(bad.ok());
  EXPECT_FALSE(LogStreamEndFromJson(json::array()).ok());
  EXPECT_FALSE(PodFromApi(json("garbage")).containers.size());
}

TEST(Records, TheAgentsAnnotationsAreItsNodeVerdict) {
  const json api = json::parse(R"({"metadata": {"name": "agent-x", "annotations": {
      "nccl-triage.io/verdict": "ib_resource", "nccl-triage.io/basis": "checks",
      "nccl-triage.io/causes": "ib.port_state,ib.port_errors",
      "nccl-triage.io/updated": "2025-01-02T03:04:05Z",
      "nccl-triage.io/report":
        "{\"kernel_last_event\": {\"kernel.xid\": \"2025-01-02T01:00:00Z\"}}"}},
    "spec": {"nodeName": "gpu-05"}})");
  auto v = AgentVerdictFromApi(api);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->node, "gpu-05");
  EXPECT_EQ(v->verdict, "ib_resource");
  EXPECT_EQ(v->causes, (std::vector<std::string>{"ib.port_state", "ib.port_errors"}));
  EXPECT_EQ(v->kernel_last_event.at("kernel.xid"), "2025-01-02T01:00:00Z");
  EXPECT_EQ(AgentVerdictFromJson(ToJson(*v))->kernel_last_event, v->kernel_last_event);
  EXPECT_FALSE(AgentVerdictFromApi(json::parse(R"({"metadata": {"name": "a"}})")).has_value());
  // A report that is not JSON gives no times, not an error.
  const json bad = json::parse(R"({"metadata": {"name": "a", "annotations": {
      "nccl-triage.io/verdict": "unknown", "nccl-triage.io/report": "{not json"}}})");
  ASSERT_TRUE(AgentVerdictFromApi(bad).has_value());
  EXPECT_TRUE(AgentVerdictFromApi(bad)->kernel_last_event.empty());
}

}  // namespace
}  // namespace nccl_triage::triage
