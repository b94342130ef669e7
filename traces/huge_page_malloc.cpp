#include "traces/huge_page_malloc.h"

#include <cstdlib>
#include <cstring>

#if defined(__GLIBC__)
#include <malloc.h>
#endif
#if defined(__linux__)
#include <fcntl.h>
#include <unistd.h>
#endif

namespace xpu::trace {

namespace {
// The value of NAME in envp, or null. (Not getenv: from .preinit_array the C library has not
// set its environment yet; the loader's envp is the process's.)
const char* env_value(char** envp, const char* name) {
    const std::size_t n = std::strlen(name);
    for (char** e = envp; e && *e; ++e)
        if (std::strncmp(*e, name, n) == 0 && (*e)[n] == '=') return *e + n + 1;
    return nullptr;
}
}  // namespace

// Runs from .preinit_array, before any shared library's initialisers: C library calls only (no
// iostreams, no std::string, no getenv/setenv), and the new environment goes to execve.
void restart_with_huge_page_malloc(int /*argc*/, char** argv, char** envp) {
#if defined(__linux__) && defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 35))
    // Once per process tree: the restarted program (and the programs it starts) find the marker.
    // (Not GLIBC_TUNABLES alone: a loader that does not know the tunable may drop it, and the
    // program would start again and again.)
    if (!argv || !envp || env_value(envp, kRestartedMarker)) return;
    const char* tunables = env_value(envp, "GLIBC_TUNABLES");
    if (tunables && std::strstr(tunables, "glibc.malloc.hugetlb")) return;
    if (tunables && !*tunables) tunables = nullptr;  // set but empty: as if unset
    const char* preload = env_value(envp, "LD_PRELOAD");
    if (preload && std::strstr(preload, "vgpreload")) return;  // valgrind's tools
    // The kernel's mode, e.g. "always [madvise] never": nothing to ask for when it is [never].
    char mode[128] = {};
    const int fd = open("/sys/kernel/mm/transparent_hugepage/enabled", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    const ssize_t got = read(fd, mode, sizeof mode - 1);
    close(fd);
    if (got <= 0 || std::strstr(mode, "[never]")) return;
    // The environment as it is, GLIBC_TUNABLES with the tunable added (other tunables kept), the marker.
    static const char kTunables[] = "GLIBC_TUNABLES=", kHugetlb[] = "glibc.malloc.hugetlb=1";
    const std::size_t name_len = sizeof kTunables - 1;
    std::size_t n = 0;
    while (envp[n]) ++n;
    char** env = static_cast<char**>(std::malloc((n + 3) * sizeof(char*)));
    // "GLIBC_TUNABLES=" [old ":"] "glibc.malloc.hugetlb=1", and "XPUSIM_MALLOC_RESTARTED=1".
    char* tunable = static_cast<char*>(std::malloc(name_len + (tunables ? std::strlen(tunables) + 1 : 0) + sizeof kHugetlb));
    char* marker = static_cast<char*>(std::malloc(std::strlen(kRestartedMarker) + sizeof "=1"));
    if (env && tunable && marker) {
        std::size_t k = 0;
        for (std::size_t i = 0; i < n; ++i)
            if (std::strncmp(envp[i], kTunables, name_len) != 0) env[k++] = envp[i];
        std::strcpy(tunable, kTunables);
        if (tunables) std::strcat(std::strcat(tunable, tunables), ":");
        std::strcat(tunable, kHugetlb);
        std::strcat(std::strcpy(marker, kRestartedMarker), "=1");
        env[k++] = tunable;
        env[k++] = marker;
        env[k] = nullptr;
        execve("/proc/self/exe", argv, env);
    }
    // Not restarted: on as it is, the environment untouched.
    std::free(marker);
    std::free(tunable);
    std::free(env);
#else
    (void)argv;
    (void)envp;
#endif
}

void fix_malloc_mmap_threshold(const char* glibc_tunables) {
#if defined(__GLIBC__)
    if (glibc_tunables && std::strstr(glibc_tunables, "glibc.malloc.mmap_threshold")) return;
    mallopt(M_MMAP_THRESHOLD, 1024 * 1024);
#else
    (void)glibc_tunables;
#endif
}

// (From .preinit_array: the environment is the loader's envp, not getenv's yet.)
void tune_malloc(int argc, char** argv, char** envp) {
    fix_malloc_mmap_threshold(env_value(envp, "GLIBC_TUNABLES"));
    restart_with_huge_page_malloc(argc, argv, envp);
}

}  // namespace xpu::trace
