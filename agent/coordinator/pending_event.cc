#include "coordinator/pending_event.h"

#include <nlohmann/json.hpp>

#include "core/json_text.h"

namespace nccl_triage {

using nlohmann::json;

std::string PendingNodeEvent::Encode() const {
  return json({{"type", type}, {"reason", reason}, {"message", message}}).dump();
}

bool PendingNodeEvent::Decode(const std::string& text, PendingNodeEvent* out) {
  const json j = json::parse(text, nullptr, false);
  if (!j.is_object()) return false;
  out->type = StringMember(j, "type");
  out->reason = StringMember(j, "reason");
  out->message = StringMember(j, "message");
  return (out->type == "Normal" || out->type == "Warning") && !out->reason.empty();
}

KubeEvent NodeKubeEvent(const std::string& node, const PendingNodeEvent& event,
                        const std::string& ns, const std::string& component, int64_t at_unix_ms) {
  KubeEvent e;
  e.ns = ns;
  e.involved_name = node;
  e.involved_uid = node;
  e.type = event.type;
  e.reason = event.reason;
  e.message = event.message;
  e.component = component;
  e.host = node;
  e.at_unix_ms = at_unix_ms;
  return e;
}

PendingNodeEvent PendingEvents::Read(const std::string& value, const std::string& reason) {
  PendingNodeEvent e;
  if (!PendingNodeEvent::Decode(value, &e)) e = {"Normal", reason, value.substr(0, 1024)};
  return e;
}

PendingEvents::Delivered PendingEvents::Deliver(
    const std::string& node, const PendingNodeEvent& event, const std::string& encoded,
    const std::function<bool()>& may_call,
    const std::function<bool(const PendingNodeEvent&)>& post,
    const std::function<KubeResponse(const std::string&, const NodePatch&)>& patch,
    KubeResponse* cleared) {
  // Posted already by an earlier call whose removal of the annotation failed: not again.
  auto done = posted_.find(node);
  if (done == posted_.end() || done->second != encoded) {
    if (!may_call()) return Delivered::kCutShort;
    if (!post(event)) return Delivered::kNotPosted;
    posted_[node] = encoded;
  }
  if (!may_call()) return Delivered::kCutShort;
  NodePatch clear;
  clear.annotations[annotation_] = std::nullopt;
  *cleared = patch(node, clear);
  if (!cleared->ok()) return Delivered::kNotCleared;
  posted_.erase(node);
  return Delivered::kDone;
}

void PendingEvents::Keep(const std::set<std::string>& listed) {
  std::erase_if(posted_, [&](const auto& kv) { return listed.count(kv.first) == 0; });
}

}  // namespace nccl_triage
