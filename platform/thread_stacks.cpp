#include "platform/thread_stacks.h"

#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <sys/resource.h>
#include <unistd.h>

#include <systemc>

namespace xpu::platform {

std::optional<std::string> thread_stack_problem(const ThreadStackDemand& d) {
    const std::size_t needed = d.mappings_held + d.threads * kMappingsPerThread + kMappingsSpare;
    if (d.max_map_count == 0 || needed <= d.max_map_count) return std::nullopt;
    std::ostringstream os;
    os << d.chips << " chip" << (d.chips == 1 ? "" : "s") << " elaborate " << d.threads
       << " SystemC threads, whose stacks need " << d.threads * kMappingsPerThread
       << " memory mappings (a stack and its guard page each); with the " << d.mappings_held
       << " the process holds and " << kMappingsSpare << " kept for the run, that is " << needed
       << ", over this machine's limit of " << d.max_map_count << " (/proc/sys/vm/max_map_count)";
    const std::size_t per_chip = d.chips ? (d.threads * kMappingsPerThread + d.chips - 1) / d.chips : 0;
    const std::size_t room = d.max_map_count > d.mappings_held + kMappingsSpare
                                 ? d.max_map_count - d.mappings_held - kMappingsSpare
                                 : 0;
    os << "; expected at most " << (per_chip ? room / per_chip : 0)
       << " chips of this kind here, or a higher limit (as root: sysctl -w vm.max_map_count="
       << ((needed + 65535) / 65536) * 65536 << ")";
    return os.str();
}

std::optional<std::string> address_space_problem(std::size_t chips, std::size_t threads, std::size_t mapped_bytes,
                                                 std::size_t limit_bytes) {
    if (limit_bytes == 0) return std::nullopt;
    const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE) > 0 ? ::sysconf(_SC_PAGESIZE) : 4096);
    const std::size_t per_thread = static_cast<std::size_t>(sc_core::SC_DEFAULT_STACK_SIZE) + page;
    const std::size_t spare = 64u << 20;  // kept for the run's own allocations
    const std::size_t needed = mapped_bytes + threads * per_thread + spare;
    if (needed <= limit_bytes) return std::nullopt;
    const auto mib = [](std::size_t b) { return (b + (1u << 20) - 1) >> 20; };
    std::ostringstream os;
    os << chips << " chip" << (chips == 1 ? "" : "s") << " elaborate " << threads << " SystemC threads, whose stacks need "
       << mib(threads * per_thread) << " MiB of address space on top of the " << mib(mapped_bytes)
       << " MiB the process has mapped: over its limit of " << mib(limit_bytes) << " MiB (ulimit -v); expected at most "
       << (limit_bytes > mapped_bytes + spare && chips && threads ? (limit_bytes - mapped_bytes - spare) / per_thread * chips / threads : 0)
       << " chips of this kind under that limit, or a higher one (ulimit -v " << (mib(needed) + 1) * 1024 << ")";
    return os.str();
}

std::optional<std::size_t> mapped_bytes_now() {
    std::ifstream in("/proc/self/status");
    std::string key;
    while (in >> key) {
        if (key == "VmSize:") {
            std::size_t kib = 0;
            if (in >> kib) return kib * 1024;
            return std::nullopt;
        }
        std::getline(in, key);
    }
    return std::nullopt;
}

std::size_t address_space_limit() {
    struct rlimit r {};
    if (::getrlimit(RLIMIT_AS, &r) != 0 || r.rlim_cur == RLIM_INFINITY) return 0;
    return static_cast<std::size_t>(r.rlim_cur);
}

std::size_t count_thread_processes() {
    std::size_t n = 0;
    std::vector<sc_core::sc_object*> todo = sc_core::sc_get_top_level_objects();
    while (!todo.empty()) {
        sc_core::sc_object* o = todo.back();
        todo.pop_back();
        const char* kind = o->kind();  // compared in place: a large platform has ~10^6 objects
        if (std::strcmp(kind, "sc_thread_process") == 0 || std::strcmp(kind, "sc_cthread_process") == 0) ++n;
        const auto& children = o->get_child_objects();
        todo.insert(todo.end(), children.begin(), children.end());
    }
    return n;
}

std::optional<std::size_t> memory_mappings_held() {
    std::ifstream in("/proc/self/maps");
    if (!in) return std::nullopt;
    std::size_t n = 0;
    std::string line;
    while (std::getline(in, line)) ++n;
    return n;
}

std::optional<std::size_t> kernel_max_map_count() {
    std::ifstream in("/proc/sys/vm/max_map_count");
    std::size_t v = 0;
    if (!(in >> v) || v == 0) return std::nullopt;
    return v;
}

}  // namespace xpu::platform
