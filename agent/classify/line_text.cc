#include "classify/line_text.h"

#include <re2/re2.h>

#include "base/utf8.h"

namespace nccl_triage::classify {

std::string Sanitize(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const size_t len = Utf8SequenceLength(s, i);
    if (len == 0) {
      out.append(kUtf8Replacement);
      ++i;
    } else if (len == 1) {
      const auto c = static_cast<unsigned char>(s[i]);
      out.push_back((c < 0x20 && c != '\t') || c == 0x7f ? '?' : s[i]);
      ++i;
    } else {
      out.append(s.substr(i, len));
      i += len;
    }
  }
  return out;
}

std::string_view FileOnly(std::string_view file) {
  file = file.substr(0, file.find(' '));
  return file.substr(0, file.rfind(':'));
}

bool IsTestsResultRow(std::string_view text) {
  if (text.size() > 512 || text.find_first_of("0123456789") == std::string_view::npos) return false;
  // A launcher that labels each write of a rank (MPICH's and Intel MPI's `-prepend-rank`,
  // `[0] `) labels the pieces nccl-tests prints a row in, too: `-1[0]    1626.5 ... 0[0] ...`.
  static const RE2 kRow(
      R"(\b\d+\s+\d+\s+(?:float|double|half|bfloat16|u?int(?:8|32|64)|fp8_e4m3|fp8_e5m2)\s+)"
      R"((?:[a-z]+\s+)?(?:-?\d+(?:\[\d{1,5}\])?\s+)?[\d.]+\s+[\d.]+\s+[\d.]+\s+)"
      R"((?:0|N/A|0e\+00|\d(?:\.\d+)?e-(?:0[5-9]|[1-9]\d))(?:\s|$|\[\d))");
  return RE2::PartialMatch(text, kRow);
}

bool IsRdmaPluginLine(std::string_view msg) {
  if (msg.size() > 512) return false;
  static const RE2 kRdma(
      R"(^(?:P2P plugin IBext|NET/Plugin ?: Loaded )"
      R"((?:net plugin [^\n]*\b(?:RDMA|IB|[Ii]nfini[Bb]and)\b|coll plugin [^\n]*\bSHARP\b)))");
  return RE2::PartialMatch(msg, kRdma);
}

bool IsProgressLine(std::string_view text) {
  if (text.size() > 512) return false;
  static const RE2 kStep(
      R"((?i)(?:\b(?:iter(?:ation)?|step|epoch)s?\s*[:#=]?\s*\[?\s*[1-9]\d*\b[^\n]{0,200}?)"
      R"(\b(?:loss|time per step|s/it|it/s|img/sec|images/sec|samples?/s(?:ec)?|tokens?/s(?:ec)?|)"
      R"(throughput|elapsed time|grad[_ ]norm|learning[_ ]rate|lr)\b))");
  static const RE2 kTrainerDict(R"(\{'loss': [0-9])");
  static const RE2 kTotal(R"((?i)\btotal (?:img|images|samples|tokens)/sec on \d+ GPU)");
  const bool digit = text.find_first_of("123456789") != std::string_view::npos;
  return digit && (RE2::PartialMatch(text, kStep) || RE2::PartialMatch(text, kTrainerDict) ||
                   RE2::PartialMatch(text, kTotal));
}

bool IsProgramSuccessLine(std::string_view text) {
  if (text.size() > 512) return false;
  static const RE2 kSuccess(
      R"((?i)\b(?:nccl|all[-_ ]?reduce|all[-_ ]?gather|collectives?)\b[^\n]{0,60}\b)"
      R"((?:is successful|succeeded|passed)\b)");
  if (RE2::PartialMatch(text, kSuccess)) return true;
  // A benchmark's measured result with its own data check (`... busbw_GBps 0.773 check ok`,
  // `bus bandwidth 12.5 GB/s, results correct`): a collective completed and returned the right
  // data. A figure alone is not enough (a job can print a rate and then fail its check).
  static const RE2 kCheckedRate(
      R"((?i)\b(?:bus[-_ ]?bw|alg[-_ ]?bw|bus bandwidth)\S*\s*[:=]?\s*\d[\d.]*[^\n]{0,80}?)"
      R"(\b(?:check(?:ed)?\s*[:=]?\s*(?:ok|passed)|results? (?:correct|ok|verified)|verified)\b)");
  const bool rate = text.find("bw") != std::string_view::npos ||
                    text.find("BW") != std::string_view::npos ||
                    text.find("andwidth") != std::string_view::npos;
  if (!rate) return false;
  // A benchmark's average over its trials of a named collective (`The average bandwidth of
  // all_reduce with a 40.0GB payload (5 trials, 16 ranks):`): printed only once every trial
  // returned.
  static const RE2 kAverageOf(
      R"((?i)\b(?:average|avg|mean)\b[^\n]{0,30}\bbandwidth of (?:all[-_ ]?reduce|all[-_ ]?gather|)"
      R"(reduce[-_ ]?scatter|broadcast|all[-_ ]?to[-_ ]?all|reduce)\b[^\n]{0,60}\b\d+ trials?\b)");
  return RE2::PartialMatch(text, kCheckedRate) || RE2::PartialMatch(text, kAverageOf);
}

std::string ParseVersion(std::string_view text) {
  size_t pos = text.find("NCCL version ");
  if (pos == std::string_view::npos) return {};
  std::string_view rest = text.substr(pos + 13);
  size_t n = 0;
  int dots = 0;
  while (n < rest.size() && n < 16 && ((rest[n] >= '0' && rest[n] <= '9') || rest[n] == '.')) {
    if (rest[n] == '.') ++dots;
    ++n;
  }
  while (n > 0 && rest[n - 1] == '.') --n, --dots;
  if (dots < 1) return {};
  return std::string(rest.substr(0, n));
}

bool IEqualsPrefix(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i) {
    char a = s[i];
    if (a >= 'a' && a <= 'z') a = static_cast<char>(a - 'a' + 'A');
    if (a != prefix[i]) return false;
  }
  return true;
}

std::string ToUpper(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  }
  return out;
}

}  // namespace nccl_triage::classify
