// SHA-256 (FIPS 180-4), for identifying a run's trace in stats.json ("trace_sha256") so that two
// runs can be told apart by what they replayed, not by the path they were given. CRC-32
// (crc32.h) guards blocks against corruption; it is too weak to say two files are the same trace.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace xpu {

class Sha256 {
public:
    // allow_hardware: use the CPU's SHA extensions when it has them (x86 SHA-NI: several times
    // faster; stats.json hashes every trace a run reads, tens of MB). false: the portable code
    // only (tests compare the two).
    explicit Sha256(bool allow_hardware = true);
    void update(const void* data, std::size_t n);
    std::string hex();  // finishes: 64 lower-case hex digits
    // Whether this CPU has the SHA extensions this build can use.
    static bool hardware_available();

private:
    void blocks(const unsigned char* p, std::size_t n);  // n whole 64-byte blocks
    void block(const unsigned char* p);
    std::uint32_t h_[8];
    bool hardware_ = false;
    unsigned char buf_[64];
    std::size_t used_ = 0;
    std::uint64_t bytes_ = 0;
};

// The digest of a file's bytes, streamed; throws std::runtime_error naming it if it cannot be read.
std::string sha256_file(const std::string& path);

}  // namespace xpu
