// The node cache (kube/node_cache.h) with the real client against the fake API server over HTTPS,
// one list-and-watch round at a time on the test's thread (the fake ends each watch once it has
// sent what it has) and a fake clock: the list, ADDED / MODIFIED / DELETED / BOOKMARK events,
// 410 Gone (in the stream and as an answer), an ERROR event, a line that is not an event, a
// stream cut mid-way, a dead API server, the cap on nodes, the fields kept, our own writes seen
// first, and a stop that cuts an open watch.
#include "kube/node_cache.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "base/log.h"
#include "kube/kube_client.h"
#include "support/fake_api_harness.h"
#include "support/fake_api_server.h"
#include "support/fake_clock.h"

namespace nccl_triage {
namespace {

using nlohmann::json;
using testing::FakeApiServer;

json FakeNode(const std::string& name) {
  return {{"metadata",
           {{"name", name},
            {"labels", {{"pool", "a"}, {"kubernetes.io/hostname", name}}},
            {"annotations", {{"ours", "x"}, {"theirs", std::string(4096, 'y')}}}}},
          {"spec", json::object()},
          {"status",
           {{"nodeInfo", {{"bootID", "boot-" + name}, {"kernelVersion", "6.8"}}},
            {"images", json::array({{{"names", {"registry/a:1"}}, {"sizeBytes", 1}}})}}}};
}

class NodeCacheTest : public ::testing::Test {
 protected:
  NodeCacheTest() : log_(out_) {
    for (int i = 0; i < 5; ++i) server_->AddNode(FakeNode("n" + std::to_string(i)));
    server_->EndWatchesWhenIdle(true);
    kube_ = api_.Client();
  }
  ~NodeCacheTest() override {
    cache_.reset();
    kube_.reset();  // the kept-alive connections go before the server
  }

  NodeCache& Make(int max_nodes = 100) {
    NodeCacheOptions o;
    o.labels = {"pool"};
    o.annotations = {"ours"};
    o.list_page = 2;  // five nodes: three pages
    o.max_nodes = max_nodes;
    cache_ = std::make_unique<NodeCache>(*kube_, o, log_, clock_);
    return *cache_;
  }

  std::map<std::string, CachedNode> Nodes() {
    std::vector<CachedNode> got;
    std::string error;
    EXPECT_TRUE(cache_->Nodes(&got, &error)) << error;
    std::map<std::string, CachedNode> out;
    for (CachedNode& n : got) out[n.name] = std::move(n);
    return out;
  }

  size_t LogLines(const std::string& part) const {
    std::istringstream in(out_.str());
    size_t n = 0;
    for (std::string line; std::getline(in, line);) n += line.find(part) != std::string::npos;
    return n;
  }

  std::vector<FakeApiServer::Call> Watches() const {
    std::vector<FakeApiServer::Call> out;
    for (auto& c : server_->Calls()) {
      if (c.path == "/api/v1/nodes" && c.query.find("watch=1") != std::string::npos) {
        out.push_back(c);
      }
    }
    return out;
  }

  static std::string Event(const std::string& type, json object) {
    return json{{"type", type}, {"object", std::move(object)}}.dump() + "\n";
  }

