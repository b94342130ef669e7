#include "platform/thread_stacks.h"

#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

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
