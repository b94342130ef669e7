// The pieces of verification by replay that need no simulator: the run's lower bounds (closed
// forms from the bytes and busy times of a hand-built run), the cap of estimates at the headroom,
// the data-dependency chain bound, the ranking by verdict and measured saving, and the verification file --apply reads back.
// The replays themselves are checked end to end in tests/e2e/verify.sh.
#include <cstdio>
#include <filesystem>

#include <gtest/gtest.h>

#include "analysis/bounds.h"
#include "analysis/chain_bound.h"
#include "analysis/verify.h"
#include "analysis_sample.h"

using namespace xpu;
using namespace xpu::analysis;

namespace {

Suggestion sug(const char* kind, Tick est) {
    Suggestion s;
    s.kind = kind;
    s.estimated_saving = est;
    return s;
}

Suggestion measured(const char* kind, Tick est, std::int64_t saving, Verdict v) {
    Suggestion s = sug(kind, est);
    s.measured = true;
    s.measured_saving = saving;
    s.verdict = v;
    return s;
}

}  // namespace

// HBM bound = bytes moved on the chip's channels / its peak (1 GB/s = 1 byte/ns); link bound =
// bytes over the link / its bandwidth; compute bound = the summed streaming time of a matrix
// unit's matmuls (its weight pushes overlap streaming depending on the order: not counted).
TEST(RunBounds, ClosedFormsOfBytesAndBusyTime) {
    RunData run;
    run.units = {{"xpu.chip0.hbm", "HbmController", Role::Hbm, 0, 1000, 0},
                 {"xpu.links.chip0_xp", "IciLink", Role::Link, -1, 50, 0},
                 {"xpu.chip0.core0.mxu0", "MatrixUnit", Role::Matrix, 0, 0, 0},
                 {"xpu.chip0.dma0", "DmaEngine", Role::Dma, 0, 300, 0}};
    run.hbm_pieces = {{0, 0, 600'000, 0, 10}, {0, 1, 400'000, 0, 10}};  // 1 MB at 1000 GB/s: 1 us
    MemTxn link;
    link.target = 1;
    link.bytes = 25'000;  // at 50 GB/s: 500 ns
    run.mems = {link};
    // only the matmuls' streaming counts: 300 + 400 ns
    run.add_unit_op(2, kNone, 0, Opcode::MPush, 0, 0, 900'000, 900'000);
    run.add_unit_op(2, kNone, 1, Opcode::MatMul, 0, 100'000, 400'000, 500'000);
    run.add_unit_op(2, kNone, 2, Opcode::MatMul, 0, 400'000, 800'000, 900'000);
    const RunBounds b = run_bounds(run, 1'250'000);
    ASSERT_EQ(b.bounds.size(), 3u);  // (a log without the link's packets: the payload alone, no latency)
    EXPECT_EQ(b.bounds[0].name, "HBM");
    EXPECT_EQ(b.bounds[0].time, 1'000'000u);
    EXPECT_EQ(b.bounds[1].name, "link");
    EXPECT_EQ(b.bounds[1].time, 500'000u);
    EXPECT_EQ(b.bounds[2].name, "compute");
    EXPECT_EQ(b.bounds[2].time, 700'000u);
    EXPECT_EQ(b.lower, 1'000'000u);
    EXPECT_EQ(b.headroom, 250'000u);
    EXPECT_NE(describe_headroom(b, 1'250'000).find("25.0% above its HBM bound"), std::string::npos)
        << describe_headroom(b, 1'250'000);
}

// A packetised link (models/ici.h: each packet of up to 1024 payload bytes adds 64 on the wire;
// 500 ns per hop): however the 25,000 bytes are cut into transfers, at least 25,000 x 1088 / 1024
// bytes cross at 50 GB/s (531.25 ns), and the last of them arrives a hop latency later.
TEST(RunBounds, LinkBoundCountsThePacketOverheadAndTheLastArrival) {
    RunData run;
    run.units = {{"xpu.links.chip0_xp", "IciLink", Role::Link, -1, 50, 0, 1024, 64, 500'000}};
    MemTxn link;
    link.target = 0;
    link.bytes = 25'000;
    run.mems = {link};
    const RunBounds b = run_bounds(run, 2'000'000);
    ASSERT_EQ(b.bounds.size(), 1u);
    EXPECT_EQ(b.bounds[0].name, "link");
    EXPECT_EQ(b.bounds[0].time, 531'250u + 500'000u);
    EXPECT_EQ(b.headroom, 2'000'000u - 1'031'250u);
}

TEST(RunBounds, EstimatesCappedAtHeadroomAndNumbered) {
    RunBounds b;
    b.headroom = 1000;
    std::vector<Suggestion> s = {sug("a", 500), sug("b", 5000), sug("c", 0), sug("d", 1000)};
    cap_estimates(b, s);
    ASSERT_EQ(s.size(), 3u);  // nothing to gain: dropped
    for (const auto& x : s) EXPECT_LE(x.estimated_saving, 1000u) << x.kind;
    EXPECT_EQ(s[0].kind, "b");  // capped to 1000, ties keep their order
    EXPECT_EQ(s[1].kind, "d");
    EXPECT_EQ(s[2].kind, "a");
    EXPECT_EQ(s[0].candidate, 1u);
    EXPECT_EQ(s[2].candidate, 3u);
    // Only the estimate the headroom cut says so (reports: "capped at the headroom").
    EXPECT_TRUE(s[0].estimate_capped);
    EXPECT_FALSE(s[1].estimate_capped);  // exactly the headroom: the finder's own figure
    EXPECT_FALSE(s[2].estimate_capped);
}

TEST(Verify, RankedVerifiedByMeasuredThenNotVerifiedThenNoGain) {
    std::vector<Suggestion> s = {measured("slower", 900, -5000, Verdict::NoGain), sug("unreplayed", 800),
                                 measured("small", 700, 100, Verdict::Verified), measured("big", 100, 4000, Verdict::Verified),
                                 measured("tiny", 50, 2, Verdict::NoGain)};
    rank_by_verdict(s);
    const char* want[] = {"big", "small", "unreplayed", "tiny", "slower"};
    for (std::size_t i = 0; i < 5; ++i) EXPECT_EQ(s[i].kind, want[i]) << i;
}

// Which candidates are replayed: each kind's best estimate first, then the rest by estimate (the
// kinds' estimates are calibrated differently; analysis/verify.h says why).
TEST(Verify, CandidatesAreEachKindsBestThenTheBestEstimates) {
    std::vector<analysis::Suggestion> s(7);
    const char* kinds[] = {"reorder", "reorder", "hoist_dma", "reorder", "drop_wait", "hoist_dma", "reorder"};
    for (std::size_t i = 0; i < s.size(); ++i) s[i].kind = kinds[i];
    EXPECT_EQ(analysis::candidate_order(s), (std::vector<std::size_t>{0, 2, 4, 1, 3, 5, 6}));
    EXPECT_TRUE(analysis::candidate_order({}).empty());
}

// A variant (hoist_wait: a hoist with its waits raised too) takes no kind's first place: placed
// first as a kind of its own, it left a planted decode's drop_wait unreplayed (verify.h).
TEST(Verify, AVariantOnlyTakesThePlacesLeft) {
    std::vector<analysis::Suggestion> s(4);
    const char* kinds[] = {"hoist_wait", "reorder", "drop_wait", "hoist_dma"};
    for (std::size_t i = 0; i < s.size(); ++i) s[i].kind = kinds[i];
    s[0].variant = true;
    EXPECT_EQ(analysis::candidate_order(s), (std::vector<std::size_t>{1, 2, 3, 0}));
}

// A variant whose estimate equals its replayed base's is replayed too, beyond K: the estimates
// cannot tell them apart (hoist_dma's engine variant; verify.h). Not one with another estimate,
// nor one whose base was not replayed, nor a variant of another kind.
TEST(Verify, AVariantTiedWithItsReplayedBaseIsReplayedToo) {
    std::vector<analysis::Suggestion> s(5);
    const char* kinds[] = {"hoist_dma", "hoist_dma", "hoist_dma", "hoist_wait", "reorder"};
    const Tick est[] = {1000, 1000, 900, 1000, 800};
    for (std::size_t i = 0; i < s.size(); ++i) s[i].kind = kinds[i], s[i].estimated_saving = est[i];
    s[1].variant = s[2].variant = s[3].variant = true;
    EXPECT_TRUE(analysis::tied_with_replayed_base(s, 1, {0, 4}));
    EXPECT_FALSE(analysis::tied_with_replayed_base(s, 2, {0, 4}));  // another estimate
    EXPECT_FALSE(analysis::tied_with_replayed_base(s, 3, {0, 4}));  // another kind
    EXPECT_FALSE(analysis::tied_with_replayed_base(s, 1, {4}));     // its base not replayed
    EXPECT_FALSE(analysis::tied_with_replayed_base(s, 0, {0, 4}));  // not a variant
}

TEST(Verify, FloorIsAThousandthOfTheRunAndAtLeastOneNanosecond) {
    EXPECT_EQ(verify_floor(10'000'000), 10'000u);
    EXPECT_EQ(verify_floor(50'000), 1000u);
}

// xpu_analyze --apply N reads back the ranking the report showed.
TEST(Verify, FileRoundTripGivesTheSameRanking) {
    const RunData run = sample::run();
    Analysis a = sample::analysis(run);
    for (std::size_t i = 0; i < a.suggestions.size(); ++i) a.suggestions[i].candidate = static_cast<std::uint32_t>(i + 1);
    Analysis fresh = a;  // what a new analysis of the same run gives: estimate order
    a.suggestions[2].measured = true;
    a.suggestions[2].measured_saving = 123456;
    a.suggestions[2].verdict = Verdict::Verified;
    a.suggestions[2].patch_crc = 42;
    rank_by_verdict(a.suggestions);
    const std::string path = (std::filesystem::temp_directory_path() / ("verification_test_" + std::to_string(::getpid()) + ".txt")).string();
    write_verification(path, a);
    ASSERT_TRUE(read_verification(path, fresh));
    ASSERT_EQ(fresh.suggestions.size(), a.suggestions.size());
    for (std::size_t i = 0; i < a.suggestions.size(); ++i) {
        EXPECT_EQ(fresh.suggestions[i].kind, a.suggestions[i].kind) << i;
        EXPECT_EQ(fresh.suggestions[i].verdict, a.suggestions[i].verdict) << i;
        EXPECT_EQ(fresh.suggestions[i].measured_saving, a.suggestions[i].measured_saving) << i;
        EXPECT_EQ(fresh.suggestions[i].patch_crc, a.suggestions[i].patch_crc) << i;
    }
    EXPECT_EQ(fresh.suggestions[0].kind, "drop_wait");  // the verified one first
    Analysis other = sample::analysis(run);
    other.suggestions.pop_back();  // a different analysis: refused
    EXPECT_THROW(read_verification(path, other), std::runtime_error);
    std::remove(path.c_str());
    EXPECT_FALSE(read_verification(path, other));
}

// Hand-built instructions for the bound tests: a DMA between local memories on flag 1, and a
// unit instruction with an optional destination and first source register (-1: none).
namespace {
Instruction dma(Space ss, std::uint64_t src, Space ds, std::uint64_t dst, std::uint64_t bytes) {
    Instruction in;
    in.op = Opcode::Dma;
    in.mem_src = {ss, kLocalChip, src};
    in.mem_dst = {ds, kLocalChip, dst};
    in.bytes = bytes;
    in.flag = 1;
    in.set(kMemSrc | kMemDst | kBytes | kFlag);
    return in;
}
Instruction op(Opcode o, int dst, int src) {
    Instruction in;
    in.op = o;
    if (dst >= 0) {
        in.dst = static_cast<std::uint8_t>(dst);
        in.set(kDst);
    }
    if (src >= 0) {
        in.src[0] = static_cast<std::uint8_t>(src);
        in.set(kSrc0);
    }
    return in;
}
}  // namespace

// The data-dependency chain (analysis/chain_bound.h), by hand: a 1 MB load (1 us at the HBM's
// 1000 GB/s = 1 byte/ns), a vector load of it (10 ns of pipeline), an ALU op on that register
// (20 ns), a store (5 ns) and a 1000-byte write-back of the stored data (nothing: pipeline_store
// may cut a write-back into pieces issued as their bytes are written, the last one small): one
// chain of 1.035 us. A second 1 MB load nothing reads, and the waits between, are not on it;
// neither is the queueing the run showed (the unit ops below started late).
TEST(ChainBound, LongestTrueDependencyChainAtLeastTimes) {
    RunData run;
    run.units = {{"xpu.chip0.hbm", "HbmController", Role::Hbm, 0, 1000, 0},
                 {"xpu.chip0.core0.vpu0", "VectorUnit", Role::Vector, 0, 0, 0}};
    Instruction vld, valu, vst, wait;
    vld.op = Opcode::VLoad;
    vld.dst = 1;
    vld.mem_src = {Space::Vmem, kLocalChip, 0};
    vld.bytes = 4096;
    vld.set(kDst | kMemSrc | kBytes);
    valu.op = Opcode::VAlu;
    valu.dst = 2;
    valu.src[0] = 1;
    valu.set(kDst | kSrc0);
    vst.op = Opcode::VStore;
    vst.src[0] = 2;
    vst.mem_dst = {Space::Vmem, kLocalChip, 8192};
    vst.bytes = 4096;
    vst.set(kSrc0 | kMemDst | kBytes);
    wait.op = Opcode::SWait;
    Stream st;
    st.code = {dma(Space::Hbm, 0, Space::Vmem, 0, 1'000'000), dma(Space::Hbm, 0x200000, Space::Vmem, 0x200000, 1'000'000), wait,
               vld, valu, vst, dma(Space::Vmem, 8192, Space::Hbm, 0x100000, 1000)};
    for (std::size_t i = 0; i < st.code.size(); ++i) {
        Life l;
        l.seen = true;
        l.issue = 3'000'000 + 1000 * i;  // as issued: in program order
        st.life.push_back(l);
    }
    run.streams = {st};
    run.add_unit_op(1, 0, 3, Opcode::VLoad, 0, 5'000'000, 5'010'000, 5'012'000);
    run.add_unit_op(1, 0, 4, Opcode::VAlu, 0, 6'000'000, 6'020'000, 6'021'000);
    run.add_unit_op(1, 0, 5, Opcode::VStore, 0, 7'000'000, 7'005'000, 7'006'000);
    const Context cx(run);
    const ChainBound c = data_chain_bound(cx);
    EXPECT_EQ(c.time, 1'035'000u);
    EXPECT_EQ(c.where, "chip0.core0");
    // Added to the bounds, it limits when nothing else is larger.
    RunBounds b;
    add_bound(b, {"chain", c.where + " data-dependency chain", c.time}, 2'000'000);
    EXPECT_EQ(b.lower, 1'035'000u);
    EXPECT_EQ(b.headroom, 965'000u);
}

namespace {

// The span-bound tests' chip: an HBM of 1 byte/ns, a vector unit and a matrix unit; and their
// vector load of 4 KB of VMEM at 0 into v1 (0x41).
std::vector<Unit> span_units() {
    return {{"xpu.chip0.hbm", "HbmController", Role::Hbm, 0, 1000, 0},
            {"xpu.chip0.core0.vpu0", "VectorUnit", Role::Vector, 0, 0, 0},
            {"xpu.chip0.core0.mxu0", "MatrixUnit", Role::Matrix, 0, 0, 0}};
}
Instruction vload_v41() {
    Instruction vld = op(Opcode::VLoad, 0x41, -1);
    vld.mem_src = {Space::Vmem, kLocalChip, 0};
    vld.bytes = 4096;
    vld.set(kMemSrc | kBytes);
    return vld;
}

// Stream 0 of `run`: `code`, instruction i issued at i us.
void one_stream(RunData& run, std::vector<Instruction> code) {
    Stream st;
    st.code = std::move(code);
    for (std::size_t i = 0; i < st.code.size(); ++i) {
        Life l;
        l.seen = true;
        l.issue = 1000 * i;
        st.life.push_back(l);
    }
    run.streams = {st};
}

// Unit operations of stream 0, all started at t0 (late: queueing is not counted): each on `unit`
// for instruction `index`, streaming `took`, done `drain` after.
struct SpanOp {
    std::uint32_t unit;
    std::uint64_t index;
    Opcode op;
    Tick took, drain = 0;
};
void add_ops(RunData& run, Tick t0, std::initializer_list<SpanOp> ops) {
    for (const SpanOp& o : ops) run.add_unit_op(o.unit, 0, o.index, o.op, t0, t0, t0 + o.took, t0 + o.took + o.drain);
}

}  // namespace

// The span bound (bounds.h, add_span_bound), by hand, on one matrix unit of a chip whose HBM
// moves 1 byte/ns. A 100 KB load (100 ns), a vector load of it (10 ns) and a weight push (5 ns):
// no matmul starts before 115 ns. Two tiles: 1000 ns of matmuls on the first, 300 ns on the
// last, which stream after the first's on the unit's one in-order path: from 1115 ns on. What
// reads the last tile's result: a pop (2 ns, on the matrix unit's pop path), an ALU op (400 ns,
// the vector unit's elementwise pipeline) and a store (50 ns, its load/store pipeline, which
// runs beside the other: models/vector_unit.h), the 4 KB write-back of the stored bytes (4.096
// ns at the HBM's peak). None of it starts before the last tile's matmul into the accumulator it
// reads has streamed (300 ns; its pipeline drains in no time here): the longest, the elementwise
// pipeline's 400 ns, follows 1115 + 300 ns: 1.815 us, more than the matmuls (1.3 us) and than
// first + matmuls + the shortest chain after a matmul (115 + 1300 + 2: the first tile's pop,
// which nothing reads). The pop of the first tile's result and its 2 ns are not part of it: that
// result was ready 300 ns earlier. Why it holds whatever a suggestion moves: the chain links are
// true data dependencies, the unit streams in program order, and a tile's matmuls stay behind
// their push (legality).
TEST(SpanBound, LastTileStreamsAfterTheOthersAndWhatReadsItFollows) {
    RunData run;
    run.units = span_units();
    const int m0 = 0x80, m1 = 0x81;
    const Instruction vld = vload_v41();
    Instruction vst = op(Opcode::VStore, -1, 0x43);
    vst.mem_dst = {Space::Vmem, kLocalChip, 8192};
    vst.bytes = 4096;
    vst.set(kMemDst | kBytes);
    one_stream(run, {dma(Space::Hbm, 0, Space::Vmem, 0, 100'000),  // 0
               vld,                                          // 1
               op(Opcode::MPush, -1, 0x41),                  // 2
               op(Opcode::MatMul, m0, 0x41),                 // 3: the first tile
               op(Opcode::MPush, -1, 0x41),                  // 4: the last push
               op(Opcode::MatMul, m1, 0x41),                 // 5: the last tile
               op(Opcode::MPop, 0x42, m0),                   // 6
               op(Opcode::MPop, 0x43, m1),                   // 7
               op(Opcode::VAlu, 0x43, 0x43),                 // 8
               vst,                                          // 9
               dma(Space::Vmem, 8192, Space::Hbm, 0x100000, 4096)});
    add_ops(run, 200'000, {{1, 1, Opcode::VLoad, 10'000},
                           {2, 2, Opcode::MPush, 5'000},
                           {2, 3, Opcode::MatMul, 1'000'000},
                           {2, 4, Opcode::MPush, 5'000},
                           {2, 5, Opcode::MatMul, 300'000},
                           {2, 6, Opcode::MPop, 2'000},
                           {2, 7, Opcode::MPop, 2'000},
                           {1, 8, Opcode::VAlu, 400'000},
                           {1, 9, Opcode::VStore, 50'000}});
    const Context cx(run);
    const ChainBound c = data_chain_bound(cx);
    EXPECT_EQ(c.first_matmul.at(2), 115'000u);
    EXPECT_EQ(c.after_last_matmul.at(2), 2'000u);  // the first tile's pop, read by nothing
    ASSERT_EQ(c.last_tiles.streaming.count(2), 1u);
    EXPECT_EQ(c.last_tiles.streaming.at(2), 300'000u);
    RunBounds b = run_bounds(run, 3'000'000);
    add_span_bound(b, run, c, 3'000'000);
    ASSERT_EQ(b.bounds[b.limiting].name, "span");
    EXPECT_EQ(b.lower, 1'815'000u);
    EXPECT_NE(b.bounds[b.limiting].where.find("xpu.chip0.core0.vpu0 elementwise pipeline"), std::string::npos)
        << b.bounds[b.limiting].where;
    // The ALU op reading the first tile's pop instead: it overwrites the last tile's popped value,
    // which nothing then reads; the last tile's work is its pop alone (2 ns on the matrix unit,
    // after 1115 + 300 ns), as long as the matmuls' span: 115 + 1300 + the shortest chain after
    // one (2 ns).
    run.streams[0].code[8] = op(Opcode::VAlu, 0x43, 0x42);
    const Context cx2(run);
    RunBounds b2 = run_bounds(run, 3'000'000);
    add_span_bound(b2, run, data_chain_bound(cx2), 3'000'000);
    EXPECT_EQ(b2.lower, 1'417'000u);
}

// What reads a last tile's results waits for the accumulator it reads (chain_bound.h,
// LastTiles::Work::after), by hand: one matrix unit, one tile (its push is the last), three
// matmuls after a 10 ns vector load and a 5 ns push (from 15 ns on): 100 ns into m0, 50 ns into
// m1, 100 ns into m0 again; each pops into a vector register read by a 400 ns ALU op. m0 is
// complete only once both its matmuls have streamed (write after write on one in-order unit:
// 200 ns) and the last has drained through the array; m1 after 50 ns and its drain. The drain is
// the least any matmul of the unit showed from the end of its streaming to its completion: 30 ns
// (models/matrix_unit.h: rows + cols - 2 cycles whatever the order). Whichever pop comes first,
// the vector unit's 800 ns of ALU work starts no sooner than 15 + 50 + 30 ns: 895 ns. The old
// rule (the work from the tile's start on) gave 815 ns; a rule taking m0's 200 ns would claim
// 1045 ns, which the order m1 first beats. Other bounds stay below: compute 250 ns, the matmuls'
// span 15 + 250 + 402 (a pop and its ALU op after the last matmul).
TEST(SpanBound, WhatReadsTheLastTileFollowsTheAccumulatorItReads) {
    RunData run;
    run.units = span_units();
    const int m0 = 0x80, m1 = 0x81;
    const Instruction vld = vload_v41();
    one_stream(run, {vld,                            // 0
               op(Opcode::MPush, -1, 0x41),    // 1: the last (only) push
               op(Opcode::MatMul, m0, 0x41),   // 2
               op(Opcode::MatMul, m1, 0x41),   // 3
               op(Opcode::MatMul, m0, 0x41),   // 4
               op(Opcode::MPop, 0x42, m0),     // 5
               op(Opcode::VAlu, 0x42, 0x42),   // 6
               op(Opcode::MPop, 0x43, m1),     // 7
               op(Opcode::VAlu, 0x43, 0x43)});
    add_ops(run, 100'000, {{1, 0, Opcode::VLoad, 10'000},
                           {2, 1, Opcode::MPush, 5'000},
                           {2, 2, Opcode::MatMul, 100'000, 50'000},
                           {2, 3, Opcode::MatMul, 50'000, 30'000},
                           {2, 4, Opcode::MatMul, 100'000, 40'000},
                           {2, 5, Opcode::MPop, 2'000},
                           {1, 6, Opcode::VAlu, 400'000},
                           {2, 7, Opcode::MPop, 2'000},
                           {1, 8, Opcode::VAlu, 400'000}});
    const Context cx(run);
    const ChainBound c = data_chain_bound(cx);
    EXPECT_EQ(c.first_matmul.at(2), 15'000u);
    ASSERT_EQ(c.last_tiles.streaming.count(2), 1u);
    EXPECT_EQ(c.last_tiles.streaming.at(2), 250'000u);
    RunBounds b = run_bounds(run, 2'000'000);
    add_span_bound(b, run, c, 2'000'000);
    ASSERT_EQ(b.bounds[b.limiting].name, "span");
    EXPECT_EQ(b.lower, 895'000u);
    EXPECT_NE(b.bounds[b.limiting].where.find("their first result complete 80.000 ns later"), std::string::npos)
        << b.bounds[b.limiting].where;
}

// Alike matrix units whose work may be spread (analysis/matrix_groups.h): the compute bound is
// their average where they are not balanced, whatever is moved (spread_matmuls keeps every
// matmul's shape and moves it only between units of the same parameters, so the group's sum
// stays and its busiest unit streams at least the average), and each unit's own streaming where
// they are. By hand: mxu0 and mxu1 alike (the same parameters), mxu2 not (other columns), mxu3
// alike but with no stream driving it (no socket to move work to: no group), all on stream 0.
TEST(MatrixGroups, AlikeUnitsNotBalancedAreBoundByTheirAverage) {
    RunData run;
    run.units = {{"xpu.chip0.core0.mxu0", "MatrixUnit", Role::Matrix, 0, 0, 0},
                 {"xpu.chip0.core0.mxu1", "MatrixUnit", Role::Matrix, 0, 0, 0},
                 {"xpu.chip0.core0.mxu2", "MatrixUnit", Role::Matrix, 0, 0, 0},
                 {"xpu.chip0.core0.mxu3", "MatrixUnit", Role::Matrix, 0, 0, 0}};
    run.unit_config = {1, 1, 2, 1};  // the numbers of their parameters: 128 columns, 128, 256, 128
    Stream st;
    st.code.assign(4, op(Opcode::MatMul, 0x80, 0x41));
    run.streams = {st};
    auto streams_for = [&](Tick a, Tick b, Tick c) {
        run.unit_ops.clear();
        run.op_times.clear();
        run.add_unit_op(0, 0, 0, Opcode::MatMul, 0, 0, a, a);
        run.add_unit_op(1, 0, 1, Opcode::MatMul, 0, 0, b, b);
        run.add_unit_op(2, 0, 2, Opcode::MatMul, 0, 0, c, c);
    };
    // mxu0 300 ns, mxu1 100 ns: 200 ns apart, more than an eighth of 300: the average, 200 ns,
    // above mxu2's 150 ns.
    streams_for(300'000, 100'000, 150'000);
    MatrixGroups g = matrix_groups(run, matmul_streaming(run));
    ASSERT_EQ(g.groups.size(), 2u);  // {mxu0, mxu1} and {mxu2}; mxu3 in none
    EXPECT_EQ(g.group_of[3], -1);
    ASSERT_NE(g.unbalanced(0), nullptr);
    EXPECT_EQ(g.unbalanced(0)->average(), 200'000u);
    EXPECT_EQ(g.unbalanced(2), nullptr);
    RunBounds b = run_bounds(run, 1'000'000);
    EXPECT_EQ(b.lower, 200'000u);
    EXPECT_NE(b.bounds[b.limiting].where.find("the average of 2 alike matrix units"), std::string::npos) << b.bounds[b.limiting].where;
    // mxu0 300 ns, mxu1 280 ns: balanced (20 ns apart): nothing moves, each unit's own streaming.
    streams_for(300'000, 280'000, 150'000);
    g = matrix_groups(run, matmul_streaming(run));
    EXPECT_EQ(g.unbalanced(0), nullptr);
    b = run_bounds(run, 1'000'000);
    EXPECT_EQ(b.lower, 300'000u);
    EXPECT_EQ(b.bounds[b.limiting].where, "xpu.chip0.core0.mxu0");
    // Parameters unknown (no platform.yaml beside the log): no group, each unit's own.
    streams_for(300'000, 100'000, 150'000);
    run.unit_config.clear();
    EXPECT_TRUE(matrix_groups(run, matmul_streaming(run)).groups.empty());
    EXPECT_EQ(run_bounds(run, 1'000'000).lower, 300'000u);
}

// The chain after a matmul across streams (the backward pass, the exact reverse of the forward
// order): stream 0 multiplies, pops (2 ns), stores the row into VMEM (5 ns) and writes it back to
// HBM (nothing: pipeline_store may cut it); stream 1 loads those 4096 bytes from HBM (4.096 ns at
// the HBM's 1000 GB/s), a vector load (10 ns) and an ALU op (100 ns). Issued after the write-back,
// stream 1's load reads what it wrote: the matmul heads 2 + 5 + 0 + 4.096 + 10 + 100 = 121.096 ns.
// Issued before it, it reads older bytes: 2 + 5 = 7 ns. The same order forwards and backwards, or
// the second case would count stream 1's work too.
namespace {
RunData matmul_then_reader(Tick reader_issue) {
    RunData run;
    run.units = {{"xpu.chip0.hbm", "HbmController", Role::Hbm, 0, 1000, 0},
                 {"xpu.chip0.core0.vpu0", "VectorUnit", Role::Vector, 0, 0, 0},
                 {"xpu.chip0.core0.mxu0", "MatrixUnit", Role::Matrix, 0, 0, 0},
                 {"xpu.chip0.core1.vpu0", "VectorUnit", Role::Vector, 0, 0, 0}};
    Instruction vst = op(Opcode::VStore, -1, 0x41);
    vst.mem_dst = {Space::Vmem, kLocalChip, 0};
    vst.bytes = 4096;
    vst.set(kMemDst | kBytes);
    Instruction vld = op(Opcode::VLoad, 0x42, -1);
    vld.mem_src = {Space::Vmem, kLocalChip, 0x10000};
    vld.bytes = 4096;
    vld.set(kMemSrc | kBytes);
    Stream s0, s1;
    s0.chip = 0;
    s0.core = 0;
    s1.chip = 0;
    s1.core = 1;
    s0.code = {op(Opcode::MPush, -1, 0x40), op(Opcode::MatMul, 0x80, 0x40), op(Opcode::MPop, 0x41, 0x80), vst,
               dma(Space::Vmem, 0, Space::Hbm, 0x100000, 4096)};
    s1.code = {dma(Space::Hbm, 0x100000, Space::Vmem, 0x10000, 4096), vld, op(Opcode::VAlu, 0x43, 0x42)};
    for (std::size_t i = 0; i < s0.code.size(); ++i) {
        Life l;
        l.seen = true;
        l.issue = 1000 * (i + 1);  // the write-back issues at 5 ns
        s0.life.push_back(l);
    }
    for (std::size_t i = 0; i < s1.code.size(); ++i) {
        Life l;
        l.seen = true;
        l.issue = reader_issue + 1000 * i;
        s1.life.push_back(l);
    }
    run.streams = {s0, s1};
    run.add_unit_op(2, 0, 0, Opcode::MPush, 0, 0, 1'000, 1'000);
    run.add_unit_op(2, 0, 1, Opcode::MatMul, 0, 0, 50'000, 50'000);
    run.add_unit_op(2, 0, 2, Opcode::MPop, 0, 0, 2'000, 2'000);
    run.add_unit_op(1, 0, 3, Opcode::VStore, 0, 0, 5'000, 5'000);
    run.add_unit_op(3, 1, 1, Opcode::VLoad, 0, 0, 10'000, 10'000);
    run.add_unit_op(3, 1, 2, Opcode::VAlu, 0, 0, 100'000, 100'000);
    return run;
}
}  // namespace

TEST(SpanBound, TheChainAfterAMatmulFollowsAnotherStreamOnlyIfItReadLater) {
    {
        const RunData run = matmul_then_reader(10'000);
        const Context cx(run);
        EXPECT_EQ(data_chain_bound(cx).after_last_matmul.at(2), 121'096u);
    }
    {
        const RunData run = matmul_then_reader(3'000);
        const Context cx(run);
        EXPECT_EQ(data_chain_bound(cx).after_last_matmul.at(2), 7'000u);
    }
}

// The chain across streams (analysis/chain_bound.cpp, IssueOrder): a read sees a write of another
// stream only if the run issued the write first. Stream 0 loads 1 MB from HBM into VMEM (1 us at
// 1 byte/ns); stream 1 loads a vector register from it (10 ns). Issued after the DMA, the vector
// load is on the DMA's chain (1.010 us); issued before it, it is not (the DMA's 1 us alone). A
// stream whose issue times decrease (a log not written by an in-order core) is sorted as a whole:
// the same answer as the issue times say.
namespace {
RunData two_stream_run(Tick dma_issue, Tick vld_issue, bool dma_second_in_program) {
    RunData run;
    run.units = {{"xpu.chip0.hbm", "HbmController", Role::Hbm, 0, 1000, 0},
                 {"xpu.chip0.core1.vpu0", "VectorUnit", Role::Vector, 0, 0, 0}};
    Instruction dma, nop, vld;
    dma.op = Opcode::Dma;
    dma.mem_src = {Space::Hbm, kLocalChip, 0};
    dma.mem_dst = {Space::Vmem, kLocalChip, 0};
    dma.bytes = 1'000'000;
    dma.flag = 1;
    dma.set(kMemSrc | kMemDst | kBytes | kFlag);
    nop.op = Opcode::SAdd;
    vld.op = Opcode::VLoad;
    vld.dst = 1;
    vld.mem_src = {Space::Vmem, kLocalChip, 4096};
    vld.bytes = 4096;
    vld.set(kDst | kMemSrc | kBytes);
    auto life = [](Tick issue) {
        Life l;
        l.seen = true;
        l.issue = issue;
        return l;
    };
    Stream s0, s1;
    s0.core = 0;
    s1.core = 1;
    if (dma_second_in_program) {
        s0.code = {nop, dma};
        s0.life = {life(dma_issue + 5'000'000), life(dma_issue)};
    } else {
        s0.code = {dma, nop};
        s0.life = {life(dma_issue), life(dma_issue + 5'000'000)};
    }
    s1.code = {vld};
    s1.life = {life(vld_issue)};
    run.streams = {s0, s1};
    run.add_unit_op(1, 1, 0, Opcode::VLoad, 0, 9'000'000, 9'010'000, 9'011'000);
    return run;
}
}  // namespace

TEST(ChainBound, AReadSeesAnotherStreamsWriteOnlyIfIssuedAfterIt) {
    {
        const RunData run = two_stream_run(1'000'000, 2'000'000, false);
        const Context cx(run);
        EXPECT_EQ(data_chain_bound(cx).time, 1'010'000u);
        EXPECT_EQ(data_chain_bound(cx).where, "chip0.core1");
    }
    {
        const RunData run = two_stream_run(3'000'000, 2'000'000, false);
        const Context cx(run);
        EXPECT_EQ(data_chain_bound(cx).time, 1'000'000u);
        EXPECT_EQ(data_chain_bound(cx).where, "chip0.core0");
    }
    {  // stream 0's times decrease: its DMA (issued at 1 ms, second in program order) still comes first
        const RunData run = two_stream_run(1'000'000, 2'000'000, true);
        const Context cx(run);
        EXPECT_EQ(data_chain_bound(cx).time, 1'010'000u);
    }
}
