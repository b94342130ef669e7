// CeilDiv: ceil(x / d) for a divisor fixed when a model is built (rows per cycle, bytes per
// cycle). The units compute such a quotient for every instruction, and it sits on the chain
// from one op's start to the next's: a 64-bit division there (tens of cycles) became a shift
// when d is a power of two, as it usually is (1 row a cycle, 128-byte paths). The same
// quotient either way: (x + d - 1) / d, computed in 64 bits.
#pragma once

#include <cstdint>

namespace xpu {

class CeilDiv {
public:
    explicit CeilDiv(std::uint64_t d) : d_(d ? d : 1) {
        if ((d_ & (d_ - 1)) == 0)
            for (shift_ = 0; (std::uint64_t{1} << shift_) < d_;) ++shift_;
    }
    std::uint64_t operator()(std::uint64_t x) const {
        const std::uint64_t n = x + d_ - 1;
        return shift_ >= 0 ? n >> shift_ : n / d_;
    }
    std::uint64_t divisor() const { return d_; }

private:
    std::uint64_t d_;
    int shift_ = -1;  // log2(d) when d is a power of two
};

}  // namespace xpu
