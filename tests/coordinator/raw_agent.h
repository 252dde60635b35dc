// RawAgent: a hand-driven agent stream for the coordinator's tests. It sends exactly what a test
// tells it (including malformed messages) and queues what the coordinator sends, read by a
// background thread, so tests can wait for a message with a timeout.
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "nccl_triage/v1/agent.grpc.pb.h"
#include "wire/convert.h"

namespace nccl_triage::testing_util {

class RawAgent {
 public:
  // `identity`: the identity token (coordinator/node_identity.h) to present; empty: none.
  RawAgent(const std::string& target, const std::string& token,
           const std::string& identity = "") {
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    channel_ = grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args);
    stub_ = v1::Coordinator::NewStub(channel_);
    if (!token.empty()) ctx_.AddMetadata("authorization", "Bearer " + token);
    if (!identity.empty()) ctx_.AddMetadata("x-nccl-triage-identity", identity);
    stream_ = stub_->Session(&ctx_);
    reader_ = std::thread([this] {
      v1::CoordinatorMessage m;
      while (stream_->Read(&m)) {
        std::lock_guard lock(mu_);
        inbox_.push_back(m);
        cv_.notify_all();
      }
      std::lock_guard lock(mu_);
      ended_ = true;
      cv_.notify_all();
    });
  }

  ~RawAgent() {
    ctx_.TryCancel();
    if (reader_.joinable()) reader_.join();
    if (!finished_) stream_->Finish();
  }

  static v1::AgentMessage Hello(const std::string& node) {
    v1::AgentMessage m;
    m.mutable_hello()->set_protocol_version(kProtocolVersion);
    m.mutable_hello()->set_node(node);
    m.mutable_hello()->mutable_summary()->set_arch("x86_64");
    return m;
  }

  bool Send(const v1::AgentMessage& m) {
    std::lock_guard lock(write_mu_);
    return stream_->Write(m);
  }

  // The next message of a kind (others are skipped), or nullopt after `timeout` / stream end.
  std::optional<v1::CoordinatorMessage> Next(v1::CoordinatorMessage::BodyCase kind,
                                             std::chrono::milliseconds timeout) {
    std::unique_lock lock(mu_);
    auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      while (!inbox_.empty()) {
        v1::CoordinatorMessage m = inbox_.front();
        inbox_.pop_front();
        if (m.body_case() == kind) return m;
      }
      if (ended_) return std::nullopt;
      if (cv_.wait_until(lock, deadline) == std::cv_status::timeout && inbox_.empty()) {
        return std::nullopt;
      }
    }
  }

  // The next message of any kind, or nullopt after `timeout` / stream end.
  std::optional<v1::CoordinatorMessage> NextAny(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mu_);
    if (!cv_.wait_for(lock, timeout, [&] { return !inbox_.empty() || ended_; }) ||
        inbox_.empty()) {
      return std::nullopt;
    }
    v1::CoordinatorMessage m = inbox_.front();
    inbox_.pop_front();
    return m;
  }

  // Waits for the coordinator to end the stream; its status.
  std::optional<grpc::Status> WaitEnd(std::chrono::milliseconds timeout) {
    {
      std::unique_lock lock(mu_);
      if (!cv_.wait_for(lock, timeout, [&] { return ended_; })) return std::nullopt;
    }
    reader_.join();
    finished_ = true;
    return stream_->Finish();
  }

  void Cancel() { ctx_.TryCancel(); }

 private:
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Coordinator::Stub> stub_;
  grpc::ClientContext ctx_;
  std::unique_ptr<grpc::ClientReaderWriter<v1::AgentMessage, v1::CoordinatorMessage>> stream_;
  std::thread reader_;
  std::mutex write_mu_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<v1::CoordinatorMessage> inbox_;
  bool ended_ = false;
  bool finished_ = false;
};

}  // namespace nccl_triage::testing_util
