#include "probe/child.h"

#include <poll.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <ostream>
#include <thread>

#include "base/byte_size.h"
#include "base/flags.h"
#include "base/text.h"
#include "core/ids.h"
#include "core/json_text.h"
#include "probe/libraries.h"

namespace nccl_triage {
namespace {

using Clock = std::chrono::steady_clock;
using abi::CUresult;
using abi::ncclResult_t;

constexpr size_t kStagingElements = 256 * 1024;  // 1 MiB of uint32: bounded host memory
constexpr uint32_t kSentinel = 0xDEADBEEF;       // recv buffer before the collective
// Where to look when the container sees no GPU or only the stub driver (one line with the code).
constexpr const char* kNoGpuHint =
    "; the agent's container sees no GPU: check its runtime class (nvidia), NVIDIA_VISIBLE_DEVICES "
    "(all, not void) and the device plugin";
constexpr const char* kStubHint =
    "; the stub libcuda was loaded: the NVIDIA container runtime did not mount the driver";

int64_t MonotonicNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// Rank r contributes v(r, i) = low16(hash(i)) + (r + 1) * 65536, so the sum over n ranks is
// n * low16(hash(i)) + 65536 * n(n+1)/2: every element differs from its neighbours (a shifted or
// truncated copy is caught) and the unsigned sum is exact.
uint32_t Contribution(int rank, uint64_t i) {
  uint32_t h = static_cast<uint32_t>((i * 2654435761ull) >> 16) & 0xFFFFu;
  return h + static_cast<uint32_t>(rank + 1) * 65536u;
}

uint32_t ExpectedSum(int nranks, uint64_t i) {
  uint32_t h = static_cast<uint32_t>((i * 2654435761ull) >> 16) & 0xFFFFu;
  uint32_t n = static_cast<uint32_t>(nranks);
  return n * h + 65536u * (n * (n + 1) / 2);
}

std::string Hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "0x%08x", v);
  return buf;
}

// One probe run: the loaded APIs, the result being filled, and the resources to release.
class ChildRun {
 public:
  ChildRun(const ChildOptions& o, std::ostream& out)
      : o_(o), out_(out), deadline_(Clock::now() + std::chrono::milliseconds(o.deadline_ms)) {
    r_.mode = o.mode;
    r_.rank = o.rank;
    r_.nranks = o.nranks;
    r_.peer = o.peer;
    r_.size_bytes = o.size_bytes;
    r_.iterations = o.iterations;
    r_.log_path = o.log_path;
    r_.outcome = ProbeOutcome::kFail;
  }

  ProbeResult Run() {
    int64_t t0 = o_.spawn_monotonic_ns.value_or(MonotonicNs());
    if (Load() && CudaSetup(t0) && JoinCommunicator() && RunCollectives()) {
      r_.outcome = r_.data_verified ? ProbeOutcome::kPass : ProbeOutcome::kFail;
    }
    Cleanup();
    return r_;
  }

 private:
  bool Load() {
    LibrarySearch cuda_search{o_.cuda_library_paths, o_.default_library_search, o_.library_root};
    LibrarySearch nccl_search{o_.nccl_library_paths, o_.default_library_search, o_.library_root};
    // NCCL first: its path and version are worth reporting even where the driver is missing
    // (ncclGetVersion needs no GPU).
    auto nccl_lib = LoadLibrary(nccl_search, kNcclSoname);
    if (!nccl_lib.ok()) return Unavailable(ids::kProbeNoNccl, nccl_lib.status().message());
    r_.nccl_library = nccl_lib->path;
    auto nc = ResolveNccl(*nccl_lib);
    if (!nc.ok()) return Unavailable(ids::kProbeNoNccl, nc.status().message());
    nc_ = *nc;
    int version = 0;
    if (nc_.get_version != nullptr && nc_.get_version(&version) == abi::kNcclSuccess) {
      r_.nccl_version = DecodeNcclVersion(version);
    }
    // NCCL reads its settings at the first communicator, so this is early enough.
    if (!o_.check_only &&
        WantsNcclDiagnostics(o_.nccl_diagnostics, version, std::getenv("NCCL_RUN_DIAGNOSTICS"))) {
      setenv("NCCL_RUN_DIAGNOSTICS", "1", 1);
      if (!o_.log_path.empty()) setenv("NCCL_DEBUG_SUBSYS", "INIT,NET,DIAG", 1);
    }
    auto cuda_lib = LoadLibrary(cuda_search, kCudaSoname);
    if (!cuda_lib.ok()) return Unavailable(ids::kProbeNoCuda, cuda_lib.status().message());
    auto cu = ResolveCuda(*cuda_lib);
    if (!cu.ok()) return Unavailable(ids::kProbeNoCuda, cu.status().message());
    cu_ = *cu;
    return true;
  }

