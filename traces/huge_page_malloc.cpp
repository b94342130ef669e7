#include "traces/huge_page_malloc.h"

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#if defined(__linux__)
#include <unistd.h>
#endif

namespace xpu::trace {

void restart_with_huge_page_malloc(char** argv) {
#if defined(__linux__) && defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 35))
    // Once per process tree: the restarted program (and the programs it starts) find the marker.
    // (Not GLIBC_TUNABLES alone: a loader that does not know the tunable may drop it, and the
    // program would start again and again.)
    if (std::getenv(kRestartedMarker)) return;
    const char* tunables = std::getenv("GLIBC_TUNABLES");
    if (tunables && std::strstr(tunables, "glibc.malloc.hugetlb")) return;
    const char* preload = std::getenv("LD_PRELOAD");
    if (preload && std::strstr(preload, "vgpreload")) return;  // valgrind's tools
    std::ifstream thp("/sys/kernel/mm/transparent_hugepage/enabled");
    std::string mode;
    if (!std::getline(thp, mode) || mode.find("[never]") != std::string::npos) return;
    const std::string value = tunables && *tunables ? std::string(tunables) + ":glibc.malloc.hugetlb=1" : "glibc.malloc.hugetlb=1";
    const std::string before = tunables ? tunables : "";
    if (setenv("GLIBC_TUNABLES", value.c_str(), 1) == 0 && setenv(kRestartedMarker, "1", 1) == 0)
        execv("/proc/self/exe", argv);
    // Not restarted: on as it is, without the variables (they would mislead the programs this one starts).
    if (tunables) setenv("GLIBC_TUNABLES", before.c_str(), 1);
    else unsetenv("GLIBC_TUNABLES");
    unsetenv(kRestartedMarker);
#else
    (void)argv;
#endif
}

}  // namespace xpu::trace
