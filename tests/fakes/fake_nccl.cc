// A fake libnccl.so.2 for machines without a GPU: the C ABI the probe resolves with dlsym, over
// real TCP between the ranks, with NCCL's log formats, and failing the way NCCL fails on the node
// whose fixture root it is given.
//
// What is real: the unique id carries rank 0's listening address; the ranks connect, exchange a
// hello (host hash, version, bus id: the duplicate-GPU and version checks of init.cc), and every
// all-reduce moves the buffers over the socket and sums them on rank 0 (a star), so the probe's
// verification checks real data. Collectives run on a per-communicator thread and are bracketed
// on the fake CUDA stream, so the probe sees CUDA_ERROR_NOT_READY and async errors as on a GPU.
// Non-blocking init (ncclConfig_t.blocking = 0) runs on a thread and reports ncclInProgress.
//
// What the fixture decides (NCCL_FAKE_ROOT, a tree like / on a host) in IB mode:
//   a port that is not ACTIVE            -> skipped without a line, as ncclIbInitDevices skips a
//                                           port whose state is not IBV_PORT_ACTIVE; NCCL uses
//                                           the other ports (one port of eight down: the run
//                                           works on the seven)
//   no ACTIVE port (after NCCL_IB_HCA)   -> "NET/IB : No device found." and "Failed to initialize
//                                           any NET plugin", ncclInvalidUsage (5): NCCL_NET=IB (as
//                                           the probe sets it) forbids the socket fallback, so a
//                                           selection whose only port is down fails. A guess at
//                                           versions before 2.27, which say "Error: network IB not
//                                           found." with the same code
//   HCA in sysfs but no dev/infiniband/uverbsN -> "Call to ibv_open_device failed",
//                                           "NET/IB : Unable to open device mlx5_0", then as above
//   memlock (proc/self/limits) below 16 MiB -> "Call to ibv_reg_mr failed with error Cannot
//                                           allocate memory" at connection setup, ncclSystemError
//   a port NCCL_IB_HCA selects is on an HCA listed in fixture.json "ib_mr_fail" -> "Call to
//     ibv_reg_mr failed with error Input/output error" at connection setup, ncclSystemError: a
//     selection without that HCA works (a guess at the errno: mlx5 turns a failed firmware
//     command into EIO; a real bad HCA may say something else)
//   the path between two ranks is broken -> "NET/IB : Got completion from peer ... with status=12"
//     (RETRY_EXC) at connection setup, ncclRemoteError, on both ranks: the PKeys at index
//     NCCL_IB_PKEY (default 0) of the two ports are not one partition with a full member, or one
//     node lists the other's hostname in fixture.json "ib_unreachable" (a broken path of the
//     fabric)
//   the first port NCCL_IB_HCA selects carries data at most at its sysfs rate, or at the rate
//     fixture.json "ib_data_gbps" gives its HCA ("mlx5_3=50": sysfs says 200 Gb/s, the data path
//     moves 50): each rank's IB sends are paced to that rate, and each all-reduce advances the
//     fake CUDA stream's device clock (fakeCudaStreamAdvance) by the time a ring takes at that
//     rate, which the probe reads with CUDA events: the probe's busbw is the model's, not the
//     loaded host's, and shows a slow rail; a guess at what a slow data path looks like to NCCL
//     (no warning, only less bandwidth)
//   otherwise                            -> channels "via NET/IB/0", with "/GDRDMA" when the
//     fixture has sys/module/nvidia_peermem (or nv_peer_mem). A guess at NCCL's choice: the real
//     one also needs the GPU-HCA PCI distance within NCCL_NET_GDR_LEVEL and no ACS redirect; the
//     fault knob no_gdr stands for those ("via NET/IB/0" although the module is loaded).
// Without NCCL_FAKE_ROOT the node has no HCA (like a GPU box without InfiniBand).
//
// Ranks with one host hash (no NCCL_HOSTID, one host) are local to each other, as in NCCL: the
// fake takes the GPU of each rank from the fake libcuda (cuCtxGetDevice, cuDeviceGetPCIBusId),
// so two ranks on one GPU are a duplicate, and picks the intra-node transport the way p2p.cc and
// shm.cc log it: "via P2P/CUMEM" (2.12: "via P2P/IPC") unless NCCL_P2P_LEVEL=LOC or
// NCCL_P2P_DISABLE=1, else "via SHM/direct/direct" unless NCCL_SHM_DISABLE=1, else the network.
// One rank alone connects nothing (no channel lines) and its all-reduce is a copy.
//
// Failure knobs, NCCL_FAKE_FAULTS="name[@rank],...":
//   crash_init, hang_init (abortable), hang_hard (ignores abort), no_connect, garbage (junk on
//   stdout and exit 0), flood_stdout (4 MiB on stdout and stderr), die_allreduce (send half, then
//   SIGKILL), hang_allreduce, wrong_data, ignore_net (fall back to sockets as NCCL <= 2.9 did),
//   no_gdr (IB channels without GPUDirect RDMA although a peer-memory module is loaded),
//   p2p_hang (P2P channels connect but the all-reduce never completes until aborted: what PCIe
//   ACS or an IOMMU that drops peer writes does to NCCL, per NVIDIA's troubleshooting guide; real
//   NCCL may instead fail with a CUDA IPC error, a guess either way), no_p2p (NCCL finds no P2P
//   path between the GPUs, as under a hypervisor without peer access, and takes SHM), shm_full
//   (creating the SHM segment fails with ENOSPC, ncclSystemError).
//
// Built twice: as 2.28.9 and, with FAKE_NCCL_OLD, as a 2.12.12 without ncclCommInitRankConfig,
// ncclCommFinalize and ncclGetLastError (and with that version's error codes and log format).
#include <arpa/inet.h>
#include <dirent.h>
#include <dlfcn.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <deque>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#ifdef FAKE_NCCL_OLD
#define FAKE_NCCL_VERSION_CODE 21212
#define FAKE_NCCL_VERSION_STRING "2.12.12+cuda11.6"
#else
#define FAKE_NCCL_VERSION_CODE 22809
#define FAKE_NCCL_VERSION_STRING "2.28.9+cuda13.0"
#endif

typedef enum {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
  ncclRemoteError = 6,
  ncclInProgress = 7,
} ncclResult_t;

typedef struct {
  char internal[128];
} ncclUniqueId;

// ncclConfig_t as nccl.h 2.28.9 lays it out (sizeof 80).
struct FakeConfig {
  size_t size;
  unsigned int magic;
  unsigned int version;
  int blocking;
  int cgaClusterSize, minCTAs, maxCTAs;
  const char* netName;
  int splitShare;
  int trafficClass;
  const char* commName;
  int collnetEnable, CTAPolicy, shrinkShare, nvlsCTAs;
  int nChannelsPerNetPeer, nvlinkCentricSched;
};
static_assert(sizeof(FakeConfig) == 80, "ncclConfig_v22800 layout");

struct ncclComm;
typedef ncclComm* ncclComm_t;

namespace {

constexpr bool kOld = FAKE_NCCL_VERSION_CODE < 21300;
// Peer-closed and network errors are ncclRemoteError from 2.13 on, ncclSystemError before.
constexpr ncclResult_t kRemoteError = kOld ? ncclSystemError : ncclRemoteError;
constexpr uint64_t kMemlockFloor = 16ull << 20;  // what the fake "registers" per connection
constexpr char kIdMagic[8] = {'F', 'A', 'K', 'E', 'N', 'C', 'C', 'L'};

// ------------------------------------------------------------------ environment and faults

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? "" : v;
}

// "name" applies to every rank, "name@R" to rank R only.
bool Fault(const std::string& name, int rank) {
  std::stringstream ss(Env("NCCL_FAKE_FAULTS"));
  std::string item;
  while (std::getline(ss, item, ',')) {
    auto at = item.find('@');
    std::string n = item.substr(0, at);
    if (n != name) continue;
    if (at == std::string::npos) return true;
    if (std::atoi(item.c_str() + at + 1) == rank) return true;
  }
  return false;
}

std::string Root() { return Env("NCCL_FAKE_ROOT"); }