  bool Unavailable(CauseId cause, std::string why) {
    r_.outcome = ProbeOutcome::kUnavailable;
    r_.unavailable_cause = std::string(cause.str());
    r_.detail = std::move(why);
    return false;
  }

  bool CudaSetup(int64_t t0) {
    r_.startup_seconds = static_cast<double>(MonotonicNs() - t0) / 1e9;
    CUresult rc = cu_.init(0);
    if (rc == abi::kCudaErrorNoDevice || rc == abi::kCudaErrorStubLibrary) {
      // No GPU here (or only the toolkit's stub driver): nothing to probe, not a fault.
      CuFailed("cuInit", rc);
      const bool stub = rc == abi::kCudaErrorStubLibrary;
      return Unavailable(stub ? ids::kProbeNoCuda : ids::kProbeNoGpu,
                         r_.detail + (stub ? kStubHint : kNoGpuHint));
    }
    if (!CuOk("cuInit", rc)) return false;
    if (cu_.driver_get_version != nullptr) cu_.driver_get_version(&r_.cuda_driver_version);
    if (cu_.device_get_count != nullptr) {
      int count = 0;
      rc = cu_.device_get_count(&count);
      if (!CuOk("cuDeviceGetCount", rc)) return false;
      if (count == 0) return Unavailable(ids::kProbeNoGpu, std::string("no CUDA device") + kNoGpuHint);
      if (o_.check_only) r_.detail = std::to_string(count) + " CUDA device(s)";
      if (o_.gpu_bus_id.empty() && o_.device >= count) {
        r_.detail = "device " + std::to_string(o_.device) + " requested, " + std::to_string(count) +
                    " present";
        return false;
      }
    }
    if (o_.check_only) {  // the libraries load and the driver answers: enough for the check
      r_.outcome = ProbeOutcome::kPass;
      return false;
    }
    if (!o_.gpu_bus_id.empty()) {
      if (cu_.device_get_by_pci_bus_id == nullptr) {
        r_.detail = "cuDeviceGetByPCIBusId is absent from the CUDA driver";
        return false;
      }
      if (!CuOk("cuDeviceGetByPCIBusId",
                cu_.device_get_by_pci_bus_id(&device_, o_.gpu_bus_id.c_str()))) {
        return false;
      }
    } else if (!CuOk("cuDeviceGet", cu_.device_get(&device_, o_.device))) {
      return false;
    }
    char buf[256] = {};
    if (cu_.device_get_name != nullptr &&
        cu_.device_get_name(buf, sizeof(buf) - 1, device_) == abi::kCudaSuccess) {
      r_.gpu_name = buf;
    }
    std::memset(buf, 0, sizeof(buf));
    if (cu_.device_get_pci_bus_id != nullptr &&
        cu_.device_get_pci_bus_id(buf, sizeof(buf) - 1, device_) == abi::kCudaSuccess) {
      r_.gpu_bus_id = buf;
    }
    // The primary context is the one NCCL's runtime calls adopt (NCCL_FACTS A7).
    if (!CuOk("cuDevicePrimaryCtxRetain", cu_.primary_ctx_retain(&ctx_, device_))) return false;
    ctx_retained_ = true;
    return CuOk("cuCtxSetCurrent", cu_.ctx_set_current(ctx_));
  }

