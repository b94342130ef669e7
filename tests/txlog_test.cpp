// The transaction log (format version 3, traces/txlog_format.h) reads back exactly what the
// models reported. Reference: the events themselves. Each run is recorded twice, by the log's
// writer and by a recorder that keeps every event in memory and builds from them what the
// analysis reads (analysis::RunData, as version 2's reader built it, one record per event):
// lives, unit operations, DMAs, flag changes, the transactions kept and counted, every HBM
// piece, in order, and the record count the reports print. Version 3 records less (deltas,
// chunk slots, HBM pieces derived from the interleave rule, names from the header), so any
// prediction the reader makes differently from the writer shows here as a differing value.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

#include "analysis/run_data.h"
#include "models/sim_time.h"
#include "platform/txlog_meta.h"
#include "platform/txlog_writer.h"
#include "tests/sim_fixture.h"
#include "traces/gen/collective.h"
#include "traces/txlog_format.h"

namespace xpu::test {
namespace {

namespace fs = std::filesystem;
using analysis::kNone;

// What version 2's reader built from a log of these events.
class Expected : public Recorder {
public:
    explicit Expected(const txlog::Header& h) : h_(h) {}
    analysis::RunData data;
    std::uint64_t events = 0;
    std::set<std::string> names;

    void streams_of(const analysis::RunData& run) {
        for (const auto& st : run.streams) {
            analysis::Stream s;
            s.chip = st.chip;
            s.core = st.core;
            s.life.resize(st.life.size());
            data.streams.push_back(std::move(s));
        }
    }
    void on_instruction(const InstrEvent& e) override {
        ++events;
        auto& l = data.streams.at(stream(e.chip, e.core)).life.at(e.index);
        l = {e.arrival, e.ready, e.issue, e.complete, true};
    }
    void on_unit_op(const UnitOpEvent& e) override {
        ++events;
        data.add_unit_op(unit(e.unit), stream(e.chip, e.core), e.index, e.op, e.accept, e.start, e.end, e.complete);
    }
    void on_dma(const DmaEvent& e) override {
        ++events;
        data.dmas.push_back({unit(e.engine), stream(e.chip, e.core), e.index, e.issue, e.start, e.complete, e.bytes});
    }
    void on_flag(const FlagEvent& e) override {
        ++events;
        analysis::FlagChange f;
        f.owner = unit(e.owner);
        f.flag = e.flag;
        f.old_value = e.old_value;
        f.new_value = e.new_value;
        f.time = e.time;
        if (e.by.known) {
            f.by_stream = stream(e.by.chip, e.by.core);
            f.by_index = e.by.index;
        }
        data.flags.push_back(f);
    }
    void on_mem(const MemEvent& e) override {
        ++events;
        analysis::MemTxn m;
        m.target = unit(e.target);
        m.initiator = unit(e.initiator);
        m.write = e.write;
        m.addr = e.addr;
        m.bytes = e.bytes;
        m.arrival = e.arrival;
        m.done = e.done;
        if (e.for_instr.known) {
            m.stream = stream(e.for_instr.chip, e.for_instr.core);
            m.index = e.for_instr.index;
        }
        const Role r = h_.units.at(m.target).role;
        if (r == Role::Hbm || r == Role::Link) data.mems.push_back(m);
        else ++data.mems_not_kept;
    }
    void on_hbm_channel(const HbmChannelEvent& e) override {
        ++events;
        data.hbm_pieces.push_back({unit(e.controller), e.channel, e.bytes, e.start, e.done});
    }

private:
    std::uint32_t unit(const char* s) {
        if (!s || !*s) return kNone;
        names.insert(s);
        for (std::size_t u = 0; u < h_.units.size(); ++u)
            if (h_.units[u].path == s) return static_cast<std::uint32_t>(u);
        ADD_FAILURE() << "not a unit of the header: " << s;
        return kNone;
    }
    std::uint32_t stream(std::uint16_t chip, std::uint16_t core) const {
        for (std::size_t s = 0; s < data.streams.size(); ++s)
            if (data.streams[s].chip == chip && data.streams[s].core == core) return static_cast<std::uint32_t>(s);
        return kNone;
    }
    const txlog::Header& h_;
};

// Every value, in order; the first difference of each kind is reported.
void expect_same(const analysis::RunData& want, const analysis::RunData& got) {
    ASSERT_EQ(want.streams.size(), got.streams.size());
    for (std::size_t s = 0; s < want.streams.size(); ++s)
        for (std::size_t i = 0; i < want.streams[s].life.size(); ++i) {
            const auto &a = want.streams[s].life[i], &b = got.streams[s].life[i];
            ASSERT_TRUE(a.seen == b.seen && (!a.seen || (a.arrival == b.arrival && a.ready == b.ready && a.issue == b.issue &&
                                                         a.complete == b.complete)))
                << "life of instruction " << i << " of stream " << s;
        }
    ASSERT_EQ(want.unit_ops.size(), got.unit_ops.size());
    for (std::size_t i = 0; i < want.unit_ops.size(); ++i) {
        const auto &a = want.unit_ops[i], &b = got.unit_ops[i];
        ASSERT_TRUE(a.unit == b.unit && a.stream == b.stream && a.index == b.index && a.op == b.op &&
                    want.op_accept(i) == got.op_accept(i) && a.start == b.start && a.end == b.end &&
                    want.op_complete(i) == got.op_complete(i))
            << "unit op " << i;
    }
    ASSERT_EQ(want.dmas.size(), got.dmas.size());
    for (std::size_t i = 0; i < want.dmas.size(); ++i) {
        const auto &a = want.dmas[i], &b = got.dmas[i];
        ASSERT_TRUE(a.engine == b.engine && a.stream == b.stream && a.index == b.index && a.issue == b.issue && a.start == b.start &&
                    a.complete == b.complete && a.bytes == b.bytes)
            << "dma " << i;
    }
    ASSERT_EQ(want.flags.size(), got.flags.size());
    for (std::size_t i = 0; i < want.flags.size(); ++i) {
        const auto &a = want.flags[i], &b = got.flags[i];
        ASSERT_TRUE(a.owner == b.owner && a.flag == b.flag && a.old_value == b.old_value && a.new_value == b.new_value &&
                    a.time == b.time && a.by_stream == b.by_stream && a.by_index == b.by_index)
            << "flag change " << i;
    }
    ASSERT_EQ(want.mems.size(), got.mems.size());
    EXPECT_EQ(want.mems_not_kept, got.mems_not_kept);
    for (std::size_t i = 0; i < want.mems.size(); ++i) {
        const auto &a = want.mems[i], &b = got.mems[i];
        ASSERT_TRUE(a.target == b.target && a.initiator == b.initiator && a.write == b.write && a.addr == b.addr &&
                    a.bytes == b.bytes && a.arrival == b.arrival && a.done == b.done && a.stream == b.stream &&
                    (a.stream == kNone || a.index == b.index))
            << "transaction " << i << ": addr " << a.addr << " / " << b.addr << ", arrival " << a.arrival << " / " << b.arrival
            << ", done " << a.done << " / " << b.done;
    }
    ASSERT_EQ(want.hbm_pieces.size(), got.hbm_pieces.size());
    for (std::size_t i = 0; i < want.hbm_pieces.size(); ++i) {
        const auto &a = want.hbm_pieces[i], &b = got.hbm_pieces[i];
        ASSERT_TRUE(a.controller == b.controller && a.channel == b.channel && a.bytes == b.bytes && a.start == b.start && a.done == b.done)
            << "HBM piece " << i << ": channel " << a.channel << " / " << b.channel << ", bytes " << a.bytes << " / " << b.bytes
            << ", start " << a.start << " / " << b.start << ", done " << a.done << " / " << b.done;
    }
    EXPECT_EQ(want.end, got.end);
}

struct RoundTrip {
    analysis::RunData want, got;
    std::uint64_t log_bytes = 0, instructions = 0;
};

// Simulates `trace` on `platform` with the log and the in-memory reference, reads the log back.
RoundTrip round_trip(const std::string& trace, const std::string& platform, const std::vector<std::string>& sets = {}) {
    RoundTrip r;
    auto cfg = platform::load_platform(source_path(platform), sets);
    platform::Simulation sim(cfg, trace);
    const fs::path dir = temp_path("out");
    fs::create_directories(dir);
    fs::copy_file(trace, dir / "txlog.trace.bin", fs::copy_options::overwrite_existing);
    const txlog::Header header = txlog_header(sim.platform(), trace, platform);
    txlog::Writer log((dir / "txlog.bin").string(), header);
    Expected expected(header);
    {
        // The streams (and their lengths) of the trace, as the reader finds them.
        analysis::RunData shape;
        trace::TraceFile f = trace::TraceFile::open(trace);
        for (const auto& info : f.streams()) {
            analysis::Stream s;
            s.chip = info.chip;
            s.core = info.core;
            s.life.resize(info.instructions);
            shape.streams.push_back(std::move(s));
            r.instructions += info.instructions;
        }
        expected.streams_of(shape);
    }
    RecorderFanOut both;
    both.add(&log);
    both.add(&expected);
    sim.platform().set_recorder(&both);
    const platform::RunResult res = sim.run();
    const Tick end = ns_to_ticks(res.simulated_ns);
    log.finish(end, res.stop == platform::StopReason::Deadlock ? 1 : 0);
    sim.platform().set_recorder(nullptr);
    expected.data.end = end;
    r.want = std::move(expected.data);
    analysis::LoadOptions keep;
    keep.keep_hbm_records = true;  // the pieces are compared one by one
    r.got = analysis::load_run(dir.string(), keep);
    r.log_bytes = r.got.log_bytes;
    // Version 2 wrote one record per event, a Name record per name used, and the End record.
    EXPECT_EQ(r.got.records, expected.events + expected.names.size() + 1);
    return r;
}

// One chip: a decode layer (HBM reads in 4 KiB chunks of four 1 KiB pieces, most ending
// together, VMEM writes, vector and matrix operations, flags).
TEST(TxlogRoundTrip, DecodeLayerOnOneChip) {
    RoundTrip r = round_trip(source_path("traces/samples/decode-layer.bin"), "configs/xpu.yaml");
    expect_same(r.want, r.got);
    EXPECT_GT(r.want.hbm_pieces.size(), 4 * r.want.dmas.size());
}

// An interleave the defaults never give: 768-byte granules over 7 channels (pieces that
// straddle a chunk, channels that do not divide a chunk), a 40 ns latency.
TEST(TxlogRoundTrip, OddInterleaveAndChannelCount) {
    RoundTrip r = round_trip(source_path("traces/samples/gemm-1k-late-dma.bin"), "configs/xpu.yaml",
                             {"chip.modules.hbm.interleave_bytes=768", "chip.modules.hbm.channels=7", "chip.modules.hbm.latency_ns=40"});
    expect_same(r.want, r.got);
}

// The DRAM model places its bursts by its own address mapping: its pieces are written
// explicitly (HbmPiece records), and read back the same.
TEST(TxlogRoundTrip, DramModelPiecesAreWrittenExplicitly) {
    RoundTrip r = round_trip(source_path("traces/samples/gemm-1k.bin"), "configs/xpu.yaml", {"chip.modules.hbm.model=dram"});
    expect_same(r.want, r.got);
    EXPECT_FALSE(r.want.hbm_pieces.empty());
}

// Four chips: all-gather over links (remote writes into other chips' memories).
TEST(TxlogRoundTrip, AllGatherOnARing) {
    RoundTrip r = round_trip(source_path("traces/samples/allgather-4.bin"), "configs/xpu-ring4.yaml");
    expect_same(r.want, r.got);
    std::size_t link = 0;
    for (const auto& m : r.want.mems) link += r.got.units[m.target].role == Role::Link;
    EXPECT_GT(link, 0u);
    // Each link's packets and hop latency come back from its "link" header line (the link bound
    // counts them: analysis/bounds.cpp); xpu-ring4.yaml's links: 1024 + 64 bytes, 500 ns.
    std::size_t links = 0;
    for (const auto& u : r.got.units)
        if (u.role == Role::Link) {
            ++links;
            EXPECT_EQ(u.packet_bytes, 1024u) << u.path;
            EXPECT_EQ(u.packet_overhead_bytes, 64u) << u.path;
            EXPECT_EQ(u.hop_latency_ps, 500'000u) << u.path;
        }
    EXPECT_EQ(links, 8u);  // 4 chips, two directions each
}

// A "link" header line names a unit of an earlier line and its packets; anything else is refused
// with the line and what was expected.
TEST(TxlogHeader, LinkLinesCompleteTheirUnit) {
    txlog::Header h;
    std::string err;
    ASSERT_TRUE(txlog::parse_header("unit xpu.links.chip0_xp IciLink link -1 50 0\nlink xpu.links.chip0_xp 2048 32 700000\n", h, err)) << err;
    ASSERT_EQ(h.units.size(), 1u);
    EXPECT_EQ(h.units[0].packet_bytes, 2048u);
    EXPECT_EQ(h.units[0].packet_overhead_bytes, 32u);
    EXPECT_EQ(h.units[0].hop_latency_ps, 700'000u);
    txlog::Header again;
    ASSERT_TRUE(txlog::parse_header(txlog::format_header(h), again, err)) << err;
    EXPECT_EQ(again.units[0].hop_latency_ps, 700'000u);
    // In another order than their units' (each is looked for from the last one found on): found.
    txlog::Header two;
    ASSERT_TRUE(txlog::parse_header("unit a IciLink link -1 50 0\nunit b IciLink link -1 50 0\nlink b 1024 64 1\nlink a 512 32 2\n", two, err)) << err;
    EXPECT_EQ(two.units[0].packet_bytes, 512u);
    EXPECT_EQ(two.units[1].packet_bytes, 1024u);
    for (const char* bad : {"link xpu.links.chip0_xp 2048 32 700000\n", "unit a IciLink link -1 50 0\nlink a 0 32 1\n",
                            "unit a IciLink link -1 50 0\nlink a 1024 x\n"}) {
        txlog::Header x;
        EXPECT_FALSE(txlog::parse_header(bad, x, err)) << bad;
        EXPECT_NE(err.find("expected 'link PATH PACKET_BYTES OVERHEAD_BYTES LATENCY_PS'"), std::string::npos) << err;
    }
}

// An all-reduce on a 2D torus: its reducing writes move each HBM piece twice.
TEST(TxlogRoundTrip, AllReduceOnATorus) {
    gen::CollectiveParams p;
    p.op = "all-reduce";
    p.algo = "torus2d";
    p.chips = 16;
    p.dims_x = 4;
    p.dims_y = 4;
    p.bytes = 1 << 20;
    p.chunks = 2;
    RoundTrip r = round_trip(collective_trace("ar16", p), "configs/xpu-torus4x4.yaml");
    expect_same(r.want, r.got);
    std::size_t twice = 0;  // pieces of a reducing write: more bytes than a granule (1 KiB)
    for (const auto& hp : r.want.hbm_pieces) twice += hp.bytes > 1024;
    EXPECT_GT(twice, 0u);
}

// Events straight to the writer: names the header lacks (Name records), pieces the rule does
// not give (explicit), more DMAs in flight than chunk slots, chunks out of address order,
// transactions for no instruction, flags counting down.
TEST(TxlogRoundTrip, WriterFallbacks) {
    const std::string trace = write_trace("nops", [](gen::Emitter& e) {
        for (int i = 0; i < 600; ++i) e.salu(1, 2);
    });
    const fs::path dir = temp_path("out");
    fs::create_directories(dir);
    fs::copy_file(trace, dir / "txlog.trace.bin");
    txlog::Header h;
    h.units = {{"hbm", "HbmController", Role::Hbm, 0, 1200, 1u << 30}, {"vmem", "Vmem", Role::Vmem, 0, 0, 1u << 20},
               {"dma", "DmaEngine", Role::Dma, 0, 100, 0}, {"vpu", "VectorUnit", Role::Vector, 0, 0, 0},
               {"flags", "SyncFlags", Role::Flags, 0, 0, 64}};
    txlog::HbmLayout l;
    l.path = "hbm";
    l.base = 4096;
    l.interleave = 1024;
    l.channels = 4;
    l.latency_ps = 1000;
    l.channel_gbps = 37.5;
    h.hbm = {l};
    Expected expected(h);
    {
        analysis::RunData shape;
        analysis::Stream s;
        s.life.resize(601);
        shape.streams.push_back(s);
        expected.streams_of(shape);
    }
    txlog::Header in_log = h;  // the reference knows vpu and flags; the log's header does not
    in_log.units.resize(3);
    txlog::Writer w((dir / "txlog.bin").string(), in_log);
    RecorderFanOut both;
    both.add(&w);
    both.add(&expected);
    Tick t = 1'000'000;
    std::uint64_t seed = 12345;
    auto rnd = [&](std::uint64_t n) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        return (seed >> 33) % n;
    };
    for (std::uint64_t i = 0; i < 600; ++i) {
        t += 50 + rnd(3000);
        both.on_flag({"flags", static_cast<std::uint16_t>(rnd(4)), 10 - static_cast<std::int64_t>(i), 9 - static_cast<std::int64_t>(i),
                      t + rnd(10), {rnd(2) == 0, 0, 0, i}});
        const bool by_dma = i % 3 == 0;
        // 200 DMAs, 5 chunks each, interleaved across all of them: more than the 128 slots.
        if (by_dma) {
            for (int k = 0; k < 5; ++k) {
                const std::uint64_t d = rnd(200);
                const std::uint64_t addr = 4096 + d * 65536 + static_cast<std::uint64_t>(rnd(16)) * 4096 + rnd(2) * 100;
                const Tick arrival = t + rnd(100'000), service = l.transfer_ps(1024);
                MemEvent m;
                m.target = "hbm";
                m.initiator = "dma";
                m.addr = addr;
                m.bytes = 4096 - rnd(2) * 1000;
                m.arrival = arrival;
                m.for_instr = {true, 0, 0, d};
                Tick done = arrival;
                const bool odd = rnd(4) == 0;  // a piece the rule does not give
                const unsigned passes = rnd(3) == 0 ? 2 : 1;
                l.for_each_piece(m.addr, m.bytes, [&](std::uint16_t ch, std::uint64_t bytes) {
                    const Tick moved = arrival + rnd(4) * 2000 + service * passes;
                    done = std::max(done, moved + l.latency_ps);
                    both.on_hbm_channel({"hbm", static_cast<std::uint16_t>(odd ? ch + 1 : ch), bytes * passes, arrival,
                                         l.start_of(arrival, moved + l.latency_ps, l.transfer_ps(bytes) * passes), moved + l.latency_ps});
                });
                m.done = done + rnd(2);
                both.on_mem(m);
                m.target = "vmem";
                m.write = true;
                m.arrival = m.done + 2000;
                m.done = m.arrival + 5000;
                m.for_instr.known = rnd(5) != 0;
                both.on_mem(m);
            }
            both.on_dma({0, 0, i, "dma", t, t + 10, t + 100'000, 4096});
        } else {
            UnitOpEvent op{"vpu", 0, 0, i, Opcode::VAlu, t + 100, t + 200, t + 300, t + 400 + rnd(2)};
            both.on_unit_op(op);
        }
        both.on_instruction({0, 0, i, nullptr, t - rnd(1000), t, t + 100, t + 400});
    }
    w.finish(t + 1'000'000, 0);
    expected.data.end = t + 1'000'000;
    analysis::LoadOptions keep;
    keep.keep_hbm_records = true;  // compared one by one
    const analysis::RunData got = analysis::load_run(dir.string(), keep);
    // The reference numbers units by the full list; the log added "vpu" and "flags" by Name.
    expected.data.units = got.units;
    for (auto& o : expected.data.unit_ops) o.unit = got.unit_named("vpu");
    for (auto& f : expected.data.flags) f.owner = got.unit_named("flags");
    expect_same(expected.data, got);
    EXPECT_EQ(got.records, expected.events + expected.names.size() + 1);
}

// A log of an older format is refused by name, with the version found and the one expected.
TEST(TxlogVersion, AnOlderLogIsRefusedWithItsVersion) {
    const std::string trace = write_trace("nops", [](gen::Emitter& e) { e.salu(1, 2); });
    const fs::path dir = temp_path("old");
    fs::create_directories(dir);
    fs::copy_file(trace, dir / "txlog.trace.bin");
    // Version 2's header (and a version-2 Instr record): magic, u32 2, u32 meta bytes, meta.
    const std::string meta = "platform configs/xpu.yaml\n";
    std::string bytes(txlog::kMagic, 8);
    const std::uint32_t version = 2, n = static_cast<std::uint32_t>(meta.size());
    bytes.append(reinterpret_cast<const char*>(&version), 4);
    bytes.append(reinterpret_cast<const char*>(&n), 4);
    bytes += meta;
    std::ofstream((dir / "txlog.bin").string(), std::ios::binary) << bytes;
    try {
        analysis::load_run(dir.string());
        ADD_FAILURE() << "a version-2 log was read";
    } catch (const analysis::LogError& e) {
        EXPECT_EQ(std::string(e.what()), (dir / "txlog.bin").string() +
                                             ": byte 8: transaction log format version 2, expected version 3 (this analysis reads "
                                             "no other: re-run the simulation with this build to write the log again)");
    }
}

// A block header claiming more bytes than the file holds is refused by what the file holds,
// before any buffer grows to the claim (a fuzzed 64 MiB claim per small input, zero-filled, was
// most of the log fuzz target's time).
TEST(TxlogTruncated, ABlockClaimingMoreThanTheFileHoldsIsRefusedBeforeAllocating) {
    const std::string trace = write_trace("nops", [](gen::Emitter& e) { e.salu(1, 2); });
    const fs::path dir = temp_path("claim");
    fs::create_directories(dir);
    fs::copy_file(trace, dir / "txlog.trace.bin");
    txlog::Header h;
    h.units = {{"vpu", "VectorUnit", Role::Vector, 0, 0, 0}};
    {
        txlog::Writer w((dir / "txlog.bin").string(), h);
        w.on_instruction({0, 0, 0, nullptr, 0, 10, 20, 30});
        w.finish(1000, 0);
    }
    std::string bytes;
    {
        std::ifstream in((dir / "txlog.bin").string(), std::ios::binary);
        bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    // magic (8), version (4), meta bytes (4), meta, then the first block: payload bytes (u32).
    std::uint32_t meta = 0;
    std::memcpy(&meta, bytes.data() + 12, 4);
    const std::size_t block = 16 + meta;
    ASSERT_LT(block + 12, bytes.size());
    const std::uint32_t claim = static_cast<std::uint32_t>(txlog::kMaxBlockPayload);  // allowed alone
    std::memcpy(bytes.data() + block, &claim, 4);
    std::ofstream((dir / "txlog.bin").string(), std::ios::binary | std::ios::trunc) << bytes;
    const std::size_t left = bytes.size() - block - 12;
    try {
        analysis::load_run(dir.string());
        ADD_FAILURE() << "a block claiming " << claim << " bytes in a " << bytes.size() << "-byte file was read";
    } catch (const analysis::LogError& e) {
        EXPECT_EQ(std::string(e.what()), (dir / "txlog.bin").string() + ": block at byte " + std::to_string(block) +
                                             ": truncated: the block needs " + std::to_string(claim) +
                                             " bytes, the file holds " + std::to_string(left) + " after its header");
    }
}

}  // namespace
}  // namespace xpu::test
