#include "host/live.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <infiniband/verbs.h>
#include <net/if.h>
#include <netinet/in.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "host/root_reader.h"

namespace nccl_triage {
namespace {

std::string ErrnoText(const char* call, int err) {
  return std::string(call) + ": " + std::strerror(err) + " (errno " + std::to_string(err) + ")";
}

std::string PortStateName(ibv_port_state s) {
  switch (s) {
    case IBV_PORT_NOP: return "NOP";
    case IBV_PORT_DOWN: return "DOWN";
    case IBV_PORT_INIT: return "INIT";
    case IBV_PORT_ARMED: return "ARMED";
    case IBV_PORT_ACTIVE: return "ACTIVE";
    case IBV_PORT_ACTIVE_DEFER: return "ACTIVE_DEFER";
  }
  return "UNKNOWN(" + std::to_string(static_cast<int>(s)) + ")";
}

int MtuBytes(ibv_mtu m) {
  switch (m) {
    case IBV_MTU_256: return 256;
    case IBV_MTU_512: return 512;
    case IBV_MTU_1024: return 1024;
    case IBV_MTU_2048: return 2048;
    case IBV_MTU_4096: return 4096;
  }
  return 0;
}

std::string LinkLayerName(uint8_t ll) {
  switch (ll) {
    case IBV_LINK_LAYER_INFINIBAND: return "InfiniBand";
    case IBV_LINK_LAYER_ETHERNET: return "Ethernet";
    default: return "Unspecified";
  }
}

// Owns the device list and one opened context for the duration of a call.
class OpenedDevice {
 public:
  explicit OpenedDevice(const std::string& name) {
    int n = 0;
    list_ = ibv_get_device_list(&n);
    if (list_ == nullptr) {
      error_ = ErrnoText("ibv_get_device_list", errno);
      return;
    }
    for (int i = 0; i < n; ++i) {
      if (name == ibv_get_device_name(list_[i])) {
        ctx_ = ibv_open_device(list_[i]);
        if (ctx_ == nullptr) {
          const int err = errno;  // before the string below allocates
          error_ = ErrnoText(("ibv_open_device(" + name + ")").c_str(), err);
        }
        return;
      }
    }
    error_ = "ibv_open_device(" + name + "): no such device";
  }
  ~OpenedDevice() {
    if (ctx_ != nullptr) ibv_close_device(ctx_);
    if (list_ != nullptr) ibv_free_device_list(list_);
  }
  OpenedDevice(const OpenedDevice&) = delete;
  OpenedDevice& operator=(const OpenedDevice&) = delete;

  ibv_context* ctx() const { return ctx_; }
  const std::string& error() const { return error_; }

 private:
  ibv_device** list_ = nullptr;
  ibv_context* ctx_ = nullptr;
  std::string error_;
};

class RealVerbsProvider final : public VerbsProvider {
 public:
  StatusOr<std::vector<std::string>> ListDevices() override {
    int n = 0;
    ibv_device** list = ibv_get_device_list(&n);
    if (list == nullptr) return Unavailable(ErrnoText("ibv_get_device_list", errno));
    std::vector<std::string> names;
    for (int i = 0; i < n; ++i) names.emplace_back(ibv_get_device_name(list[i]));
    ibv_free_device_list(list);
    return names;
  }

  StatusOr<std::vector<VerbsPort>> QueryPorts(const std::string& device) override {
    OpenedDevice dev(device);
    if (dev.ctx() == nullptr) return Unavailable(dev.error());
    ibv_device_attr attr{};
    if (int rc = ibv_query_device(dev.ctx(), &attr); rc != 0) {
      return Unavailable(ErrnoText("ibv_query_device", rc));
    }
    std::vector<VerbsPort> ports;
    for (int p = 1; p <= attr.phys_port_cnt; ++p) {
      ibv_port_attr pa{};
      if (int rc = ibv_query_port(dev.ctx(), static_cast<uint8_t>(p), &pa); rc != 0) {
        return Unavailable(ErrnoText("ibv_query_port", rc));
      }
      VerbsPort vp;
      vp.device = device;
      vp.port = p;
      vp.state = PortStateName(pa.state);
      vp.active_mtu = MtuBytes(pa.active_mtu);
      vp.gid_table_len = pa.gid_tbl_len;
      vp.pkey_table_len = pa.pkey_tbl_len;
      vp.link_layer = LinkLayerName(pa.link_layer);
      ports.push_back(std::move(vp));
    }
    return ports;
  }

