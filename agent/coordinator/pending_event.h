// An event a node patch announces in an annotation of that node, so that a kill between the patch
// and the event's post loses nothing: the patch that changes the node also writes the event into
// the annotation, the same step then posts it and removes the annotation, and whichever
// coordinator reads the node next with the annotation still there (after a kill, a failed post,
// a stop) posts it and removes it. At least once: a kill between the post and the removal posts
// it twice. The remediator (nccl-triage.io/pending-event) and the validator of new nodes
// (nccl-triage.io/pending-validation-event) each have an annotation of their own, so that
// neither overwrites an event of the other still waiting there.
// Not thread-safe: one owner's sweep thread.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>

#include "kube/kube_api.h"

namespace nccl_triage {

struct PendingNodeEvent {
  std::string type;  // Normal | Warning
  std::string reason;
  std::string message;
  // The annotation's value (JSON) and back; Decode is false for a value that is not one.
  std::string Encode() const;
  static bool Decode(const std::string& text, PendingNodeEvent* out);
};

// The Kubernetes event that posts `event` about `node` (a Node's event: the node's name as its
// uid and host), in namespace `ns` from `component`.
KubeEvent NodeKubeEvent(const std::string& node, const PendingNodeEvent& event,
                        const std::string& ns, const std::string& component, int64_t at_unix_ms);

class PendingEvents {
 public:
  explicit PendingEvents(std::string annotation) : annotation_(std::move(annotation)) {}
  const std::string& annotation() const { return annotation_; }

  enum class Delivered { kDone, kNotPosted, kNotCleared, kCutShort };
  // Posts `event` of `node` (`encoded` as the annotation holds it) with `post`, unless an earlier
  // call posted it already and then failed to remove the annotation, and removes the annotation
  // with `patch` (a merge patch of that annotation alone); `may_call` says whether another API
  // call may start. `cleared` is the removal's answer when one was sent.
  Delivered Deliver(const std::string& node, const PendingNodeEvent& event,
                    const std::string& encoded, const std::function<bool()>& may_call,
                    const std::function<bool(const PendingNodeEvent&)>& post,
                    const std::function<KubeResponse(const std::string&, const NodePatch&)>& patch,
                    KubeResponse* cleared);
  // A value read from the annotation, or a made-up Normal event `reason` when it is not one.
  static PendingNodeEvent Read(const std::string& value, const std::string& reason);
  // Forgets the nodes no longer listed.
  void Keep(const std::set<std::string>& listed);

 private:
  std::string annotation_;
  std::map<std::string, std::string> posted_;  // node -> event posted, annotation not removed
};

}  // namespace nccl_triage
