// ReadWholeFile: the one way nccl-triage reads a whole small file (a configuration, a snapshot, a
// token, a certificate, a key).
//
// Only regular files: a FIFO, a device or a directory is refused at once with a line that says
// so (opening is non-blocking, so a FIFO with no writer never hangs the caller). Reads stop at
// `max_bytes`: a larger file is an error, never a silently truncated value. Errors name the file
// and what it was for (`what`, e.g. "configuration").
#pragma once

#include <cstddef>
#include <iosfwd>
#include <string>

#include "base/status.h"

namespace nccl_triage {

inline constexpr size_t kDefaultMaxFileBytes = 16u << 20;

// NotFound when the file does not exist or cannot be opened; InvalidArgument when it is not a
// regular file or exceeds `max_bytes`; Unavailable on a read error.
StatusOr<std::string> ReadWholeFile(const std::string& path, const std::string& what,
                                    size_t max_bytes = kDefaultMaxFileBytes);

// A shared secret from a file: its text without trailing line ends and spaces, at most 64 KiB.
// An empty file is InvalidArgument: a token file that holds nothing would otherwise switch
// authentication off without anyone noticing.
StatusOr<std::string> ReadTokenFile(const std::string& path);

// Trailing line ends and spaces cut from a token taken from a file or the environment.
std::string TrimToken(std::string token);

// The same bound for a stream (standard input): InvalidArgument past `max_bytes`.
StatusOr<std::string> ReadWholeStream(std::istream& in, const std::string& what,
                                      size_t max_bytes = kDefaultMaxFileBytes);

}  // namespace nccl_triage
