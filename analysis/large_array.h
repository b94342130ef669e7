// Reserving the analysis' largest arrays (per instruction, per log record: hundreds of MiB for a
// 10 M-instruction run) before they are filled front to back. Reserving spares the copies of a
// growing vector; asking for transparent huge pages spares most of the 4 KiB page faults, which
// otherwise take a large share of the loading time. Pages a reservation does not fill are never
// touched, so they cost address space, not memory.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace xpu::analysis {

// Advice only: without transparent huge pages (or off Linux) nothing changes but the speed.
inline void advise_huge_pages(const void* data, std::size_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    constexpr std::uintptr_t kHuge = std::uintptr_t{2} << 20;
    const auto begin = (reinterpret_cast<std::uintptr_t>(data) + kHuge - 1) & ~(kHuge - 1);
    const auto end = (reinterpret_cast<std::uintptr_t>(data) + bytes) & ~(kHuge - 1);
    if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
#else
    (void)data;
    (void)bytes;
#endif
}

// reserve(n), with the new storage advised before anything is copied into it (the copy would
// fault its pages in one by one).
template <class T>
void reserve_large(std::vector<T>& v, std::size_t n) {
    if (n <= v.capacity()) return;
    std::vector<T> bigger;
    bigger.reserve(n);
    advise_huge_pages(bigger.data(), n * sizeof(T));
    bigger.insert(bigger.end(), std::make_move_iterator(v.begin()), std::make_move_iterator(v.end()));
    v.swap(bigger);
}

// push_back for an array of unknown final size (records of one kind, a timeline): it doubles
// as push_back does, each new storage advised as above.
template <class T>
void append_large(std::vector<T>& v, const T& x) {
    if (v.size() == v.capacity()) reserve_large(v, std::max<std::size_t>(16, 2 * v.capacity()));
    v.push_back(x);
}

}  // namespace xpu::analysis
