// FileDigest: the SHA-256 of a file (stats.json's trace_sha256) from the reads a program makes
// of it anyway, instead of a second pass over the file. The trace reader reports every read to
// it (TraceFile::open with a digest); whatever extends the hashed prefix is hashed, in order
// (SHA-256 cannot take bytes out of order); finish() reads and hashes what no read covered in
// order (a single-stream trace: the tables at its end; streams whose blocks interleave: more).
// The value is sha256_file's, whatever the order of the reads. One thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "traces/sha256.h"

namespace xpu::trace {

class FileDigest {
public:
    // `n` bytes of the file at `offset` were read into `data`.
    void observe(std::uint64_t offset, const void* data, std::size_t n) {
        if (offset > next_ || offset + n <= next_) return;
        const std::size_t skip = static_cast<std::size_t>(next_ - offset);
        sha_.update(static_cast<const unsigned char*>(data) + skip, n - skip);
        next_ = offset + n;
    }
    std::uint64_t hashed() const { return next_; }  // bytes of the prefix hashed so far
    // Hashes the rest of the file at `path` and returns the digest (64 hex digits); throws
    // std::runtime_error naming the file if it cannot be read. Once.
    std::string finish(const std::string& path);

private:
    Sha256 sha_;
    std::uint64_t next_ = 0;
};

}  // namespace xpu::trace
