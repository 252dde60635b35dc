// A misbehaving child for the subprocess contract tests: each argv[1] selects one behaviour.
//   sleep                 sleep forever
//   fork-sleep            start a grandchild that sleeps forever, print its pid, sleep forever
//   fork-exit             start a grandchild that sleeps forever, print its pid, exit 0
//   flood N               write N bytes to stdout and N to stderr, exit 0
//   segv                  die of SIGSEGV
//   exit N                exit with code N
//   env                   print the environment, one NAME=value per line
//   echo-stdin            copy one line of stdin to stdout, exit 0
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>

extern char** environ;

namespace {

[[noreturn]] void SleepForever() {
  while (true) pause();
}

pid_t ForkSleeper() {
  pid_t pid = fork();
  if (pid == 0) SleepForever();
  std::printf("%d\n", static_cast<int>(pid));
  std::fflush(stdout);
  return pid;
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "sleep") SleepForever();
  if (mode == "fork-sleep") {
    ForkSleeper();
    SleepForever();
  }
  if (mode == "fork-exit") {
    ForkSleeper();
    return 0;
  }
  if (mode == "flood" && argc > 2) {
    long long left = std::atoll(argv[2]);
    std::string chunk(65536, 'x');
    while (left > 0) {
      size_t n =
          static_cast<size_t>(std::min<long long>(left, static_cast<long long>(chunk.size())));
      if (write(1, chunk.data(), n) < 0 || write(2, chunk.data(), n) < 0) return 3;
      left -= static_cast<long long>(n);
    }
    return 0;
  }
  if (mode == "segv") {
    raise(SIGSEGV);
    return 1;
  }
  if (mode == "exit" && argc > 2) return std::atoi(argv[2]);
  if (mode == "env") {
    for (char** e = environ; *e != nullptr; ++e) std::printf("%s\n", *e);
    return 0;
  }
  if (mode == "echo-stdin") {
    std::string line;
    std::getline(std::cin, line);
    std::printf("got:%s\n", line.c_str());
    return 0;
  }
  std::fprintf(stderr, "fake_child: unknown mode '%s'\n", mode.c_str());
  return 64;
}
