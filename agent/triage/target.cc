#include "triage/target.h"

#include <charconv>

#include "base/byte_size.h"
#include "base/text.h"

namespace nccl_triage::triage {
namespace {

}  // namespace

std::string Describe(const Target& t) {
  switch (t.kind) {
    case Target::Kind::kSelector:
      return "selector " + t.selector;
    case Target::Kind::kJob:
      return "job " + t.selector;
    case Target::Kind::kPods:
      return "pods " + Join(t.names);
    case Target::Kind::kNodes:
      return "nodes " + Join(t.names);
  }
  return "";
}

std::vector<std::string> JobSelectors(const std::string& job) {
  return {
      "batch.kubernetes.io/job-name=" + job,    // batch/v1 Job (Kubernetes 1.27+), JobSet's Jobs
      "job-name=" + job,                        // batch/v1 Job (older clusters)
      "training.kubeflow.org/job-name=" + job,  // PyTorchJob, MPIJob (Kubeflow training operator)
      "jobset.sigs.k8s.io/jobset-name=" + job,  // a JobSet by the JobSet's own name
      "volcano.sh/job-name=" + job,             // Volcano
  };
}

std::vector<std::string> SplitList(std::string_view list) {
  std::vector<std::string> out;
  while (!list.empty()) {
    const size_t comma = list.find(',');
    std::string_view item = list.substr(0, comma);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (!item.empty()) out.emplace_back(item);
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return out;
}

StatusOr<int64_t> ParseDurationSeconds(std::string_view text) {
  const std::string bad = "'" + std::string(text) + "' is not a duration (e.g. 30m, 2h, 1h30m, 3d)";
  if (text.empty()) return InvalidArgument(bad);
  int64_t total = 0;
  while (!text.empty()) {
    int64_t n = 0;
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
    if (ec != std::errc() || ptr == text.data() + text.size()) return InvalidArgument(bad);
    const char unit = *ptr;
    const int64_t mult = unit == 's'   ? 1
                         : unit == 'm' ? 60
                         : unit == 'h' ? 3600
                         : unit == 'd' ? 86400
                                       : 0;
    if (mult == 0 || n < 0 || n > 10'000'000) return InvalidArgument(bad);
    total += n * mult;
    text.remove_prefix(static_cast<size_t>(ptr - text.data()) + 1);
  }
  if (total <= 0) return InvalidArgument(bad);
  return total;
}

StatusOr<uint64_t> ParseByteSize(std::string_view text) {
  const std::string bad = "'" + std::string(text) + "' is not a size (e.g. 4MiB, 512KiB, 1GiB)";
  const std::optional<uint64_t> n = ::nccl_triage::ParseByteSize(text);
  if (!n || *n == 0 || *n > (1ULL << 40)) return InvalidArgument(bad);
  return *n;
}

bool IsObjectName(std::string_view name) {
  if (name.empty() || name.size() > 253) return false;
  for (char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.')) return false;
  }
  return name.front() != '-' && name.front() != '.' && name.back() != '-' && name.back() != '.';
}

}  // namespace nccl_triage::triage
