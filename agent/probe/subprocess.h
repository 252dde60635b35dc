// Subprocess: the one contract for every child process nccl-triage starts.
//
// A child runs in its own process group with exactly the environment it is given (built from
// scratch by the caller, never inherited), a wall-clock deadline after which the whole group is
// SIGKILLed, stdout and stderr captured up to a bound (the excess is read and dropped, and counted,
// so a flooding child can neither block nor exhaust the parent), and a typed result: exited with a
// code, killed by a signal, timed out, or could not be started. When the child itself exits, the
// rest of its process group is killed too, so nothing it started outlives the probe.
//
// Ownership: a Subprocess owns its pid, pipes and process group; destroying one that still runs
// kills the group and reaps it. Thread safety: none; one thread drives a Subprocess (and WaitAll
// drives several from one thread). Reusable beyond the probe (workload scans, tests).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/reflect.h"
#include "base/status.h"

namespace nccl_triage {

struct SubprocessOptions {
  std::vector<std::string> argv;              // argv[0] is the program's path (no PATH search)
  std::vector<std::string> env;               // "NAME=value": the child's whole environment
  std::chrono::milliseconds timeout{60'000};  // from the spawn; then SIGKILL of the group
  size_t max_output_bytes = 1 << 20;          // per stream; the rest is read and dropped
  bool pipe_stdin = false;  // true: stdin is a pipe fed by WriteStdin; false: /dev/null
  // Set: stdout is streamed to this function as it arrives (from the thread that waits)
  // instead of captured, so a child may print more than fits in memory; a slow consumer slows
  // the child down through the pipe. Returning false kills the child's group (a consumer that
  // refuses what it reads). max_output_bytes then bounds stderr only.
  std::function<bool(std::string_view)> on_stdout;
};

enum class ExitKind { kExited, kSignaled, kTimedOut, kSpawnFailed };
constexpr auto NamesOf(Type<ExitKind>) {
  return std::array{Named(ExitKind::kExited, "exited"), Named(ExitKind::kSignaled, "signaled"),
                    Named(ExitKind::kTimedOut, "timed_out"),
                    Named(ExitKind::kSpawnFailed, "spawn_failed")};
}

struct SubprocessResult {
  ExitKind kind = ExitKind::kSpawnFailed;
  int exit_code = -1;      // kExited
  int signal = 0;          // kSignaled: the signal that ended the child
  std::string out;         // captured stdout (at most max_output_bytes)
  std::string err;         // captured stderr (at most max_output_bytes)
  size_t out_dropped = 0;  // bytes read beyond the bound and discarded
  size_t err_dropped = 0;
  double seconds = 0;  // spawn to end
  std::string error;   // kSpawnFailed: why
};

class Subprocess {
 public:
  using Clock = std::chrono::steady_clock;

  // Starts the child. Fails (kUnavailable) only when the process cannot be created at all, e.g.
  // the program does not exist.
  static StatusOr<std::unique_ptr<Subprocess>> Spawn(SubprocessOptions options);

  ~Subprocess();
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  pid_t pid() const { return pid_; }
  Clock::time_point started() const { return started_; }
  Clock::time_point deadline() const { return deadline_; }
  bool done() const { return done_; }

  // Feeds the child's stdin (options.pipe_stdin). Never blocks past the deadline.
  Status WriteStdin(std::string_view data);
  void CloseStdin();

  // What stdout/stderr captured so far (bounded).
  const std::string& out() const { return out_.data; }
  const std::string& err() const { return err_.data; }

  // Kills the whole process group now; the result reads kSignaled (or kTimedOut past deadline).
  void Kill();

  // Runs the child to its end (exit, signal or deadline) and returns the result. Idempotent.
  SubprocessResult Wait();

  // Drives several children at once from one thread (so none blocks on a full pipe while another
  // is waited for) until `stop` returns true, every child is done, or `until` passes.
  static void Pump(std::span<Subprocess* const> children, const std::function<bool()>& stop,
                   Clock::time_point until);
  static void WaitAll(std::span<Subprocess* const> children);

 private:
  struct Stream {
    int fd = -1;
    std::string data;
    size_t dropped = 0;
  };

  explicit Subprocess(SubprocessOptions& options);
  void ReadAvailable(Stream& s);
  void CheckExit(bool block);
  void Finish(bool timed_out);

  pid_t pid_ = -1;
  int pidfd_ = -1;
  int stdin_fd_ = -1;
  Stream out_;
  Stream err_;
  size_t max_output_bytes_;
  std::function<bool(std::string_view)> on_stdout_;
  Clock::time_point started_;
  Clock::time_point deadline_;
  Clock::time_point ended_;
  bool exited_ = false;  // the leader has exited (status collected)
  bool done_ = false;    // exited and pipes drained
  bool timed_out_ = false;
  bool killed_ = false;
  int status_ = 0;
};

// Convenience: spawn, wait, and fold a spawn failure into the result (kind kSpawnFailed).
SubprocessResult RunSubprocess(SubprocessOptions options);

}  // namespace nccl_triage
