// Suggestions applied together (analysis/compose.h): two compose only where, in every stream
// both change, the stretches of instructions they touch do not overlap, and neither takes a flag
// or memory the other takes or reaches; a combined suggestion holds every part's moves and
// edits, and its estimate is the parts' sum capped at the run's headroom (no change can save
// more than the run's distance to its own lower bound). No SystemC.
#include <gtest/gtest.h>

#include <string>

#include "analysis/compose.h"

namespace xpu::analysis {
namespace {

// A program of two streams (chip 0, one VMEM) of 100 scalar instructions, with a DMA into VMEM
// [0x1000, 0x2000) raising flag 1 at #5, a vld of VMEM 0x8000 at #60 and a wait on flag 1 at #70.
RunData program() {
    RunData run;
    for (int s = 0; s < 2; ++s) {
        Stream st;
        st.code.resize(100);
        for (Instruction& in : st.code) in.op = Opcode::Nop;
        Instruction& d = st.code[5];
        d.op = Opcode::Dma;
        d.mem_src = {Space::Hbm, kLocalChip, 0};
        d.mem_dst = {Space::Vmem, kLocalChip, 0x1000};
        d.bytes = 0x1000;
        d.flag = 1;
        d.set(kMemSrc | kMemDst | kBytes | kFlag);
        Instruction& v = st.code[60];
        v.op = Opcode::VLoad;
        v.mem_src = {Space::Vmem, kLocalChip, 0x8000};
        v.bytes = 0x100;
        v.set(kMemSrc | kBytes);
        Instruction& w = st.code[70];
        w.op = Opcode::SWait;
        w.flag = 1;
        w.value = 1;
        w.cond = Cond::Ge;
        w.set(kFlag | kValue | kCond);
        st.life.resize(st.code.size());
        run.streams.push_back(std::move(st));
    }
    return run;
}

// Whether a and b compose in `run` (analysis/compose.h's Composition, on the two alone).
struct Check {
    const RunData& run;
    bool composable(const Suggestion& a, const Suggestion& b) const {
        const std::vector<Suggestion> two{a, b};
        return Composition(run, two).composable(0, 1);
    }
    std::string why(const Suggestion& a, const Suggestion& b) const {  // what --apply says
        const std::vector<Suggestion> two{a, b};
        return Composition(run, two).conflict(0, 1);
    }
};

Suggestion moving(std::uint32_t stream, std::uint64_t from, std::uint64_t before, Tick saving) {
    Suggestion s;
    s.kind = "reorder";
    s.where = "op" + std::to_string(from);
    s.estimated_saving = saving;
    s.moves.push_back({stream, from, before, 0});
    return s;
}

// Instruction `index` of stream 0 rewritten as `in`.
Suggestion rewriting(std::uint64_t index, const Instruction& in) {
    Suggestion s;
    s.kind = "double_buffer";
    s.edits.push_back({0, index, in, {}});
    return s;
}

Instruction wait_on(std::uint16_t flag) {
    Instruction w;
    w.op = Opcode::SWait;
    w.flag = flag;
    w.value = 1;
    w.cond = Cond::Ge;
    w.set(kFlag | kValue | kCond);
    return w;
}

TEST(Compose, DisjointStretchesInOneStreamCompose) {
    const RunData run = program();
    const Check c{run};
    const Suggestion a = moving(0, 10, 5, 100), b = moving(0, 30, 20, 50);
    EXPECT_TRUE(c.composable(a, b));
    EXPECT_TRUE(c.composable(b, a));
}

TEST(Compose, OverlappingStretchesDoNot) {
    const RunData run = program();
    const Check c{run};
    // a touches [5, 10], b touches [8, 30]: a move of one could change what the other moved past.
    const Suggestion a = moving(0, 10, 5, 100), b = moving(0, 30, 8, 50);
    EXPECT_EQ(c.why(a, b), "changes instructions among those that [reorder] changes");
    EXPECT_FALSE(c.composable(a, b));
    EXPECT_FALSE(c.composable(b, a));
    // A deletion touches only the deleted instruction: inside the other's stretch, it overlaps.
    Suggestion d;
    d.kind = "drop_wait";
    d.moves.push_back({0, 7, Move::kDelete, 0});
    EXPECT_FALSE(c.composable(a, d));
    Suggestion d2 = d;
    d2.moves[0].from = 11;
    EXPECT_TRUE(c.composable(a, d2));
}

// The stretches, not the spans: a moves #12 before #10 and #42 before #40, b moves #30 before
// #20. b lies between a's two moves and touches none of what they touch: they compose (by the
// first and last instruction each touches, [10, 42] and [20, 30], they did not).
TEST(Compose, InterleavedStretchesCompose) {
    const RunData run = program();
    const Check c{run};
    Suggestion a = moving(0, 12, 10, 100);
    a.moves.push_back({0, 42, 40, 0});
    const Suggestion b = moving(0, 30, 20, 50);
    EXPECT_TRUE(c.composable(a, b));
    EXPECT_TRUE(c.composable(b, a));
    // Reaching into a stretch of the other: not.
    const Suggestion into = moving(0, 41, 35, 50);
    EXPECT_FALSE(c.composable(a, into));
}

TEST(Compose, DifferentStreamsCompose) {
    const RunData run = program();
    const Check c{run};
    EXPECT_TRUE(c.composable(moving(0, 10, 5, 1), moving(1, 10, 5, 1)));
}

// A flag the program never names counts from zero for the one suggestion that takes it: two that
// take the same one do not compose, however far apart (the second's waits would count the
// first's raises). A flag the program names is not taken.
TEST(Compose, TwoTakingTheSameUnnamedFlagDoNot) {
    const RunData run = program();
    const Check c{run};
    const Suggestion a = rewriting(20, wait_on(9)), b = rewriting(80, wait_on(9)), other = rewriting(80, wait_on(10));
    EXPECT_FALSE(c.composable(a, b));
    EXPECT_FALSE(c.composable(b, a));
    EXPECT_EQ(c.why(a, b), "takes flag 9 of chip 0 (which the program never names), as [double_buffer] does");
    EXPECT_TRUE(c.composable(a, other));
    EXPECT_EQ(c.why(a, other), "");
    // Flag 1 is the program's (#5 raises it, #70 waits on it): rewriting with it takes nothing.
    EXPECT_TRUE(c.composable(rewriting(20, wait_on(1)), rewriting(80, wait_on(1))));
    // In another stream of the same chip too: flags are the chip's.
    Suggestion far = b;
    far.edits[0].stream = 1;
    EXPECT_FALSE(c.composable(a, far));
}

// Memory a rewritten instruction accesses and the original did not is taken: the other may
// neither take it nor move an instruction that accesses it (#60 reads VMEM 0x8000).
TEST(Compose, MemoryOneTakesTheOtherNeitherTakesNorMoves) {
    const RunData run = program();
    const Check c{run};
    Instruction copy = run.streams[0].code[5];
    copy.mem_dst.addr = 0x8000;  // #5's DMA into a copy at 0x8000 (a buffer free where a checked it)
    const Suggestion a = rewriting(5, copy);
    // b hoists #60, which reads 0x8000: into a's copy's life, possibly.
    EXPECT_FALSE(c.composable(a, moving(0, 60, 50, 10)));
    EXPECT_EQ(c.why(a, moving(0, 60, 50, 10)), "changes an instruction that accesses memory [double_buffer] takes");
    EXPECT_FALSE(c.composable(moving(0, 60, 50, 10), a));
    // b moves something else: they compose.
    EXPECT_TRUE(c.composable(a, moving(0, 40, 30, 10)));
    // b takes memory overlapping a's copy: not.
    Instruction other = run.streams[0].code[60];
    other.mem_src.addr = 0x8f00;  // was 0x8000: reads [0x8f00, 0x9000), inside a's copy
    Suggestion b = rewriting(60, other);
    EXPECT_FALSE(c.composable(a, b));
    other.mem_src.addr = 0x9000;  // [0x9000, 0x9100): beside it
    b = rewriting(60, other);
    EXPECT_FALSE(c.composable(a, b));  // b still reaches 0x8000 (#60's original read)
    Instruction copy2 = copy;
    copy2.mem_dst.addr = 0x20000;  // a's copy elsewhere: now they compose
    EXPECT_TRUE(c.composable(rewriting(5, copy2), b));
    // Rewriting within what the original accessed takes nothing (split_dma's pieces, a merge's first).
    Instruction part = run.streams[0].code[5];
    part.bytes = 0x800;
    EXPECT_TRUE(c.composable(rewriting(5, part), moving(0, 60, 50, 10)));
}

TEST(Compose, AdviceWithoutAPatchNeverComposes) {
    const RunData run = program();
    const Check c{run};
    Suggestion advice;
    advice.kind = "collective_algorithm";
    EXPECT_FALSE(c.composable(advice, moving(0, 10, 5, 1)));
    EXPECT_FALSE(c.composable(moving(0, 10, 5, 1), advice));
}

TEST(Compose, CombinedHoldsEveryChangeAndCapsTheEstimate) {
    const Suggestion a = moving(0, 10, 5, 100), b = moving(1, 30, 20, 50);
    const Suggestion c = compose({&a, &b}, 1000);
    EXPECT_EQ(c.kind, "combined");
    ASSERT_EQ(c.moves.size(), 2u);
    EXPECT_EQ(c.moves[0].stream, 0u);
    EXPECT_EQ(c.moves[1].stream, 1u);
    EXPECT_EQ(c.estimated_saving, 150);
    EXPECT_NE(c.where.find("reorder at op10"), std::string::npos);
    EXPECT_NE(c.where.find("reorder at op30"), std::string::npos);
    EXPECT_FALSE(c.estimate_capped);
    // The sum above the headroom: capped, and marked so.
    const Suggestion capped = compose({&a, &b}, 120);
    EXPECT_EQ(capped.estimated_saving, 120);
    EXPECT_TRUE(capped.estimate_capped);
}

}  // namespace
}  // namespace xpu::analysis
