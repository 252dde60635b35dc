// A fake libcuda.so.1 for machines without a GPU: the driver-API entry points the probe resolves
// with dlsym, with "device memory" in host memory and streams that track work a fake NCCL hands
// them (so cuStreamQuery reports CUDA_ERROR_NOT_READY while an all-reduce is in flight, as on a
// GPU).
//
// Contexts are per device and current per thread (cuCtxGetDevice tells the fake NCCL which GPU its
// rank runs on, as cudaGetDevice tells the real one). Driven by the environment the probe runner
// lets through its allow-list:
//   NCCL_FAKE_ROOT    a fixture root; the GPU name and bus id come from
//                     <root>/proc/driver/nvidia/gpus/<bdf>/information when present
//   NCCL_FAKE_FAULTS  comma list; "no_gpu" makes cuInit return CUDA_ERROR_NO_DEVICE (100),
//                     "stub_driver" CUDA_ERROR_STUB_LIBRARY (34: the toolkit's stub libcuda)
#include <dirent.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <string>
#include <vector>

namespace {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;

constexpr CUresult kSuccess = 0;
constexpr CUresult kInvalidValue = 1;
constexpr CUresult kOutOfMemory = 2;
constexpr CUresult kNotInitialized = 3;
constexpr CUresult kStubLibrary = 34;
constexpr CUresult kNoDevice = 100;
constexpr CUresult kInvalidDevice = 101;
constexpr CUresult kNotReady = 600;

struct FakeContext {
  int device = 0;
};

// Work is counted, not queued: the fake NCCL runs the transfer on its own thread and tells the
// stream when it starts and ends.
struct FakeStream {
  std::mutex mu;
  std::condition_variable cv;
  int pending = 0;
  // The device's clock on this stream: the time the work done on it took, as the fake NCCL
  // models it (fakeCudaStreamAdvance), not as the host's clock saw it.
  double device_seconds = 0;
};

// An event: the stream's device clock when the work before it finished (-1: not yet known).
struct FakeEvent {
  FakeStream* stream = nullptr;
  double at = -1;
};

std::atomic<bool> g_initialized{false};
// One primary context per device; the current one is per thread, as in the driver.
constexpr int kMaxDevices = 64;
FakeContext g_primary[kMaxDevices];
thread_local FakeContext* g_current = nullptr;

bool HasFault(const char* name) {
  const char* faults = std::getenv("NCCL_FAKE_FAULTS");
  if (faults == nullptr) return false;
  std::string list = std::string(",") + faults + ",";
  return list.find(std::string(",") + name + ",") != std::string::npos;
}

struct GpuEntry {
  std::string name;
  std::string bus;
};

// The fixture's GPUs in bus order, "Model:  NVIDIA A100-SXM4-80GB" and "Bus Location:
// 0000:07:00.0" from proc/driver/nvidia/gpus/<bdf>/information: the devices this fake shows, as
// CUDA numbers them with CUDA_DEVICE_ORDER=PCI_BUS_ID. Empty without a fixture (one fake GPU).
std::vector<GpuEntry> FixtureGpus() {
  std::vector<GpuEntry> out;
  const char* root = std::getenv("NCCL_FAKE_ROOT");
  if (root == nullptr) return out;
  std::string dir = std::string(root) + "/proc/driver/nvidia/gpus";
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  std::vector<std::string> bdfs;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] != '.') bdfs.emplace_back(e->d_name);
  }
  closedir(d);
  std::sort(bdfs.begin(), bdfs.end());
  for (const auto& bdf : bdfs) {
    GpuEntry g;
    std::ifstream in(dir + "/" + bdf + "/information");
    std::string line;
    while (std::getline(in, line)) {
      auto colon = line.find(':');
      if (colon == std::string::npos) continue;
      std::string key = line.substr(0, colon);
      std::string value = line.substr(colon + 1);
      value.erase(0, value.find_first_not_of(" \t"));
      if (key == "Model") g.name = value;
      if (key == "Bus Location") g.bus = value;
    }
    if (g.bus.empty()) g.bus = bdf;
    if (!g.name.empty()) out.push_back(std::move(g));
  }
  return out;
}

int DeviceCount() { return std::max<int>(1, static_cast<int>(FixtureGpus().size())); }

bool ValidDevice(CUdevice device) { return device >= 0 && device < DeviceCount(); }

// "0000:07:00.0" and "00000000:07:00.0" name one function (domain width differs by tool).
std::string BusKey(std::string bus) {
  for (auto& c : bus) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  auto colon = bus.find(':');
  if (colon == std::string::npos) return bus;
  std::string domain = bus.substr(0, colon);
  domain.erase(0, std::min(domain.find_first_not_of('0'), domain.size()));
  return domain + bus.substr(colon);
}

