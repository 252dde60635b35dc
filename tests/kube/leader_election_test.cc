// Leader election on a Lease (kube/leader_election.h) between two replicas, each with the real
// client, against the fake API server over HTTPS, on one fake clock: who leads, when a follower
// may take over, renewal, loss by the renew deadline and by a 409, release, and the fence in
// front of the writes. Time is the fake clock's: nothing here waits or measures.
#include "kube/leader_election.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <regex>
#include <sstream>
#include <thread>

#include "base/log.h"
#include "exporter/tls_test_cert.h"
#include "kube/kube_client.h"
#include "support/fake_api_harness.h"
#include "support/fake_api_server.h"
#include "support/fake_clock.h"
#include "support/text_file.h"

namespace nccl_triage {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;

class LeaderElection : public ::testing::Test {
 protected:
  LeaderElection() : log_(log_text_, LogLevel::kDebug) {
    a_client_ = api_.Client();
    b_client_ = api_.Client();
    a_ = std::make_unique<LeaderElector>(*a_client_, Options("coord-a"), log_, clock_);
    b_ = std::make_unique<LeaderElector>(*b_client_, Options("coord-b"), log_, clock_);
  }
  ~LeaderElection() override {
    a_.reset();
    b_.reset();
    a_client_.reset();  // closes the kept-alive connections: the server stops at once
    b_client_.reset();
  }
  static LeaderElectionOptions Options(const std::string& identity) {
    LeaderElectionOptions o;
    o.lease_namespace = "kt";
    o.lease_name = "nccl-triage-coordinator";
    o.identity = identity;
    return o;  // client-go's defaults: 15 s, 10 s, 2 s
  }
  json Spec() const { return server_->Lease("kt", "nccl-triage-coordinator")["spec"]; }