std::string ReadFirstLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

bool Exists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }

std::vector<std::string> ListDir(const std::string& path) {
  std::vector<std::string> out;
  DIR* d = opendir(path.c_str());
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] != '.') out.emplace_back(e->d_name);
  }
  closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

// ------------------------------------------------------------------ logging (debug.cc formats)

std::string Fmt(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string Fmt(const char* fmt, ...) {
  char buf[4096];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  return buf;
}

std::string HostName() {
  char buf[256] = {};
  gethostname(buf, sizeof(buf) - 1);
  std::string h = buf;
  return h.substr(0, h.find('.'));
}

class Logger {
 public:
  static Logger& Get() {
    static Logger logger;
    return logger;
  }

  void Info(const std::string& msg) {
    std::lock_guard<std::mutex> lock(mu_);
    if (level_ < 2) return;
    std::fprintf(out_, "%s:%d:%ld [%d] NCCL INFO %s\n", host_.c_str(), getpid(),
                 syscall(SYS_gettid), device_, msg.c_str());
  }

  void Warn(const char* file, int line, const std::string& msg) {
    std::lock_guard<std::mutex> lock(mu_);
    last_ = msg;
    if (level_ < 1) return;
    if (kOld) {
      std::fprintf(out_, "%s:%d:%ld [%d] %s:%d NCCL WARN %s\n", host_.c_str(), getpid(),
                   syscall(SYS_gettid), device_, file, line, msg.c_str());
      return;
    }
    char stamp[64];
    time_t now = time(nullptr);
    tm tm_now{};
    localtime_r(&now, &tm_now);
    strftime(stamp, sizeof(stamp), "%Y-%m-%d %H:%M:%S", &tm_now);
    std::fprintf(out_, "\n[%s] %s:%d:%ld [%d] %s:%d NCCL WARN %s\n", stamp, host_.c_str(), getpid(),
                 syscall(SYS_gettid), device_, file, line, msg.c_str());
  }

  void Trace(const char* file, int line, int code) { Info(Fmt("%s:%d -> %d", file, line, code)); }

  std::string Last() {
    std::lock_guard<std::mutex> lock(mu_);
    return last_;
  }

  void SetDevice(int device) {
    std::lock_guard<std::mutex> lock(mu_);
    device_ = device;
  }

 private:
  Logger() : host_(HostName()) {
    std::string level = Env("NCCL_DEBUG");
    for (auto& c : level) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    level_ = level == "INFO" || level == "TRACE" ? 2 : level == "WARN" ? 1 : 0;
    std::string file = Env("NCCL_DEBUG_FILE");
    if (level_ > 0 && !file.empty()) {
      std::string path;
      for (size_t i = 0; i < file.size(); ++i) {
        if (file[i] == '%' && i + 1 < file.size() && file[i + 1] == 'h') {
          path += host_;
          ++i;
        } else if (file[i] == '%' && i + 1 < file.size() && file[i + 1] == 'p') {
          path += std::to_string(getpid());
          ++i;
        } else {
          path += file[i];
        }
      }
      FILE* f = std::fopen(path.c_str(), "w");
      if (f != nullptr) {
        setvbuf(f, nullptr, _IONBF, 0);  // NCCL's debug file is unbuffered
        out_ = f;
      }
    }
  }

  std::mutex mu_;
  std::string host_;
  int level_ = 0;
  int device_ = 0;  // the "[dev]" of each line: the CUDA device of the communicator
  FILE* out_ = stdout;
  std::string last_;
};

#define INFO(...) Logger::Get().Info(Fmt(__VA_ARGS__))
#define WARN_AT(file, line, ...) Logger::Get().Warn(file, line, Fmt(__VA_ARGS__))
#define TRACE_RET(file, line, code) Logger::Get().Trace(file, line, code)

// ------------------------------------------------------------------ interfaces (misc/socket.cc)

struct Iface {
  std::string name;
  sockaddr_in addr{};
};

std::string AddrString(const sockaddr_in& a) {
  char ip[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &a.sin_addr, ip, sizeof(ip));
  return Fmt("%s<%d>", ip, ntohs(a.sin_port));
}

// NCCL_SOCKET_IFNAME: comma list of prefixes, '^' excludes, '=' matches exactly.
bool MatchIfList(const std::string& name, std::string list) {
  bool exclude = !list.empty() && list[0] == '^';
  if (exclude) list.erase(0, 1);
  bool exact = !list.empty() && list[0] == '=';
  if (exact) list.erase(0, 1);
  std::stringstream ss(list);
  std::string item;
  bool matched = false;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    if (exact ? name == item : name.compare(0, item.size(), item) == 0) matched = true;
  }
  return exclude ? !matched : matched;
}

std::optional<Iface> FindInterface() {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return std::nullopt;
  std::vector<Iface> all;
  for (ifaddrs* a = list; a != nullptr; a = a->ifa_next) {
    if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != AF_INET) continue;
    if ((a->ifa_flags & IFF_UP) == 0) continue;
    Iface i;
    i.name = a->ifa_name;
    std::memcpy(&i.addr, a->ifa_addr, sizeof(sockaddr_in));
    all.push_back(i);
  }
  freeifaddrs(list);
  std::string ifname = Env("NCCL_SOCKET_IFNAME");
  if (!ifname.empty()) {
    INFO("NCCL_SOCKET_IFNAME set to %s", ifname.c_str());
    for (auto& i : all) {
      if (MatchIfList(i.name, ifname)) return i;
    }
    return std::nullopt;
  }
  for (auto& i : all) {
    if (!MatchIfList(i.name, "docker,lo,virbr")) return i;
  }
  for (auto& i : all) return i;
  return std::nullopt;
}

// ------------------------------------------------------------------ sockets with abort

