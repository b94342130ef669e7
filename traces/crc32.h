// CRC-32 as used by zlib, PNG and Ethernet (IEEE 802.3): reflected polynomial 0xEDB88320,
// initial value 0xFFFFFFFF, final XOR 0xFFFFFFFF. crc32("123456789") == 0xCBF43926.
#pragma once

#include <cstddef>
#include <cstdint>

namespace xpu::trace {

// Checksum of data[0..n). To checksum in pieces, pass the previous result as `crc`
// (zlib's crc32() convention): crc32(b, nb, crc32(a, na)) == crc32(a + b).
// Uses carry-less multiplication (PCLMULQDQ) where the CPU has it, else slicing-by-8 tables.
std::uint32_t crc32(const void* data, std::size_t n, std::uint32_t crc = 0);

// The same checksum, table-driven only (slicing-by-8): the reference the fast path is tested
// against, and what runs on CPUs without carry-less multiply.
std::uint32_t crc32_portable(const void* data, std::size_t n, std::uint32_t crc = 0);

}  // namespace xpu::trace