  bool JoinCommunicator() {
    abi::ncclUniqueId id{};
    if (o_.rank == 0) {
      if (!NcclOk("ncclGetUniqueId", nc_.get_unique_id(&id))) return false;
      out_ << kUniqueIdLinePrefix << EncodeUniqueId(id) << "\n";
      out_.flush();
    } else {
      IdLine got = ReadUniqueId();
      if (!got.id) {
        const std::string fd = std::to_string(o_.unique_id_fd);
        switch (got.why) {
          case IdLine::kClosed:  // rank 0 never made one (its own result says why)
            r_.outcome = ProbeOutcome::kFail;
            r_.detail = "no unique id: the relay closed fd " + fd + " without one";
            break;
          case IdLine::kMalformed:
            r_.outcome = ProbeOutcome::kFail;
            r_.detail = "malformed unique id line on fd " + fd + ": '" + got.shown + "'";
            break;
          case IdLine::kDeadline:
            r_.outcome = ProbeOutcome::kTimeout;
            r_.detail = "no unique id from rank 0 on fd " + fd + " before the deadline";
            break;
        }
        return false;
      }
      id = *got.id;
    }
    if (nc_.comm_init_rank_config != nullptr && nc_.comm_get_async_error != nullptr &&
        nc_.comm_abort != nullptr) {
      // Non-blocking init is the only way to put a deadline on a hung bootstrap (A6).
      abi::NcclConfig218 config;
      config.blocking = 0;
      ncclResult_t rc = nc_.comm_init_rank_config(&comm_, o_.nranks, id, o_.rank, &config);
      if (rc == abi::kNcclInProgress || rc == abi::kNcclSuccess) {
        rc = WaitComm("ncclCommInitRankConfig");
        if (rc == abi::kNcclInProgress) return false;  // timed out; Cleanup aborts
      } else {
        comm_ = nullptr;  // refused outright: no communicator to abort
      }
      return NcclOk("ncclCommInitRankConfig", rc);
    }
    init_note_ = "blocking ncclCommInitRank (no ncclCommInitRankConfig: NCCL before 2.14)";
    ncclResult_t rc = nc_.comm_init_rank(&comm_, o_.nranks, id, o_.rank);
    if (rc != abi::kNcclSuccess) comm_ = nullptr;  // a failed blocking init leaves no comm
    return NcclOk("ncclCommInitRank", rc);
  }

  // The relayed line: the id, or why there is none. A line that arrived but does not decode is
  // malformed, not a timeout: the peer (or whoever relays) sent something else.
  struct IdLine {
    enum Why { kDeadline, kClosed, kMalformed };
    std::optional<abi::ncclUniqueId> id;
    Why why = kDeadline;
    std::string shown;  // the start of a malformed line, printable
  };

  static IdLine Decoded(const std::string& line) {
    IdLine r;
    r.id = DecodeUniqueId(line);
    if (r.id) return r;
    r.why = IdLine::kMalformed;
    r.shown = PrintableAscii(line, 64);
    if (line.size() > 64) r.shown += "...";
    return r;
  }