  testing::FakeApiHarness api_{"leader_election"};
  testing::FakeApiServer* server_ = &api_.server();
  std::ostringstream log_text_;
  Logger log_;
  FakeClock clock_;
  std::unique_ptr<InClusterKubeClient> a_client_, b_client_;
  std::unique_ptr<LeaderElector> a_, b_;
};

TEST_F(LeaderElection, TheFirstCandidateCreatesTheLeaseAndTheOtherFollows) {
  EXPECT_TRUE(a_->TryAcquireOrRenew());
  EXPECT_TRUE(a_->IsLeader());
  const json spec = Spec();
  EXPECT_EQ(spec["holderIdentity"], "coord-a");
  EXPECT_EQ(spec["leaseDurationSeconds"], 15);
  EXPECT_EQ(spec["leaseTransitions"], 0);
  const std::regex micro(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z)");
  EXPECT_TRUE(std::regex_match(spec["acquireTime"].get<std::string>(), micro)) << spec;
  EXPECT_TRUE(std::regex_match(spec["renewTime"].get<std::string>(), micro)) << spec;

  EXPECT_FALSE(b_->TryAcquireOrRenew());
  EXPECT_FALSE(b_->IsLeader());
  EXPECT_EQ(b_->Snapshot().holder, "coord-a");
  EXPECT_EQ(Spec()["holderIdentity"], "coord-a");
}

TEST_F(LeaderElection, ALeaderThatRenewsKeepsTheLeaseAndItsAcquireTime) {
  ASSERT_TRUE(a_->TryAcquireOrRenew());
  const json first = Spec();
  for (int i = 0; i < 30; ++i) {  // a minute of renewals every retry period
    clock_.Advance(seconds(2));
    EXPECT_TRUE(a_->TryAcquireOrRenew());
    EXPECT_FALSE(b_->TryAcquireOrRenew());
  }
  const json last = Spec();
  EXPECT_EQ(last["holderIdentity"], "coord-a");
  EXPECT_EQ(last["acquireTime"], first["acquireTime"]);
  EXPECT_NE(last["renewTime"], first["renewTime"]);
  EXPECT_EQ(last["leaseTransitions"], 0);
  EXPECT_TRUE(a_->IsLeader());
  EXPECT_FALSE(b_->IsLeader());
}

TEST_F(LeaderElection, AFollowerTakesOverOnlyOnceTheLeaseIsUnchangedForItsDuration) {
  ASSERT_TRUE(a_->TryAcquireOrRenew());
  EXPECT_FALSE(b_->TryAcquireOrRenew());  // b sees a's record now
  // a is gone (killed): nobody renews. b keeps trying every retry period.
  for (int i = 0; i < 7; ++i) {
    clock_.Advance(seconds(2));
    EXPECT_FALSE(b_->TryAcquireOrRenew()) << "after " << (i + 1) * 2 << " s";
  }
  clock_.Advance(seconds(2));  // 16 s since b saw the record change
  EXPECT_TRUE(b_->TryAcquireOrRenew());
  EXPECT_TRUE(b_->IsLeader());
  const json spec = Spec();
  EXPECT_EQ(spec["holderIdentity"], "coord-b");
  EXPECT_EQ(spec["leaseTransitions"], 1);
  // a comes back: it no longer leads (its renewal is overdue and the Lease names b).
  EXPECT_FALSE(a_->IsLeader());
  EXPECT_FALSE(a_->TryAcquireOrRenew());
  EXPECT_EQ(Spec()["holderIdentity"], "coord-b");
}

TEST_F(LeaderElection, ALeaderThatCannotRenewStopsLeadingAtTheRenewDeadline) {
  ASSERT_TRUE(a_->TryAcquireOrRenew());
  server_->FailLeaseCalls(503, "etcdserver: request timed out", 1000);
  clock_.Advance(seconds(2));
  EXPECT_FALSE(a_->TryAcquireOrRenew());
  EXPECT_TRUE(a_->IsLeader()) << "within the renew deadline a failed renewal is retried";
  clock_.Advance(seconds(8));  // 10 s since the last renewal was sent
  EXPECT_FALSE(a_->IsLeader()) << "the fence closes on the clock, without a try";
  EXPECT_FALSE(a_->TryAcquireOrRenew());
  EXPECT_NE(a_->Snapshot().last_error.find("503"), std::string::npos);
}

TEST_F(LeaderElection, AConflictOnRenewalEndsTheLeadershipAtOnce) {
  ASSERT_TRUE(a_->TryAcquireOrRenew());
  clock_.Advance(seconds(2));
  server_->PutLeaseBeforeNextUpdate("kt", "nccl-triage-coordinator",
                                    {{"holderIdentity", "coord-b"},
                                     {"leaseDurationSeconds", 15},
                                     {"leaseTransitions", 1}});
  EXPECT_FALSE(a_->TryAcquireOrRenew());
  EXPECT_FALSE(a_->IsLeader()) << "a 409 is another writer: no waiting for the deadline";
  EXPECT_EQ(Spec()["holderIdentity"], "coord-b");
  EXPECT_NE(log_text_.str().find("409"), std::string::npos) << log_text_.str();
}

TEST_F(LeaderElection, ALeaseHeldByAnotherIsLeftAloneEvenWhenItsTimesAreOld) {
  // The holder's timestamps are of another clock: only an unchanged record for lease_duration
  // on our own clock lets us in.
  server_->PutLease("kt", "nccl-triage-coordinator",
                    {{"holderIdentity", "coord-z"},
                     {"leaseDurationSeconds", 15},
                     {"acquireTime", "2001-01-01T00:00:00.000000Z"},
                     {"renewTime", "2001-01-01T00:00:00.000000Z"},
                     {"leaseTransitions", 4}});
  EXPECT_FALSE(a_->TryAcquireOrRenew());
  clock_.Advance(seconds(16));
  EXPECT_TRUE(a_->TryAcquireOrRenew());
  EXPECT_EQ(Spec()["leaseTransitions"], 5);
}

TEST_F(LeaderElection, AReleasedLeaseIsTakenAtTheNextTry) {
  ASSERT_TRUE(a_->TryAcquireOrRenew());
  EXPECT_FALSE(b_->TryAcquireOrRenew());
  a_->Release();
  EXPECT_FALSE(a_->IsLeader());
  EXPECT_EQ(Spec()["holderIdentity"], "");
  clock_.Advance(seconds(2));
  EXPECT_TRUE(b_->TryAcquireOrRenew());
  EXPECT_EQ(Spec()["holderIdentity"], "coord-b");
  EXPECT_EQ(Spec()["leaseTransitions"], 1);
}

TEST_F(LeaderElection, RunReportsLeadingThenLosingAndTheFenceRefusesWritesAfter) {
  LeaderFencedKubeClient fenced(*a_client_, *a_);
  std::vector<bool> changes;
  uint64_t patches_while_leading = 0;
  std::stop_source stop;
  std::thread run([&] {
    a_->Run(stop.get_token(), [&](bool leading) {
      changes.push_back(leading);
      if (leading) {
        NodePatch p;
        p.annotations["x"] = "y";
        fenced.PatchNode("gpu-1", p);  // sent: 404 from the fake, no node there
        patches_while_leading = server_->CountCalls("PATCH", "/api/v1/nodes/");
        server_->FailLeaseCalls(503, "etcdserver: leader changed", 1'000'000);
      } else {
        stop.request_stop();
      }
    });
  });
  run.join();
  ASSERT_EQ(changes, (std::vector<bool>{true, false}));
  EXPECT_EQ(patches_while_leading, 1U);
  NodePatch p;
  p.annotations["x"] = "z";
  KubeResponse r = fenced.PatchNode("gpu-1", p);
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.error.find("fenced"), std::string::npos) << r.error;
  KubeEvent e;
  e.reason = "Test";
  EXPECT_FALSE(fenced.CreateEvent(e).ok());
  EXPECT_EQ(fenced.refused(), 2U);
  EXPECT_EQ(server_->CountCalls("PATCH", "/api/v1/nodes/"), 1U) << "nothing sent after the loss";
  EXPECT_EQ(server_->CountCalls("POST", "/events"), 0U);
  // Reads are not fenced.
  EXPECT_EQ(fenced.GetNode("gpu-1").status, 404);
}