// On failure errno says why (0 after an abort).
bool SendAll(int fd, const void* data, size_t n, const std::atomic<bool>& aborted) {
  auto* p = static_cast<const char*>(data);
  while (n > 0) {
    if (aborted) {
      errno = 0;
      return false;
    }
    pollfd pfd{fd, POLLOUT, 0};
    if (poll(&pfd, 1, 100) <= 0) continue;
    ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
    if (k < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (k <= 0) return false;
    p += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}

// 1: all read; 0: the peer closed; -1: error or abort.
int RecvAll(int fd, void* data, size_t n, const std::atomic<bool>& aborted) {
  auto* p = static_cast<char*>(data);
  while (n > 0) {
    if (aborted) return -1;
    pollfd pfd{fd, POLLIN, 0};
    if (poll(&pfd, 1, 100) <= 0) continue;
    ssize_t k = recv(fd, p, n, 0);
    if (k < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (k == 0) {
      errno = 0;
      return 0;
    }
    if (k < 0 && (errno == ECONNRESET || errno == EPIPE)) return 0;  // the peer went away too
    if (k < 0) return -1;
    p += k;
    n -= static_cast<size_t>(k);
  }
  return 1;
}

// ------------------------------------------------------------------ unique id

struct IdPayload {
  char magic[8];
  uint32_t version;
  uint32_t pad;
  sockaddr_in addr;
  uint64_t cookie;
};
static_assert(sizeof(IdPayload) <= sizeof(ncclUniqueId), "id payload fits");

std::mutex g_listen_mu;
int g_listen_fd = -1;
uint64_t g_listen_cookie = 0;

ncclResult_t BootstrapInterface(Iface* out) {
  auto iface = FindInterface();
  if (!iface) {
    WARN_AT("bootstrap.cc", 114, "Bootstrap : no socket interface found");
    return kOld ? ncclInternalError : ncclInvalidUsage;
  }
  INFO("Bootstrap: Using %s:%s", iface->name.c_str(), AddrString(iface->addr).c_str());
  *out = *iface;
  return ncclSuccess;
}

// ------------------------------------------------------------------ IB (net_ib/init.cc)

struct IbResult {
  std::vector<std::string> ports;    // "mlx5_0:1/IB"
  std::vector<std::string> devices;  // the HCAs of `ports`, once each
  uint16_t pkey = 0;                 // pkeys/<NCCL_IB_PKEY> of the first port; 0 when unknown
};

std::string StateOf(const std::string& port_dir) { return ReadFirstLine(port_dir + "/state"); }

IbResult IbInitDevices(const std::string& oob) {
  IbResult r;
  std::string root = Root();
  if (root.empty()) {
    INFO("NET/IB : No device found.");
    return r;
  }
  std::string ib = root + "/sys/class/infiniband";
  std::string verbs = root + "/sys/class/infiniband_verbs";
  std::string hca = Env("NCCL_IB_HCA");
  // NCCL_IB_HCA: "[^][=]hca[:port],...": a device is kept when some item names it (prefix match
  // unless "="), and of its ports only those the items that name it allow (no port: all).
  const bool hca_exclude = !hca.empty() && hca[0] == '^';
  std::string hca_items = hca.substr(hca_exclude ? 1 : 0);
  const bool hca_exact = !hca_items.empty() && hca_items[0] == '=';
  if (hca_exact) hca_items.erase(0, 1);
  auto selects = [&](const std::string& dev, const std::string& port) {
    if (hca.empty()) return true;
    bool matched = false;
    std::stringstream ss(hca_items);
    std::string item;
    while (std::getline(ss, item, ',')) {
      const std::string name = item.substr(0, item.find(':'));
      const std::string want_port =
          item.find(':') == std::string::npos ? "" : item.substr(item.find(':') + 1);
      if (name.empty()) continue;
      const bool name_ok = hca_exact ? dev == name : dev.compare(0, name.size(), name) == 0;
      if (name_ok && (port.empty() || want_port.empty() || want_port == port)) matched = true;
    }
    return hca_exclude ? !matched : matched;
  };
  for (const auto& dev : ListDir(ib)) {
    if (!selects(dev, "")) continue;
    // ibv_open_device opens /dev/infiniband/uverbsN of this device.
    bool can_open = false;
    bool mapped = false;
    for (const auto& u : ListDir(verbs)) {
      if (ReadFirstLine(verbs + "/" + u + "/ibdev") != dev) continue;
      mapped = true;
      can_open = Exists(root + "/dev/infiniband/" + u);
    }
    if (!mapped) {
      for (const auto& f : ListDir(root + "/dev/infiniband")) {
        if (f.rfind("uverbs", 0) == 0) can_open = true;
      }
    }
    if (!can_open) {
      WARN_AT("misc/ibvwrap.cc", 136, "Call to ibv_open_device failed");
      WARN_AT("transport/net_ib.cc", 621, "NET/IB : Unable to open device %s", dev.c_str());
      continue;
    }
    for (const auto& port : ListDir(ib + "/" + dev + "/ports")) {
      std::string pdir = ib + "/" + dev + "/ports/" + port;
      if (!hca_exclude && !selects(dev, port)) continue;                // filtered by NCCL_IB_HCA
      if (StateOf(pdir).find("ACTIVE") == std::string::npos) continue;  // skipped silently
      std::string ll = ReadFirstLine(pdir + "/link_layer");
      if (ll != "InfiniBand" && ll != "Ethernet") continue;
      if (r.ports.empty() && ll == "InfiniBand") {
        std::string index = Env("NCCL_IB_PKEY").empty() ? "0" : Env("NCCL_IB_PKEY");
        r.pkey = static_cast<uint16_t>(
            std::strtoul(ReadFirstLine(pdir + "/pkeys/" + index).c_str(), nullptr, 16));
      }
      r.ports.push_back(dev + ":" + port + (ll == "InfiniBand" ? "/IB" : "/RoCE"));
      if (std::find(r.devices.begin(), r.devices.end(), dev) == r.devices.end()) {
        r.devices.push_back(dev);
      }
    }
  }
  if (r.ports.empty()) {
    INFO("NET/IB : No device found.");
    return r;
  }
  std::string using_line = "NET/IB : Using";
  for (size_t i = 0; i < r.ports.size(); ++i) {
    using_line += Fmt(" [%zu]%s", i, r.ports[i].c_str());
  }
  INFO("%s [RO]; OOB %s", using_line.c_str(), oob.c_str());
  return r;
}

// The soft RLIMIT_MEMLOCK of the node: the fixture's proc/self/limits, else this process's.
std::optional<uint64_t> MemlockSoft() {
  std::string root = Root();
  if (root.empty()) {
    rlimit rl{};
    if (getrlimit(RLIMIT_MEMLOCK, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return std::nullopt;
    return rl.rlim_cur;
  }
  std::ifstream in(root + "/proc/self/limits");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("Max locked memory", 0) != 0) continue;
    std::istringstream fields(line.substr(std::strlen("Max locked memory")));
    std::string soft;
    fields >> soft;
    if (soft == "unlimited") return std::nullopt;
    try {
      return std::stoull(soft);
    } catch (const std::exception&) {
      return std::nullopt;
    }
  }
  return std::nullopt;
}

// ------------------------------------------------------------------ communicator

struct Job {
  const void* send;
  void* recv;
  size_t count;
  int datatype;
  void* stream;
};

using StreamWorkFn = void (*)(void*);
using StreamAdvanceFn = void (*)(void*, double);

}  // namespace

struct ncclComm {
  int rank = 0;
  int nranks = 0;
  bool blocking = true;
  std::string net;  // "IB" or "Socket"
  bool ib_memlock_fails = false;
  std::string ib_mr_fail_device;  // a selected HCA whose memory registration fails
  uint16_t ib_pkey = 0;
  std::string ib_broken_peer;           // set when the IB path to this peer cannot work
  double ib_data_bytes_per_second = 0;  // the IB port's data rate (0: unknown, not paced)
  int cuda_dev = 0;                     // the caller's current device (cudaGetDevice)
  uint32_t bus_id = 0;                  // its PCI bus id as NCCL's busIdToInt64 makes it (0x7000)
  bool local = false;                   // every rank has one host hash: P2P and SHM are candidates
  std::string channel_via;              // the transport of the channels, once connected
  bool channels_connected = false;
  std::vector<int> peer_devs;  // every rank's CUDA device (from the bootstrap), for the log
  int listen_fd = -1;
  std::vector<int> fds;  // root: index = peer rank; others: fds[0] is rank 0
  std::atomic<int> async{ncclInProgress};
  std::atomic<bool> aborted{false};
  std::thread init_thread;
  std::thread worker;
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Job> jobs;
  int running = 0;
  bool stop = false;
  StreamWorkFn begin_work = nullptr;
  StreamWorkFn end_work = nullptr;
  StreamAdvanceFn advance = nullptr;  // the stream's device clock (fake CUDA), when there is one
  uint64_t comm_id = 0;
};

namespace {

size_t TypeSize(int t) {
  switch (t) {
    case 0:
    case 1:
      return 1;
    case 2:
    case 3:
    case 7:
      return 4;
    case 4:
    case 5:
    case 8:
      return 8;
    case 6:
    case 9:
      return 2;
    default:
      return 0;
  }
}

template <typename T>
void AddInto(void* dst, const void* src, size_t n) {
  auto* d = static_cast<T*>(dst);
  const auto* s = static_cast<const T*>(src);
  for (size_t i = 0; i < n; ++i) d[i] = static_cast<T>(d[i] + s[i]);
}

bool Accumulate(int t, void* dst, const void* src, size_t n) {
  switch (t) {
    case 2:
      AddInto<int32_t>(dst, src, n);
      return true;
    case 3:
      AddInto<uint32_t>(dst, src, n);
      return true;
    case 4:
      AddInto<int64_t>(dst, src, n);
      return true;
    case 5:
      AddInto<uint64_t>(dst, src, n);
      return true;
    case 7:
      AddInto<float>(dst, src, n);
      return true;
    case 8:
      AddInto<double>(dst, src, n);
      return true;
    default:
      return false;
  }
}

void Corrupt(void* buf, size_t count, int t) {
  size_t sz = TypeSize(t);
  if (count == 0 || sz == 0) return;
  auto* p = static_cast<unsigned char*>(buf) + (count / 2) * sz;
  p[0] ^= 0x5a;
}

void SetError(ncclComm* c, ncclResult_t rc) {
  int state = c->async.load();
  if (state == ncclSuccess || state == ncclInProgress) c->async = rc;
}

// The peer address of each connection, recorded while it is up (getpeername fails after a reset).
std::string PeerName(int fd) {
  static std::mutex mu;
  static std::map<int, std::string> names;
  std::lock_guard<std::mutex> lock(mu);
  sockaddr_in peer{};
  socklen_t len = sizeof(peer);
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &len) == 0 && peer.sin_port != 0) {
    names[fd] = AddrString(peer);
  }
  auto it = names.find(fd);
  return it != names.end() ? it->second : "unknown";
}

ncclResult_t PeerClosed(ncclComm* c, int fd) {
  int err = errno;
  if (err == ECONNRESET) {
    WARN_AT("misc/socket.cc", 62, "Call to recv from %s failed : %s", PeerName(fd).c_str(),
            strerror(err));
  } else if (err == EPIPE) {
    WARN_AT("misc/socket.cc", 62, "Call to send to %s failed : %s", PeerName(fd).c_str(),
            strerror(err));
  } else {
    WARN_AT("misc/socket.cc", 71, "socketProgress: Connection closed by remote peer %s<%s>",
            HostName().c_str(), PeerName(fd).c_str());
  }
  TRACE_RET("misc/socket.cc", 827, kRemoteError);
  TRACE_RET("transport/net_socket.cc", 603, kRemoteError);
  (void)c;
  return kRemoteError;
}

// First collective: connect the channels (NCCL 2.22+ connects at runtime), which is where IB
// registers its buffers and a low memlock limit fails.
// ibv_reg_mr failing at connection setup, with the strerror text of its errno.
ncclResult_t RegistrationFails(ncclComm* c, const char* error) {
  WARN_AT("misc/ibvwrap.cc", 203, "Call to ibv_reg_mr failed with error %s", error);
  TRACE_RET("transport/net_ib.cc", 1361, ncclSystemError);
  TRACE_RET("transport/net.cc", 753, ncclSystemError);
  INFO("[Proxy Service %d] Failed to execute operation Connect from rank %d, retcode 2", c->rank,
       c->rank);
  return ncclSystemError;
}

// P2P (p2p.cc) or SHM (shm.cc) between the GPUs of one host: one line per channel and peer, as
// `Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM`.
ncclResult_t ConnectLocalChannels(ncclComm* c, bool p2p) {
  if (!p2p && Fault("shm_full", c->rank)) {
    WARN_AT("misc/shmutils.cc", 81, "Error: failed to extend /dev/shm/nccl-%06x to 9637892 bytes",
            static_cast<unsigned>(c->comm_id & 0xffffff));
    TRACE_RET("misc/shmutils.cc", 133, ncclSystemError);
    TRACE_RET("transport/shm.cc", 201, ncclSystemError);
    TRACE_RET("transport.cc", 196, ncclSystemError);
    return ncclSystemError;
  }
  const char* via = p2p ? (kOld ? "P2P/IPC" : "P2P/CUMEM") : "SHM/direct/direct";
  const int next = (c->rank + 1) % c->nranks;
  for (int ch = 0; ch < 2; ++ch) {
    INFO("Channel %02d/0 : %d[%d] -> %d[%d] via %s", ch, c->rank, c->cuda_dev, next,
         c->peer_devs.empty() ? next : c->peer_devs[static_cast<size_t>(next)], via);
  }
  INFO("Connected all rings, use ring PXN 0 GDR 1");
  c->channel_via = via;
  c->channels_connected = true;
  return ncclSuccess;
}

ncclResult_t ConnectChannels(ncclComm* c) {
  if (c->channels_connected) return ncclSuccess;
  if (c->nranks == 1) {  // nothing to connect: the all-reduce is a copy
    c->channels_connected = true;
    return ncclSuccess;
  }
  if (c->local) {
    const bool p2p = Env("NCCL_P2P_LEVEL") != "LOC" && Env("NCCL_P2P_DISABLE") != "1" &&
                     !Fault("no_p2p", c->rank);
    const bool shm = Env("NCCL_SHM_DISABLE") != "1";
    if (p2p || shm) return ConnectLocalChannels(c, p2p);
  }
  if (c->net == "IB" && c->ib_memlock_fails) return RegistrationFails(c, "Cannot allocate memory");
  if (c->net == "IB" && !c->ib_mr_fail_device.empty()) {
    return RegistrationFails(c, "Input/output error");
  }
  if (c->net == "IB" && !c->ib_broken_peer.empty()) {
    WARN_AT("transport/net_ib/p2p.cc", 467,
            "NET/IB : Got completion from peer %s with status=12 opcode=0 len=0 vendor err 129 "
            "(Send) localGid fe80::1 remoteGid fe80::2",
            c->ib_broken_peer.c_str());
    TRACE_RET("transport/net_ib/p2p.cc", 471, kRemoteError);
    TRACE_RET("transport/net.cc", 1318, kRemoteError);
    return kRemoteError;
  }
  const bool gdr =
      c->net == "IB" && !Fault("no_gdr", c->rank) && !Root().empty() &&
      (Exists(Root() + "/sys/module/nvidia_peermem") || Exists(Root() + "/sys/module/nv_peer_mem"));
  const char* net = c->net == "IB" ? (gdr ? "NET/IB/0/GDRDMA" : "NET/IB/0") : "NET/Socket/0";
  int next = (c->rank + 1) % c->nranks;
  int prev = (c->rank + c->nranks - 1) % c->nranks;
  for (int ch = 0; ch < 2; ++ch) {
    INFO("Channel %02d/0 : %d[0] -> %d[0] [receive] via %s", ch, prev, c->rank, net);
  }
  for (int ch = 0; ch < 2; ++ch) {
    INFO("Channel %02d/0 : %d[0] -> %d[0] [send] via %s", ch, c->rank, next, net);
  }
  INFO("Connected all rings, use ring PXN 0 GDR 0");
  c->channel_via = net;
  c->channels_connected = true;
  return ncclSuccess;
}

constexpr size_t kChunk = 1 << 20;

// An IB rank's sends take at least `sent` bytes at twice its port's data rate since `start`.
// Twice: the star moves the buffer in two legs one after the other (to rank 0, back), where
// NCCL's ring on a full-duplex link moves both directions at once; so each leg gets half the
// time, and a two-rank all-reduce of S bytes takes S / rate: busbw is the port's data rate.
void Pace(ncclComm* c, std::chrono::steady_clock::time_point start, size_t sent) {
  if (c->ib_data_bytes_per_second <= 0 || c->channel_via.rfind("NET/IB", 0) != 0) return;
  const double seconds = static_cast<double>(sent) / (2 * c->ib_data_bytes_per_second);
  const auto due = start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                               std::chrono::duration<double>(seconds));
  for (auto now = std::chrono::steady_clock::now(); now < due && !c->aborted;
       now = std::chrono::steady_clock::now()) {
    std::this_thread::sleep_for(
        std::min<std::chrono::steady_clock::duration>(due - now, std::chrono::milliseconds(10)));
  }
}

