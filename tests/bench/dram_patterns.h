// The request streams of the DRAM model's side-by-side runs against Ramulator 2
// (scripts/dram_vs_ramulator.sh, tests/dram_test.cpp), and a replay of a stream on the model the
// way Ramulator 2's LoadStoreTrace frontend drives its memory system. Shared by the replay tool
// (tests/bench/dram_replay.cpp, which also writes the streams as Ramulator traces) and the
// tests, so that both sides see the same requests.
#pragma once

#include <chrono>
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "models/dram.h"

namespace xpu::dram_bench {

struct Request {
    bool write;
    std::uint64_t addr;
};

// The patterns, 32 B accesses (the HBM2 transaction) within 1 GiB, a fixed seed:
//   seq32      sequential 32 B reads (also a stream of 64 B requests, two accesses each)
//   seq64      every other 32 B: a 64 B stride
//   rand32     random 32 B reads
//   block512   random 512 B-aligned blocks of 16 sequential reads
//   block4k    random 4 KiB-aligned blocks of 128 sequential reads
//   mix21      sequential, every third a write
//   mixrand21  random, every third a write
//   streams4   four sequential streams 256 MiB apart, interleaved in 4 KiB chunks
//   lowseq / lowrand  sequential / random reads, meant for one request every 100 cycles
inline const std::vector<std::string>& pattern_names() {
    static const std::vector<std::string> n = {"seq32", "seq64",     "rand32",   "block512", "block4k",
                                               "mix21", "mixrand21", "streams4", "lowseq",   "lowrand"};
    return n;
}
inline bool low_load(const std::string& name) { return name.rfind("low", 0) == 0; }

inline std::vector<Request> pattern(const std::string& name, std::size_t n = 400000) {
    if (low_load(name)) n = std::min<std::size_t>(n, 20000);
    std::mt19937_64 rng(15);
    const std::uint64_t span = 1ull << 30;
    auto rnd = [&](std::uint64_t unit) { return (rng() % (span / unit)) * unit; };
    std::vector<Request> r;
    r.reserve(n);
    auto blocks = [&](std::uint64_t size) {
        while (r.size() < n) {
            const std::uint64_t base = rnd(size);
            for (std::uint64_t k = 0; k < size / 32 && r.size() < n; ++k) r.push_back({false, base + k * 32});
        }
    };
    if (name == "seq32" || name == "lowseq") {
        for (std::size_t i = 0; i < n; ++i) r.push_back({false, i * 32});
    } else if (name == "seq64") {
        for (std::size_t i = 0; i < n; ++i) r.push_back({false, i * 64});
    } else if (name == "rand32" || name == "lowrand") {
        for (std::size_t i = 0; i < n; ++i) r.push_back({false, rnd(32)});
    } else if (name == "block512") {
        blocks(512);
    } else if (name == "block4k") {
        blocks(4096);
    } else if (name == "mix21") {
        for (std::size_t i = 0; i < n; ++i) r.push_back({i % 3 == 2, i * 32});
    } else if (name == "mixrand21") {
        for (std::size_t i = 0; i < n; ++i) r.push_back({i % 3 == 2, rnd(32)});
    } else if (name == "streams4") {
        for (std::uint64_t c = 0; r.size() < n; ++c)
            for (std::uint64_t s = 0; s < 4; ++s)
                for (std::uint64_t k = 0; k < 128 && r.size() < n; ++k)
                    r.push_back({false, s * (256ull << 20) + c * 4096 + k * 32});
    }
    return r;
}

struct ReplayResult {
    std::int64_t cycles = 0;
    double gbps = 0, read_latency_ns = 0, loop_s = 0;
};

// Ramulator's figures of a replay that ended at `cycle`: bandwidth = requests x access bytes /
// cycles; mean read latency = sum of (data back - queued) over the reads back by then / reads
// queued. `back`: (data back, queued) per issued read.
inline ReplayResult replay_result(const DramModel& m, std::size_t requests, std::uint64_t reads,
                                  const std::vector<std::pair<std::int64_t, std::int64_t>>& back, std::int64_t cycle,
                                  std::chrono::steady_clock::time_point t0) {
    ReplayResult res;
    res.loop_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    double lat = 0;
    for (const auto& b : back)
        if (b.first <= cycle) lat += static_cast<double>(b.first - b.second);
    res.cycles = cycle;
    const double ns = static_cast<double>(cycle) * m.timing().tck_ns;
    res.gbps = static_cast<double>(requests) * m.access_bytes() / ns;
    res.read_latency_ns = reads ? lat / static_cast<double>(reads) * m.timing().tck_ns : 0.0;
    return res;
}

// Ramulator 2's LoadStoreTrace frontend: per_cycle requests offered per memory cycle in order
// (one before the first cycle), a refused one again the next cycle; or (every > 0) one every
// `every` cycles. The run ends when the last request is queued. Bandwidth = requests x access
// bytes / cycles; mean read latency = sum of (data back - queued) over the reads back by then /
// reads queued: Ramulator's figures.
inline ReplayResult replay(DramModel& m, const std::vector<Request>& tr, unsigned per_cycle, unsigned every) {
    const auto t0 = std::chrono::steady_clock::now();
    const unsigned channels = m.channels();
    const std::int64_t read_lat = m.timing().CL + m.timing().BL;
    std::vector<std::pair<std::int64_t, std::int64_t>> back;  // (data back, queued) per issued read
    std::size_t next = 0;
    std::uint64_t reads = 0;
    std::int64_t cycle = 0;
    for (;; ++cycle) {
        const unsigned n = every ? (cycle % every == 0 ? 1 : 0) : (cycle == 0 ? 1 : per_cycle);
        for (unsigned k = 0; k < n && next < tr.size(); ++k) {
            if (!m.offer(tr[next].addr, tr[next].write, next)) break;
            if (!tr[next].write) ++reads;
            ++next;
        }
        if (next == tr.size()) break;
        if (every && cycle % every != every - 1) {  // low load: idle channels jump to the next offer
            bool idle = true;
            for (unsigned ch = 0; ch < channels && idle; ++ch) idle = m.idle(ch);
            if (idle) {
                const std::int64_t to = cycle / every * every + every - 1;
                for (unsigned ch = 0; ch < channels; ++ch) m.skip_to(ch, to);
                cycle = to - 1;
                continue;
            }
        }
        for (unsigned ch = 0; ch < channels; ++ch) m.tick(ch);
        for (const DramDone& d : m.completions())
            if (!d.write) back.push_back({d.issue + read_lat, d.arrive});
        m.completions().clear();
    }
    return replay_result(m, tr.size(), reads, back, cycle, t0);
}

// DRAMSys's trace players and Simple arbiter (scripts/dram_vs_dramsys.sh): request i belongs to
// player i mod `players` and is due at cycle i / per_cycle; a player offers its next request
// once the last was accepted (one outstanding unaccepted request each, the STL player waiting
// for END_REQ), so a player that waits for a full channel holds back only its own requests.
// Per channel, waiting players are served first come first served, one request a cycle; a
// request of another player than the last accepted one waits `gap` cycles after that one (2:
// DRAMSys's Simple arbiter: the channel is busy from the request's BEGIN_REQ to the
// controller's END_REQ a cycle later, a request of another player arriving meanwhile or with
// the END_REQ is queued and forwarded one cycle after the END_REQ; the same player sends its next
// request on the END_REQ, to a free channel, so a player alone on its channel gets one a cycle;
// 1: the patched arbiter's XPUSIM_ARBITER_NO_GAP). Figures as replay()'s.
inline ReplayResult replay_players(DramModel& m, const std::vector<Request>& tr, unsigned per_cycle, unsigned players,
                                   unsigned gap) {
    const auto t0 = std::chrono::steady_clock::now();
    const unsigned channels = m.channels();
    const std::int64_t read_lat = m.timing().CL + m.timing().BL;
    std::vector<std::pair<std::int64_t, std::int64_t>> back;
    std::vector<std::size_t> next(players);           // each player's next request
    std::vector<std::int64_t> free_at(players, 0);     // when a player may offer again
    std::vector<bool> waiting(players, false);         // in a channel's line
    std::vector<std::vector<unsigned>> line(channels);  // players waiting per channel, FIFO
    std::vector<std::size_t> head(channels, 0);
    std::vector<std::int64_t> last_accept(channels, -1000000);
    std::vector<unsigned> last_player(channels, players);
    for (unsigned p = 0; p < players; ++p) next[p] = p;
    std::size_t accepted = 0;
    std::uint64_t reads = 0;
    std::int64_t cycle = 0;
    for (;; ++cycle) {
        for (unsigned p = 0; p < players; ++p)  // players whose request is due join its channel's line
            if (!waiting[p] && next[p] < tr.size() && free_at[p] <= cycle &&
                static_cast<std::int64_t>(next[p] / per_cycle) <= cycle) {
                line[m.decode(tr[next[p]].addr).ch].push_back(p);
                waiting[p] = true;
            }
        for (unsigned ch = 0; ch < channels; ++ch) {
            auto& l = line[ch];
            if (head[ch] == l.size()) continue;
            const unsigned p = l[head[ch]];
            if (cycle < last_accept[ch] + (p == last_player[ch] ? 1 : static_cast<std::int64_t>(gap))) continue;
            const Request& r = tr[next[p]];
            if (!m.offer(r.addr, r.write, next[p])) continue;
            if (!r.write) ++reads;
            ++accepted;
            waiting[p] = false;
            free_at[p] = cycle + 1;
            next[p] += players;
            last_accept[ch] = cycle;
            last_player[ch] = p;
            if (++head[ch] == l.size()) {
                l.clear();
                head[ch] = 0;
            }
        }
        if (accepted == tr.size()) break;
        for (unsigned ch = 0; ch < channels; ++ch) m.tick(ch);
        for (const DramDone& d : m.completions())
            if (!d.write) back.push_back({d.issue + read_lat, d.arrive});
        m.completions().clear();
    }
    return replay_result(m, tr.size(), reads, back, cycle, t0);
}

// Ramulator 2's Generic controller as configured in the side-by-side: queues that hold 33
// requests (it accepts while it holds at most 32) and write watermarks 0.8 and 0.2 of 32 (more
// than 25.6 writes: drain; fewer than 6.4: back to reads), refresh off (its AllBank refresh
// manager issues none for HBM2, which has no rank level), and one command bus: Ramulator 2's
// Generic controller issues one command per cycle, row or column (generic_dram_controller.cpp,
// tick(): one issue_command), where JESD235 and our HBM2 preset have two buses (command_bus).
inline DramParams ramulator_like(DramParams p = {}) {
    p.refresh = false;
    p.command_bus = "shared";
    p.write_high = 25.6 / 33;
    p.write_low = 6.4 / 33;
    return p;
}
constexpr unsigned kRamulatorQueue = 33;

}  // namespace xpu::dram_bench