TEST(LeaderElectionOptionsCheck, RefusesTimingsClientGoRefuses) {
  LeaderElectionOptions o;
  o.lease_namespace = "kt";
  o.identity = "coord-a";
  EXPECT_TRUE(ValidateLeaderElection(o).ok());
  o.renew_deadline = milliseconds(15'000);
  EXPECT_FALSE(ValidateLeaderElection(o).ok()) << "renew deadline must be under the duration";
  o.renew_deadline = milliseconds(2'000);
  EXPECT_FALSE(ValidateLeaderElection(o).ok()) << "renew deadline must exceed 1.2 x retry";
  o.renew_deadline = milliseconds(10'000);
  o.identity.clear();
  EXPECT_FALSE(ValidateLeaderElection(o).ok());
}

TEST(LeaseFormat, MicroTimeHasSixDigitsInUtc) {
  EXPECT_EQ(FormatMicroTime(1'700'000'000'123), "2023-11-14T22:13:20.123000Z");
  LeaseRecord r{"coord-a", 15, "2023-11-14T22:13:20.123000Z", "2023-11-14T22:13:22.000000Z", 3};
  auto parsed = ParseLease(LeaseBody("kt", "l", r, "42").dump());
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  EXPECT_EQ(parsed->first, r);
  EXPECT_EQ(parsed->second, "42");
  EXPECT_FALSE(ParseLease("{\"kind\":\"Pod\",\"metadata\":{}}").ok());
}

}  // namespace
}  // namespace nccl_triage
