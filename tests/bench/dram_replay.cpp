// dram_replay: the DRAM model (models/dram.h) on one of the side-by-side patterns
// (tests/bench/dram_patterns.h), driven as Ramulator 2's LoadStoreTrace frontend drives its
// memory system; or writes a pattern as a Ramulator LoadStoreTrace. For
// scripts/dram_vs_ramulator.sh.
//   dram_replay --trace PATTERN FILE          write the pattern ("LD addr" / "ST addr" lines)
//   dram_replay PATTERN CHANNELS [--standard S]
// Prints bandwidth, mean read latency and the replay loop's host time (pattern generation
// excluded), as Ramulator 2 is configured in the script (dram_bench::ramulator_like).
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>

#include "tests/bench/dram_patterns.h"

using namespace xpu;

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
    if ((argc != 3 && argc != 5) || !known(argv[1]) || (argc == 5 && std::string(argv[3]) != "--standard")) {
        std::fprintf(stderr, "usage: dram_replay --trace PATTERN FILE | dram_replay PATTERN CHANNELS [--standard S]\n");
        return 2;
    }
    DramParams p = dram_bench::ramulator_like();
    if (argc == 5) p.standard = argv[4];
    const std::string name = argv[1];
    const auto tr = dram_bench::pattern(name);
    DramModel m(p, static_cast<unsigned>(std::stoul(argv[2])), dram_bench::kRamulatorQueue);
    const auto r = dram_bench::replay(m, tr, 8, dram_bench::low_load(name) ? 100 : 0);
    std::printf(
        "requests %zu cycles %lld bandwidth_gbps %.3f peak_gbps %.1f mean_read_latency_ns %.3f loop_s %.4f "
        "requests_per_s %.4g hits %llu misses %llu conflicts %llu\n",
        tr.size(), static_cast<long long>(r.cycles), r.gbps, m.peak_gbps(), r.read_latency_ns, r.loop_s,
        tr.size() / r.loop_s, static_cast<unsigned long long>(m.stats().hits),
        static_cast<unsigned long long>(m.stats().misses), static_cast<unsigned long long>(m.stats().conflicts));
    return 0;
}