// SendAll in chunks, each paced (Pace).
bool SendPaced(ncclComm* c, int fd, const void* data, size_t bytes) {
  const auto start = std::chrono::steady_clock::now();
  for (size_t off = 0; off < bytes; off += kChunk) {
    const size_t n = std::min(kChunk, bytes - off);
    if (!SendAll(fd, static_cast<const char*>(data) + off, n, c->aborted)) return false;
    Pace(c, start, off + n);
  }
  return true;
}

struct Header {
  uint64_t bytes;
  uint32_t datatype;
  uint32_t rank;
};

ncclResult_t RunAllReduce(ncclComm* c, const Job& job) {
  ncclResult_t rc = ConnectChannels(c);
  if (rc != ncclSuccess) return rc;
  if (Fault("hang_allreduce", c->rank) ||
      (c->channel_via.rfind("P2P", 0) == 0 && Fault("p2p_hang", c->rank))) {
    while (!c->aborted) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return ncclInternalError;
  }
  size_t sz = TypeSize(job.datatype);
  size_t bytes = job.count * sz;
  bool die = Fault("die_allreduce", c->rank);
  bool wrong = Fault("wrong_data", c->rank);
  if (c->rank == 0) {
    if (job.recv != job.send) std::memmove(job.recv, job.send, bytes);
    std::vector<char> chunk(std::min(bytes, kChunk));
    for (int peer = 1; peer < c->nranks; ++peer) {
      int fd = c->fds[static_cast<size_t>(peer)];
      Header h{};
      int got = RecvAll(fd, &h, sizeof(h), c->aborted);
      if (got == 0) return PeerClosed(c, fd);
      if (got < 0) return c->aborted ? ncclInternalError : kRemoteError;
      if (h.bytes != bytes || static_cast<int>(h.datatype) != job.datatype) {
        WARN_AT("enqueue.cc", 2041,
                "AllReduce: rank %u sent %lu bytes of type %u, expected %zu of %d", h.rank,
                static_cast<unsigned long>(h.bytes), h.datatype, bytes, job.datatype);
        return ncclInvalidUsage;
      }
      for (size_t off = 0; off < bytes; off += kChunk) {
        size_t n = std::min(kChunk, bytes - off);
        got = RecvAll(fd, chunk.data(), n, c->aborted);
        if (got == 0) return PeerClosed(c, fd);
        if (got < 0) return c->aborted ? ncclInternalError : kRemoteError;
        Accumulate(job.datatype, static_cast<char*>(job.recv) + off, chunk.data(), n / sz);
        if (die && off + n >= bytes / 2) kill(getpid(), SIGKILL);
      }
    }
    if (wrong) Corrupt(job.recv, job.count, job.datatype);
    for (int peer = 1; peer < c->nranks; ++peer) {
      int fd = c->fds[static_cast<size_t>(peer)];
      if (!SendPaced(c, fd, job.recv, bytes)) {
        return c->aborted ? ncclInternalError : PeerClosed(c, fd);
      }
    }
    return ncclSuccess;
  }
  int fd = c->fds[0];
  Header h{bytes, static_cast<uint32_t>(job.datatype), static_cast<uint32_t>(c->rank)};
  if (!SendAll(fd, &h, sizeof(h), c->aborted)) {
    return c->aborted ? ncclInternalError : PeerClosed(c, fd);
  }
  std::vector<char> chunk(std::min(bytes, kChunk));
  const auto start = std::chrono::steady_clock::now();
  for (size_t off = 0; off < bytes; off += kChunk) {
    size_t n = std::min(kChunk, bytes - off);
    std::memcpy(chunk.data(), static_cast<const char*>(job.send) + off, n);
    if (wrong && off <= (job.count / 2) * sz && (job.count / 2) * sz < off + n) {
      chunk[(job.count / 2) * sz - off] ^= 0x5a;
    }
    if (!SendAll(fd, chunk.data(), n, c->aborted)) {
      return c->aborted ? ncclInternalError : PeerClosed(c, fd);
    }
    Pace(c, start, off + n);
    if (die && off + n >= bytes / 2) kill(getpid(), SIGKILL);
  }
  int got = RecvAll(fd, job.recv, bytes, c->aborted);
  if (got == 0) return PeerClosed(c, fd);
  if (got < 0) return c->aborted ? ncclInternalError : kRemoteError;
  return ncclSuccess;
}

