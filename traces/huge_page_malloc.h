// Huge pages for malloc: the analysis (in xpu_analyze, and at the end of every sim_main run) holds
// hundreds of bytes per instruction, most of it in blocks malloc gets from the kernel, and on
// this kind of machine (a VM) the first touch of each 4 KiB page is a costly fault: 247 k faults
// for the 32-layer llama2-7b decode's analysis. glibc's malloc asks for transparent huge pages
// (2 MiB) when its tunable glibc.malloc.hugetlb is 1 (glibc >= 2.35), which cuts those faults
// to 39 k (docs/architecture.md, "Huge pages for malloc"); a tunable is read only when a program
// starts, so a program sets it by starting again.
#pragma once

namespace xpu::trace {

// Run before any library starts (tune_malloc, from the program's .preinit_array): unless this process tree was restarted already (kRestartedMarker: sim_main's
// replay workers inherit it), GLIBC_TUNABLES names glibc.malloc.hugetlb (the user's choice, e.g.
// =0 to keep 4 KiB pages), the kernel has transparent huge pages off, glibc is older than 2.35,
// or the program runs under valgrind (which would not follow the restart), it adds
// glibc.malloc.hugetlb=1 to GLIBC_TUNABLES and executes the same program with the same arguments
// again (/proc/self/exe). If that fails, it returns and the program goes on as it is. Advice
// only: no output changes. (Before the libraries: their initialisers would otherwise run twice,
// and libsystemc's alone take ~10 ms, half of a process's start.)
void restart_with_huge_page_malloc(int argc, char** argv, char** envp);
// Fixes malloc's mmap threshold at 1 MiB, unless `glibc_tunables` (GLIBC_TUNABLES' value, or
// null) names glibc.malloc.mmap_threshold (the user's choice). By default glibc raises the
// threshold to the size of each mapped block freed (up to 32 MiB), so that the analysis's blocks
// of a few MiB (a list-scheduled window's graph, a finder's growing lists of moves) come from the
// heap after the first few, and stay there once freed, between live ones, where the kernel cannot
// take them back. Fixed, every block of 1 MiB and more is mapped on its own and returned when
// freed: peak RSS of xpu_analyze 10-12% lower on a decode's and a GEMM's log, and no slower
// (docs/architecture.md, "A fixed mmap threshold"; 128 KiB cost small runs time, each block's
// pages faulted in again). Advice only: no output changes.
void fix_malloc_mmap_threshold(const char* glibc_tunables);
// Both, from a program's .preinit_array (XPU_TUNE_MALLOC): the threshold, then the restart with
// huge pages (which, when it happens, runs this again in the restarted program).
void tune_malloc(int argc, char** argv, char** envp);
// In a program's main file (an executable's .preinit_array: run by the loader before every shared
// library's initialisers, with main's arguments).
#define XPU_TUNE_MALLOC                                                                              \
    [[gnu::used, gnu::section(".preinit_array")]] static void (*xpu_tune_malloc)(int, char**, char**) = \
        &::xpu::trace::tune_malloc
// Set in the environment of the restarted program (and so of the programs it starts): restarted once.
inline constexpr const char* kRestartedMarker = "XPUSIM_MALLOC_RESTARTED";

}  // namespace xpu::trace
