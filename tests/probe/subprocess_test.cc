#include "probe/subprocess.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>

namespace nccl_triage {
namespace {

using namespace std::chrono_literals;

SubprocessOptions Child(std::initializer_list<std::string> args,
                        std::chrono::milliseconds timeout = 10s) {
  SubprocessOptions o;
  o.argv.push_back(PROBE_FAKE_CHILD);
  o.argv.insert(o.argv.end(), args);
  o.env = {"PATH=/usr/bin:/bin"};
  o.timeout = timeout;
  return o;
}

// True once `pid` is gone or a zombie (killed, waiting for its new parent to reap it).
bool DeadSoon(pid_t pid) {
  for (int i = 0; i < 200; ++i) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    if (!std::getline(stat, line)) return true;
    auto close_paren = line.rfind(')');
    if (close_paren != std::string::npos && close_paren + 2 < line.size() &&
        (line[close_paren + 2] == 'Z' || line[close_paren + 2] == 'X')) {
      return true;
    }
    std::this_thread::sleep_for(10ms);
  }
  return false;
}

TEST(Subprocess, ReportsTheExitCode) {
  auto r = RunSubprocess(Child({"exit", "7"}));
  EXPECT_EQ(r.kind, ExitKind::kExited);
  EXPECT_EQ(r.exit_code, 7);
}

TEST(Subprocess, ReportsTheSignalOfACrash) {
  auto r = RunSubprocess(Child({"segv"}));
  EXPECT_EQ(r.kind, ExitKind::kSignaled);
  EXPECT_EQ(r.signal, SIGSEGV);
}

TEST(Subprocess, DeadlineKillsTheWholeGroupInTime) {
  auto start = std::chrono::steady_clock::now();
  auto r = RunSubprocess(Child({"fork-sleep"}, 300ms));
  auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(r.kind, ExitKind::kTimedOut);
  EXPECT_GE(took, 300ms);
  EXPECT_LT(took, 1500ms);
  ASSERT_FALSE(r.out.empty());
  pid_t grandchild = std::stoi(r.out);
  EXPECT_TRUE(DeadSoon(grandchild)) << "grandchild " << grandchild << " survived the deadline";
}

TEST(Subprocess, ExitOfTheChildKillsWhatItLeftInItsGroup) {
  auto r = RunSubprocess(Child({"fork-exit"}));
  EXPECT_EQ(r.kind, ExitKind::kExited);
  EXPECT_EQ(r.exit_code, 0);
  ASSERT_FALSE(r.out.empty());
  EXPECT_TRUE(DeadSoon(std::stoi(r.out)));
  EXPECT_LT(r.seconds, 2.0);
}

TEST(Subprocess, BoundsAndCountsAFlood) {
  auto o = Child({"flood", std::to_string(5 << 20)});
  o.max_output_bytes = 1 << 20;
  auto r = RunSubprocess(o);
  EXPECT_EQ(r.kind, ExitKind::kExited);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out.size(), size_t{1} << 20);
  EXPECT_EQ(r.out_dropped, size_t{4} << 20);
  EXPECT_EQ(r.err.size(), size_t{1} << 20);
  EXPECT_EQ(r.err_dropped, size_t{4} << 20);
}

TEST(Subprocess, StreamsStdoutBeyondTheBoundToACallback) {
  auto o = Child({"flood", std::to_string(5 << 20)});
  o.max_output_bytes = 1 << 20;
  size_t streamed = 0;
  o.on_stdout = [&](std::string_view chunk) {
    streamed += chunk.size();
    return true;
  };
  auto r = RunSubprocess(o);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(streamed, size_t{5} << 20);  // all of it, none held
  EXPECT_TRUE(r.out.empty());
  EXPECT_EQ(r.out_dropped, 0U);
  EXPECT_EQ(r.err.size(), size_t{1} << 20);  // stderr is still captured and bounded
}

TEST(Subprocess, ACallbackThatRefusesWhatItReadsKillsTheChild) {
  auto o = Child({"flood", std::to_string(64 << 20)});
  size_t calls = 0;
  o.on_stdout = [&](std::string_view) { return ++calls < 3; };
  auto r = RunSubprocess(o);
  EXPECT_EQ(r.kind, ExitKind::kSignaled);
  EXPECT_EQ(r.signal, SIGKILL);
  EXPECT_EQ(calls, 3U);
}

TEST(Subprocess, GivesTheChildExactlyTheEnvironmentAskedFor) {
  auto o = Child({"env"});
  o.env = {"ONLY=this", "AND=that"};
  auto r = RunSubprocess(o);
  EXPECT_EQ(r.out, "ONLY=this\nAND=that\n");
}

TEST(Subprocess, MissingProgramIsASpawnFailureNotACrash) {
  SubprocessOptions o;
  o.argv = {"/nonexistent/nccl-triage-child"};
  auto r = RunSubprocess(o);
  EXPECT_EQ(r.kind, ExitKind::kSpawnFailed);
  EXPECT_NE(r.error.find("No such file"), std::string::npos) << r.error;
}

TEST(Subprocess, FeedsStdin) {
  auto o = Child({"echo-stdin"});
  o.pipe_stdin = true;
  auto p = Subprocess::Spawn(o);
  ASSERT_TRUE(p.ok()) << p.status().message();
  ASSERT_TRUE((*p)->WriteStdin("hello\n").ok());
  (*p)->CloseStdin();
  auto r = (*p)->Wait();
  EXPECT_EQ(r.out, "got:hello\n");
}

TEST(Subprocess, WritingToAChildThatExitedIsAnErrorNotSigpipe) {
  auto o = Child({"exit", "0"});
  o.pipe_stdin = true;
  auto p = Subprocess::Spawn(o);
  ASSERT_TRUE(p.ok());
  (*p)->Wait();
  std::string big(1 << 20, 'y');
  EXPECT_FALSE((*p)->WriteStdin(big).ok());  // the process is still alive to check this
}

TEST(Subprocess, WaitAllDrivesSeveralFloodingChildrenTogether) {
  std::vector<std::unique_ptr<Subprocess>> kids;
  for (int i = 0; i < 3; ++i) {
    auto p = Subprocess::Spawn(Child({"flood", std::to_string(2 << 20)}));
    ASSERT_TRUE(p.ok());
    kids.push_back(std::move(*p));
  }
  std::vector<Subprocess*> raw;
  for (auto& k : kids) raw.push_back(k.get());
  Subprocess::WaitAll(raw);
  for (auto& k : kids) {
    auto r = k->Wait();
    EXPECT_EQ(r.kind, ExitKind::kExited);
    EXPECT_EQ(r.out.size(), size_t{1} << 20);
  }
}

TEST(Subprocess, PumpStopsWhenTheCallerHasWhatItNeeds) {
  auto p = Subprocess::Spawn(Child({"fork-sleep"}, 5s));
  ASSERT_TRUE(p.ok());
  Subprocess* raw = p->get();
  auto start = std::chrono::steady_clock::now();
  Subprocess::Pump(
      std::span<Subprocess* const>(&raw, 1),
      [&] { return raw->out().find('\n') != std::string::npos; },
      std::chrono::steady_clock::now() + 5s);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
  EXPECT_FALSE(raw->done());
  raw->Kill();
  auto r = raw->Wait();
  EXPECT_EQ(r.kind, ExitKind::kSignaled);
  EXPECT_EQ(r.signal, SIGKILL);
}

}  // namespace
}  // namespace nccl_triage
