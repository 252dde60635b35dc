#include "exporter/http_server_protocol.h"

#include <algorithm>
#include <charconv>

namespace nccl_triage {
namespace {

// RFC 9110 5.6.2 tchar.
bool IsTokenChar(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool IsToken(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), IsTokenChar);
}

char Lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

std::string LowerCase(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = Lower(c);
  return out;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Field values may hold visible characters, spaces, tabs and obs-text, never other controls.
bool IsFieldValue(std::string_view s) {
  return std::none_of(s.begin(), s.end(), [](char c) {
    auto u = static_cast<unsigned char>(c);
    return (u < 0x20 && c != '\t') || u == 0x7f;
  });
}

// True when the comma-separated list `value` holds `token` (case-insensitive).
bool ListHas(std::string_view value, std::string_view token) {
  while (!value.empty()) {
    size_t comma = value.find(',');
    std::string_view item = Trim(value.substr(0, comma));
    if (item.size() == token.size() &&
        std::equal(item.begin(), item.end(), token.begin(),
                   [](char a, char b) { return Lower(a) == Lower(b); })) {
      return true;
    }
    if (comma == std::string_view::npos) break;
    value.remove_prefix(comma + 1);
  }
  return false;
}

HttpHeadResult Error(int status, std::string why) { return {std::nullopt, status, std::move(why)}; }

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::optional<size_t> FindHeadEnd(std::string_view buffer, size_t from) {
  // Back up over a line end that may have been split between two reads.
  size_t i = from > 3 ? from - 3 : 0;
  for (; i < buffer.size(); ++i) {
    if (buffer[i] != '\n') continue;
    if (i + 1 < buffer.size() && buffer[i + 1] == '\n') return i + 2;
    if (i + 2 < buffer.size() && buffer[i + 1] == '\r' && buffer[i + 2] == '\n') return i + 3;
  }
  return std::nullopt;
}

std::string PercentDecode(std::string_view text, bool plus_is_space) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '%' && i + 2 < text.size()) {
      int hi = HexValue(text[i + 1]), lo = HexValue(text[i + 2]);
      if (hi >= 0 && lo >= 0) {
        out += static_cast<char>(hi * 16 + lo);
        i += 2;
        continue;
      }
    }
    out += plus_is_space && c == '+' ? ' ' : c;
  }
  return out;
}

HttpHeadResult ParseHttpHead(std::string_view head, const HttpLimits& limits) {
  if (head.size() > limits.max_head_bytes) return Error(431, "request head too large");
  HttpHead h;
  bool first = true;
  bool saw_length = false;
  size_t lines = 0;
  while (!head.empty()) {
    size_t nl = head.find('\n');
    std::string_view line = head.substr(0, nl);
    head.remove_prefix(nl == std::string_view::npos ? head.size() : nl + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) {
      // A blank line ends the head; RFC 9112 2.2 lets a server skip blank lines before the
      // request line.
      if (first) continue;
      break;
    }
    if (first) {
      first = false;
      size_t sp1 = line.find(' ');
      size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
      if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos) {
        return Error(400, "malformed request line");
      }
      std::string_view method = line.substr(0, sp1);
      std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
      std::string_view version = line.substr(sp2 + 1);
      if (!IsToken(method)) return Error(400, "malformed method");
      if (target.size() > limits.max_target_bytes) return Error(414, "request target too long");
      if (target.empty() || target.front() != '/' || !IsFieldValue(target)) {
        return Error(400, "request target is not an absolute path");
      }
      if (version == "HTTP/1.1") {
        h.keep_alive = true;
      } else if (version != "HTTP/1.0") {
        return Error(version.rfind("HTTP/", 0) == 0 ? 505 : 400, "unsupported HTTP version");
      }
      h.method = std::string(method);
      size_t q = target.find('?');
      h.path = PercentDecode(target.substr(0, q), /*plus_is_space=*/false);
      if (q != std::string_view::npos) {
        std::string_view query = target.substr(q + 1);
        while (!query.empty()) {
          size_t amp = query.find('&');
          std::string_view pair = query.substr(0, amp);
          query.remove_prefix(amp == std::string_view::npos ? query.size() : amp + 1);
          if (pair.empty()) continue;
          size_t eq = pair.find('=');
          h.params.emplace(
              PercentDecode(pair.substr(0, eq), true),
              eq == std::string_view::npos ? "" : PercentDecode(pair.substr(eq + 1), true));
        }
      }
      continue;
    }
    if (++lines > limits.max_headers) return Error(431, "too many header fields");
    if (line.front() == ' ' || line.front() == '\t') {
      return Error(400, "obsolete line folding");  // RFC 9112 5.2: reject it
    }
    size_t colon = line.find(':');
    if (colon == std::string_view::npos || !IsToken(line.substr(0, colon))) {
      return Error(400, "malformed header field");
    }
    std::string name = LowerCase(line.substr(0, colon));
    std::string_view value = Trim(line.substr(colon + 1));
    if (!IsFieldValue(value)) return Error(400, "control character in header field");
    if (name == "content-length") {
      size_t n = 0;
      auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
      if (value.empty() || ec != std::errc() || ptr != value.data() + value.size() ||
          (saw_length && n != h.content_length)) {
        return Error(400, "bad Content-Length");
      }
      saw_length = true;
      h.content_length = n;
    } else if (name == "transfer-encoding") {
      return Error(501, "Transfer-Encoding is not supported; send Content-Length");
    } else if (name == "connection") {
      if (ListHas(value, "close")) h.keep_alive = false;
      if (ListHas(value, "keep-alive")) h.keep_alive = true;
    } else if (name == "expect") {
      if (!ListHas(value, "100-continue")) return Error(417, "unsupported expectation");
      h.expect_continue = true;
    }
    h.headers.emplace_back(std::move(name), std::string(value));
  }
  if (first) return Error(400, "empty request");
  // "Connection: close" wins over a keep-alive token in the same request.
  for (const auto& [name, value] : h.headers) {
    if (name == "connection" && ListHas(value, "close")) h.keep_alive = false;
  }
  return {std::move(h), 0, {}};
}

std::string_view ReasonPhrase(int status) {
  switch (status) {
    case 100:
      return "Continue";
    case 200:
      return "OK";
    case 202:
      return "Accepted";
    case 204:
      return "No Content";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 411:
      return "Length Required";
    case 413:
      return "Content Too Large";
    case 414:
      return "URI Too Long";
    case 417:
      return "Expectation Failed";
    case 429:
      return "Too Many Requests";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 501:
      return "Not Implemented";
    case 503:
      return "Service Unavailable";
    case 505:
      return "HTTP Version Not Supported";
    default:
      return "Unknown";
  }
}

std::string FormatHttpResponse(int status, std::string_view content_type, std::string_view body,
                               bool keep_alive,
                               const std::vector<std::pair<std::string, std::string>>& headers) {
  std::string out;
  out.reserve(128 + body.size());
  out += "HTTP/1.1 ";
  out += std::to_string(status);
  out += ' ';
  out += ReasonPhrase(status);
  out += "\r\nContent-Type: ";
  out += content_type;
  out += "\r\nContent-Length: ";
  out += std::to_string(body.size());
  out += keep_alive ? "\r\nConnection: keep-alive\r\n" : "\r\nConnection: close\r\n";
  for (const auto& [name, value] : headers) {
    out += name;
    out += ": ";
    out += value;
    out += "\r\n";
  }
  out += "\r\n";
  out += body;
  return out;
}

}  // namespace nccl_triage