// The device time of one all-reduce, which the probe reads with CUDA events. Over a paced IB port
// it is the model's: the time a ring moves the buffer in at the port's data rate (busbw is the
// port's rate, whatever the load on the host); otherwise the time the transfer took here.
double DeviceSeconds(const ncclComm* c, const Job& job, std::chrono::steady_clock::time_point t0) {
  if (c->ib_data_bytes_per_second > 0 && c->channel_via.rfind("NET/IB", 0) == 0 && c->nranks > 1) {
    const double bytes =
        static_cast<double>(job.count) * static_cast<double>(TypeSize(job.datatype));
    return bytes * 2.0 * (c->nranks - 1) / c->nranks / c->ib_data_bytes_per_second;
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The proxy: runs collectives in order. After an error the stream never completes (the kernel
// would spin forever on a GPU) until the communicator is aborted.
void WorkerLoop(ncclComm* c) {
  while (true) {
    Job job{};
    {
      std::unique_lock<std::mutex> lock(c->mu);
      c->cv.wait(lock, [c] { return c->stop || !c->jobs.empty(); });
      if (c->jobs.empty()) return;
      job = c->jobs.front();
      c->jobs.pop_front();
      ++c->running;
    }
    const auto started = std::chrono::steady_clock::now();
    ncclResult_t rc = c->async == ncclSuccess ? RunAllReduce(c, job) : ncclInternalError;
    {
      std::lock_guard<std::mutex> lock(c->mu);
      --c->running;
    }
    if (rc == ncclSuccess) {
      if (c->advance != nullptr) c->advance(job.stream, DeviceSeconds(c, job, started));
      if (c->end_work != nullptr) c->end_work(job.stream);
    } else {
      SetError(c, rc);
      std::lock_guard<std::mutex> lock(c->mu);
      c->stop = true;
    }
    c->cv.notify_all();
  }
}

struct Hello {
  char magic[8];
  uint32_t rank;
  uint32_t nranks;
  uint32_t version;
  uint32_t bus_id;
  uint32_t cuda_dev;
  char host_hash[96];
  uint32_t ib_pkey;       // 0: not on IB
  char node[64];          // the fixture's hostname
  char unreachable[256];  // fixture.json "ib_unreachable", comma-separated
};

// IB partitions: two ports talk when their PKeys are one partition and one is a full member.
bool PkeysTalk(uint32_t a, uint32_t b) {
  if (a == 0 || b == 0) return true;  // unknown: not this fake's business
  return (a & 0x7fff) == (b & 0x7fff) && ((a | b) & 0x8000) != 0;
}

bool Listed(const char* list, const char* name) {
  std::stringstream ss(list);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (!item.empty() && item == name) return true;
  }
  return false;
}

// A list of strings in fixture.json, '"key": ["a", "b"]' -> "a,b" (a flat scan: the file is ours).
std::string JsonList(const char* key_name) {
  std::ifstream in(Root() + "/fixture.json");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto key = text.find("\"" + std::string(key_name) + "\"");
  if (key == std::string::npos) return "";
  auto open = text.find('[', key);
  auto close = text.find(']', open);
  if (open == std::string::npos || close == std::string::npos) return "";
  std::string out;
  for (size_t i = open; i < close;) {
    auto q1 = text.find('"', i);
    if (q1 == std::string::npos || q1 > close) break;
    auto q2 = text.find('"', q1 + 1);
    if (q2 == std::string::npos || q2 > close) break;
    out += (out.empty() ? "" : ",") + text.substr(q1 + 1, q2 - q1 - 1);
    i = q2 + 1;
  }
  return out;
}

std::string Unreachable() { return JsonList("ib_unreachable"); }

// The data rate in Gb/s of an IB port of IbInitDevices ("mlx5_3:1/IB"): fixture.json
// "ib_data_gbps" for its HCA ("mlx5_3=50"), else the leading number of its sysfs rate ("200
// Gb/sec (4X HDR)"); 0 when neither says.
double DataRateGbps(const std::string& port) {
  const std::string dev = port.substr(0, port.find(':'));
  std::stringstream list(JsonList("ib_data_gbps"));
  std::string item;
  while (std::getline(list, item, ',')) {
    if (item.rfind(dev + "=", 0) == 0) return std::atof(item.c_str() + dev.size() + 1);
  }
  const size_t colon = port.find(':');
  const std::string num = port.substr(colon + 1, port.find('/') - colon - 1);
  return std::atof(
      ReadFirstLine(Root() + "/sys/class/infiniband/" + dev + "/ports/" + num + "/rate").c_str());
}

std::string HostHashString() {
  std::string id = Env("NCCL_HOSTID");
  if (!id.empty()) {
    INFO("NCCL_HOSTID set by environment to %s", id.c_str());
    return id;
  }
  return HostName() + ReadFirstLine("/proc/sys/kernel/random/boot_id");
}

ncclResult_t NetInit(ncclComm* c, const std::string& config_net, const Iface& oob) {
  std::string net = Env("NCCL_NET");
  if (net.empty()) net = config_net;
  if (Fault("ignore_net", c->rank)) net.clear();
  for (auto& ch : net) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  bool ib_disabled = Env("NCCL_IB_DISABLE") == "1";
  std::string oob_s = oob.name + ":" + AddrString(oob.addr);
  bool ib_ok = false;
  IbResult ib;
  if (net == "ib" || net.empty()) {
    if (ib_disabled) {
      TRACE_RET("transport/net_ib.cc", 852, ncclInternalError);
    } else {
      ib = IbInitDevices(oob_s);
      ib_ok = !ib.ports.empty();
    }
    if (!ib_ok) INFO("Failed to initialize NET plugin IB");
  }
  if (net == "ib" && !ib_ok) {
    if (kOld) {
      WARN_AT("net.cc", 761, "Error: network IB not found.");
    } else {
      WARN_AT("plugin/net.cc", 379, "Failed to initialize any NET plugin");
    }
    for (int line : {421, 1572, 2028, 2055}) TRACE_RET("init.cc", line, ncclInvalidUsage);
    return ncclInvalidUsage;
  }
  if (ib_ok) {
    c->net = "IB";
    INFO("Initialized NET plugin IB");
    auto memlock = MemlockSoft();
    c->ib_memlock_fails = memlock && *memlock < kMemlockFloor;
    c->ib_pkey = ib.pkey;
    const std::string mr_fail = JsonList("ib_mr_fail");
    for (const auto& dev : ib.devices) {
      if (Listed(mr_fail.c_str(), dev.c_str())) c->ib_mr_fail_device = dev;
    }
    c->ib_data_bytes_per_second = DataRateGbps(ib.ports.front()) * 1e9 / 8;
  } else {
    c->net = "Socket";
    INFO("NET/Socket : Using [0]%s", oob_s.c_str());
    INFO("Initialized NET plugin Socket");
  }
  INFO("Assigned NET plugin %s to comm", c->net.c_str());
  INFO("Using network %s", c->net.c_str());
  return ncclSuccess;
}

ncclResult_t Bootstrap(ncclComm* c, const IdPayload& id) {
  std::string hash = HostHashString();
  if (Fault("hang_init", c->rank) || Fault("no_connect", c->rank)) {
    while (!c->aborted) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return ncclInternalError;
  }
  Hello mine{};
  std::memcpy(mine.magic, kIdMagic, sizeof(mine.magic));
  mine.rank = static_cast<uint32_t>(c->rank);
  mine.nranks = static_cast<uint32_t>(c->nranks);
  mine.version = FAKE_NCCL_VERSION_CODE;
  mine.bus_id = c->bus_id;
  mine.cuda_dev = static_cast<uint32_t>(c->cuda_dev);
  std::snprintf(mine.host_hash, sizeof(mine.host_hash), "%s", hash.c_str());
  if (c->net == "IB") {
    mine.ib_pkey = c->ib_pkey;
    std::snprintf(mine.node, sizeof(mine.node), "%s",
                  ReadFirstLine(Root() + "/proc/sys/kernel/hostname").c_str());
    std::snprintf(mine.unreachable, sizeof(mine.unreachable), "%s", Unreachable().c_str());
  }
  c->fds.assign(static_cast<size_t>(c->nranks), -1);

  if (c->rank == 0) {
    {
      std::lock_guard<std::mutex> lock(g_listen_mu);
      if (g_listen_fd < 0 || g_listen_cookie != id.cookie) {
        WARN_AT("bootstrap.cc", 342, "Bootstrap : rank 0 was not given this process's unique id");
        return ncclInvalidUsage;
      }
      c->listen_fd = g_listen_fd;
      g_listen_fd = -1;
    }
    std::vector<Hello> hellos(static_cast<size_t>(c->nranks));
    hellos[0] = mine;
    for (int accepted = 1; accepted < c->nranks;) {
      if (c->aborted) return ncclInternalError;
      pollfd pfd{c->listen_fd, POLLIN, 0};
      if (poll(&pfd, 1, 100) <= 0) continue;
      int fd = accept4(c->listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      Hello h{};
      if (RecvAll(fd, &h, sizeof(h), c->aborted) != 1 || std::memcmp(h.magic, kIdMagic, 8) != 0 ||
          h.rank == 0 || h.rank >= static_cast<uint32_t>(c->nranks) || c->fds[h.rank] >= 0) {
        WARN_AT("misc/socket.cc", 457, "socketFinalizeAccept: wrong magic");
        close(fd);
        continue;
      }
      c->fds[h.rank] = fd;
      (void)PeerName(fd);
      hellos[h.rank] = h;
      ++accepted;
    }
    // The checks of initTransportsRank, done on rank 0 and sent to everyone.
    int32_t verdict = ncclSuccess;
    std::string why;
    for (int i = 0; i < c->nranks && verdict == ncclSuccess; ++i) {
      for (int j = i + 1; j < c->nranks && verdict == ncclSuccess; ++j) {
        const Hello& a = hellos[static_cast<size_t>(i)];
        const Hello& b = hellos[static_cast<size_t>(j)];
        if (a.version != b.version) {
          why = Fmt("Mismatched NCCL version detected : rank %d version %u rank %d version %u", i,
                    a.version, j, b.version);
          verdict = ncclInvalidUsage;
        } else if (std::strcmp(a.host_hash, b.host_hash) == 0 && a.bus_id == b.bus_id) {
          why = Fmt("Duplicate GPU detected : rank %d and rank %d both on CUDA device %x", i, j,
                    a.bus_id);
          verdict = ncclInvalidUsage;
        }
      }
    }
    // The IB paths (2 ranks: one path): which peer each rank cannot reach.
    std::vector<std::string> broken(static_cast<size_t>(c->nranks));
    for (int i = 0; i < c->nranks; ++i) {
      for (int j = 0; j < c->nranks; ++j) {
        const Hello& a = hellos[static_cast<size_t>(i)];
        const Hello& b = hellos[static_cast<size_t>(j)];
        if (i == j || a.node[0] == 0 || b.node[0] == 0) continue;
        if (!PkeysTalk(a.ib_pkey, b.ib_pkey) || Listed(a.unreachable, b.node) ||
            Listed(b.unreachable, a.node)) {
          broken[static_cast<size_t>(i)] = b.node;
        }
      }
    }
    c->ib_broken_peer = broken[0];
    // One host hash for all: the ranks are local to each other (P2P/SHM candidates).
    uint32_t local = c->nranks > 1 ? 1 : 0;
    std::vector<uint32_t> devs;
    for (const auto& h : hellos) {
      if (std::strcmp(h.host_hash, hellos[0].host_hash) != 0) local = 0;
      devs.push_back(h.cuda_dev);
    }
    c->local = local != 0;
    c->peer_devs.assign(devs.begin(), devs.end());
    for (int peer = 1; peer < c->nranks; ++peer) {
      SendAll(c->fds[static_cast<size_t>(peer)], &verdict, sizeof(verdict), c->aborted);
      uint32_t len = static_cast<uint32_t>(why.size());
      SendAll(c->fds[static_cast<size_t>(peer)], &len, sizeof(len), c->aborted);
      SendAll(c->fds[static_cast<size_t>(peer)], why.data(), why.size(), c->aborted);
      const std::string& b = broken[static_cast<size_t>(peer)];
      uint32_t blen = static_cast<uint32_t>(b.size());
      SendAll(c->fds[static_cast<size_t>(peer)], &blen, sizeof(blen), c->aborted);
      SendAll(c->fds[static_cast<size_t>(peer)], b.data(), b.size(), c->aborted);
      SendAll(c->fds[static_cast<size_t>(peer)], &local, sizeof(local), c->aborted);
      SendAll(c->fds[static_cast<size_t>(peer)], devs.data(), devs.size() * sizeof(uint32_t),
              c->aborted);
    }
    if (verdict != ncclSuccess) {
      WARN_AT("init.cc", 904, "%s", why.c_str());
      TRACE_RET("init.cc", 1339, verdict);
      return static_cast<ncclResult_t>(verdict);
    }
    return ncclSuccess;
  }

  // Other ranks: connect to rank 0, retrying on ECONNREFUSED like socketConnectCheck.
  int retries = std::atoi(Env("NCCL_SOCKET_RETRY_CNT").c_str());
  if (retries <= 0) retries = 34;
  int sleep_ms = std::atoi(Env("NCCL_SOCKET_RETRY_SLEEP_MSEC").c_str());
  if (sleep_ms <= 0) sleep_ms = 100;
  int fd = -1;
  for (int attempt = 0;; ++attempt) {
    if (c->aborted) return ncclInternalError;
    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (connect(fd, reinterpret_cast<const sockaddr*>(&id.addr), sizeof(id.addr)) == 0) break;
    int err = errno;
    close(fd);
    fd = -1;
    if ((err != ECONNREFUSED && err != ETIMEDOUT && err != EHOSTUNREACH) || attempt >= retries) {
      WARN_AT("misc/socket.cc", 484, "socketPollConnect: Connect to %s returned %s",
              AddrString(id.addr).c_str(), strerror(err));
      TRACE_RET("misc/socket.cc", 524, kRemoteError);
      return kRemoteError;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(sleep_ms * std::min(attempt + 1, 10)));
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  c->fds[0] = fd;
  (void)PeerName(fd);
  if (!SendAll(fd, &mine, sizeof(mine), c->aborted)) return PeerClosed(c, fd);
  int32_t verdict = 0;
  uint32_t len = 0;
  if (RecvAll(fd, &verdict, sizeof(verdict), c->aborted) != 1 ||
      RecvAll(fd, &len, sizeof(len), c->aborted) != 1 || len > 4096) {
    return PeerClosed(c, fd);
  }
  std::string why(len, '\0');
  if (len > 0 && RecvAll(fd, why.data(), len, c->aborted) != 1) return PeerClosed(c, fd);
  uint32_t blen = 0;
  if (RecvAll(fd, &blen, sizeof(blen), c->aborted) != 1 || blen > 64) return PeerClosed(c, fd);
  c->ib_broken_peer.assign(blen, '\0');
  if (blen > 0 && RecvAll(fd, c->ib_broken_peer.data(), blen, c->aborted) != 1) {
    return PeerClosed(c, fd);
  }
  uint32_t local = 0;
  std::vector<uint32_t> devs(static_cast<size_t>(c->nranks));
  if (RecvAll(fd, &local, sizeof(local), c->aborted) != 1 ||
      RecvAll(fd, devs.data(), devs.size() * sizeof(uint32_t), c->aborted) != 1) {
    return PeerClosed(c, fd);
  }
  c->local = local != 0;
  c->peer_devs.assign(devs.begin(), devs.end());
  if (verdict != ncclSuccess) {
    WARN_AT("init.cc", 904, "%s", why.c_str());
    TRACE_RET("init.cc", 1339, verdict);
    return static_cast<ncclResult_t>(verdict);
  }
  return ncclSuccess;
}

ncclResult_t DoInit(ncclComm* c, const IdPayload& id, const std::string& config_net) {
  INFO("cudaDriverVersion 13000");
  INFO("NCCL version %s", FAKE_NCCL_VERSION_STRING);
  Iface oob;
  ncclResult_t rc = BootstrapInterface(&oob);
  if (rc != ncclSuccess) return rc;
  rc = NetInit(c, config_net, oob);
  if (rc != ncclSuccess) return rc;
  INFO(
      "ncclCommInitRank comm %p rank %d nranks %d cudaDev %d nvmlDev %d busId %x commId 0x%lx - "
      "Init START",
      static_cast<void*>(c), c->rank, c->nranks, c->cuda_dev, c->cuda_dev, c->bus_id,
      static_cast<unsigned long>(c->comm_id));
  rc = Bootstrap(c, id);
  if (rc != ncclSuccess) return rc;
  INFO("comm %p rank %d nRanks %d nNodes %d localRanks %d localRank %d MNNVL 0",
       static_cast<void*>(c), c->rank, c->nranks, c->local ? 1 : c->nranks,
       c->local ? c->nranks : 1, c->local ? c->rank : 0);
  std::string ring;
  for (int r = 0; r < c->nranks; ++r) ring += " " + std::to_string(r);
  INFO("Channel 00/02 :%s", ring.c_str());
  INFO("Channel 01/02 :%s", ring.c_str());
  INFO(
      "ncclCommInitRank comm %p rank %d nranks %d cudaDev %d nvmlDev %d busId %x commId 0x%lx - "
      "Init COMPLETE",
      static_cast<void*>(c), c->rank, c->nranks, c->cuda_dev, c->cuda_dev, c->bus_id,
      static_cast<unsigned long>(c->comm_id));
  c->worker = std::thread(WorkerLoop, c);
  return ncclSuccess;
}

void CallerFaults(int rank) {
  if (Fault("crash_init", rank)) raise(SIGSEGV);
  if (Fault("garbage", rank)) {
    const char junk[] = "\x01\x02 not json {\"outcome\": \n";
    if (write(1, junk, sizeof(junk) - 1) < 0) _exit(3);
    _exit(0);
  }
  if (Fault("flood_stdout", rank)) {
    std::string chunk(65536, '#');
    for (int i = 0; i < 64; ++i) {
      if (write(1, chunk.data(), chunk.size()) < 0 || write(2, chunk.data(), chunk.size()) < 0) {
        break;
      }
    }
  }
  if (Fault("hang_hard", rank)) {
    while (true) pause();
  }
}

// NCCL's busIdToInt64: the hex digits of "0000:07:00.0", so 0x7000.
uint32_t BusIdToInt(const char* bus) {
  uint64_t v = 0;
  for (const char* p = bus; *p != '\0'; ++p) {
    if (std::isxdigit(static_cast<unsigned char>(*p)) == 0) continue;
    v = v * 16 +
        static_cast<uint64_t>(std::isdigit(static_cast<unsigned char>(*p)) != 0
                                  ? *p - '0'
                                  : std::tolower(static_cast<unsigned char>(*p)) - 'a' + 10);
  }
  return static_cast<uint32_t>(v);
}

void LocateStreamHooks(ncclComm* c) {
  // The same lookup the real NCCL does for the driver: whatever libcuda.so.1 is loaded.
  void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (cuda == nullptr) return;
  // cudaGetDevice on the caller's thread: the device this rank runs on.
  using GetDeviceFn = int (*)(int*);
  using GetBusIdFn = int (*)(char*, int, int);
  auto get_device = reinterpret_cast<GetDeviceFn>(dlsym(cuda, "cuCtxGetDevice"));
  auto get_bus_id = reinterpret_cast<GetBusIdFn>(dlsym(cuda, "cuDeviceGetPCIBusId"));
  int dev = 0;
  if (get_device != nullptr && get_device(&dev) == 0) c->cuda_dev = dev;
  char bus[64] = {};
  if (get_bus_id != nullptr && get_bus_id(bus, sizeof(bus) - 1, c->cuda_dev) == 0) {
    c->bus_id = BusIdToInt(bus);
  }
  Logger::Get().SetDevice(c->cuda_dev);
  c->begin_work = reinterpret_cast<StreamWorkFn>(dlsym(cuda, "fakeCudaStreamBeginWork"));
  c->end_work = reinterpret_cast<StreamWorkFn>(dlsym(cuda, "fakeCudaStreamEndWork"));
  if (c->begin_work == nullptr || c->end_work == nullptr) c->begin_work = c->end_work = nullptr;
  c->advance = reinterpret_cast<StreamAdvanceFn>(dlsym(cuda, "fakeCudaStreamAdvance"));
}

ncclResult_t InitRank(ncclComm_t* out, int nranks, const ncclUniqueId& raw, int rank, bool blocking,
                      const std::string& config_net) {
  if (out == nullptr || nranks < 1 || rank < 0 || rank >= nranks) {
    WARN_AT("init.cc", 1791, "Invalid rank requested : %d/%d", rank, nranks);
    return ncclInvalidArgument;
  }
  IdPayload id{};
  std::memcpy(&id, raw.internal, sizeof(id));
  if (std::memcmp(id.magic, kIdMagic, sizeof(kIdMagic)) != 0) {
    WARN_AT("bootstrap.cc", 229, "Bootstrap : invalid unique id");
    return ncclInvalidArgument;
  }
  CallerFaults(rank);
  auto* c = new ncclComm();
  c->rank = rank;
  c->nranks = nranks;
  c->blocking = blocking;
  c->comm_id = id.cookie;
  LocateStreamHooks(c);
  *out = c;
  if (blocking) {
    ncclResult_t rc = DoInit(c, id, config_net);
    c->async = rc;
    return rc;
  }
  c->init_thread = std::thread([c, id, config_net] { c->async = DoInit(c, id, config_net); });
  return ncclInProgress;
}

void CloseAll(ncclComm* c) {
  for (int& fd : c->fds) {
    if (fd >= 0) close(fd);
    fd = -1;
  }
  if (c->listen_fd >= 0) close(c->listen_fd);
  c->listen_fd = -1;
}

void StopWorker(ncclComm* c) {
  {
    std::lock_guard<std::mutex> lock(c->mu);
    c->stop = true;
  }
  c->cv.notify_all();
  if (c->worker.joinable()) c->worker.join();
}

}  // namespace

extern "C" {

ncclResult_t ncclGetVersion(int* version) {
  if (version == nullptr) return ncclInvalidArgument;
  *version = FAKE_NCCL_VERSION_CODE;
  return ncclSuccess;
}

const char* ncclGetErrorString(ncclResult_t code) {
  if (kOld) {
    switch (code) {
      case ncclSuccess:
        return "no error";
      case ncclUnhandledCudaError:
        return "unhandled cuda error";
      case ncclSystemError:
        return "unhandled system error";
      case ncclInternalError:
        return "internal error";
      case ncclInvalidArgument:
        return "invalid argument";
      case ncclInvalidUsage:
        return "invalid usage";
      default:
        return "unknown result code";
    }
  }
  switch (code) {
    case ncclSuccess:
      return "no error";
    case ncclUnhandledCudaError:
      return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError:
      return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError:
      return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument:
      return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage:
      return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError:
      return "remote process exited or there was a network error";
    case ncclInProgress:
      return "NCCL operation in progress";
    default:
      return "unknown result code";
  }
}

#ifndef FAKE_NCCL_OLD
const char* ncclGetLastError(ncclComm_t) {
  static thread_local std::string last;
  last = Logger::Get().Last();
  return last.c_str();
}
#endif

ncclResult_t ncclGetUniqueId(ncclUniqueId* out) {
  if (out == nullptr) return ncclInvalidArgument;
  Iface iface;
  ncclResult_t rc = BootstrapInterface(&iface);
  if (rc != ncclSuccess) {
    TRACE_RET("init.cc", 126, rc);
    TRACE_RET("init.cc", 160, rc);
    return rc;
  }
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr = iface.addr;
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      listen(fd, 64) != 0 || getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    WARN_AT("misc/socket.cc", 435, "Call to bind failed : %s", strerror(errno));
    if (fd >= 0) close(fd);
    return ncclSystemError;
  }
  IdPayload id{};
  std::memcpy(id.magic, kIdMagic, sizeof(kIdMagic));
  id.version = FAKE_NCCL_VERSION_CODE;
  id.addr = addr;
  id.cookie = std::random_device{}() | (static_cast<uint64_t>(std::random_device{}()) << 32);
  {
    std::lock_guard<std::mutex> lock(g_listen_mu);
    if (g_listen_fd >= 0) close(g_listen_fd);
    g_listen_fd = fd;
    g_listen_cookie = id.cookie;
  }
  std::memset(out->internal, 0, sizeof(out->internal));
  std::memcpy(out->internal, &id, sizeof(id));
  return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank) {
  return InitRank(comm, nranks, id, rank, /*blocking=*/true, "");
}

#ifndef FAKE_NCCL_OLD
ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank,
                                    FakeConfig* config) {
  FakeConfig cfg{};
  cfg.size = sizeof(FakeConfig);
  cfg.magic = 0xcafebeef;
  cfg.version = FAKE_NCCL_VERSION_CODE;
  cfg.blocking = INT_MIN;
  if (config != nullptr) {
    // parseCommConfig: copy min(size, sizeof) bytes, then check the magic.
    std::memcpy(&cfg, config, std::min(config->size, sizeof(FakeConfig)));
    if (cfg.magic != 0xcafebeef) {
      WARN_AT("init.cc", 1929, "ncclConfig_t argument not initialized via NCCL_CONFIG_INITIALIZER");
      return ncclInvalidArgument;
    }
    if (cfg.version < 21700) cfg.netName = nullptr;  // fields newer than the caller: defaults
  }
  if (cfg.blocking == INT_MIN) cfg.blocking = 1;
  if (cfg.blocking != 0 && cfg.blocking != 1) {
    WARN_AT("init.cc", 1960, "Invalid config blocking attribute value %d", cfg.blocking);
    return ncclInvalidArgument;
  }
  std::string net = cfg.netName != nullptr ? cfg.netName : "";
  return InitRank(comm, nranks, id, rank, cfg.blocking == 1, net);
}

ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  if (comm == nullptr) return ncclInvalidArgument;
  std::unique_lock<std::mutex> lock(comm->mu);
  comm->cv.wait(lock, [comm] { return comm->stop || (comm->jobs.empty() && comm->running == 0); });
  return ncclSuccess;
}
#endif

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* error) {
  if (comm == nullptr || error == nullptr) return ncclInvalidArgument;
  *error = static_cast<ncclResult_t>(comm->async.load());
  return ncclSuccess;
}

