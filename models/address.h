// Global addresses across chips. A chip's own memories live below 2^48; an address with the
// top bit set names memory of another chip: bit 63 set, the chip id in bits 48..62, the address
// on that chip below. The interconnect routes such addresses to the chip's IciPort, which
// carries them over the inter-chip links and hands the local part to the destination's
// interconnect.
#pragma once

#include <cstdint>

namespace xpu {

inline constexpr std::uint64_t kRemoteBit = 1ull << 63;
inline constexpr std::uint64_t kRemoteWindow = kRemoteBit;  // base of the remote window in an address map
inline constexpr unsigned kChipShift = 48;
inline constexpr std::uint64_t kLocalMask = (1ull << kChipShift) - 1;

inline std::uint64_t remote_address(std::uint16_t chip, std::uint64_t local) {
    return kRemoteBit | (std::uint64_t(chip) << kChipShift) | (local & kLocalMask);
}
inline bool is_remote(std::uint64_t a) { return (a & kRemoteBit) != 0; }
inline std::uint16_t remote_chip(std::uint64_t a) { return static_cast<std::uint16_t>((a & ~kRemoteBit) >> kChipShift); }
inline std::uint64_t local_part(std::uint64_t a) { return a & kLocalMask; }

}  // namespace xpu
