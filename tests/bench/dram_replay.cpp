// dram_replay: the DRAM model (models/dram.h) on one of the side-by-side patterns
// (tests/bench/dram_patterns.h), driven as Ramulator 2's LoadStoreTrace frontend drives its
// memory system or as DRAMSys's trace players and arbiter drive its controllers; or writes a
// pattern as a Ramulator LoadStoreTrace. For scripts/dram_vs_ramulator.sh and dram_vs_dramsys.sh.
//   dram_replay --trace PATTERN FILE          write the pattern ("LD addr" / "ST addr" lines)
//   dram_replay PATTERN CHANNELS [--standard S] [--command-bus shared|split|standard]
//               [--frontend ramulator|dramsys|dramsys-nogap]
// Prints bandwidth, mean read latency and the replay loop's host time (pattern generation
// excluded). Controller as Ramulator 2 is configured in the scripts (dram_bench::ramulator_like,
// one command bus unless --command-bus says otherwise). Frontends: ramulator (one in-order
// stream, 8 offers per cycle; the default), dramsys (one player per channel, the Simple arbiter
// accepting one request per channel every 2 cycles when they queue), dramsys-nogap (the same,
// one per cycle: the patched arbiter's XPUSIM_ARBITER_NO_GAP).
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>

#include "tests/bench/dram_patterns.h"

using namespace xpu;

namespace {
int usage() {
    std::fprintf(stderr,
                 "usage: dram_replay --trace PATTERN FILE | dram_replay PATTERN CHANNELS [--standard S] "
                 "[--command-bus shared|split|standard] [--frontend ramulator|dramsys|dramsys-nogap]\n");
    return 2;
}
}  // namespace

// libsystemc, linked through the models library, refers to sc_main; this tool never starts the
// SystemC kernel (the DRAM model is plain C++). The release build's linker drops the unused
// library; the sanitizer build keeps it and fails to link without this.
extern "C" int sc_main(int, char**) { return 0; }

int main(int argc, char** argv) {
    const auto& names = dram_bench::pattern_names();
    auto known = [&](const std::string& n) { return std::find(names.begin(), names.end(), n) != names.end(); };
    if (argc == 4 && std::string(argv[1]) == "--trace" && known(argv[2])) {
        std::ofstream f(argv[3]);
        for (const auto& r : dram_bench::pattern(argv[2])) f << (r.write ? "ST " : "LD ") << r.addr << '\n';
        if (!f) {
            std::fprintf(stderr, "dram_replay: cannot write %s\n", argv[3]);
            return 1;
        }
        return 0;
    }
    if (argc < 3 || argc % 2 == 0 || !known(argv[1])) return usage();
    DramParams p = dram_bench::ramulator_like();
    std::string frontend = "ramulator";
    for (int i = 3; i + 1 < argc; i += 2) {
        const std::string k = argv[i], v = argv[i + 1];
        if (k == "--standard" && (v == "HBM2" || v == "HBM2E" || v == "HBM3"))
            p.standard = v;
        else if (k == "--command-bus" && (v == "shared" || v == "split" || v == "standard"))
            p.command_bus = v;
        else if (k == "--frontend" && (v == "ramulator" || v == "dramsys" || v == "dramsys-nogap"))
            frontend = v;
        else
            return usage();
    }
    unsigned long channels = 0;
    try {
        channels = std::stoul(argv[2]);
    } catch (const std::exception&) {
    }
    if (channels == 0 || channels > 1024) {
        std::fprintf(stderr, "dram_replay: CHANNELS '%s': expected a count from 1 to 1024\n", argv[2]);
        return 2;
    }
    const std::string name = argv[1];
    const auto tr = dram_bench::pattern(name);
    DramModel m(p, static_cast<unsigned>(channels), dram_bench::kRamulatorQueue);
    const bool low = dram_bench::low_load(name);
    const auto r = frontend == "ramulator" || low
                       ? dram_bench::replay(m, tr, 8, low ? 100 : 0)
                       : dram_bench::replay_players(m, tr, 8, m.channels(), frontend == "dramsys" ? 2 : 1);
    std::printf(
        "requests %zu cycles %lld bandwidth_gbps %.3f peak_gbps %.1f mean_read_latency_ns %.3f loop_s %.4f "
        "requests_per_s %.4g hits %llu misses %llu conflicts %llu\n",
        tr.size(), static_cast<long long>(r.cycles), r.gbps, m.peak_gbps(), r.read_latency_ns, r.loop_s,
        tr.size() / r.loop_s, static_cast<unsigned long long>(m.stats().hits),
        static_cast<unsigned long long>(m.stats().misses), static_cast<unsigned long long>(m.stats().conflicts));
    return 0;
}
