// libFuzzer target: the gatherer over a file tree that the input describes, then every check and
// the JSON of the snapshot and the report. Names are arbitrary bytes (an interface
// "eth\xff\xfe" made every JSON output abort), values arbitrary text of any length, some entries
// are links, FIFOs or directories where a file belongs. Nothing may crash or hang; every string
// that leaves the gatherer is clean text (IsCleanText), the snapshot loads back equal from its
// JSON, and evidence values and messages stay within their bounds.
//
// Each record of the input: one byte picks a path template, then up to three name parts and a
// value (FuzzedDataProvider strings). The tree is written under /dev/shm (or TMPDIR) and removed
// after each input.
#include <fuzzer/FuzzedDataProvider.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "checks/check.h"
#include "checks/check_util.h"
#include "core/report.h"
#include "core/snapshot_json.h"
#include "fuzz_check.h"
#include "host/gatherer.h"
#include "host/snapshot_text.h"

using nccl_triage::fuzz::Require;

namespace {

namespace fs = std::filesystem;

// %s are filled with names from the input, in order.
constexpr std::array<const char*, 40> kTemplates = {
    "sys/class/infiniband/%s/ports/%s/state",
    "sys/class/infiniband/%s/ports/%s/phys_state",
    "sys/class/infiniband/%s/ports/%s/rate",
    "sys/class/infiniband/%s/ports/%s/lid",
    "sys/class/infiniband/%s/ports/%s/sm_lid",
    "sys/class/infiniband/%s/ports/%s/sm_sl",
    "sys/class/infiniband/%s/ports/%s/link_layer",
    "sys/class/infiniband/%s/ports/%s/cap_mask",
    "sys/class/infiniband/%s/ports/%s/counters/%s",
    "sys/class/infiniband/%s/ports/%s/hw_counters/%s",
    "sys/class/infiniband/%s/ports/%s/pkeys/%s",
    "sys/class/infiniband/%s/ports/%s/gids/%s",
    "sys/class/infiniband/%s/ports/%s/gid_attrs/types/%s",
    "sys/class/infiniband/%s/ports/%s/gid_attrs/ndevs/%s",
    "sys/class/infiniband/%s/node_type",
    "sys/class/infiniband/%s/node_guid",
    "sys/class/infiniband/%s/fw_ver",
    "sys/class/infiniband/%s/hca_type",
    "sys/class/infiniband/%s/board_id",
    "sys/class/infiniband_verbs/%s/ibdev",
    "sys/class/net/%s/operstate",
    "sys/class/net/%s/type",
    "sys/class/net/%s/mtu",
    "sys/bus/pci/devices/%s/class",
    "sys/bus/pci/devices/%s/vendor",
    "sys/module/%s/version",
    "dev/infiniband/%s",
    "proc/self/limits",
    "proc/self/status",
    "proc/self/mountinfo",
    "proc/cpuinfo",
    "proc/meminfo",
    "proc/sys/kernel/hostname",
    "proc/sys/kernel/osrelease",
    "proc/driver/nvidia/version",
    "proc/driver/nvidia/gpus/%s/information",
    "proc/%s/comm",
    "proc/%s/fd/%s",                   // a link: the value is its target
    "sys/class/infiniband/%s/device",  // a link
    "proc/self/ns/net",                // a link
};

// A path component from input bytes: '/' and NUL cannot be in a name, "." and ".." are not names.
std::string Component(FuzzedDataProvider& in) {
  std::string s = in.ConsumeRandomLengthString(24);
  for (char& c : s) {
    if (c == '/' || c == '\0') c = '_';
  }
  if (s.empty() || s == "." || s == "..") s += "n";
  return s;
}

std::string Fill(FuzzedDataProvider& in, std::string_view tmpl) {
  std::string out;
  for (size_t i = 0; i < tmpl.size(); ++i) {
    if (tmpl[i] == '%' && i + 1 < tmpl.size() && tmpl[i + 1] == 's') {
      // Digits are what the gatherer looks for in port, pid and index positions; mix them in.
      out +=
          in.ConsumeBool() ? std::to_string(in.ConsumeIntegralInRange<int>(0, 20)) : Component(in);
      ++i;
    } else {
      out += tmpl[i];
    }
  }
  return out;
}

fs::path ScratchRoot() {
  static const fs::path base = [] {
    std::error_code ec;
    fs::path b =
        fs::is_directory("/dev/shm", ec) ? fs::path("/dev/shm") : fs::temp_directory_path();
    return b / ("gather-tree-fuzz-" + std::to_string(::getpid()));
  }();
  return base;
}

void CheckClean(const nlohmann::json& j) {
  const std::string text = j.dump();  // throws (and aborts the fuzzer) on invalid UTF-8
  Require(nccl_triage::IsCleanText(text));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace nccl_triage;
  FuzzedDataProvider in(data, size);
  const fs::path root = ScratchRoot();
  std::error_code ec;
  fs::remove_all(root, ec);
  fs::create_directories(root);
  for (int records = 0; records < 48 && in.remaining_bytes() > 0; ++records) {
    const size_t pick = in.ConsumeIntegralInRange<size_t>(0, kTemplates.size() - 1);
    const fs::path path = root / Fill(in, kTemplates[pick]);
    const int kind =
        in.ConsumeIntegralInRange<int>(0, 9);  // 0 link, 1 FIFO, 2 directory, else a file
    std::string value = in.ConsumeRandomLengthString(512);
    // Now and then a value far longer than a sysfs attribute can be.
    if (in.ConsumeIntegralInRange<int>(0, 63) == 0)
      value.append(1 << 20, value.empty() ? '9' : value[0]);
    fs::create_directories(path.parent_path(), ec);
    const bool link = kind == 0 || pick >= kTemplates.size() - 3;
    if (link) {
      for (char& c : value) {
        if (c == '\0') c = '_';
      }
      fs::create_symlink(value.empty() ? "x" : value, path, ec);
    } else if (kind == 1) {
      ::mkfifo(path.c_str(), 0600);
    } else if (kind == 2) {
      fs::create_directories(path, ec);
    } else {
      std::ofstream(path, std::ios::binary) << value;
    }
  }

  GatherOptions options;
  options.root = root.string();
  options.now_unix_ms = [] { return int64_t{1700000000000}; };
  auto snapshot = GatherSnapshot(options);
  if (!snapshot.ok()) {
    // Only a tree in which nothing at all could be read is refused.
    Require(snapshot.status().message().find("nothing could be read") != std::string::npos);
    fs::remove_all(root, ec);
    return 0;
  }
  const nlohmann::json json = ToJson(*snapshot);
  CheckClean(json);
  auto back = SnapshotFromJson(json);
  Require(back.ok() && *back == *snapshot);

  CheckRegistry registry;
  RegisterBuiltinChecks(registry);
  std::vector<Finding> findings = registry.Run(*snapshot, Config{}, CheckContext{});
  for (const auto& f : findings) {
    Require(f.message.size() <= checks::kMaxMessageBytes);
    for (const auto& e : f.evidence) Require(e.value.size() <= checks::kMaxEvidenceValueBytes);
  }
  CheckClean(ToJson(MakeReport(snapshot->node, std::move(findings), 1700000000000)));
  fs::remove_all(root, ec);
  return 0;
}