ncclResult_t ncclAllReduce(const void* send, void* recv, size_t count, int datatype, int op,
                           ncclComm_t comm, void* stream) {
  if (comm == nullptr) return ncclInvalidArgument;
  int state = comm->async.load();
  if (state != ncclSuccess) return static_cast<ncclResult_t>(state);
  if (op != 0 || TypeSize(datatype) == 0 || datatype == 0 || datatype == 1 || datatype == 6 ||
      datatype == 9) {
    WARN_AT("enqueue.cc", 1986, "AllReduce : invalid type %d or op %d for this fake", datatype, op);
    return ncclInvalidArgument;
  }
  Job job{send, recv, count, datatype, stream};
  if (comm->begin_work == nullptr) {
    // No fake CUDA stream to complete later: run it now, as a blocking call.
    ncclResult_t rc = RunAllReduce(comm, job);
    if (rc != ncclSuccess) SetError(comm, rc);
    return rc;
  }
  comm->begin_work(stream);
  {
    std::lock_guard<std::mutex> lock(comm->mu);
    comm->jobs.push_back(job);
  }
  comm->cv.notify_all();
  return ncclSuccess;
}

ncclResult_t ncclCommAbort(ncclComm_t comm) {
  if (comm == nullptr) return ncclSuccess;
  comm->aborted = true;
  for (int fd : comm->fds) {
    if (fd >= 0) shutdown(fd, SHUT_RDWR);
  }
  if (comm->init_thread.joinable()) comm->init_thread.join();
  StopWorker(comm);
  CloseAll(comm);
  delete comm;
  return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  if (comm == nullptr) return ncclSuccess;
  if (comm->init_thread.joinable()) comm->init_thread.join();
  {
    std::unique_lock<std::mutex> lock(comm->mu);
    comm->cv.wait(lock,
                  [comm] { return comm->stop || (comm->jobs.empty() && comm->running == 0); });
  }
  StopWorker(comm);
  INFO("comm %p rank %d nranks %d cudaDev %d busId %x - Destroy COMPLETE", static_cast<void*>(comm),
       comm->rank, comm->nranks, comm->cuda_dev, comm->bus_id);
  CloseAll(comm);
  delete comm;
  return ncclSuccess;
}

}  // extern "C"
