// The one grammar of a byte size, for the configuration, the probe's flags and triage's flags:
// digits, then optionally a binary unit. K, Ki and KiB (and k, as nccl-tests writes it) are 2^10;
// M, Mi, MiB are 2^20; G, Gi, GiB 2^30; T, Ti, TiB 2^40; B or nothing is bytes. No decimal units:
// "M" means MiB, as in nccl-tests' -b/-e. The chart's schema takes kByteSizePattern from here
// (nccl-triage-server dump-schema), so the chart and the binary accept the same strings. Pure.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace nccl_triage {

// The JSON-schema (ECMA-262) pattern of the strings ParseByteSize accepts.
inline constexpr std::string_view kByteSizePattern =
    "^[0-9]+(B|K|k|Ki|KiB|M|Mi|MiB|G|Gi|GiB|T|Ti|TiB)?$";

// The size, or nullopt when `text` is not one (no digits, an unknown unit, a sign, a space) or
// it does not fit in 64 bits.
std::optional<uint64_t> ParseByteSize(std::string_view text);

}  // namespace nccl_triage