  Status RegisterMemory(const std::string& device, uint64_t bytes) override {
    OpenedDevice dev(device);
    if (dev.ctx() == nullptr) return Unavailable(dev.error());
    ibv_pd* pd = ibv_alloc_pd(dev.ctx());
    if (pd == nullptr) return Unavailable(ErrnoText("ibv_alloc_pd", errno));
    void* buf = std::malloc(bytes == 0 ? 1 : bytes);
    if (buf == nullptr) {
      ibv_dealloc_pd(pd);
      return Unavailable(ErrnoText("malloc", ENOMEM));
    }
    // The access flags NCCL uses for its buffers: registration pins the pages, so this is where
    // RLIMIT_MEMLOCK bites.
    int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
    ibv_mr* mr = ibv_reg_mr(pd, buf, bytes == 0 ? 1 : bytes, access);
    int err = errno;
    Status st;
    if (mr == nullptr) {
      st = Unavailable(ErrnoText("ibv_reg_mr", err));
    } else {
      ibv_dereg_mr(mr);
    }
    std::free(buf);
    ibv_dealloc_pd(pd);
    return st;
  }
};

int PrefixLength(const sockaddr* mask) {
  if (mask == nullptr) return -1;
  const unsigned char* bytes = nullptr;
  size_t len = 0;
  if (mask->sa_family == AF_INET) {
    bytes = reinterpret_cast<const unsigned char*>(
        &reinterpret_cast<const sockaddr_in*>(mask)->sin_addr);
    len = 4;
  } else if (mask->sa_family == AF_INET6) {
    bytes = reinterpret_cast<const unsigned char*>(
        &reinterpret_cast<const sockaddr_in6*>(mask)->sin6_addr);
    len = 16;
  } else {
    return -1;
  }
  int bits = 0;
  for (size_t i = 0; i < len; ++i) bits += __builtin_popcount(bytes[i]);
  return bits;
}

class RealInterfaceAddressProvider final : public InterfaceAddressProvider {
 public:
  StatusOr<std::map<std::string, std::vector<std::string>>> Addresses() override {
    ifaddrs* list = nullptr;
    if (getifaddrs(&list) != 0) return Unavailable(ErrnoText("getifaddrs", errno));
    std::map<std::string, std::vector<std::string>> out;
    for (ifaddrs* a = list; a != nullptr; a = a->ifa_next) {
      if (a->ifa_addr == nullptr || a->ifa_name == nullptr) continue;
      std::array<char, INET6_ADDRSTRLEN> text{};
      const void* src = nullptr;
      if (a->ifa_addr->sa_family == AF_INET) {
        src = &reinterpret_cast<const sockaddr_in*>(a->ifa_addr)->sin_addr;
      } else if (a->ifa_addr->sa_family == AF_INET6) {
        src = &reinterpret_cast<const sockaddr_in6*>(a->ifa_addr)->sin6_addr;
      } else {
        continue;
      }
      if (inet_ntop(a->ifa_addr->sa_family, src, text.data(), text.size()) == nullptr) continue;
      std::string addr = text.data();
      int prefix = PrefixLength(a->ifa_netmask);
      if (prefix >= 0) addr += "/" + std::to_string(prefix);
      out[a->ifa_name].push_back(std::move(addr));
    }
    freeifaddrs(list);
    return out;
  }
};

}  // namespace

std::unique_ptr<VerbsProvider> MakeRealVerbsProvider() {
  return std::make_unique<RealVerbsProvider>();
}

std::unique_ptr<InterfaceAddressProvider> MakeRealInterfaceAddressProvider() {
  return std::make_unique<RealInterfaceAddressProvider>();
}

}  // namespace nccl_triage
