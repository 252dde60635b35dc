// NCCL's device-list syntax, the one parser of it: NCCL_SOCKET_IFNAME and NCCL_IB_HCA are both
// "[^][=]name[:port],..." (NCCL's parseStringList / matchIfList). A leading '^' turns the list
// into exclusions; a leading '=' (after any '^') makes the names exact, otherwise each is a
// prefix ("mlx5_1" also selects "mlx5_10", "eth" every "eth*"); ":port" restricts an HCA entry to
// one port (NCCL_IB_HCA also allows ":port:rail:plane"; only the port selects) and means nothing
// for an interface. An empty list selects everything, as NCCL treats it as unset. Pure.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace nccl_triage {

struct NcclDeviceList {
  struct Entry {
    std::string name;
    std::optional<int> port;
    friend bool operator==(const Entry&, const Entry&) = default;
  };
  bool exclude = false;
  bool exact = false;
  std::vector<Entry> entries;
  friend bool operator==(const NcclDeviceList&, const NcclDeviceList&) = default;
};

// Leading blanks are skipped; empty items (",,") are dropped.
NcclDeviceList ParseNcclDeviceList(std::string_view text);

// Whether NCCL would use device `name` (port `port` of it, for an HCA) under the list. Without a
// port (interfaces), the entries' ports are not compared.
bool NcclDeviceListSelects(const NcclDeviceList& list, std::string_view name,
                           std::optional<int> port = std::nullopt);

// NCCL reads integer parameters with strtoll: leading blanks, a sign, digits; anything after the
// digits is ignored. nullopt when there are no digits (NCCL then keeps its default).
std::optional<long long> ParseNcclInt(std::string_view text);

}  // namespace nccl_triage
