// PortMemory: the agent's PortHistory (core/port_history.h) between its polls, kept in
// <state_dir>/ports.state so that a restarted agent still knows which ports it saw up in this
// boot and which flapped. A file of another boot (or a damaged one) is ignored: after a reboot
// the ports are judged afresh. A state directory that cannot be written costs the memory across
// restarts, nothing more; so does a root without proc/sys/kernel/random/boot_id (nothing is
// written then).
//
// Not thread-safe: the agent loop calls BeginPoll and EndPoll of one poll in turn.
#pragma once

#include <cstdint>
#include <string>

#include "core/port_history.h"
#include "core/snapshot.h"

namespace nccl_triage {

class PortMemory {
 public:
  // `state_dir` empty: kept in memory only.
  PortMemory(std::string state_dir, int64_t flap_stable_ms);

  // Before the checks of a poll: on the first call loads the saved memory of this boot (the
  // snapshot's boot id), then records the flaps between `previous` and `now`. The history is
  // valid until the next call.
  const PortHistory& BeginPoll(const NodeSnapshot& now, const NodeSnapshot* previous);
  // After the checks: remembers the ports up in `now`, ends the first poll, saves.
  void EndPoll(const NodeSnapshot& now);

  std::string path() const;

 private:
  void Load(const std::string& boot_id);
  void Save() const;

  std::string state_dir_;
  bool loaded_ = false;
  PortHistory history_;
};

}  // namespace nccl_triage
