// Logger: one line per event, with a level and a component, written to a stream (stderr in the
// binary, a string stream in tests).
//
// Not a global: the app creates one and passes it by reference to whatever logs. Text lines look
// like
//   2025-01-02T03:04:05.678Z WARN kube: patch pod annotations: HTTP 403 (forbidden)
// and JSON lines (--log-format json, one object per line, as log pipelines such as Fluent Bit,
// Vector or Loki's promtail expect) like
//   {"time":"2025-01-02T03:04:05.678Z","level":"warn","component":"kube","message":"patch ..."}
// Newlines inside a message are replaced (text) or escaped (JSON) so one event is always one line;
// JSON strings are escaped and invalid UTF-8 becomes U+FFFD, so every line parses. Callers must
// never pass credentials (the Kubernetes client logs statuses and paths, never headers).
// Thread-safe.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <mutex>
#include <string>
#include <string_view>

#include "base/reflect.h"

namespace nccl_triage {

enum class LogLevel { kDebug, kInfo, kWarn, kError };
constexpr auto NamesOf(Type<LogLevel>) {
  return std::array{Named(LogLevel::kDebug, "DEBUG"), Named(LogLevel::kInfo, "INFO"),
                    Named(LogLevel::kWarn, "WARN"), Named(LogLevel::kError, "ERROR")};
}

// Parses debug|info|warn|error (case-insensitive); false on anything else.
bool ParseLogLevel(std::string_view s, LogLevel* out);

enum class LogFormat { kText, kJson };
constexpr auto NamesOf(Type<LogFormat>) {
  return std::array{Named(LogFormat::kText, "text"), Named(LogFormat::kJson, "json")};
}
// Parses text|json; false on anything else.
bool ParseLogFormat(std::string_view s, LogFormat* out);

// One log line, newline included (pure: the time is given).
std::string FormatLogLine(LogFormat format, int64_t unix_ms, LogLevel level,
                          std::string_view component, std::string_view message);

class Logger {
 public:
  explicit Logger(std::ostream& out, LogLevel min_level = LogLevel::kInfo,
                  LogFormat format = LogFormat::kText);

  void Log(LogLevel level, std::string_view component, std::string_view message);
  void Debug(std::string_view component, std::string_view m) {
    Log(LogLevel::kDebug, component, m);
  }
  void Info(std::string_view component, std::string_view m) { Log(LogLevel::kInfo, component, m); }
  void Warn(std::string_view component, std::string_view m) { Log(LogLevel::kWarn, component, m); }
  void Error(std::string_view component, std::string_view m) {
    Log(LogLevel::kError, component, m);
  }
  bool Enabled(LogLevel level) const { return level >= min_level_; }

 private:
  std::mutex mu_;
  std::ostream& out_;
  LogLevel min_level_;
  LogFormat format_;
};

// "2025-01-02T03:04:05Z" (with_millis adds ".678").
std::string FormatRfc3339(int64_t unix_ms, bool with_millis = false);

}  // namespace nccl_triage
