#include "base/log.h"

#include <chrono>
#include <cstdio>
#include <ctime>
#include <ostream>
#include <string>

#include "base/utf8.h"

namespace nccl_triage {

bool ParseLogLevel(std::string_view s, LogLevel* out) {
  std::string upper(s);
  for (char& c : upper) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  }
  auto level = FromString<LogLevel>(upper);
  if (level) *out = *level;
  return level.has_value();
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

bool ParseLogFormat(std::string_view s, LogFormat* out) {
  auto format = FromString<LogFormat>(s);
  if (format) *out = *format;
  return format.has_value();
}

namespace {

void AppendJsonString(std::string& out, std::string_view s) {
  out += '"';
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
    } else if (c < 0x80) {
      out += static_cast<char>(c);
    } else if (size_t n = Utf8SequenceLength(s, i); n > 0) {
      out.append(s.substr(i, n));
      i += n;
      continue;
    } else {
      out += "\\ufffd";  // a byte that is not UTF-8: the line must still parse
    }
    ++i;
  }
  out += '"';
}

// Text lines go to terminals: a control byte, a C1 control (U+0080..U+009F) or a byte that is not
// UTF-8 is written as \xNN, so a node name holding "\x1b[2J" cannot clear the screen or forge a
// line; line ends become spaces, as before.
void AppendTextField(std::string& out, std::string_view s) {
  auto hex = [&out](unsigned char c) {
    char buf[8];
    std::snprintf(buf, sizeof(buf), "\\x%02x", c);
    out += buf;
  };
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '\n' || c == '\r') {
      out += ' ';
    } else if (c < 0x20 || c == 0x7F) {
      hex(c);
    } else if (c < 0x80) {
      out += static_cast<char>(c);
    } else if (size_t n = Utf8SequenceLength(s, i); n > 0) {
      const bool c1 = n == 2 && c == 0xC2 && static_cast<unsigned char>(s[i + 1]) < 0xA0;
      if (c1) {
        hex(c);
        hex(static_cast<unsigned char>(s[i + 1]));
      } else {
        out.append(s.substr(i, n));
      }
      i += n;
      continue;
    } else {
      hex(c);
    }
    ++i;
  }
}

std::string LowerCase(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

}  // namespace

std::string FormatLogLine(LogFormat format, int64_t unix_ms, LogLevel level,
                          std::string_view component, std::string_view message) {
  std::string line;
  if (format == LogFormat::kJson) {
    line = "{\"time\":\"" + FormatRfc3339(unix_ms, true) + "\",\"level\":\"" +
           LowerCase(ToString(level)) + "\",\"component\":";
    AppendJsonString(line, component);
    line += ",\"message\":";
    AppendJsonString(line, message);
    line += "}\n";
    return line;
  }
  line = FormatRfc3339(unix_ms, true);
  line += ' ';
  line += ToString(level);
  line += ' ';
  AppendTextField(line, component);
  line += ": ";
  AppendTextField(line, message);
  line += '\n';
  return line;
}

Logger::Logger(std::ostream& out, LogLevel min_level, LogFormat format)
    : out_(out), min_level_(min_level), format_(format) {}

void Logger::Log(LogLevel level, std::string_view component, std::string_view message) {
  if (!Enabled(level)) return;
  int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                    std::chrono::system_clock::now().time_since_epoch())
                    .count();
  std::string line = FormatLogLine(format_, now, level, component, message);
  std::lock_guard lock(mu_);
  out_ << line << std::flush;
}

}  // namespace nccl_triage
