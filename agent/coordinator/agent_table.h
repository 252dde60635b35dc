// AgentTable: the coordinator's table of agents. It owns the connected nodes (their session,
// what they said, when last heard from), every node seen (bounded, the one disconnected longest
// evicted first), when each known node left, and the sweeps each connected node missed in a row.
// Not locked: CoordinatorServer::Impl calls it under its mu_ with the routing that reads it.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "planner/node_info.h"

namespace nccl_triage {

// An agent's session as the table sees it: an identity, never used. The transport's streams
// derive from it and the transport casts back to them.
class AgentSession {
 protected:
  AgentSession() = default;
  ~AgentSession() = default;

 public:
  AgentSession(const AgentSession&) = delete;
  AgentSession& operator=(const AgentSession&) = delete;
};

struct AgentTableLimits {
  size_t max_nodes = 10'000;                      // known nodes kept at most
  std::chrono::milliseconds node_expiry{3'600'000};  // a node gone this long is forgotten
  std::chrono::milliseconds heartbeat_timeout{30'000};  // a node silent this long is dropped
};

class AgentTable {
 public:
  using Clock = std::chrono::steady_clock;

  // A connected node. Invariant: `session` is never null, and is the one session the table
  // maps to this node.
  struct Agent {
    AgentSession* session = nullptr;
    NodeInfo info;
    Clock::time_point last_seen;
  };

  // Whether a hello of a node may take a place in the table, and the node forgotten for it.
  struct Admission {
    bool admitted = false;
    std::string evicted;  // empty: none
  };

  // What the housekeeping found: the nodes gone past node_expiry (already forgotten here) and
  // the connected ones silent past heartbeat_timeout (still connected: the caller disconnects
  // them and closes their sessions).
  struct Overdue {
    std::vector<std::string> forgotten;
    std::vector<std::pair<std::string, AgentSession*>> silent;
  };

  // Who takes part in a sweep that starts now (StartSweep).
  struct SweepMembers {
    std::vector<std::pair<std::string, std::string>> members;  // node, topology: the schedule's
    std::vector<std::string> available;  // members whose GPUs are free, to be probed
    std::vector<std::string> blind;      // connected nodes whose probes cannot run
  };

  explicit AgentTable(AgentTableLimits limits) : limits_(limits) {}

  // ---- sessions
  // The node that `session` said hello as, or null before its hello.
  const std::string* NodeOf(const AgentSession* session) const;
  // Room for a hello of `node`: a known node has its place, a new one takes a free place or the
  // place of the node disconnected longest (forgotten then); refused when every known node is
  // connected. An admitted node no longer counts as gone.
  Admission Admit(const std::string& node);
  // `node` connected through `session` from `peer` (a node connected before was disconnected
  // first). Returns what the node said of its probes until then (nullopt when it never said, or
  // is new).
  std::optional<NodeProbeAvailability> Connect(const std::string& node, AgentSession* session,
                                               const NodeInfo& info, const std::string& peer,
                                               Clock::time_point now);
  // A message of `session` as `node`: the node's last_seen; false when the session is not the
  // node's current one (the message is then ignored).
  bool Heard(const std::string& node, const AgentSession* session, Clock::time_point now);
  // What a connected node says of itself now (a summary); it is also what is known of it.
  void Update(const std::string& node, const NodeInfo& info);
  // The session ended: its node when it was that node's current session (to be disconnected),
  // else nullopt. The session is no longer mapped either way.
  std::optional<std::string> EndSession(const AgentSession* session);
  // `node` is no longer connected (it counts as gone from `now`); false when it was not.
  bool Disconnect(const std::string& node, Clock::time_point now);
  // Drops every connection (shutdown); the known nodes stay, their sessions stay mapped to them.
  void DropConnections();
  // The liveness decisions at `now` (Overdue).
  Overdue Housekeeping(Clock::time_point now);

  // ---- sweeps
  // The members of a sweep starting now. Counts, for each connected node, the sweeps in a row it
  // was left out of for busy GPUs (0 for one probed, or whose probes cannot run).
  SweepMembers StartSweep();
  const std::map<std::string, uint64_t>& unprobed_sweeps() const { return unprobed_sweeps_; }

  // ---- reads
  bool Connected(const std::string& node) const { return agents_.count(node) > 0; }
  const Agent* Find(const std::string& node) const;
  const std::map<std::string, Agent>& connected() const { return agents_; }
  size_t size() const { return agents_.size(); }
  // What is known of `node` (an empty NodeInfo when nothing is).
  const NodeInfo& Known(const std::string& node) const;
  const std::map<std::string, NodeInfo>& known() const { return known_; }
  // The last peer address of each known node.
  const std::map<std::string, std::string>& peers() const { return last_peer_; }
  // Since when each known node that is not connected has been gone.
  const std::map<std::string, Clock::time_point>& left_at() const { return left_at_; }

 private:
  void Forget(const std::string& node);

  AgentTableLimits limits_;
  std::map<std::string, Agent> agents_;                  // connected, by node
  std::map<const AgentSession*, std::string> sessions_;  // sessions that said hello
  std::map<std::string, NodeInfo> known_;                // every node seen (at most max_nodes)
  std::map<std::string, std::string> last_peer_;
  std::map<std::string, Clock::time_point> left_at_;     // known, not connected, since
  std::map<std::string, uint64_t> unprobed_sweeps_;      // connected node -> sweeps left out
};

}  // namespace nccl_triage
