// Leader election's Lease against the real kube-apiserver with the chart's coordinator token
// (kube_prepare.sh, config.coordinator.leader_election): the Lease is created and renewed with the
// fields client-go writes, a write carrying a resourceVersion that is no longer the Lease's is
// refused with 409 Conflict (the fencing the election relies on), and the token may touch no
// other Lease. Time is a fake clock's: only the API server is real.
#include <gtest/gtest.h>

#include <sstream>

#include "base/log.h"
#include "kube/leader_election.h"
#include "real_api.h"
#include "support/fake_clock.h"

namespace nccl_triage {
namespace {

using std::chrono::seconds;

constexpr const char* kNs = "kt";
constexpr const char* kLease = "nccl-triage-coordinator";

LeaderElectionOptions Options(const std::string& identity) {
  LeaderElectionOptions o;
  o.lease_namespace = kNs;
  o.lease_name = kLease;
  o.identity = identity;
  return o;
}

// Takes the Lease for `elector`, waiting out (on the fake clock) a holder left by another test.
bool Take(LeaderElector& elector, FakeClock& clock) {
  for (int i = 0; i < 12; ++i) {
    if (elector.TryAcquireOrRenew()) return true;
    clock.Advance(seconds(2));
  }
  return false;
}

TEST(RealApiLease, TheCoordinatorHoldsTheLeaseAndAStaleWriteIsRefusedWithConflict) {
  auto kube = real_api::As("coordinator");
  ASSERT_TRUE(kube);
  std::ostringstream text;
  Logger log(text, LogLevel::kDebug);
  FakeClock clock;
  LeaderElector a(*kube, Options("real-api-a"), log, clock);
  LeaderElector b(*kube, Options("real-api-b"), log, clock);
  ASSERT_TRUE(Take(a, clock)) << text.str();

  KubeResponse got = kube->GetLease(kNs, kLease);
  ASSERT_TRUE(got.ok()) << got.Describe();
  auto read = ParseLease(got.body);
  ASSERT_TRUE(read.ok()) << read.status().message();
  const auto [record, version] = *read;
  EXPECT_EQ(record.holder, "real-api-a");
  EXPECT_EQ(record.lease_duration_seconds, 15);
  EXPECT_FALSE(record.acquire_time.empty());
  EXPECT_FALSE(record.renew_time.empty());

  EXPECT_FALSE(b.TryAcquireOrRenew()) << "the Lease is a's, renewed just now";
  clock.Advance(seconds(2));
  ASSERT_TRUE(a.TryAcquireOrRenew()) << text.str();  // a renewal: a new resourceVersion

  // b writes with what it read before a's renewal: the API server refuses it.
  LeaseRecord stale = record;
  stale.holder = "real-api-b";
  stale.transitions = record.transitions + 1;
  KubeResponse put = kube->UpdateLease(kNs, kLease, LeaseBody(kNs, kLease, stale, version));
  EXPECT_EQ(put.status, 409) << put.Describe();
  got = kube->GetLease(kNs, kLease);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(ParseLease(got.body)->first.holder, "real-api-a");

  a.Release();
  got = kube->GetLease(kNs, kLease);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(ParseLease(got.body)->first.holder, "");
  clock.Advance(seconds(2));
  EXPECT_TRUE(b.TryAcquireOrRenew()) << "a released Lease is taken at once";
  got = kube->GetLease(kNs, kLease);
  auto after = ParseLease(got.body);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->first.holder, "real-api-b");
  EXPECT_EQ(after->first.transitions, record.transitions + 1);
  b.Release();
}

TEST(RealApiLease, TheCoordinatorTokenMayTouchNoOtherLease) {
  auto kube = real_api::As("coordinator");
  ASSERT_TRUE(kube);
  EXPECT_EQ(kube->GetLease(kNs, "another-lease").status, 403);
  EXPECT_EQ(kube->GetLease("kube-system", "kube-scheduler").status, 403);
  LeaseRecord r{"real-api-a", 15, "", "", 0};
  EXPECT_EQ(kube->UpdateLease(kNs, "another-lease", LeaseBody(kNs, "another-lease", r, "1")).status,
            403);
  EXPECT_EQ(kube->CreateLease("kube-system", LeaseBody("kube-system", "x", r, "")).status, 403);
}

}  // namespace
}  // namespace nccl_triage