void CopyString(const std::string& s, char* out, int len) {
  if (out == nullptr || len <= 0) return;
  std::strncpy(out, s.c_str(), static_cast<size_t>(len));
  out[len - 1] = '\0';
}

// The CUresults this fake returns, with the driver's name and text for each (one table serves
// cuGetErrorName and cuGetErrorString).
struct ErrorText {
  CUresult code;
  const char* name;
  const char* text;
};
constexpr ErrorText kErrorTexts[] = {
    {kSuccess, "CUDA_SUCCESS", "no error"},
    {kInvalidValue, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {kOutOfMemory, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {kNotInitialized, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {kNoDevice, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {kStubLibrary, "CUDA_ERROR_STUB_LIBRARY", "CUDA driver is a stub library"},
    {kInvalidDevice, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {kNotReady, "CUDA_ERROR_NOT_READY", "device not ready"},
};

const ErrorText* FindErrorText(CUresult error) {
  for (const auto& e : kErrorTexts) {
    if (e.code == error) return &e;
  }
  return nullptr;
}

}  // namespace

extern "C" {

CUresult cuInit(unsigned int flags) {
  if (flags != 0) return kInvalidValue;
  if (HasFault("no_gpu")) return kNoDevice;
  if (HasFault("stub_driver")) return kStubLibrary;
  g_initialized = true;
  return kSuccess;
}

CUresult cuDriverGetVersion(int* version) {
  if (version == nullptr) return kInvalidValue;
  *version = 13000;
  return kSuccess;
}

CUresult cuDeviceGetCount(int* count) {
  if (!g_initialized) return kNotInitialized;
  *count = DeviceCount();
  return kSuccess;
}

CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  if (!g_initialized) return kNotInitialized;
  if (!ValidDevice(ordinal)) return kInvalidDevice;
  *device = ordinal;
  return kSuccess;
}

CUresult cuDeviceGetByPCIBusId(CUdevice* device, const char* bus_id) {
  if (!g_initialized) return kNotInitialized;
  if (device == nullptr || bus_id == nullptr) return kInvalidValue;
  const auto gpus = FixtureGpus();
  for (size_t i = 0; i < gpus.size(); ++i) {
    if (BusKey(gpus[i].bus) == BusKey(bus_id)) {
      *device = static_cast<CUdevice>(i);
      return kSuccess;
    }
  }
  return kInvalidDevice;
}

CUresult cuDeviceGetName(char* name, int len, CUdevice device) {
  if (!ValidDevice(device)) return kInvalidDevice;
  const auto gpus = FixtureGpus();
  CopyString(gpus.empty() ? "Fake GPU (host memory)" : gpus[static_cast<size_t>(device)].name, name,
             len);
  return kSuccess;
}

CUresult cuDeviceGetPCIBusId(char* bus_id, int len, CUdevice device) {
  if (!ValidDevice(device)) return kInvalidDevice;
  const auto gpus = FixtureGpus();
  CopyString(gpus.empty() ? "00000000:00:00.0" : gpus[static_cast<size_t>(device)].bus, bus_id,
             len);
  return kSuccess;
}

CUresult cuDevicePrimaryCtxRetain(void** ctx, CUdevice device) {
  if (!g_initialized) return kNotInitialized;
  if (!ValidDevice(device)) return kInvalidDevice;
  if (device >= kMaxDevices) return kInvalidDevice;
  g_primary[device].device = device;
  *ctx = &g_primary[device];
  return kSuccess;
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice device) {
  return ValidDevice(device) ? kSuccess : kInvalidDevice;
}

CUresult cuCtxSetCurrent(void* ctx) {
  auto* c = static_cast<FakeContext*>(ctx);
  if (c != nullptr && (c < g_primary || c >= g_primary + kMaxDevices)) return kInvalidValue;
  g_current = c;
  return kSuccess;
}

// What NCCL's cudaGetDevice sees: the device of the calling thread's current context.
CUresult cuCtxGetDevice(CUdevice* device) {
  if (device == nullptr) return kInvalidValue;
  if (g_current == nullptr) return 201;  // CUDA_ERROR_INVALID_CONTEXT
  *device = g_current->device;
  return kSuccess;
}

CUresult cuMemAlloc_v2(CUdeviceptr* ptr, size_t bytes) {
  if (!g_initialized) return kNotInitialized;
  void* p = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
  if (p == nullptr) return kOutOfMemory;
  *ptr = reinterpret_cast<uintptr_t>(p);
  return kSuccess;
}

CUresult cuMemFree_v2(CUdeviceptr ptr) {
  std::free(reinterpret_cast<void*>(static_cast<uintptr_t>(ptr)));
  return kSuccess;
}

CUresult cuMemsetD32_v2(CUdeviceptr dst, unsigned int value, size_t count) {
  auto* p = reinterpret_cast<uint32_t*>(static_cast<uintptr_t>(dst));
  for (size_t i = 0; i < count; ++i) p[i] = value;
  return kSuccess;
}

CUresult cuMemcpyDtoH_v2(void* dst, CUdeviceptr src, size_t bytes) {
  std::memcpy(dst, reinterpret_cast<const void*>(static_cast<uintptr_t>(src)), bytes);
  return kSuccess;
}

CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void* src, size_t bytes) {
  std::memcpy(reinterpret_cast<void*>(static_cast<uintptr_t>(dst)), src, bytes);
  return kSuccess;
}

CUresult cuStreamCreate(void** stream, unsigned int flags) {
  if (flags > 1) return kInvalidValue;
  *stream = new FakeStream();
  return kSuccess;
}

CUresult cuStreamQuery(void* stream) {
  auto* s = static_cast<FakeStream*>(stream);
  if (s == nullptr) return kSuccess;
  std::lock_guard<std::mutex> lock(s->mu);
  return s->pending == 0 ? kSuccess : kNotReady;
}

CUresult cuStreamSynchronize(void* stream) {
  auto* s = static_cast<FakeStream*>(stream);
  if (s == nullptr) return kSuccess;
  std::unique_lock<std::mutex> lock(s->mu);
  s->cv.wait(lock, [s] { return s->pending == 0; });
  return kSuccess;
}

CUresult cuStreamDestroy_v2(void* stream) {
  delete static_cast<FakeStream*>(stream);
  return kSuccess;
}

CUresult cuGetErrorName(CUresult error, const char** str) {
  const ErrorText* e = FindErrorText(error);
  *str = e != nullptr ? e->name : nullptr;
  return e != nullptr ? kSuccess : kInvalidValue;
}

CUresult cuGetErrorString(CUresult error, const char** str) {
  const ErrorText* e = FindErrorText(error);
  *str = e != nullptr ? e->text : nullptr;
  return e != nullptr ? kSuccess : kInvalidValue;
}

CUresult cuEventCreate(void** event, unsigned int flags) {
  if (event == nullptr || flags > 0xf) return kInvalidValue;
  *event = new FakeEvent();
  return kSuccess;
}

CUresult cuEventRecord(void* event, void* stream) {
  auto* e = static_cast<FakeEvent*>(event);
  auto* s = static_cast<FakeStream*>(stream);
  if (e == nullptr || s == nullptr) return kInvalidValue;
  std::lock_guard<std::mutex> lock(s->mu);
  e->stream = s;
  e->at = s->pending == 0 ? s->device_seconds : -1;
  return kSuccess;
}

CUresult cuEventSynchronize(void* event) {
  auto* e = static_cast<FakeEvent*>(event);
  if (e == nullptr || e->stream == nullptr) return kInvalidValue;
  std::unique_lock<std::mutex> lock(e->stream->mu);
  e->stream->cv.wait(lock, [e] { return e->stream->pending == 0; });
  if (e->at < 0) e->at = e->stream->device_seconds;
  return kSuccess;
}

CUresult cuEventElapsedTime(float* milliseconds, void* start, void* end) {
  auto* a = static_cast<FakeEvent*>(start);
  auto* b = static_cast<FakeEvent*>(end);
  if (milliseconds == nullptr || a == nullptr || b == nullptr) return kInvalidValue;
  if (a->at < 0 || b->at < 0) return 600;  // CUDA_ERROR_NOT_READY
  *milliseconds = static_cast<float>((b->at - a->at) * 1000.0);
  return kSuccess;
}

CUresult cuEventDestroy_v2(void* event) {
  delete static_cast<FakeEvent*>(event);
  return kSuccess;
}

// Not part of CUDA: the fake NCCL finds these with dlopen("libcuda.so.1", RTLD_NOLOAD), the way
// the real NCCL finds the driver, and brackets each collective it runs on its own thread.
void fakeCudaStreamBeginWork(void* stream) {
  auto* s = static_cast<FakeStream*>(stream);
  if (s == nullptr) return;
  std::lock_guard<std::mutex> lock(s->mu);
  ++s->pending;
}

// The device time one collective took, by the fake NCCL's model of the link.
void fakeCudaStreamAdvance(void* stream, double seconds) {
  auto* s = static_cast<FakeStream*>(stream);
  if (s == nullptr || !(seconds > 0)) return;
  std::lock_guard<std::mutex> lock(s->mu);
  s->device_seconds += seconds;
}

void fakeCudaStreamEndWork(void* stream) {
  auto* s = static_cast<FakeStream*>(stream);
  if (s == nullptr) return;
  {
    std::lock_guard<std::mutex> lock(s->mu);
    --s->pending;
  }
  s->cv.notify_all();
}

}  // extern "C"
