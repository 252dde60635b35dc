#include "state/port_memory.h"

#include <filesystem>
#include <fstream>

#include "base/files.h"

namespace nccl_triage {

PortMemory::PortMemory(std::string state_dir, int64_t flap_stable_ms)
    : state_dir_(std::move(state_dir)) {
  history_.flap_stable_ms = flap_stable_ms;
}

std::string PortMemory::path() const {
  return state_dir_.empty() ? std::string() : state_dir_ + "/ports.state";
}

void PortMemory::Load(const std::string& boot_id) {
  const int64_t stable = history_.flap_stable_ms;
  history_ = PortHistory{};
  history_.flap_stable_ms = stable;
  history_.boot_id = boot_id;
  if (state_dir_.empty() || boot_id.empty()) return;
  auto text = ReadWholeFile(path(), "port memory");
  if (!text.ok()) return;
  auto saved = ParsePortHistory(*text);
  // Another boot's memory says nothing about this one.
  if (!saved || saved->boot_id != boot_id) return;
  history_.ports = std::move(saved->ports);
}

const PortHistory& PortMemory::BeginPoll(const NodeSnapshot& now, const NodeSnapshot* previous) {
  const std::string boot_id = now.boot_id.ok() ? *now.boot_id.value : std::string();
  if (!loaded_ || boot_id != history_.boot_id) {
    Load(boot_id);
    loaded_ = true;
    previous = nullptr;  // a snapshot of another boot is no previous poll
  }
  history_.now_unix_ms = now.taken_at_unix_ms;
  RecordPortFlaps(history_, now, previous);
  return history_;
}

void PortMemory::EndPoll(const NodeSnapshot& now) {
  RecordPortsSeen(history_, now);
  Save();
}

void PortMemory::Save() const {
  // Without a boot id the memory could not be matched to a boot when read back (a fixture root).
  if (state_dir_.empty() || history_.boot_id.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(state_dir_, ec);
  const std::string tmp = path() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << FormatPortHistory(history_);
    if (!out) return;
  }
  std::filesystem::rename(tmp, path(), ec);
}

}  // namespace nccl_triage
