#include "base/log.h"

#include <chrono>
#include <cstdio>
#include <ctime>
#include <ostream>

namespace nccl_triage {

std::string_view ToString(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return "DEBUG";
    case LogLevel::kInfo:
      return "INFO";
    case LogLevel::kWarn:
      return "WARN";
    case LogLevel::kError:
      return "ERROR";
  }
  return "INFO";
}

bool ParseLogLevel(std::string_view s, LogLevel* out) {
  for (auto level : {LogLevel::kDebug, LogLevel::kInfo, LogLevel::kWarn, LogLevel::kError}) {
    std::string_view name = ToString(level);
    if (name.size() != s.size()) continue;
    bool same = true;
    for (size_t i = 0; i < s.size(); ++i) {
      char c = s[i];
      if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
      same &= c == name[i];
    }
    if (same) {
      *out = level;
      return true;
    }
  }
  return false;
}

std::string FormatRfc3339(int64_t unix_ms, bool with_millis) {
  std::time_t secs = static_cast<std::time_t>(unix_ms / 1000);
  int64_t millis = unix_ms % 1000;
  if (millis < 0) {
    millis += 1000;
    secs -= 1;
  }
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[96];
  if (with_millis) {
    std::snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                  tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                  static_cast<int>(millis));
  } else {
    std::snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02dZ", tm.tm_year + 1900,
                  tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
  }
  return buf;
}

Logger::Logger(std::ostream& out, LogLevel min_level) : out_(out), min_level_(min_level) {}

void Logger::Log(LogLevel level, std::string_view component, std::string_view message) {
  if (!Enabled(level)) return;
  int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                    std::chrono::system_clock::now().time_since_epoch())
                    .count();
  std::string line = FormatRfc3339(now, true);
  line += ' ';
  line += ToString(level);
  line += ' ';
  line += component;
  line += ": ";
  for (char c : message) line += (c == '\n' || c == '\r') ? ' ' : c;
  line += '\n';
  std::lock_guard lock(mu_);
  out_ << line << std::flush;
}

}  // namespace nccl_triage
