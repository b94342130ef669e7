// Shared by the fuzz targets: a scratch folder per process (in /dev/shm when there is one,
// so that the file round trips cost no disk I/O) and a loud failure for broken invariants.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

namespace xpu::fuzz {

inline const std::string& scratch_dir() {
    static const std::string dir = [] {
        std::string base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
        if (const char* t = std::getenv("TMPDIR"); t && *t && base != "/dev/shm") base = t;
        std::string d = base + "/xpusim-fuzz-" + std::to_string(::getpid());
        std::error_code ec;
        std::filesystem::create_directories(d, ec);
        if (ec) {
            std::fprintf(stderr, "fuzz: cannot create %s: %s\n", d.c_str(), ec.message().c_str());
            std::abort();
        }
        // Removed at exit (through a pointer that outlives the static string's destructor).
        static const std::string* for_cleanup = nullptr;
        for_cleanup = new std::string(d);
        std::atexit([] {
            std::error_code ignored;
            std::filesystem::remove_all(*for_cleanup, ignored);
        });
        return d;
    }();
    return dir;
}

inline std::string scratch(const std::string& name) { return scratch_dir() + "/" + name; }

inline void write_file(const std::string& path, const std::uint8_t* data, std::size_t size) {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
    if (!f) {
        std::fprintf(stderr, "fuzz: cannot write %s\n", path.c_str());
        std::abort();
    }
}

inline std::string read_file(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

// An invariant of the code under test does not hold: report and crash (libFuzzer keeps the input).
[[noreturn]] inline void broken(const std::string& what) {
    std::fprintf(stderr, "fuzz: invariant broken: %s\n", what.c_str());
    std::abort();
}

}  // namespace xpu::fuzz
