// What the host allows that no input states: SystemC gives each thread process a stack of its
// own, mapped with a guard page below it (two memory mappings per thread), when the simulation
// starts. Past the kernel's vm.max_map_count the mappings are refused and SystemC fails deep in
// sc_start (an out-of-memory or a coroutine error, from a different place each run). A large
// platform is therefore checked once elaborated, before any stack exists, against the limit.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace xpu::platform {

// Memory mappings a thread process adds when the simulation starts: its stack and the guard page.
inline constexpr std::size_t kMappingsPerThread = 2;
// Mappings kept free for what the process maps after the threads' stacks: the trace check's
// thread, the log writers' buffers, the analysis, malloc arenas (a few hundred at most).
inline constexpr std::size_t kMappingsSpare = 1024;

struct ThreadStackDemand {
    std::size_t chips = 1;
    std::size_t threads = 0;        // thread processes in the elaborated design
    std::size_t mappings_held = 0;  // the process's memory mappings now
    std::size_t max_map_count = 0;  // the kernel's limit (vm.max_map_count)
};

// The problem, in words, when the threads' stacks would exceed the limit; nullopt when they fit.
// The text says how many are needed and allowed, how many chips of this kind fit, and how to
// raise the limit.
std::optional<std::string> thread_stack_problem(const ThreadStackDemand& d);

// The same for the process's address space (ulimit -v, RLIMIT_AS): each thread's stack (SystemC's
// default size and a guard page) on top of what the process has mapped now (`mapped_bytes`),
// against `limit_bytes` (0: no limit). SystemC fails to make a stack past the limit, mid-start, with
// an error that reads like an internal one (E518).
std::optional<std::string> address_space_problem(std::size_t chips, std::size_t threads, std::size_t mapped_bytes,
                                                 std::size_t limit_bytes);
// The process's mapped bytes (VmSize) and its address-space limit (0: none); nullopt where unreadable.
std::optional<std::size_t> mapped_bytes_now();
std::size_t address_space_limit();

// The thread processes (SC_THREAD, SC_CTHREAD, spawned threads) of the elaborated design.
std::size_t count_thread_processes();
// The lines of /proc/self/maps, and the kernel's vm.max_map_count; nullopt where unreadable
// (not Linux): then nothing is checked.
std::optional<std::size_t> memory_mappings_held();
std::optional<std::size_t> kernel_max_map_count();

}  // namespace xpu::platform