  testing::FakeApiHarness api_{"node_cache"};
  FakeApiServer* server_ = &api_.server();
  std::ostringstream out_;
  Logger log_;
  FakeClock clock_;
  std::unique_ptr<InClusterKubeClient> kube_;
  std::unique_ptr<NodeCache> cache_;
};

TEST_F(NodeCacheTest, ListsThenFollowsAddedModifiedAndDeletedNodesWithoutListingAgain) {
  NodeCache& cache = Make();
  cache.RunOnce({});
  ASSERT_EQ(Nodes().size(), 5U);
  const std::string listed_at = cache.stats().resource_version;
  EXPECT_FALSE(listed_at.empty());

  server_->AddNode(FakeNode("new"));
  server_->ChangeNode("n1", [](json& n) {
    n["spec"]["taints"] = json::array({{{"key", "ops/maint"}, {"effect", "NoSchedule"}}});
    n["spec"]["unschedulable"] = true;
  });
  server_->DeleteNode("n2");
  EXPECT_TRUE(cache.RunOnce({}));

  auto nodes = Nodes();
  EXPECT_EQ(nodes.size(), 5U);
  EXPECT_TRUE(nodes.count("new"));
  EXPECT_FALSE(nodes.count("n2"));
  ASSERT_EQ(nodes["n1"].taints.size(), 1U);
  EXPECT_EQ(nodes["n1"].taints[0]["key"], "ops/maint");
  EXPECT_TRUE(nodes["n1"].unschedulable);
  EXPECT_EQ(nodes["n1"].resource_version, server_->Node("n1")["metadata"]["resourceVersion"]);
  EXPECT_EQ(cache.stats().lists, 1U);
  EXPECT_EQ(cache.stats().events, 3U);
  // The watches started where the list (and then the last event) left off, asked for bookmarks.
  const auto watches = Watches();
  ASSERT_EQ(watches.size(), 2U);
  EXPECT_NE(watches[0].query.find("resourceVersion=" + listed_at), std::string::npos)
      << watches[0].query;
  EXPECT_NE(watches[1].query.find("resourceVersion=" + listed_at), std::string::npos);
  EXPECT_NE(watches[1].query.find("allowWatchBookmarks=true"), std::string::npos);
  EXPECT_NE(watches[1].query.find("timeoutSeconds=300"), std::string::npos);
  EXPECT_EQ(server_->CountCalls("GET", "/api/v1/nodes"), 3U /*pages*/ + 2U /*watches*/);
}

TEST_F(NodeCacheTest, KeepsOnlyTheFieldsItsReadersParse) {
  Make();
  cache_->RunOnce({});
  const CachedNode n = Nodes()["n3"];
  EXPECT_EQ(n.labels, (std::map<std::string, std::string>{{"pool", "a"}}));
  EXPECT_EQ(n.annotations, (std::map<std::string, std::string>{{"ours", "x"}}));
  EXPECT_EQ(n.boot_id, "boot-n3");
  EXPECT_EQ(n.taints, json::array());
}

TEST_F(NodeCacheTest, ABookmarkMovesWhereTheNextWatchStarts) {
  NodeCache& cache = Make();
  cache.RunOnce({});
  server_->ScriptNextWatch({.lines = {Event(
      "BOOKMARK", {{"kind", "Node"}, {"metadata", {{"resourceVersion", "9000"}}}})}});
  EXPECT_TRUE(cache.RunOnce({}));
  EXPECT_EQ(cache.stats().resource_version, "9000");
  cache.RunOnce({});
  EXPECT_NE(Watches().back().query.find("resourceVersion=9000"), std::string::npos);
  EXPECT_EQ(cache.stats().lists, 1U);
}

TEST_F(NodeCacheTest, AnExpiredResourceVersionInTheStreamListsAgain) {
  NodeCache& cache = Make();
  cache.RunOnce({});
  server_->CompactNodeEvents();  // the watch's resourceVersion is gone: ERROR 410 in the stream
  server_->DeleteNode("n0");
  server_->CompactNodeEvents();
  EXPECT_TRUE(cache.RunOnce({}));  // 410: no back-off, the list comes next
  EXPECT_EQ(cache.stats().lists, 1U);
  EXPECT_EQ(LogLines("410"), 1U) << out_.str();
  cache.RunOnce({});
  EXPECT_EQ(cache.stats().lists, 2U);
  EXPECT_FALSE(Nodes().count("n0"));  // deleted while nobody could watch: gone after the list
}

TEST_F(NodeCacheTest, A410AnswerToTheWatchListsAgain) {
  NodeCache& cache = Make();
  cache.RunOnce({});
  server_->ScriptNextWatch({.status = 410, .message = "too old resource version"});
  cache.RunOnce({});
  server_->ChangeNode("n4", [](json& n) { n["spec"]["unschedulable"] = true; });
  server_->CompactNodeEvents();
  cache.RunOnce({});
  EXPECT_EQ(cache.stats().lists, 2U);
  EXPECT_TRUE(Nodes()["n4"].unschedulable);
}

TEST_F(NodeCacheTest, AnErrorEventIsOneLogLineAndAList) {
  NodeCache& cache = Make();
  cache.RunOnce({});
  server_->ScriptNextWatch({.lines = {Event(
                                "ERROR", {{"kind", "Status"},
                                          {"code", 500},
                                          {"reason", "InternalError"},
                                          {"message", "etcd is unhappy"}})}});
  EXPECT_FALSE(cache.RunOnce({}));
  EXPECT_EQ(LogLines("an ERROR event (code 500, InternalError: etcd is unhappy)"), 1U)
      << out_.str();
  cache.RunOnce({});
  EXPECT_EQ(cache.stats().lists, 2U);
  EXPECT_EQ(Nodes().size(), 5U);  // served throughout
  EXPECT_EQ(LogLines("read again"), 1U) << out_.str();
}

TEST_F(NodeCacheTest, GarbageLinesAreOneLogLineAndAListNeverACrash) {
  NodeCache& cache = Make();
  cache.RunOnce({});
  for (const std::string& garbage :
       {std::string("{not json\n"), std::string("[1,2,3]\n"), std::string("{\"type\":\"ADDED\"}\n"),
        Event("SIDEWAYS", {{"metadata", {{"name", "x"}}}}),
        Event("ADDED", {{"metadata", {{"name", 7}}}}),
        Event("MODIFIED", {{"metadata", "x"}, {"spec", 1}}), std::string("\x01\xff\xfe\n")}) {
    server_->ScriptNextWatch({.lines = {garbage}});
    EXPECT_FALSE(cache.RunOnce({})) << garbage;
    cache.RunOnce({});  // lists again
  }
  EXPECT_EQ(cache.stats().lists, 8U);
  EXPECT_EQ(Nodes().size(), 5U);
  EXPECT_EQ(LogLines("not a watch event"), 4U) << out_.str();
  EXPECT_EQ(LogLines("unknown type \"SIDEWAYS\""), 1U);
  EXPECT_EQ(LogLines("without a node name"), 2U);
}

TEST_F(NodeCacheTest, ACutStreamIsWatchedAgainFromTheLastResourceVersion) {
  NodeCache& cache = Make();
  cache.RunOnce({});
  json n1 = server_->Node("n1");
  n1["metadata"]["resourceVersion"] = "5000";
  n1["spec"]["unschedulable"] = true;
  server_->ScriptNextWatch({.lines = {Event("MODIFIED", n1)}, .broken = true});
  EXPECT_FALSE(cache.RunOnce({}));  // the back-off comes next
  EXPECT_TRUE(Nodes()["n1"].unschedulable);
  EXPECT_EQ(LogLines("watched again from resourceVersion 5000"), 1U) << out_.str();
  cache.RunOnce({});
  EXPECT_EQ(cache.stats().lists, 1U);
  EXPECT_NE(Watches().back().query.find("resourceVersion=5000"), std::string::npos);
}

TEST_F(NodeCacheTest, ALineLongerThanTheBoundIsRefusedNotHeld) {
  NodeCache& cache = Make();
  cache.RunOnce({});
  server_->ScriptNextWatch({.lines = {std::string(kMaxWatchLineBytes + 1024, 'x') + "\n"}});
  EXPECT_FALSE(cache.RunOnce({}));
  EXPECT_EQ(LogLines("a watch event longer than 4194304 bytes"), 1U) << out_.str().substr(0, 500);
  EXPECT_EQ(Nodes().size(), 5U);
}

TEST_F(NodeCacheTest, RepeatedWatchFailuresEndInAList) {
  NodeCache& cache = Make();
  cache.RunOnce({});
  for (int i = 0; i < 3; ++i) server_->ScriptNextWatch({.status = 503, .message = "busy"});
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(cache.RunOnce({}));
  EXPECT_EQ(cache.stats().lists, 1U);
  EXPECT_EQ(LogLines("HTTP 503"), 1U) << out_.str();  // once while it lasts
  cache.RunOnce({});
  EXPECT_EQ(cache.stats().lists, 2U);
}

TEST_F(NodeCacheTest, ADeadApiServerIsAnErrorForReadersAndOneLogLine) {
  auto dead = api_.Client(1);  // nothing listens on port 1
  NodeCacheOptions o;
  NodeCache cache(*dead, o, log_, clock_);
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(cache.RunOnce({}));
  std::vector<CachedNode> got;
  std::string error;
  EXPECT_FALSE(cache.Nodes(&got, &error, std::chrono::milliseconds(10)));
  EXPECT_EQ(error, "connection failed");
  EXPECT_EQ(LogLines("list nodes: connection failed"), 1U) << out_.str();
}

TEST_F(NodeCacheTest, MoreNodesThanTheCapIsAnErrorNotAnUnboundedCache) {
  NodeCache& cache = Make(/*max_nodes=*/4);
  EXPECT_FALSE(cache.RunOnce({}));
  std::vector<CachedNode> got;
  std::string error;
  EXPECT_FALSE(cache.Nodes(&got, &error));
  EXPECT_EQ(error, "more than 4 nodes");

  NodeCache& roomy = Make(/*max_nodes=*/5);
  roomy.RunOnce({});
  ASSERT_EQ(Nodes().size(), 5U);
  server_->AddNode(FakeNode("sixth"));  // through the watch this time
  EXPECT_FALSE(roomy.RunOnce({}));
  EXPECT_EQ(LogLines("more than 5 nodes: listing the nodes again"), 1U) << out_.str();
  EXPECT_FALSE(roomy.RunOnce({}));  // and the list refuses them too
  EXPECT_FALSE(roomy.Nodes(&got, &error));
}

TEST_F(NodeCacheTest, AFullListComesEveryResyncPeriod) {
  NodeCache& cache = Make();
  cache.RunOnce({});
  cache.RunOnce({});
  EXPECT_EQ(cache.stats().lists, 1U);
  clock_.Advance(std::chrono::seconds(3599));
  cache.RunOnce({});
  // The watch asked to end when the resync is due.
  EXPECT_NE(Watches().back().query.find("timeoutSeconds=1"), std::string::npos)
      << Watches().back().query;
  clock_.Advance(std::chrono::seconds(1));
  cache.RunOnce({});
  EXPECT_EQ(cache.stats().lists, 2U);
}

TEST_F(NodeCacheTest, OurOwnWriteIsSeenBeforeItsEventAndNotUndoneByAnOlderOne) {
  NodeCache& cache = Make();
  cache.RunOnce({});
  const json before = server_->Node("n0");
  json patched = before;
  patched["metadata"]["resourceVersion"] = "7000";
  patched["spec"]["unschedulable"] = true;
  cache.Observe(patched);
  EXPECT_TRUE(Nodes()["n0"].unschedulable);
  json older = before;
  older["metadata"]["resourceVersion"] = "6999";
  server_->ScriptNextWatch({.lines = {Event("MODIFIED", older)}});
  cache.RunOnce({});
  EXPECT_TRUE(Nodes()["n0"].unschedulable);
  EXPECT_EQ(Nodes()["n0"].resource_version, "7000");
}

TEST_F(NodeCacheTest, StopCutsAnOpenWatchAtOnce) {
  server_->EndWatchesWhenIdle(false);  // a watch stays open until its timeoutSeconds (300)
  NodeCache& cache = Make();
  cache.Start();
  std::vector<CachedNode> got;
  std::string error;
  ASSERT_TRUE(cache.Nodes(&got, &error, std::chrono::seconds(60))) << error;
  // Wait for the watch to be open (its request made), then stop: a hang fails by the timeout.
  while (Watches().empty()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  cache.Stop();
  EXPECT_EQ(LogLines("watch nodes"), 0U) << out_.str();  // a stop is no trouble
}

}  // namespace
}  // namespace nccl_triage
