// A gRPC status in words, for a log line or a command's one-line error.
//
// Both ends' clients report a failed call the same way (the agent's session when the coordinator
// ends it, `triage-coordinator` when a call fails): the code's name in lower-case words, then the
// peer's message on one line and bounded, since it comes from the other end. Pure; thread-safe.
#pragma once

#include <grpcpp/support/status.h>

#include <cstddef>
#include <string>

namespace nccl_triage {

// "unavailable", "deadline exceeded", ... for every code gRPC defines; "code N" for a number
// outside them (a newer peer's).
std::string GrpcCodeText(grpc::StatusCode code);

// "<code text>" or "<code text>: <message>", the message with line breaks turned into spaces and
// cut to `max_message` bytes on a character boundary ("..." marks a cut).
std::string GrpcStatusText(const grpc::Status& status, size_t max_message = 512);

}  // namespace nccl_triage