  IdLine ReadUniqueId() {
    std::string line;
    char c;
    while (true) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - Clock::now());
      if (left.count() <= 0) return {};
      pollfd pfd{o_.unique_id_fd, POLLIN, 0};
      int rc = poll(&pfd, 1, static_cast<int>(std::min<int64_t>(left.count(), 1000)));
      if (rc < 0 && errno == EINTR) continue;
      if (rc <= 0) continue;
      ssize_t n = read(o_.unique_id_fd, &c, 1);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        if (line.empty()) return {std::nullopt, IdLine::kClosed, ""};
        return Decoded(line);
      }
      if (c == '\n') return Decoded(line);
      if (line.size() > 4096) return Decoded(line);  // far longer than any id
      line.push_back(c);
    }
  }

  bool RunCollectives() {
    uint64_t count = std::max<uint64_t>(o_.size_bytes / sizeof(uint32_t), 1);
    uint64_t bytes = count * sizeof(uint32_t);
    r_.size_bytes = bytes;
    if (!CuOk("cuMemAlloc_v2", cu_.mem_alloc(&send_, bytes))) return false;
    if (!CuOk("cuMemAlloc_v2", cu_.mem_alloc(&recv_, bytes))) return false;
    std::vector<uint32_t> staging(std::min<uint64_t>(count, kStagingElements));
    for (uint64_t base = 0; base < count; base += staging.size()) {
      uint64_t n = std::min<uint64_t>(staging.size(), count - base);
      for (uint64_t k = 0; k < n; ++k) staging[k] = Contribution(o_.rank, base + k);
      if (!CuOk("cuMemcpyHtoD_v2", cu_.memcpy_htod(send_ + base * sizeof(uint32_t), staging.data(),
                                                   n * sizeof(uint32_t)))) {
        return false;
      }
    }
    if (!CuOk("cuMemsetD32_v2", cu_.memset_d32(recv_, kSentinel, count))) return false;
    if (!CuOk("cuStreamCreate", cu_.stream_create(&stream_, 0))) return false;

    for (int i = 0; i < o_.warmup; ++i) {
      if (!AllReduce(count) || !WaitStream("warm-up all-reduce")) return false;
    }
    // Timed on the device when the driver has events (as a GPU kernel is timed), else on the
    // host: a loaded host then does not make a healthy link look slow.
    abi::CUevent started = nullptr, ended = nullptr;
    const bool events = cu_.event_create != nullptr && cu_.event_record != nullptr &&
                        cu_.event_synchronize != nullptr && cu_.event_elapsed_time != nullptr &&
                        cu_.event_destroy != nullptr &&
                        cu_.event_create(&started, 0) == abi::kCudaSuccess &&
                        cu_.event_create(&ended, 0) == abi::kCudaSuccess &&
                        cu_.event_record(started, stream_) == abi::kCudaSuccess;
    auto start = Clock::now();
    for (int i = 0; i < o_.iterations; ++i) {
      if (!AllReduce(count)) return false;
    }
    if (!WaitStream("timed all-reduce")) return false;
    double total = std::chrono::duration<double>(Clock::now() - start).count();
    float device_ms = 0;
    if (events && cu_.event_record(ended, stream_) == abi::kCudaSuccess &&
        cu_.event_synchronize(ended) == abi::kCudaSuccess &&
        cu_.event_elapsed_time(&device_ms, started, ended) == abi::kCudaSuccess && device_ms > 0) {
      total = device_ms / 1000.0;
    }
    if (started != nullptr) cu_.event_destroy(started);
    if (ended != nullptr) cu_.event_destroy(ended);
    r_.time_seconds = total / std::max(o_.iterations, 1);
    if (r_.time_seconds > 0) {
      r_.algbw_bytes_per_second = static_cast<double>(bytes) / r_.time_seconds;
      r_.busbw_bytes_per_second =
          r_.algbw_bytes_per_second * 2.0 * (o_.nranks - 1) / static_cast<double>(o_.nranks);
    }
    return Verify(count);
  }

  bool AllReduce(uint64_t count) {
    ncclResult_t rc =
        nc_.all_reduce(reinterpret_cast<const void*>(send_), reinterpret_cast<void*>(recv_), count,
                       abi::kNcclUint32, abi::kNcclSum, comm_, stream_);
    // A non-blocking communicator may still be connecting (runtime connect, 2.22+).
    if (rc == abi::kNcclInProgress) {
      rc = WaitComm("ncclAllReduce");
      if (rc == abi::kNcclInProgress) return false;
    }
    return NcclOk("ncclAllReduce", rc);
  }

  // Polls the stream rather than blocking in cuStreamSynchronize: a dead peer leaves the kernel
  // spinning forever, and only polling can see NCCL's async error or the deadline meanwhile.
  bool WaitStream(const char* what) {
    if (cu_.stream_query == nullptr) {
      return CuOk("cuStreamSynchronize", cu_.stream_synchronize(stream_));
    }
    int spins = 0;
    while (true) {
      CUresult rc = cu_.stream_query(stream_);
      if (rc == abi::kCudaSuccess) return true;
      if (rc != abi::kCudaErrorNotReady) return CuOk("cuStreamQuery", rc);
      if (nc_.comm_get_async_error != nullptr && (++spins & 63) == 0) {
        ncclResult_t state = abi::kNcclSuccess;
        if (nc_.comm_get_async_error(comm_, &state) == abi::kNcclSuccess &&
            state != abi::kNcclSuccess && state != abi::kNcclInProgress) {
          return NcclOk(what, state);
        }
      }
      if (Clock::now() > deadline_) return TimedOut(what);
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }

  // Waits for a non-blocking communicator to leave ncclInProgress; returns its state, or
  // ncclInProgress after aborting it at the deadline.
  ncclResult_t WaitComm(const char* what) {
    while (true) {
      ncclResult_t state = abi::kNcclInProgress;
      ncclResult_t rc = nc_.comm_get_async_error(comm_, &state);
      if (rc != abi::kNcclSuccess) return rc;
      if (state != abi::kNcclInProgress) return state;
      if (Clock::now() > deadline_) {
        TimedOut(what);
        return abi::kNcclInProgress;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }

  bool TimedOut(const char* what) {
    r_.outcome = ProbeOutcome::kTimeout;
    r_.detail = std::string(what) + " did not complete within " +
                std::to_string(o_.deadline_ms / 1000) + " s; communicator aborted";
    r_.nccl_result = abi::kNcclInProgress;
    FillLastError();
    return false;
  }

  bool Verify(uint64_t count) {
    std::vector<uint32_t> staging(std::min<uint64_t>(count, kStagingElements));
    uint64_t mismatches = 0;
    std::string first;
    for (uint64_t base = 0; base < count; base += staging.size()) {
      uint64_t n = std::min<uint64_t>(staging.size(), count - base);
      if (!CuOk("cuMemcpyDtoH_v2", cu_.memcpy_dtoh(staging.data(), recv_ + base * sizeof(uint32_t),
                                                   n * sizeof(uint32_t)))) {
        return false;
      }
      for (uint64_t k = 0; k < n; ++k) {
        uint32_t want = ExpectedSum(o_.nranks, base + k);
        if (staging[k] == want) continue;
        if (mismatches++ == 0) {
          first = "first at element " + std::to_string(base + k) + ": got " + Hex32(staging[k]) +
                  ", want " + Hex32(want);
        }
      }
    }
    r_.mismatches = mismatches;
    r_.data_verified = mismatches == 0;
    if (mismatches > 0) {
      r_.detail = "all-reduce returned wrong data: " + std::to_string(mismatches) + " of " +
                  std::to_string(count) + " elements differ (" + first + ")";
    } else {
      r_.detail = "verified " + std::to_string(count) + " elements" +
                  (init_note_.empty() ? "" : "; " + init_note_);
    }
    return true;
  }

  void Cleanup() {
    if (comm_ != nullptr) {
      if (r_.outcome == ProbeOutcome::kPass) {
        if (nc_.comm_finalize != nullptr && nc_.comm_finalize(comm_) == abi::kNcclInProgress &&
            nc_.comm_get_async_error != nullptr) {
          // Bounded: a finalize that hangs after a verified run is not worth failing it for.
          auto until = std::min(deadline_, Clock::now() + std::chrono::seconds(5));
          ncclResult_t state = abi::kNcclInProgress;
          while (nc_.comm_get_async_error(comm_, &state) == abi::kNcclSuccess &&
                 state == abi::kNcclInProgress && Clock::now() < until) {
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
          }
        }
        nc_.comm_destroy(comm_);
      } else if (nc_.comm_abort != nullptr) {
        nc_.comm_abort(comm_);
      } else {
        nc_.comm_destroy(comm_);
      }
      comm_ = nullptr;
    }
    if (stream_ != nullptr && cu_.stream_destroy != nullptr) cu_.stream_destroy(stream_);
    if (send_ != 0 && cu_.mem_free != nullptr) cu_.mem_free(send_);
    if (recv_ != 0 && cu_.mem_free != nullptr) cu_.mem_free(recv_);
    if (ctx_retained_ && cu_.primary_ctx_release != nullptr) cu_.primary_ctx_release(device_);
  }

  bool CuOk(const char* call, CUresult rc) {
    if (rc == abi::kCudaSuccess) return true;
    CuFailed(call, rc);
    return false;
  }

  void CuFailed(const char* call, CUresult rc) {
    r_.outcome = ProbeOutcome::kFail;
    r_.cuda_result = rc;
    const char* name = nullptr;
    const char* text = nullptr;
    if (cu_.get_error_name != nullptr) cu_.get_error_name(rc, &name);
    if (cu_.get_error_string != nullptr) cu_.get_error_string(rc, &text);
    r_.detail = std::string(call) + ": " + (name != nullptr ? name : "CUDA error") + " (" +
                std::to_string(rc) + ")" + (text != nullptr ? std::string(": ") + text : "");
  }

  bool NcclOk(const char* call, ncclResult_t rc) {
    if (rc == abi::kNcclSuccess) return true;
    r_.outcome = ProbeOutcome::kFail;
    r_.nccl_result = rc;
    const char* text = nc_.get_error_string(rc);
    r_.nccl_error = text != nullptr ? text : "";
    FillLastError();
    r_.detail = std::string(call) + ": " + r_.nccl_error + " (" + std::to_string(rc) + ")" +
                (r_.last_error.empty() ? "" : " | last: " + r_.last_error);
    return false;
  }

  void FillLastError() {
    if (nc_.get_last_error == nullptr) return;
    const char* last = nc_.get_last_error(nullptr);
    if (last != nullptr) r_.last_error = last;
    while (!r_.last_error.empty() &&
           (r_.last_error.back() == '\n' || r_.last_error.back() == '\r')) {
      r_.last_error.pop_back();
    }
  }

  const ChildOptions& o_;
  std::ostream& out_;
  Clock::time_point deadline_;
  ProbeResult r_;
  CudaApi cu_;
  NcclApi nc_;
  abi::CUdevice device_ = 0;
  abi::CUcontext ctx_ = nullptr;
  bool ctx_retained_ = false;
  abi::ncclComm_t comm_ = nullptr;
  abi::CUdeviceptr send_ = 0;
  abi::CUdeviceptr recv_ = 0;
  abi::CUstream stream_ = nullptr;
  std::string init_note_;
};

// The variables that define what the child probes; the runner sets them too (with the rest of
// the environment), this only keeps a hand-started child honest.
void PinModeEnvironment(const ChildOptions& o) {
  if (o.mode != ProbeMode::kIntraNode) {  // the intra-node probe leaves the network to NCCL
    setenv("NCCL_NET", o.mode == ProbeMode::kIb ? "IB" : "Socket", 1);
    setenv("NCCL_IB_DISABLE", o.mode == ProbeMode::kIb ? "0" : "1", 1);
  }
  setenv("NCCL_NVLS_ENABLE", "0", 1);
  if (!o.log_path.empty()) {
    setenv("NCCL_DEBUG", "INFO", 1);
    setenv("NCCL_DEBUG_SUBSYS", "INIT,NET", 1);
    setenv("NCCL_DEBUG_FILE", o.log_path.c_str(), 1);
  }
}

}  // namespace

std::string EncodeUniqueId(const abi::ncclUniqueId& id) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s;
  s.reserve(abi::kNcclUniqueIdBytes * 2);
  for (char c : id.internal) {
    auto b = static_cast<unsigned char>(c);
    s.push_back(kHex[b >> 4]);
    s.push_back(kHex[b & 15]);
  }
  return s;
}

