// Status and StatusOr: the error channel of nccl-triage.
//
// Functions that can fail for reasons outside the program (a missing file, a bad config line, an
// unreachable peer) return Status or StatusOr<T>. Exceptions are caught at the edges (the CLI and
// the parsers of third-party formats) and turned into a Status. A Status carries one line of text
// that a user can read; it is never a verdict about the node (see model.h for verdicts).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace nccl_triage {

enum class StatusCode {
  kOk,
  kInvalidArgument,
  kNotFound,
  kUnavailable,
  kDeadlineExceeded,
  kInternal
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return {}; }
  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status InvalidArgument(std::string m) {
  return {StatusCode::kInvalidArgument, std::move(m)};
}
inline Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
inline Status Unavailable(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
inline Status DeadlineExceeded(std::string m) {
  return {StatusCode::kDeadlineExceeded, std::move(m)};
}
inline Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }

// Either a value or a non-OK Status. Accessing value() of an error is a programming error.
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(T value) : value_(std::move(value)) {}          // NOLINT(google-explicit-constructor)
  StatusOr(Status status) : status_(std::move(status)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() & { return *value_; }
  const T& operator*() const& { return *value_; }

 private:
  std::optional<T> value_;
  Status status_;
};

}  // namespace nccl_triage
