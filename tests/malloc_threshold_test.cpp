// fix_malloc_mmap_threshold (traces/huge_page_malloc.h): a block of 1 MiB or more is mapped on
// its own (and so returned to the kernel when freed) even after a larger block was freed, which
// is what glibc's default does not do: it raises the threshold to the size of each mapped block
// freed, and the next blocks below that size come from the heap. The reference is glibc's own
// count of mapped bytes (mallinfo2().hblkhd), read around an allocation. Each TEST runs in a
// process of its own (gtest_discover_tests), so each starts with glibc's default threshold.
#include <gtest/gtest.h>
#include <malloc.h>

#include <cstdlib>
#include <cstring>

#include "traces/huge_page_malloc.h"

namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;  // ASan's allocator replaces glibc's: no threshold, no counts
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

bool threshold_set_by_user() {
    const char* t = std::getenv("GLIBC_TUNABLES");
    return t && std::strstr(t, "glibc.malloc.mmap_threshold");
}

// Frees a mapped 8 MiB block (glibc's default then moves its threshold up to 8 MiB), then
// allocates 2 MiB: the bytes mapped for it.
// (Through volatile pointers: a compiler may drop a malloc and free pair it can see whole.)
std::size_t mapped_for_2mib_after_8mib_freed() {
    void* volatile big = std::malloc(8 << 20);
    std::memset(big, 1, 8 << 20);
    std::free(big);
    const std::size_t before = mallinfo2().hblkhd;
    void* volatile p = std::malloc(2 << 20);
    std::memset(p, 1, 2 << 20);
    const std::size_t after = mallinfo2().hblkhd;
    std::free(p);
    return after > before ? after - before : 0;
}

TEST(MallocThreshold, GlibcAloneServesTheNextBlocksFromTheHeap) {
    if (kSanitized || threshold_set_by_user()) GTEST_SKIP() << "not glibc's allocator, or its threshold set by the user";
    EXPECT_EQ(mapped_for_2mib_after_8mib_freed(), 0u);
}

TEST(MallocThreshold, FixedBlocksOfAMiBAndMoreAreMappedOnTheirOwn) {
    if (kSanitized || threshold_set_by_user()) GTEST_SKIP() << "not glibc's allocator, or its threshold set by the user";
    xpu::trace::fix_malloc_mmap_threshold(std::getenv("GLIBC_TUNABLES"));
    EXPECT_GE(mapped_for_2mib_after_8mib_freed(), std::size_t{2} << 20);
}

}  // namespace
