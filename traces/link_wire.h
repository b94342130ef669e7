// What an inter-chip link puts on the wire (models/ici.h): each transfer's payload cut into
// packets of up to `packet` bytes, each adding `overhead` bytes (headers, CRC). One rule for the
// model that charges it and for the analysis that bounds by it (analysis/bounds.cpp).
#pragma once

#include <algorithm>
#include <cstdint>

namespace xpu {

// The bytes one transfer of `len` payload bytes puts on the wire: at least one packet.
inline std::uint64_t link_wire_bytes(std::uint64_t len, std::uint64_t packet, std::uint64_t overhead) {
    return len + std::max<std::uint64_t>((len + packet - 1) / packet, 1) * overhead;
}

// The least bytes on the wire for `payload` bytes, however they are cut into transfers
// (ceil(len / packet) packets >= len / packet): payload x (packet + overhead) / packet.
inline double link_least_wire_bytes(double payload, double packet, double overhead) {
    return payload * (packet + overhead) / packet;
}

}  // namespace xpu