std::optional<abi::ncclUniqueId> DecodeUniqueId(std::string_view text) {
  if (text.starts_with(kUniqueIdLinePrefix)) text.remove_prefix(kUniqueIdLinePrefix.size());
  while (!text.empty() && (text.back() == '\r' || text.back() == ' ')) text.remove_suffix(1);
  if (text.size() != abi::kNcclUniqueIdBytes * 2) return std::nullopt;
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  abi::ncclUniqueId id{};
  for (int i = 0; i < abi::kNcclUniqueIdBytes; ++i) {
    int hi = nibble(text[2 * i]);
    int lo = nibble(text[2 * i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    id.internal[i] = static_cast<char>((hi << 4) | lo);
  }
  return id;
}

bool WantsNcclDiagnostics(bool asked, int nccl_version_code, const char* env_value) {
  constexpr int kFirstWithDiagnostics = 23100;  // 2.31.0 (2.9+ codes: major*10000+minor*100)
  return asked && nccl_version_code >= kFirstWithDiagnostics && env_value == nullptr;
}

StatusOr<ChildOptions> ParseChildArgs(const std::vector<std::string>& args) {
  ChildOptions o;
  bool only_configured = false;
  constexpr int kMax = 1'000'000'000;
  Status s =
      FlagParser()
          .Custom({"--mode"},
                  [&o](const std::string& v) -> Status {
                    auto m = FromString<ProbeMode>(v);
                    if (!m) {
                      return InvalidArgument("expects one of socket, ib, intra (not '" + v + "')");
                    }
                    o.mode = *m;
                    return Status::Ok();
                  })
          .Int({"--rank"}, &o.rank, 0, kMax)
          .Int({"--nranks"}, &o.nranks, 1, kMax)
          .Int({"--device"}, &o.device, 0, kMax)
          .String({"--gpu-bus-id"}, &o.gpu_bus_id)
          .Int({"--iters"}, &o.iterations, 1, kMax)
          .Int({"--warmup"}, &o.warmup, 0, kMax)
          .Int({"--deadline-ms"}, &o.deadline_ms, 1, kMax)
          .Int({"--unique-id-fd"}, &o.unique_id_fd, 0, kMax)
          .Custom({"--size"},
                  [&o](const std::string& v) -> Status {
                    auto b = ParseByteSize(v);
                    if (!b || *b == 0) {
                      return InvalidArgument("expects a byte count such as 64M (not '" + v + "')");
                    }
                    o.size_bytes = *b;
                    return Status::Ok();
                  })
          .String({"--log-file"}, &o.log_path)
          .String({"--peer"}, &o.peer)
          .Repeated({"--nccl-lib"}, &o.nccl_library_paths)
          .Repeated({"--cuda-lib"}, &o.cuda_library_paths)
          .Switch({"--only-configured-libs"}, &only_configured)
          .Switch({"--check"}, &o.check_only)
          .Switch({"--nccl-diagnostics"}, &o.nccl_diagnostics)
          .String({"--lib-root"}, &o.library_root)
          .Custom({"--spawn-ns"},
                  [&o](const std::string& v) -> Status {
                    int64_t ns = 0;
                    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), ns);
                    if (ec != std::errc() || end != v.data() + v.size()) {
                      return InvalidArgument("expects nanoseconds (not '" + v + "')");
                    }
                    o.spawn_monotonic_ns = ns;
                    return Status::Ok();
                  })
          .Parse(args);
  if (!s.ok()) return s;
  if (only_configured) o.default_library_search = false;
  if (o.rank >= o.nranks) return InvalidArgument("--rank must be below --nranks");
  return o;
}

ProbeResult RunProbeChild(const ChildOptions& options, std::ostream& out) {
  ChildRun run(options, out);
  return run.Run();
}

int RunProbeChildCommand(const std::vector<std::string>& args, std::ostream& out,
                         std::ostream& err) {
  auto options = ParseChildArgs(args);
  if (!options.ok()) {
    err << "nccl-triage probe --child: " << options.status().message() << "\n";
    return 2;
  }
  // Die with the runner: a probe nobody waits for must not hold a GPU.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  PinModeEnvironment(*options);
  ProbeResult r;
  try {
    r = RunProbeChild(*options, out);
  } catch (const std::exception& e) {
    r.mode = options->mode;
    r.rank = options->rank;
    r.nranks = options->nranks;
    r.outcome = ProbeOutcome::kFail;
    r.detail = std::string("probe child error: ") + e.what();
  }
  // One line, written at once, last: the runner takes the last JSON line of stdout.
  out << DumpJson(ToJson(r)) << "\n";
  out.flush();
  return 0;
}

}  // namespace nccl_triage
