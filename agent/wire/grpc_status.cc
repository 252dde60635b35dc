#include "wire/grpc_status.h"

#include "wire/convert.h"

namespace nccl_triage {

std::string GrpcCodeText(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK:
      return "ok";
    case grpc::StatusCode::CANCELLED:
      return "cancelled";
    case grpc::StatusCode::UNKNOWN:
      return "unknown";
    case grpc::StatusCode::INVALID_ARGUMENT:
      return "invalid argument";
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return "deadline exceeded";
    case grpc::StatusCode::NOT_FOUND:
      return "not found";
    case grpc::StatusCode::ALREADY_EXISTS:
      return "already exists";
    case grpc::StatusCode::PERMISSION_DENIED:
      return "permission denied";
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return "resource exhausted";
    case grpc::StatusCode::FAILED_PRECONDITION:
      return "failed precondition";
    case grpc::StatusCode::ABORTED:
      return "aborted";
    case grpc::StatusCode::OUT_OF_RANGE:
      return "out of range";
    case grpc::StatusCode::UNIMPLEMENTED:
      return "unimplemented";
    case grpc::StatusCode::INTERNAL:
      return "internal";
    case grpc::StatusCode::UNAVAILABLE:
      return "unavailable";
    case grpc::StatusCode::DATA_LOSS:
      return "data loss";
    case grpc::StatusCode::UNAUTHENTICATED:
      return "unauthenticated";
    case grpc::StatusCode::DO_NOT_USE:
      break;
  }
  return "code " + std::to_string(static_cast<int>(code));
}

std::string GrpcStatusText(const grpc::Status& status, size_t max_message) {
  std::string text = GrpcCodeText(status.error_code());
  std::string message = status.error_message();
  if (message.empty()) return text;
  for (char& ch : message) {
    if (ch == '\n' || ch == '\r') ch = ' ';
  }
  if (message.size() > max_message) message = CutWireText(message, max_message) + "...";
  return text + ": " + message;
}

}  // namespace nccl_triage
